'use strict'
// A small but real sandbox host: plugin code in a worker_threads Worker,
// inside a vm.Context (see worker.js); every capability call arrives here
// by postMessage and is checked with the package before it is performed.
const fs = require('node:fs')
const dns = require('node:dns/promises')
const http = require('node:http')
const https = require('node:https')
const net = require('node:net')
const path = require('node:path')
const { Worker } = require('node:worker_threads')
const crypto = require('node:crypto')
const { PermissionChecker, BudgetTracker, isPermissionDenied, isBudgetExceeded, serializeError } = require('../../index.js')
const { EXEC_ARGV } = require('./bootstrap.js')
const { RunScope, abortable } = require('./run-scope.js')
const { judgeShape } = require('../ipc-frame.js')

const MAX_REDIRECTS = 5
const MAX_BODY = 64 * 1024
// MAX_BODY characters are at most 4 bytes each: what one response may hold.
const MAX_RESPONSE_BYTES = MAX_BODY * 4
/** The largest file `fs.read` returns; a longer one is an error, never read whole. */
const MAX_FILE_BYTES = 8 << 20
const READ_CHUNK = 64 << 10
// Not following a final symlink: O_NOFOLLOW where the platform has it (not on
// Windows); never blocking in open(2) (a FIFO would hold a thread until a
// writer came): O_NONBLOCK where it exists.
const NOFOLLOW = fs.constants.O_NOFOLLOW || 0
const NONBLOCK = fs.constants.O_NONBLOCK || 0

/**
 * Destination-bound secrets (SPEC §13): one opaque placeholder per bound
 * secret of the manifest, random per run. The plugin only ever holds the
 * placeholder; the host puts the value into an outgoing request's headers
 * after `secrets.use` allows that URL. Returns `{ placeholders: { NAME:
 * placeholder }, byPlaceholder: Map<placeholder, NAME> }`.
 */
function boundSecrets(policy) {
  const placeholders = {}
  const byPlaceholder = new Map()
  for (const s of policy.toJSON().secrets || []) {
    if (typeof s === 'string') continue
    const ph = `sbx-secret-${crypto.randomBytes(18).toString('base64url')}`
    placeholders[s.name] = ph
    byPlaceholder.set(ph, s.name)
  }
  return { placeholders, byPlaceholder }
}

/** Every place a placeholder could hide in a string: as written, and percent- or form-decoded. */
function views(s) {
  const out = [s]
  for (const f of [decodeURIComponent, (x) => decodeURIComponent(x.replace(/\+/g, ' '))]) {
    try {
      out.push(f(s))
    } catch {}
  }
  return out
}

/**
 * Which bound secrets the plugin's headers carry, the headers with the values
 * substituted, and a denial for a placeholder anywhere else (URL or body):
 * a secret is only ever sent as a header to a destination `secrets.use` allows.
 */
function substituteSecrets({ checker, secrets, byPlaceholder, url, headers, body }) {
  const hits = (s) => [...byPlaceholder.keys()].filter((ph) => views(s).some((v) => v.includes(ph)))
  for (const [where, text] of [['url', url], ['body', body]]) {
    for (const ph of typeof text === 'string' ? hits(text) : []) {
      // A destination no hosts pattern can match: counted and thrown like every denial.
      checker.assertCapability('secrets.use', { name: byPlaceholder.get(ph), url: `placeholder-in-${where}:` })
    }
  }
  const out = {}
  const used = new Set()
  for (const [k, v] of Object.entries(headers)) {
    let value = v
    for (const ph of hits(v)) {
      const name = byPlaceholder.get(ph)
      checker.assertCapability('secrets.use', { name, url })
      if (!secrets.has(name)) throw new Error('no such secret')
      value = value.split(ph).join(secrets.get(name))
      used.add(k)
    }
    // The host's secret value is held to the same rule as a plugin's value (fail closed).
    if (!HEADER_VALUE.test(value) || value.length > MAX_HEADER_VALUE) throw headerRefused(k, 'the substituted secret value is not a valid header value')
    out[k] = value
  }
  return { headers: out, substituted: used }
}

/**
 * The request header names the runner forwards from a plugin (SPEC §3, §16:
 * the host performs the request that was checked). An allow-list: end-to-end
 * request headers that neither route, frame nor proxy a request. Everything
 * else is refused with an error naming the header, never stripped silently:
 * `Host` and `:authority` (the checked URL decides them), hop-by-hop and
 * framing headers (`Connection`, `Keep-Alive`, `Upgrade`, `Transfer-Encoding`,
 * `TE`, `Trailer`, `Expect`, `Content-Length`: the runner frames the body),
 * `Proxy-*`, `Via`, `Max-Forwards`, routing overrides (`X-Original-URL`,
 * `X-Rewrite-URL`, `X-Forwarded-*`, `Forwarded`, `X-Real-IP`,
 * `X-HTTP-Method-Override`, ...) and any name not listed here. A host adds
 * names with `runPlugin({ forwardHeaders })`.
 */
const FORWARDED_HEADERS = Object.freeze([
  'accept',
  'accept-language',
  'authorization',
  'cache-control',
  'content-language',
  'content-type',
  'cookie',
  'if-match',
  'if-modified-since',
  'if-none-match',
  'if-range',
  'if-unmodified-since',
  'pragma',
  'range',
  'user-agent',
])

/**
 * Names a host can never add to the forwarded set: they decide where the
 * request goes, how it is framed or who it claims to come through (SPEC §16),
 * by exact name or by prefix. Checked on `forwardHeaders`, so a host's
 * configuration cannot reopen what the runner refuses.
 */
const NEVER_FORWARDED = Object.freeze([
  'host',
  'connection',
  'keep-alive',
  'upgrade',
  'transfer-encoding',
  'te',
  'trailer',
  'expect',
  'content-length',
  'content-encoding',
  'via',
  'max-forwards',
  'forwarded',
  'x-original-url',
  'x-rewrite-url',
  'x-real-ip',
  'x-client-ip',
  'x-cluster-client-ip',
  'true-client-ip',
  'cf-connecting-ip',
  'fastly-client-ip',
  'x-host',
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
])
const NEVER_FORWARDED_PREFIXES = Object.freeze(['proxy-', 'x-forwarded-', 'x-original-', 'x-rewrite-', 'x-envoy-', 'x-proxy'])

// A header name of letters, digits and '-' (at most 64): no '_' or '.' that a
// proxy may rewrite into '-' (`X_Forwarded_For`), no ':' of a pseudo-header.
const HEADER_NAME = /^[A-Za-z0-9-]{1,64}$/
// A field value Node sends as written: visible ASCII, space and tab, no
// CR, LF, NUL or other control, nothing above U+007E (no obs-text to reinterpret).
const HEADER_VALUE = /^[\t\x20-\x7e]*$/
const MAX_HEADER_VALUE = 8192
const MAX_HEADERS = 64

/** A refusal the plugin sees: `ERR_HEADER_REFUSED`, naming the header (its name is a checked token). */
function headerRefused(name, why) {
  return Object.assign(new Error(`header '${name}' refused: ${why}`), { code: 'ERR_HEADER_REFUSED', header: name })
}

/** True when a host may not forward `name` (lower-case) whatever its configuration. */
function neverForwarded(name) {
  return NEVER_FORWARDED.includes(name) || NEVER_FORWARDED_PREFIXES.some((p) => name.startsWith(p))
}

/**
 * The forwarded set of a run: FORWARDED_HEADERS plus the host's
 * `forwardHeaders` (an array of field names; a name the runner never
 * forwards, or not a field name, is a TypeError).
 */
function forwardedSet(extra) {
  const set = new Set(FORWARDED_HEADERS)
  if (extra === undefined) return set
  if (!Array.isArray(extra)) throw new TypeError('forwardHeaders must be an array of header names')
  for (const n of extra) {
    if (typeof n !== 'string' || !HEADER_NAME.test(n)) throw new TypeError(`forwardHeaders: ${JSON.stringify(String(n)).slice(0, 80)} is not a header name`)
    const lower = n.toLowerCase()
    if (neverForwarded(lower)) throw new TypeError(`forwardHeaders: '${n}' routes, frames or proxies a request and is never forwarded from a plugin`)
    set.add(lower)
  }
  return set
}

/**
 * A plugin's headers: a plain object of string values, each name on the
 * forwarded set (`allowed`, lower-case) and given once in any casing, each
 * value of visible ASCII. Anything else throws `ERR_HEADER_REFUSED` naming
 * the header: the request is refused, not sent with the header dropped.
 */
function pluginHeaders(h, allowed = forwardedSet()) {
  if (h === undefined || h === null) return {}
  if (typeof h !== 'object' || Array.isArray(h)) throw new Error('headers must be an object of strings')
  const entries = Object.entries(h)
  if (entries.length > MAX_HEADERS) throw new Error(`at most ${MAX_HEADERS} headers`)
  const out = {}
  for (const [k, v] of entries) {
    if (typeof v !== 'string') throw new Error('headers must be an object of strings')
    if (!HEADER_NAME.test(k)) throw headerRefused(/^[\x21-\x7e]{1,64}$/.test(k) ? k : '(unprintable or too long)', "not a header name of letters, digits and '-' (pseudo-headers such as :authority are set by the host)")
    const name = k.toLowerCase()
    if (!allowed.has(name)) {
      throw headerRefused(k, neverForwarded(name) ? 'it routes, frames or proxies the request, which the host sets from the checked URL' : 'not a header this host forwards')
    }
    if (Object.hasOwn(out, name)) throw headerRefused(k, 'given more than once')
    if (v.length > MAX_HEADER_VALUE) throw headerRefused(k, `value longer than ${MAX_HEADER_VALUE} characters`)
    if (!HEADER_VALUE.test(v)) throw headerRefused(k, 'value holds a control character (CR, LF, NUL, ...) or a character outside visible ASCII')
    out[name] = v
  }
  return out
}

/** Every address a name resolves to (the system resolver, as `fetch` would use it). */
const systemLookup = (hostname) => dns.lookup(hostname, { all: true })

/**
 * Resolves a URL's host once and checks EVERY address it resolves to
 * (`assertFetchAddress`): a name with one denied address is denied, whatever
 * the order (fail closed). Returns the address to connect to, the first
 * checked one; the request then connects to it and resolves nothing again
 * (a second resolution is where DNS rebinding answers differently).
 */
async function checkedAddress(checker, url, lookup, signal) {
  const { hostname } = new URL(url)
  const bare = hostname.replace(/^\[|\]$/g, '')
  if (net.isIP(bare)) {
    checker.assertFetchAddress(url, bare)
    return { address: bare, family: net.isIP(bare) }
  }
  // A resolution cannot be cancelled: its answer is dropped once the run ends.
  const all = await abortable(Promise.resolve(lookup(hostname)), signal)
  if (!Array.isArray(all) || all.length === 0) throw new Error(`${hostname} did not resolve`)
  const addresses = all.map((a) => (a !== null && typeof a === 'object' ? a.address : undefined))
  if (!addresses.every((a) => typeof a === 'string' && net.isIP(a) !== 0)) throw new Error(`${hostname} resolved to something that is not an IP address`)
  for (const a of addresses) checker.assertFetchAddress(url, a)
  return { address: addresses[0], family: net.isIP(addresses[0]) }
}

/**
 * One HTTP(S) request to `url`, connected to exactly `address` (the `lookup`
 * option answers with it; the Host header and TLS SNI stay the URL's host),
 * on a fresh connection (no pooled socket to an address checked for another
 * request). Redirects are not followed. Resolves to `{ status, location,
 * body }`, the body decoded and cut to MAX_BODY characters (at most
 * MAX_RESPONSE_BYTES held). `call` is the run's handle for this call: its
 * signal aborts the request (the connection is closed).
 */
function requestAt(url, { address, family }, { method, headers, body }, call) {
  return new Promise((resolve, reject) => {
    const u = new URL(url)
    const mod = u.protocol === 'https:' ? https : u.protocol === 'http:' ? http : null
    if (mod === null) throw new Error(`${u.protocol} URLs are not fetched by this host`)
    const h = { ...headers }
    if (body !== undefined) {
      if (!Object.hasOwn(h, 'content-type')) h['content-type'] = 'text/plain;charset=UTF-8'
      h['content-length'] = String(Buffer.byteLength(body))
    }
    const lookup = (_name, opts, cb) => (opts && opts.all ? cb(null, [{ address, family }]) : cb(null, address, family))
    let done = false
    const onAbort = () => fail(call.signal.reason)
    const fail = (e) => {
      if (done) return
      done = true
      call.signal.removeEventListener('abort', onAbort)
      req.destroy()
      reject(e)
    }
    // Settles on the run's end whatever state the request is in (a response
    // mid-body emits no error of its own when its request is destroyed).
    call.signal.addEventListener('abort', onAbort, { once: true })
    const req = mod.request(u, { method, headers: h, agent: false, lookup, signal: call.signal }, (res) => {
      const chunks = []
      let bytes = 0
      const finish = () => {
        if (done) return
        done = true
        call.signal.removeEventListener('abort', onAbort)
        res.destroy()
        const text = Buffer.concat(chunks).toString('utf8').slice(0, MAX_BODY)
        resolve({ status: res.statusCode, location: res.headers.location ?? null, body: text })
      }
      res.on('data', (c) => {
        if (done) return
        chunks.push(c)
        bytes += c.length
        if (bytes >= MAX_RESPONSE_BYTES) finish()
      })
      res.on('end', finish)
      res.on('error', fail)
      res.on('close', () => fail(new Error('the response was cut off')))
    })
    req.on('error', fail)
    req.end(body)
  })
}

/** Runs `fn(call)` as one call of `scope` (begun holding `bytes`), ending it however `fn` settles. */
async function inScope(scope, bytes, fn) {
  const call = scope.begin(bytes)
  try {
    return await fn(call)
  } finally {
    call.end()
  }
}

/**
 * Reads an open file whole, at most MAX_FILE_BYTES, stopping when the run
 * ends. Its size is reserved from the run's bound before the first byte is
 * read (so concurrent reads are refused whole, never all starved halfway),
 * and whatever it grows by as it is read.
 */
async function readBounded(fh, call) {
  const tooLarge = () => new Error(`the file is larger than ${MAX_FILE_BYTES} bytes`)
  const { size } = await fh.stat()
  if (size > MAX_FILE_BYTES) throw tooLarge()
  call.reserve(size)
  let reserved = size
  const chunks = []
  let total = 0
  for (;;) {
    call.signal.throwIfAborted()
    const buf = Buffer.allocUnsafe(READ_CHUNK)
    const { bytesRead } = await fh.read(buf, 0, READ_CHUNK, null)
    if (bytesRead === 0) break
    total += bytesRead
    if (total > MAX_FILE_BYTES) throw tooLarge()
    if (total > reserved) {
      call.reserve(total - reserved)
      reserved = total
    }
    chunks.push(bytesRead === READ_CHUNK ? buf : Buffer.from(buf.subarray(0, bytesRead)))
  }
  return Buffer.concat(chunks, total).toString('utf8')
}

/**
 * What the host does once a call is allowed. Real I/O: files, fetch, an
 * in-memory secret store and event bus. Every file and fetch operation is a
 * call of `scope` (a RunScope; one of its own when none is given): bounded
 * with the run's other calls, and aborted when the run aborts the scope.
 */
function performers({ checker, secrets, bus, byPlaceholder = new Map(), log = () => {}, lookup = systemLookup, forwardHeaders, scope = new RunScope() }) {
  const forwarded = forwardedSet(forwardHeaders)
  async function fetchChecked(p, call) {
    // Fetch exactly the canonical URL that was checked; re-check the
    // resolved address and every redirect hop.
    let url = checker.authorizeFetch(p.url)
    const method = p.method === undefined ? 'GET' : String(p.method)
    if (!['GET', 'POST', 'PUT'].includes(method)) throw new Error('method must be GET, POST or PUT')
    const reqBody = p.body === undefined || method === 'GET' ? undefined : String(p.body)
    // Bound secrets: placeholders in headers become values only where secrets.use allows.
    // The header rule first: a refused header (a placeholder in it or not) stops the request here.
    const original = pluginHeaders(p.headers, forwarded)
    let { headers, substituted } = substituteSecrets({ checker, secrets, byPlaceholder, url, headers: original, body: p.body === undefined ? undefined : String(p.body) })
    for (let hop = 0; ; hop++) {
      // Resolve once, check every address, connect to the checked one.
      const target = await checkedAddress(checker, url, lookup, call.signal)
      const res = await requestAt(url, target, { method: hop === 0 ? method : 'GET', headers, body: hop === 0 ? reqBody : undefined }, call)
      const location = res.location
      if (res.status >= 300 && res.status < 400 && location !== null) {
        if (hop >= MAX_REDIRECTS) throw new Error('too many redirects')
        const next = checker.authorizeFetch(new URL(location, url).href)
        if (substituted.size > 0) {
          // A substituted header goes on only to the same origin, and only
          // when secrets.use allows the new URL too (its path may leave the
          // scope); otherwise it is dropped, never sent.
          const sameOrigin = new URL(next).origin === new URL(url).origin
          const kept = {}
          const keptSubstituted = new Set()
          for (const [k, v] of Object.entries(headers)) {
            if (!substituted.has(k)) kept[k] = v
            else if (sameOrigin && [...byPlaceholder].every(([ph, name]) => !original[k].includes(ph) || checker.checkCapability('secrets.use', { name, url: next }).allowed)) {
              kept[k] = v
              keptSubstituted.add(k)
            } else log(`redirect to ${new URL(next).origin}: substituted header '${k}' dropped`)
          }
          headers = kept
          substituted = keptSubstituted
        }
        url = next
        continue
      }
      return { status: res.status, body: res.body }
    }
  }
  return {
    // Open exactly the path that was checked (the real path, symlinks and
    // `..` resolved as the kernel resolves them), and never follow a final
    // symlink that appeared after the check.
    'fs.read': (p) =>
      inScope(scope, 0, async (call) => {
        const file = checker.authorizeFs(p.path, 'read', { resolveSymlinks: true })
        const fh = await fs.promises.open(file, fs.constants.O_RDONLY | NOFOLLOW | NONBLOCK)
        try {
          return await readBounded(fh, call)
        } finally {
          await fh.close()
        }
      }),
    'fs.write': (p) => {
      const data = String(p.data)
      return inScope(scope, Buffer.byteLength(data), async (call) => {
        const file = checker.authorizeFs(p.path, 'write', { resolveSymlinks: true })
        const fh = await fs.promises.open(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC | NOFOLLOW | NONBLOCK, 0o644)
        try {
          await fh.writeFile(data, { signal: call.signal })
        } finally {
          await fh.close()
        }
        return null
      })
    },
    // A fetch holds its request body and at most one response (MAX_RESPONSE_BYTES) at a time: reserved whole, up front.
    fetch: (p) => inScope(scope, (typeof p.body === 'string' ? Buffer.byteLength(p.body) : 0) + MAX_RESPONSE_BYTES, (call) => fetchChecked(p, call)),
    async 'secrets.get'(p) {
      if (!secrets.has(p.name)) throw new Error('no such secret')
      return secrets.get(p.name)
    },
    async 'events.publish'(p) {
      bus.push({ topic: p.topic, data: p.data === undefined ? null : p.data })
      return null
    },
    async 'events.subscribe'() {
      return null
    },
    async 'db.query'() {
      return { rows: [] }
    },
  }
}

/**
 * The shape of a call's JSON text, judged before it is parsed (JSON.parse of
 * deeply nested text costs far more than its length): an object, its payload
 * nested at most 63 levels.
 */
const CALL_SHAPE = Object.freeze({ maxDepth: 64, topLevel: 'object' })

/** The id of a call text as the bridge writes it (`{"id":N,...`), or null. */
function callId(raw) {
  const m = /^\{"id":(\d{1,15}),/.exec(raw)
  return m === null ? null : Number(m[1])
}

/** A short, single-line rendering of a payload for the host's own trace. */
function describeCall(capability, payload) {
  const v = payload && (payload.path ?? payload.url ?? payload.name ?? payload.topic ?? payload.database)
  return `${capability} ${typeof v === 'string' ? JSON.stringify(v.length > 120 ? `${v.slice(0, 117)}...` : v) : ''}`.trim()
}

/**
 * Validates one capability request from a plugin (JSON text) and answers it:
 * `assertCapability` first (or `audit` in audit mode), then the performer.
 * Resolves to `{ id, ok, json }`, or null for a message to ignore.
 */
function callHandler(options) {
  const handle = unguardedHandler(options)
  // A plugin message never rejects into the host: whatever throws while it is
  // answered (a hostile payload, a host performer) becomes a host error for
  // that call, and a message without an id is ignored.
  return async function guarded(raw) {
    try {
      return await handle(raw)
    } catch (e) {
      const id = typeof raw === 'string' ? callId(raw) : null
      options.log(`[${options.name}] a call could not be answered: ${e instanceof Error ? e.name : typeof e}`)
      return Number.isSafeInteger(id) ? { id, ok: false, json: JSON.stringify({ $hostError: 1, message: 'the host could not answer this call' }) } : null
    }
  }
}

/** Calls a run's trace (`calls`) records; later ones are still checked, counted and logged, not traced. */
const MAX_TRACED_CALLS = 10_000

function unguardedHandler({ name, checker, perform, calls: trace, log, audit }) {
  const calls = { push: (entry) => trace.length < MAX_TRACED_CALLS && trace.push(entry) }
  return async function handle(raw) {
    if (typeof raw !== 'string' || raw.length > 1 << 20) return null
    const wrong = judgeShape(raw, CALL_SHAPE)
    if (wrong !== null) {
      // Not parsed: answered by the id the bridge wrote first, when there is one.
      const id = callId(raw)
      return id === null ? null : { id, ok: false, json: JSON.stringify({ $hostError: 1, message: `the call was refused: ${wrong.detail}` }) }
    }
    let req
    try {
      req = JSON.parse(raw)
    } catch {
      return null
    }
    // Validate the message before anything else: shape and sizes.
    if (req === null || typeof req !== 'object' || !Number.isSafeInteger(req.id) || typeof req.capability !== 'string' || req.capability.length > 64) return null
    const { id, capability, payload } = req
    if (capability === 'log') {
      // The line is the plugin's data: only a string is printed (String() of
      // an object with an own `toString: 1` throws).
      const line = payload !== null && typeof payload === 'object' && typeof payload.line === 'string' ? payload.line : '(not a string)'
      log(`[${name}] log: ${line.slice(0, 200)}`)
      return { id, ok: true, json: undefined }
    }
    const what = describeCall(capability, payload)
    try {
      if (audit) audit(capability, payload)
      else checker.assertCapability(capability, payload)
      const fn = Object.hasOwn(perform, capability) ? perform[capability] : null
      if (fn === null) throw new Error('capability not implemented by this host')
      const value = await fn(payload)
      calls.push({ capability, what, allowed: true })
      log(`[${name}] ${what} -> allowed`)
      return { id, ok: true, json: JSON.stringify(value) }
    } catch (e) {
      if (isPermissionDenied(e)) {
        calls.push({ capability, what, allowed: false, reason: e.details.reason })
        log(`[${name}] ${what} -> PERMISSION_DENIED (${e.details.reason})`)
        return { id, ok: false, json: JSON.stringify(serializeError(e)) }
      }
      if (e && e.code === 'ERR_HEADER_REFUSED') {
        // Refused by the host's header rule before anything was sent: loud, never silent.
        calls.push({ capability, what, allowed: false, refused: 'header', header: e.header, error: String(e.message) })
        log(`[${name}] ${what} -> refused: ${e.message}`)
        return { id, ok: false, json: JSON.stringify({ $hostError: 1, code: e.code, message: String(e.message) }) }
      }
      calls.push({ capability, what, allowed: true, error: String(e.message) })
      log(`[${name}] ${what} -> allowed, but failed: ${e.message}`)
      return { id, ok: false, json: JSON.stringify({ $hostError: 1, message: String(e.message) }) }
    }
  }
}

/** The least double above `x` (a positive finite number): "more than x". */
function justAbove(x) {
  const f = new Float64Array([x])
  new BigUint64Array(f.buffer)[0] += 1n
  return f[0]
}

/**
 * Runs one plugin as one request.
 * options: { name, code, policy, secrets?: Map, bus?: [], meter?, log?(line), audit?: (capability, payload) => void,
 *            sampleEveryMs?, lookup?: async (hostname) => [{ address, family }], forwardHeaders?: string[] }
 * `forwardHeaders` adds request header names the runner forwards from the plugin (default: FORWARDED_HEADERS);
 * a name that routes, frames or proxies a request (NEVER_FORWARDED) is a TypeError.
 * `lookup` replaces the system resolver (`dns.lookup` with `all: true`) for fetch: tests inject one.
 * `maxPendingCalls` (default 64) and `maxRunBytes` (default 32 MiB) bound the calls performed at once and the
 * bytes they hold together (RunScope); a call past either is refused with ERR_RUN_BOUND. When the run ends every
 * call still pending is aborted (its connection closed, its read or write stopped), and the result's `inFlight`
 * is `{ pending, bytes, peakPending, peakBytes, refused }` once they have settled (pending 0). `calls` traces the
 * first MAX_TRACED_CALLS (10,000) calls; later ones are checked, counted and logged as every call is.
 * In audit mode every call is allowed and reported to `audit` (for `learn`): never run untrusted code that way
 * outside a throwaway environment.
 */
function runPlugin(options) {
  const { name, code, policy, meter, audit } = options
  const log = options.log || (() => {})
  const secrets = options.secrets || new Map()
  const bus = options.bus || []
  const shadow = options.shadow
  const shadowEvents = []
  const onShadow = (e) => {
    shadowEvents.push(e)
    log(`[${name}] shadow would deny: ${e.capability} (${e.reason})${e.target ? ` ${e.target}` : ''}; enforced: ${e.enforced}`)
  }
  const checker = new PermissionChecker(policy, shadow ? { meter, shadow, onShadow } : { meter })
  const { placeholders, byPlaceholder } = boundSecrets(policy)
  // Every call the run performs is one of this scope's: bounded together, aborted when the run ends.
  const scope = new RunScope({ maxPendingCalls: options.maxPendingCalls, maxRunBytes: options.maxRunBytes })
  const perform = performers({ checker: audit ? auditChecker : checker, secrets, bus, byPlaceholder, log: (line) => log(`[${name}] ${line}`), forwardHeaders: options.forwardHeaders, scope, ...(options.lookup ? { lookup: options.lookup } : {}) })
  const calls = []
  const budgets = policy.budgets
  const memoryMb = Object.hasOwn(budgets, 'memoryMb') ? budgets.memoryMb : undefined
  // The JS heap's cap: a backstop for the RSS sampler below (V8 needs 16 MB;
  // a smaller memoryMb is enforced by the sampler).
  const heapCapMb = memoryMb === undefined ? undefined : Math.max(16, Math.ceil(memoryMb))
  const worker = new Worker(path.join(__dirname, 'worker.js'), {
    // Only placeholders of bound secrets enter the worker, never their values.
    workerData: { code, filename: `${name}.js`, config: { ...(options.config || {}), secretPlaceholders: placeholders } },
    resourceLimits: heapCapMb === undefined ? undefined : { maxOldGenerationSizeMb: heapCapMb },
    execArgv: [...EXEC_ARGV],
    env: {},
    stdout: true,
    stderr: true,
  })
  return new Promise((resolve) => {
    let finished = false
    let tracker = null
    let timer = null
    let startup = null
    let rssGrowthMb = () => 0
    const finish = (result) => {
      if (finished) return
      finished = true
      clearInterval(timer)
      clearTimeout(startup)
      scope.abort()
      Promise.all([worker.terminate(), endOfCalls(scope)]).then(() => resolve({ ...result, calls, shadow: shadowEvents, inFlight: scope.stats, elapsedMs: tracker ? tracker.elapsedMs : 0 }))
    }
    // The request's budget starts when the plugin's code starts (the worker
    // says `ready`), so worker start-up is not billed to the plugin.
    const startBudget = () => {
      const hooks = { now: () => performance.now(), cpuTimeMs: () => worker.performance.eventLoopUtilization().active }
      // memoryMb: a Worker's own RSS is not observable from its process, so
      // the reading is the whole process's RSS growth since the plugin's code
      // started (its heap, its ArrayBuffers, what the host allocated for its
      // calls, and anything else the process did meanwhile): an upper bound,
      // read from this thread, so a plugin that never yields is sampled too.
      if (memoryMb !== undefined) {
        const rss0 = process.memoryUsage.rss()
        hooks.rssMb = rssGrowthMb = () => Math.max(0, process.memoryUsage.rss() - rss0) / 2 ** 20
      }
      tracker = new BudgetTracker(policy, { meter, hooks, ...(shadow ? { shadow } : {}) })
      timer = setInterval(() => {
        try {
          tracker.sample()
          tracker.assertWithin()
        } catch (e) {
          if (!isBudgetExceeded(e)) throw e
          log(`[${name}] BUDGET_EXCEEDED ${e.details.budget}: observed ${e.details.observed.toFixed(1)} > limit ${e.details.limit}; worker terminated`)
          finish({ ok: false, code: e.code, budget: e.details.budget })
        }
      }, options.sampleEveryMs || 10)
    }
    // A worker that never gets ready is stopped by the wall-clock budget too.
    startup = setTimeout(() => finish({ ok: false, code: 'ERR_WORKER_START', message: 'worker did not start' }), ((Object.hasOwn(budgets, 'wallClockMs') && budgets.wallClockMs) || 10_000) + 5_000)

    const reply = (id, ok, json) => {
      if (!finished) worker.postMessage({ id, ok, json })
    }
    const handle = callHandler({ name, checker, perform, calls, log, audit })

    worker.on('message', (m) => {
      if (typeof m === 'string') handle(m).then((r) => r && reply(r.id, r.ok, r.json))
      else if (m && m.ready && tracker === null) startBudget()
      else if (m && m.done) finish(m.ok ? { ok: true, value: m.value } : { ok: false, code: m.code, message: m.message })
    })
    worker.on('error', (e) => {
      // The heap cap stopped the plugin: over its memory budget (the heap
      // alone needed more than heapCapMb >= memoryMb), counted like any breach.
      if (e.code === 'ERR_WORKER_OUT_OF_MEMORY' && tracker !== null && !finished) {
        try {
          tracker.record({ rssMb: Math.max(rssGrowthMb(), justAbove(heapCapMb)) })
          tracker.assertWithin()
        } catch (b) {
          if (isBudgetExceeded(b)) {
            log(`[${name}] BUDGET_EXCEEDED ${b.details.budget}: the heap went over its ${heapCapMb} MB cap; worker stopped`)
            return finish({ ok: false, code: b.code, budget: b.details.budget })
          }
        }
      }
      finish({ ok: false, code: e.code || 'ERR_WORKER', message: String(e.message) })
    })
    worker.on('exit', () => finish({ ok: false, code: 'ERR_WORKER_EXIT', message: 'worker exited' }))
  })
}

/**
 * Resolves once the aborted calls of `scope` have settled. Each performer
 * step is abortable, so that is a few turns of the event loop; the cap only
 * keeps a run's end from waiting on a step that is not (the run's result
 * then reports the calls still pending).
 */
function endOfCalls(scope) {
  let timer
  const cap = new Promise((resolve) => {
    timer = setTimeout(resolve, 5_000)
    timer.unref()
  })
  return Promise.race([scope.drained(), cap]).finally(() => clearTimeout(timer))
}

/** In audit mode the performers still need their fs/fetch gate to pass: this one allows everything. */
const auditChecker = {
  assertFs() {},
  authorizeFs: (p) => p,
  assertFetchAddress() {},
  authorizeFetch: (u) => new URL(u).href,
}

module.exports = { runPlugin, describeCall, callHandler, performers, endOfCalls, auditChecker, MAX_FILE_BYTES, MAX_TRACED_CALLS, boundSecrets, substituteSecrets, pluginHeaders, forwardedSet, FORWARDED_HEADERS, NEVER_FORWARDED, NEVER_FORWARDED_PREFIXES }
