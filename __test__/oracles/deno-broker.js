'use strict'
// Deno broker oracle: request lines (valid, mutated, truncated, over the line
// limit) with 1-, 2-, 3- and 4-byte UTF-8 characters and lone surrogates
// placed around the path limit (4096 bytes) and the line limit, written to a
// live broker over its Unix socket in random chunks that split lines and
// characters anywhere. Each reply is compared with a naive model written
// from SPEC §2/§3/§15/§17 that shares no code with the checker or the broker:
// its own UTF-8 validity test (a round trip through Buffer), its own path
// rules (absolute, under the granted root, no empty/./.. segment, no NUL, at
// most 4096 bytes, segments within NAME_MAX), an explicit table for net,
// import and env (hostile spellings of hosts, the mapped stars, and grants
// and denies with path scopes: a raw host:port only where a grant admits
// every path). The model answers allow, deny or either (where the SPEC
// leaves the reason to the kernel); a broker allow where the model says
// deny is a wrong allow.
const fs = require('node:fs')
const os = require('node:os')
const net = require('node:net')
const path = require('node:path')
const { PermissionPolicy, serveDenoBroker } = require('../../index.js')

const MAX_LINE = 4200 // a line limit just above the path limit, so both are crossed
const WIDE = ['a', 'é', 'ж', '€', '中', '😀', '\u{10348}', '\uD800', '\uDFFF', '%', '\\', ' ']

function rng(seed) {
  let s = seed >>> 0 || 1
  return (n) => {
    s ^= s << 13
    s >>>= 0
    s ^= s >>> 17
    s ^= s << 5
    s >>>= 0
    return s % n
  }
}

/** Strict UTF-8 without TextDecoder: valid iff decoding and re-encoding gives the same bytes. */
const validUtf8 = (buf) => Buffer.from(buf.toString('utf8'), 'utf8').equals(buf)

const NET = new Map([
  ['127.0.0.1:8081', 'allow'],
  ['api.example.com:443', 'allow'],
  ['api.example.com:80', 'allow'],
  ['API.Example.COM:443', 'allow'],
  ['api.example.com', 'deny'], // no port: Deno asks for every port; only a :* grant gives that
  ['127.0.0.1:8082', 'deny'],
  ['127.0.0.1', 'deny'],
  ['api.example.com:8443', 'deny'],
  ['evil.example.com:443', 'deny'],
  ['api.example.com.evil.com:443', 'deny'],
  ['[::1]:8081', 'deny'],
  ['api.example.com/@evil.com:443', 'deny'],
  ['evil.com#@api.example.com:443', 'deny'],
  ['user@api.example.com:443', 'deny'],
  ['api.example.com:443/x', 'deny'],
  ['api.example.com:-1', 'deny'],
  ['', 'deny'],
  // Other spellings of a granted host: the same host to the WHATWG host parser.
  ['API.EXAMPLE.COM.:443', 'allow'],
  ['api.example.com.:80', 'allow'],
  ['0x7f.0.0.1:8081', 'allow'],
  ['127.1:8081', 'allow'],
  ['2130706433:8081', 'allow'],
  ['[::ffff:127.0.0.1]:8081', 'allow'],
  ['[::ffff:7f00:1]:8081', 'allow'],
  // Not a host:port Deno sends, or a host no grant names: non-ASCII (a fullwidth
  // letter, the fullwidth and small-form `*` IDNA maps to `*`), a literal or
  // escaped `*`, a host that only prints like a grant.
  ['\uff41pi.example.com:443', 'deny'],
  ['\uff0a.example.com:443', 'deny'],
  ['\ufe61.example.com:443', 'deny'],
  ['*.example.com:443', 'deny'],
  ['%2A.example.com:443', 'deny'],
  ['x.example.com:443', 'deny'],
  ['api\u3002example.com:443', 'deny'],
  // SPEC §17: Deno then requests any path, so only a grant without a path
  // scope admits a raw host; a deny rule of the host, path-scoped or of another
  // scheme, denies it on every port it names.
  ['docs.example.com:443', 'deny'], // https://docs.example.com/ covers `/` only
  ['docs.example.com', 'deny'],
  ['all.example.com:8080', 'deny'], // all.example.com:*/** still refuses `%2F`, `..;`
  ['scoped.example.com:443', 'deny'],
  ['guarded.example.com:443', 'deny'], // guarded.example.com/admin/** denies the host
  ['ftpdeny.example.com:443', 'deny'], // ftp://ftpdeny.example.com denies a raw connection
  ['whole.example.com:443', 'allow'],
  ['whole.example.com:80', 'allow'],
  ['whole.example.com:8443', 'deny'],
  ['anyport.example.com', 'allow'], // a :* grant, no deny: every port
  ['anyport.example.com:9', 'allow'],
])
const IMPORT = new Map([
  ['api.example.com:443', 'allow'],
  ['api.example.com', 'allow'],
  ['127.0.0.1:8081', 'allow'],
  ['api.example.com:80', 'deny'],
  ['evil.example.com:443', 'deny'],
  ['api.example.com/@evil.com:443', 'deny'],
  ['\uff0a.example.com:443', 'deny'],
  ['docs.example.com:443', 'deny'],
  ['docs.example.com', 'deny'],
  ['all.example.com:443', 'deny'],
  ['guarded.example.com:443', 'deny'],
  ['whole.example.com', 'allow'],
])
const ENV = new Map([
  ['A', 'allow'],
  ['ПАРОЛЬ', 'allow'],
  ['a', 'deny'],
  ['A ', 'deny'],
  ['ПАРОЛЬ\u0000', 'deny'],
  ['B', 'deny'],
  ['', 'deny'],
])

function fsModel(root, p, mode) {
  if (typeof p !== 'string') return 'deny'
  if (!p.isWellFormed() || p.includes('\0') || Buffer.byteLength(p) > 4096) return 'deny'
  const base = mode === 'write' ? `${root}/rw/` : `${root}/`
  if (!p.startsWith(base)) {
    // Outside the grant lexically; a `..` could climb back in (the kernel decides), anything else is out.
    return p.split('/').some((s) => s === '..' || s === '.') ? 'either' : 'deny'
  }
  const segs = p.slice(base.length).split('/')
  if (segs.some((s) => s === '..' || s === '.' || s === '')) return 'either'
  if (segs.some((s) => Buffer.byteLength(s) > 255)) return 'either' // NAME_MAX: the kernel cannot resolve it
  return 'allow'
}

/** One generated case: the line bytes and what the model says. */
function genCase(r, root, nextId) {
  const pick = (a) => a[r(a.length)]
  const id = nextId()
  const perm = pick(['read', 'read', 'write', 'write', 'net', 'import', 'env', 'run', 'sys', 'ffi', 'hrtime', '__proto__'])
  let value
  if (perm === 'read' || perm === 'write') {
    const kind = r(6)
    const base = kind === 0 ? `${root}/rw/` : kind === 1 ? '/etc/' : kind === 2 ? `${root}/x/../` : `${root}/${pick(['', 'rw/', 'd/'])}`
    // A name around 4096 bytes (or short), of characters of every width, in segments of random length.
    const target = pick([3, 50, 250, 256, 4090, 4094, 4095, 4096, 4097, 4100, 4180, 4300])
    let s = base
    let seg = 0
    while (Buffer.byteLength(s) < target) {
      const ch = seg > 0 && r(40) === 0 ? '/' : pick(WIDE)
      s += ch
      seg = ch === '/' ? 0 : seg + 1
      if (seg > 60 + r(250)) {
        s += '/'
        seg = 0
      }
    }
    value = r(30) === 0 ? null : s
  } else if (perm === 'net') value = pick([...NET.keys()])
  else if (perm === 'import') value = pick([...IMPORT.keys()])
  else if (perm === 'env') value = pick([...ENV.keys()])
  else value = pick([null, 'x'])
  const msg = { v: 1, pid: 1, id, datetime: '2026-01-01T00:00:00Z', permission: perm, value }
  let model
  if (perm === 'read' || perm === 'write') model = value === null ? 'deny' : fsModel(root, value, perm)
  else if (perm === 'net') model = NET.get(value)
  else if (perm === 'import') model = IMPORT.get(value)
  else if (perm === 'env') model = ENV.get(value)
  else model = 'deny'
  let line = Buffer.from(JSON.stringify(msg), 'utf8')
  // Mutations: each one makes the line malformed or changes nothing the model relies on.
  const m = r(10)
  if (m === 0) line = line.subarray(0, r(line.length)) // truncated: never a whole object
  else if (m === 1) {
    const b = Buffer.from(line)
    b[r(b.length)] = pick([0x80, 0xc3, 0xe2, 0xf0, 0xff, 0x00])
    line = b
  } else if (m === 2) line = Buffer.from(JSON.stringify({ ...msg, v: pick([2, 0, '1', null]) }))
  else if (m === 3) line = Buffer.from(JSON.stringify({ ...msg, id: pick([-1, 0.5, '7', null]) }))
  else if (m === 4) line = Buffer.from(JSON.stringify({ ...msg, value: pick([1, true, [], {}]) }))
  if (m <= 4) {
    // Malformed unless the mutation happened to leave a valid, equal request (a flip inside a string).
    let parsed = null
    try {
      if (validUtf8(line)) parsed = JSON.parse(line.toString('utf8'))
    } catch {}
    const same = parsed !== null && parsed.v === 1 && parsed.id === id && parsed.permission === perm && parsed.value === value
    if (!same) model = 'deny'
    if (parsed !== null && parsed.v === 1 && Number.isSafeInteger(parsed.id) && parsed.id >= 0 && !same) {
      // A flip that still parses as a valid request for another value: the model cannot say.
      if (typeof parsed.permission === 'string' && (parsed.value === null || typeof parsed.value === 'string')) model = 'either'
    }
  }
  const tooLong = line.length > MAX_LINE
  return { line, model: tooLong ? 'deny' : model, tooLong, id, perm, value }
}

async function run({ seconds = 3, seed = 1, log = () => {} } = {}) {
  const r = rng(seed)
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'deno-oracle-')))
  const policy = PermissionPolicy.fromManifest(
    {
      fs: [`${root}/**`, { path: `${root}/rw/**`, mode: 'readwrite' }],
      fetch: ['127.0.0.1:8081', 'api.example.com', 'https://docs.example.com/', 'all.example.com:*/**', 'https://scoped.example.com/v1/**', 'guarded.example.com', 'ftpdeny.example.com', 'whole.example.com', 'anyport.example.com:*'],
      deny: { fetch: ['guarded.example.com/admin/**', 'ftp://ftpdeny.example.com'] },
      secrets: ['A', 'ПАРОЛЬ'],
    },
    { plugin: 'deno-oracle' },
  )
  const wrongAllows = []
  const mismatches = []
  let cases = 0
  const seen = { allowed: 0, denied: 0, tooLong: 0, modelEither: 0 }
  let id = 0
  const nextId = () => ++id
  const deadline = Date.now() + seconds * 1000
  try {
    while (Date.now() < deadline) {
      // One broker per batch (a too-long line closes the connection, and a broker serves one client).
      const broker = await serveDenoBroker(policy, { maxLineBytes: MAX_LINE })
      id = 0
      const sock = net.connect(broker.path)
      await new Promise((res, rej) => {
        sock.once('connect', res)
        sock.once('error', rej)
      })
      const replies = []
      let buf = ''
      let closed = false
      sock.setEncoding('utf8')
      sock.on('data', (d) => {
        buf += d
        let i
        while ((i = buf.indexOf('\n')) >= 0) {
          replies.push(JSON.parse(buf.slice(0, i)))
          buf = buf.slice(i + 1)
        }
      })
      sock.on('error', () => {})
      sock.on('close', () => (closed = true))
      const batch = []
      for (let n = 1 + r(40); n > 0; n--) {
        const c = genCase(r, root, nextId)
        batch.push(c)
        if (c.tooLong) break // the connection ends there
      }
      const bytes = Buffer.concat(batch.map((c) => Buffer.concat([c.line, Buffer.from('\n')])))
      for (let at = 0; at < bytes.length && !closed; ) {
        const n = 1 + r(r(4) === 0 ? 8 : 3000)
        sock.write(bytes.subarray(at, at + n))
        at += n
        if (r(3) === 0) await new Promise((res) => setImmediate(res))
      }
      const until = Date.now() + 5000
      while (replies.length < batch.length && !closed && Date.now() < until) await new Promise((res) => setTimeout(res, 1))
      if (batch.at(-1).tooLong) while (!closed && Date.now() < until) await new Promise((res) => setTimeout(res, 1))
      for (let k = 0; k < batch.length; k++) {
        const c = batch[k]
        const got = replies[k]
        cases++
        const what = { perm: c.perm, value: typeof c.value === 'string' ? c.value.slice(0, 120) : c.value, bytes: c.line.length, model: c.model, got }
        if (got === undefined) {
          mismatches.push({ ...what, why: 'no reply' })
          continue
        }
        seen[got.result === 'allow' ? 'allowed' : 'denied']++
        if (c.tooLong) seen.tooLong++
        if (c.model === 'either') seen.modelEither++
        if (got.result === 'allow' && c.model === 'deny') wrongAllows.push(what)
        else if (got.result !== 'allow' && c.model === 'allow') mismatches.push(what)
        else if (got.result !== 'allow' && got.result !== 'deny') mismatches.push({ ...what, why: 'neither allow nor deny' })
        if (c.tooLong && !(got.id === null && got.result === 'deny')) mismatches.push({ ...what, why: 'a too-long line is denied with id null' })
      }
      if (replies.length > batch.length) mismatches.push({ why: `${replies.length} replies to ${batch.length} lines` })
      sock.destroy()
      await broker.close()
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
  log(`deno broker oracle: ${cases} lines (${seen.allowed} allowed, ${seen.denied} denied, ${seen.tooLong} over the line limit, ${seen.modelEither} left to the kernel), ${wrongAllows.length} wrong allows, ${mismatches.length} mismatches`)
  return { cases, wrongAllows, mismatches, seen }
}

module.exports = { run }
