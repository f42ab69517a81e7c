'use strict'
// Oracle for the shipped runner's request headers (SPEC §3 "fetch exactly
// what was checked", §16): a plugin cannot set `Host`, `:authority`,
// hop-by-hop headers (`Connection`, `Upgrade`, `Transfer-Encoding`, `TE`,
// `Keep-Alive`, `Proxy-*`) or routing overrides (`X-Original-URL`,
// `X-Rewrite-URL`, `X-Forwarded-*`, `Forwarded`), and the runner refuses
// (never strips) them. The plugin runs in the real runner (lib/vm-host, a
// worker_threads Worker in a vm.Context) and fetches a raw TCP server on
// 127.0.0.1 that parses the request head itself (not Node's HTTP parser) and
// records every header line that arrives.
//
// The model shares no code with the runner: the SPEC's dangerous names and the
// README's documented allow-list, restated here. Generated inputs: those
// names and look-alikes in random casings, `_`/`.`/`:` variants, unknown
// names, duplicates in two casings, values with CR, LF, NUL, DEL, non-ASCII
// and at the 8,192-character limit, and a bound secret's placeholder in a
// refused header.
//
// A wrong allow: a request arrived that the model refuses, a header arrived
// that the plugin did not send or the runner does not own, a Host other than
// the checked `name:port`, a SPEC-dangerous name the plugin set, or a secret
// value after a refused header. A mismatch: a request the model allows was
// refused, or a refusal that does not name a header of the request.

const net = require('node:net')
const { PermissionPolicy } = require('../../index.js')
const { runPlugin } = require('../../lib/vm-host/host.js')

// SPEC §16, as written there (prefixes end in '-').
const SPEC_NEVER = ['host', ':authority', 'connection', 'upgrade', 'transfer-encoding', 'te', 'keep-alive', 'proxy-', 'x-original-url', 'x-rewrite-url', 'x-forwarded-', 'forwarded']
// README "Destination-bound secrets" / "The example host": the names the runner forwards.
const DOCUMENTED_ALLOW = ['accept', 'accept-language', 'authorization', 'cache-control', 'content-language', 'content-type', 'cookie', 'if-match', 'if-modified-since', 'if-none-match', 'if-range', 'if-unmodified-since', 'pragma', 'range', 'user-agent']
// Headers the runner itself writes on every request it makes (Node's http client, agent: false).
const RUNNER_OWNED = ['host', 'connection', 'content-length', 'content-type']
const MAX_VALUE = 8192

const NAMES = [
  ...DOCUMENTED_ALLOW,
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
  'proxy-authorization',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-x',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-forwarded-port',
  'x-forwarded-server',
  'forwarded',
  'x-original-url',
  'x-original-host',
  'x-rewrite-url',
  'x-real-ip',
  'x-client-ip',
  'true-client-ip',
  'x-http-method-override',
  'x-http-method',
  'x-method-override',
  'x-host',
  'via',
  'max-forwards',
  'x-api-key',
  'x-custom',
  'origin',
  'referer',
  'accept-encoding',
  'dnt',
]
const BAD_NAMES = [':authority', ':path', ':method', 'x_forwarded_for', 'X_Forwarded_Host', 'x.forwarded.for', 'host ', ' host', 'hos\u0074\u200b', 'Hоst', 'accept\u0000', 'a'.repeat(65), '', 'content-type:', 'x_proto_', 'constructor', 'toString']
const VALUE_PARTS = ['text/plain', 'Bearer abc', 'x', ' ', '\t', 'a=b; c=d', '*/*', '\r\n', '\r', '\n', '\u0000', '\u007f', '\u0080', 'é', '\u2028', 'Host: evil.example', '\r\nHost: evil.example', '\r\n\r\nGET /smuggled HTTP/1.1', '😀']

const { prng } = require('./rng.js')

const specNever = (lower) => SPEC_NEVER.some((n) => (n.endsWith('-') ? lower.startsWith(n) : lower === n))

/** The model: does the runner forward this header set? Written from the SPEC and the README. */
function modelForwards(headers) {
  const seen = new Set()
  for (const [k, v] of headers) {
    if (!/^[A-Za-z0-9-]{1,64}$/.test(k)) return false
    const lower = k.toLowerCase()
    if (specNever(lower) || !DOCUMENTED_ALLOW.includes(lower)) return false
    if (seen.has(lower)) return false
    seen.add(lower)
    if (v.length > MAX_VALUE) return false
    for (const ch of v) {
      const c = ch.codePointAt(0)
      if (!(c === 9 || (c >= 0x20 && c <= 0x7e))) return false
    }
  }
  return true
}

/** A raw HTTP/1.1 server: records each request head's header lines, answers 200 and closes. */
async function rawServer() {
  const seen = []
  const sockets = new Set()
  const server = net.createServer((sock) => {
    sockets.add(sock)
    sock.on('close', () => sockets.delete(sock))
    let buf = Buffer.alloc(0)
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d])
      const end = buf.indexOf('\r\n\r\n')
      if (end < 0) return
      const lines = buf.subarray(0, end).toString('latin1').split('\r\n')
      const [method, target] = lines[0].split(' ')
      seen.push({ method, target, headers: lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]) })
      sock.end('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok')
    })
    sock.on('error', () => {})
  })
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  return { seen, port: server.address().port, close: () => new Promise((r) => (server.close(r), sockets.forEach((s) => s.destroy()))) }
}

const PLUGIN = `
const out = []
for (const c of config.cases) {
  const headers = {}
  for (const [k, v] of c.headers) headers[k] = v === '$SECRET' ? config.secretPlaceholders.TOKEN : v
  try {
    const r = await fetch(config.base + '/case/' + c.i, { headers })
    out.push({ i: c.i, ok: true, body: r.body })
  } catch (e) {
    out.push({ i: c.i, ok: false, code: e.code || null, message: String(e.message) })
  }
}
return JSON.stringify(out)
`

function genCase(r, i) {
  const int = (n) => Math.floor(r() * n)
  const pick = (a) => a[int(a.length)]
  const casing = (s) => {
    switch (int(4)) {
      case 0:
        return s
      case 1:
        return s.toUpperCase()
      case 2:
        return s.replace(/(^|-)([a-z])/g, (_, a, b) => a + b.toUpperCase())
      default:
        return [...s].map((c) => (int(2) ? c.toUpperCase() : c)).join('')
    }
  }
  const value = () => {
    if (int(20) === 0) return 'v'.repeat(MAX_VALUE - 1 + int(3))
    if (int(6) === 0) return '$SECRET'
    const n = 1 + int(3)
    let v = ''
    for (let k = 0; k < n; k++) v += int(4) === 0 ? pick(VALUE_PARTS) : pick(['text/plain', 'abc', 'x-y', 'Bearer t', '1'])
    return v
  }
  const headers = []
  const n = int(4)
  for (let k = 0; k < n; k++) {
    const name = int(12) === 0 ? pick(BAD_NAMES) : casing(pick(NAMES))
    headers.push([name, value()])
    // The same name again in another casing.
    if (int(15) === 0 && /^[A-Za-z0-9-]+$/.test(name)) headers.push([casing(name.toLowerCase()), value()])
  }
  // A plain object keeps one entry per exact key: the case is what the plugin can send.
  const obj = new Map()
  for (const [k, v] of headers) if (!obj.has(k)) obj.set(k, v)
  return { i, headers: [...obj] }
}

async function run({ seconds = 3, seed = 1, log = () => {} } = {}) {
  const r = prng(seed)
  const server = await rawServer()
  const SECRET = 'sk-live-oracle-secret'
  const base = `http://localhost:${server.port}`
  const policy = PermissionPolicy.fromManifest({ fetch: ['http://localhost:*'], secrets: [{ name: 'TOKEN', hosts: ['http://localhost:*'] }], budgets: { wallClockMs: 8_000 } }, { plugin: 'oracle-headers' })
  const lookup = async () => [{ address: '127.0.0.1', family: 4 }]
  const wrongAllows = []
  const mismatches = []
  let cases = 0
  let forwarded = 0
  let next = 0
  const deadline = Date.now() + seconds * 1000
  try {
    while (Date.now() < deadline) {
      const batch = Array.from({ length: 60 }, () => genCase(r, next++))
      server.seen.length = 0
      const res = await runPlugin({ name: 'oracle-headers', code: PLUGIN, policy, config: { cases: batch, base }, secrets: new Map([['TOKEN', SECRET]]), lookup })
      // A run that fails (a request that hangs the runner until the wall clock) is a mismatch; what arrived is still judged.
      if (!res.ok) mismatches.push({ why: 'the plugin run failed', code: res.code, message: res.message })
      const outcomes = new Map(res.ok ? JSON.parse(res.value).map((o) => [o.i, o]) : [])
      const arrived = new Map()
      for (const req of server.seen) {
        const m = /^\/case\/(\d+)$/.exec(req.target)
        if (!m) {
          wrongAllows.push({ why: 'a request to a path the plugin never asked for', target: req.target })
          continue
        }
        const i = Number(m[1])
        if (arrived.has(i)) wrongAllows.push({ i, why: 'two requests for one fetch' })
        arrived.set(i, req)
      }
      for (const c of batch) {
        cases++
        const sent = c.headers.map(([k, v]) => [k, v === '$SECRET' ? SECRET : v])
        const allows = modelForwards(c.headers.map(([k, v]) => [k, v === '$SECRET' ? 'placeholder' : v]))
        const got = outcomes.get(c.i)
        const req = arrived.get(c.i)
        const show = { i: c.i, headers: c.headers.map(([k, v]) => [k, v.length > 40 ? `${v.slice(0, 40)}…(${v.length})` : v]) }
        if (req !== undefined) {
          forwarded++
          if (!allows) wrongAllows.push({ ...show, why: 'the model refuses this header set, and a request arrived' })
          const hosts = req.headers.filter(([k]) => k === 'host')
          if (hosts.length !== 1 || hosts[0][1] !== `localhost:${server.port}`) wrongAllows.push({ ...show, why: 'Host is not the checked name:port', hosts })
          const wanted = new Map(sent.map(([k, v]) => [k.toLowerCase(), v]))
          for (const [k, v] of req.headers) {
            if (wanted.has(k)) {
              if (wanted.get(k).trim() !== v) wrongAllows.push({ ...show, why: `header ${k} arrived changed`, value: v.slice(0, 60) })
              continue
            }
            if (!RUNNER_OWNED.includes(k)) wrongAllows.push({ ...show, why: `header ${k} arrived and the plugin did not send it` })
            else if (k === 'connection' && v !== 'close') wrongAllows.push({ ...show, why: `Connection: ${v}` })
          }
          for (const [k] of sent) if (specNever(k.toLowerCase())) wrongAllows.push({ ...show, why: `plugin-set ${k} was sent` })
          const counts = new Map()
          for (const [k] of req.headers) counts.set(k, (counts.get(k) || 0) + 1)
          for (const [k, n] of counts) if (n > 1) wrongAllows.push({ ...show, why: `${n} ${k} headers arrived` })
        } else if (allows) {
          mismatches.push({ ...show, why: 'the model forwards this header set, and it was refused', got })
        }
        if (got === undefined) {
          if (res.ok) mismatches.push({ ...show, why: 'no outcome' })
        }
        else if (!got.ok) {
          if (req !== undefined) wrongAllows.push({ ...show, why: 'refused to the plugin, but sent' })
          if (got.code !== 'ERR_HEADER_REFUSED' || !/^header '/.test(got.message)) {
            if (!(c.headers.length > 0 && got.code === 'ERR_HEADER_REFUSED')) mismatches.push({ ...show, why: 'refusal not typed', got })
          } else {
            const named = /^header '(.*?)' refused/.exec(got.message)
            if (!named || !(c.headers.some(([k]) => k === named[1]) || named[1] === '(unprintable or too long)')) mismatches.push({ ...show, why: 'refusal names no header of the request', got })
          }
        }
      }
    }
  } finally {
    await server.close()
  }
  log(`headers oracle: ${cases} requests, ${forwarded} forwarded, ${wrongAllows.length} wrong allows, ${mismatches.length} mismatches`)
  return { cases, wrongAllows, mismatches, forwarded }
}

module.exports = { run, modelForwards, SPEC_NEVER, DOCUMENTED_ALLOW }
