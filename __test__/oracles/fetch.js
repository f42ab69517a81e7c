'use strict'
// Fetch oracle (SPEC §3, §4 `fetch`): a naive reference model written from the
// SPEC, sharing no code with the checker. The model parses every URL with the
// running Node's own `new URL` (the parser `fetch` uses) and compares scheme,
// host and port to the manifest's patterns with plain string code.
//
// Property: every URL that any entry point allows (checkFetch on a string and
// on a URL object, authorizeFetch and the canonical URL it hands back,
// checkFetchAddress, checkCapability('fetch')) is parsed by Node to a scheme,
// host and port that the manifest grants. A violation is a wrong allow.
// The other direction (the model grants, the checker denies) is a mismatch:
// counted, not a failure (a deny is never unsafe).

const { createChecker } = require('../../index.js')

const DEFAULT_PORT = { http: 80, https: 443, ws: 80, wss: 443, ftp: 21 }

/** Node's reading of a host: lower-case, one trailing dot dropped, IPv4-mapped IPv6 as IPv4. */
function naiveHost(hostname) {
  let h = hostname.endsWith('.') ? hostname.slice(0, -1) : hostname
  const m = /^\[::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})\]$/.exec(h)
  if (m) {
    const hi = parseInt(m[1], 16)
    const lo = parseInt(m[2], 16)
    h = `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`
  }
  return h
}
const isIp = (h) => h.startsWith('[') || /^\d+\.\d+\.\d+\.\d+$/.test(h)

/** A pattern `[scheme://]host[:port]` as the SPEC states it, its host read by Node's URL. */
function naivePattern(p) {
  let scheme = null
  let rest = p
  const i = p.indexOf('://')
  if (i >= 0) {
    scheme = p.slice(0, i).toLowerCase()
    rest = p.slice(i + 3)
  }
  let port = null
  const close = rest.lastIndexOf(']')
  const colon = rest.lastIndexOf(':')
  if (colon > close) {
    port = rest.slice(colon + 1)
    rest = rest.slice(0, colon)
  }
  let suffix = false
  if (rest.startsWith('*.')) {
    suffix = true
    rest = rest.slice(2)
  }
  const host = naiveHost(new URL(`http://${rest}/`).hostname)
  return { scheme, port, suffix, host }
}

/** Whether the patterns grant what Node makes of `input`; `{ granted, why }`. */
function naiveGrant(patterns, input) {
  let u
  try {
    u = new URL(input)
  } catch {
    return { granted: false, why: 'node rejects' }
  }
  if (u.username !== '' || u.password !== '') return { granted: false, why: 'credentials' }
  const scheme = u.protocol.slice(0, -1)
  if (!(scheme in DEFAULT_PORT)) return { granted: false, why: 'scheme' }
  const port = u.port === '' ? DEFAULT_PORT[scheme] : Number(u.port)
  const host = naiveHost(u.hostname)
  for (const p of patterns) {
    if (p.scheme === null ? scheme !== 'http' && scheme !== 'https' : p.scheme !== scheme) continue
    if (p.port === null ? port !== DEFAULT_PORT[scheme] : p.port !== '*' && Number(p.port) !== port) continue
    if (p.suffix) {
      if (isIp(host) || !host.endsWith(`.${p.host}`)) continue
      const head = host.slice(0, host.length - p.host.length - 1)
      if (head === '' || head.split('.').some((l) => l === '')) continue
    } else if (host !== p.host) continue
    return { granted: true, host, scheme, port }
  }
  return { granted: false, why: 'no pattern' }
}

const MANIFEST = [
  'api.example.com',
  '*.example.org',
  'https://secure.example.net:8443',
  '127.0.0.1:*',
  '[::1]:9000',
  'ws://socket.example.com',
  'localhost:3000',
  'münchen.example',
  'fußball.de',
  'xn--bcher-kva.example',
  '*.xn--fuball-cta.de',
  '10.0.0.1',
  'ftp://files.example.com:*',
]
const HOSTS = ['api.example.com', 'a.example.org', 'b.c.example.org', 'example.org', 'secure.example.net', '127.0.0.1', '[::1]', 'socket.example.com', 'localhost', 'münchen.example', 'fußball.de', 'x.fußball.de', 'bücher.example', 'xn--bcher-kva.example', '10.0.0.1', 'files.example.com']

// Deterministic PRNG (xorshift32).
function prng(seed) {
  let s = seed >>> 0 || 1
  return () => {
    s ^= s << 13
    s ^= s >>> 17
    s ^= s << 5
    return (s >>> 0) / 2 ** 32
  }
}

function generators(rnd) {
  const int = (n) => Math.floor(rnd() * n)
  const pick = (a) => a[int(a.length)]
  const anyCodePoint = () => {
    // Whole code space, weighted to each UTF-8 width; some lone surrogates.
    const r = rnd()
    let cp
    if (r < 0.3) cp = 0x80 + int(0x780)
    else if (r < 0.7) cp = 0x800 + int(0xf800)
    else if (r < 0.98) cp = 0x10000 + int(0x100000)
    else cp = 0xd800 + int(0x800)
    return cp >= 0xd800 && cp <= 0xdfff ? String.fromCharCode(cp) : String.fromCodePoint(cp)
  }
  const TRICKY = ['ẞ', 'ß', 'ς', 'Σ', 'ﬀ', '\u00ad', '\u200b', '\u200c', '\u200d', '\u180e', '\u2060', '\ufeff', '。', '．', '｡', '％', 'Ａ', 'ａ', 'İ', 'ı', 'K', 'Å', '\u0301', '①', '⒈', '\u{1d400}', '\u{e0041}', '\u{10ffff}', '\ufffd', '\u061c', '\u202e']
  const ESC = ['%2e', '%2E', '%41', '%61', '%00', '%25', '%40', '%3a', '%2f', '%5c', '%E1%BA%9E', '%C3%9F', '%E3%80%82', '%ef%bc%8e', '%xx', '%']
  const piece = () => {
    switch (int(8)) {
      case 0:
        return anyCodePoint()
      case 1:
        return pick(TRICKY)
      case 2:
        return pick(ESC)
      case 3:
        return pick(['.', '..', '-', 'xn--', 'XN--', 'xn--zca', 'xn--a', 'xn--fuball-cta', 'xn--mnchen-3ya', '@', ':', '\\', '/', '#', '?', '[', ']', '*'])
      case 4:
        return pick(['\t', '\n', '\r', ' ', '\u0000', '\u001f', '\u007f'])
      default:
        return pick(['a', 'b', 'ss', 'api', 'example', 'org', '0', '1'])
    }
  }
  const mutateHost = (h) => {
    const cps = [...h]
    const n = 1 + int(3)
    for (let i = 0; i < n; i++) {
      const at = int(cps.length + 1)
      const op = int(3)
      if (op === 0) cps.splice(at, 0, piece())
      else if (op === 1 && cps.length) cps.splice(Math.min(at, cps.length - 1), 1, piece())
      else cps.splice(Math.min(at, cps.length), 1)
    }
    return cps.join('')
  }
  const ipv4 = () =>
    pick(['127.0.0.1', '0x7f.1', '0177.0.0.1', '2130706433', '127.1', '0x7f000001', '127.0.0.1.', '127.0.0.01', '10.0.0.1', '0xa.0.0.1', '012.0.0.1', '167772161', '10.1', '10.0.1', '0x0a000001', '10.0.0.1.', '10.0.0.1..', '1.2.3.4', '0x100.0.0.1', '4294967296', '127.0.0.0x1', '１２７.０.０.１'])
  const ipv6 = () =>
    pick(['[::1]', '[0:0::1]', '[0000:0000:0000:0000:0000:0000:0000:0001]', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '[::ffff:10.0.0.1]', '[::1%25eth0]', '[::127.0.0.1]', '[::1].', '[fe80::1]', '[::1]x', '[::ffff:a00:1]', '[::1'])
  const host = () => {
    const r = int(10)
    if (r < 5) return mutateHost(pick(HOSTS))
    if (r === 5) return ipv4()
    if (r === 6) return ipv6()
    if (r === 7) return pick(HOSTS) + pick(['.', '..', '。', '．'])
    if (r === 8) return [...Array(1 + int(4))].map(() => piece()).join('') + '.' + pick(HOSTS)
    return pick(HOSTS)
  }
  /**
   * A multi-byte character straddling a UTF-8 byte boundary (buffer sizes,
   * limits), in the host or the path, after ASCII or 2-byte filler (so UTF-16
   * and UTF-8 lengths differ).
   */
  const straddle = () => {
    const at = int(6) === 0 ? pick([65534, 65536]) : pick([1024, 2046, 2047, 2048, 2049, 4094, 4095, 4096, 4097, 4098, 8192])
    const ch = pick(['é', '€', '\u{1f600}', 'ẞ', '。'])
    const inHost = rnd() < 0.6
    const head = inHost ? 'https://' : 'https://a.example.org/'
    const tail = inHost ? '.example.org' : ''
    const unit = rnd() < 0.5 ? 'a' : 'é'
    const w = Buffer.byteLength(unit)
    const bytes = Math.max(0, at - 1 - head.length - tail.length - int(3))
    const label = `${unit.repeat(20)}.`
    const perLabel = 20 * w + 1
    let fill = label.repeat(Math.floor(bytes / perLabel))
    let rest = bytes - Buffer.byteLength(fill)
    fill += unit.repeat(Math.floor(rest / w)) + 'a'.repeat(rest % w)
    if (fill.endsWith('.') || fill === '') fill += 'a'
    return head + fill + tail + ch + (inHost ? pick(['.evil.example', '', '.example.org']) + '/' : '')
  }
  const url = () => {
    if (int(60) === 0) return straddle()
    if (int(200) === 0) {
      // Long hosts near the 64 KiB limit.
      const n = 32700 + int(80)
      return `http://${'a.'.repeat(n)}example.org/`
    }
    const scheme = pick(['https', 'http', 'HTTP', 'hTtPs', 'ws', 'wss', 'ftp', 'file', 'javascript', 'data', 'blob', 'gopher', 'foo'])
    const sep = pick(['://', '://', '://', ':/', ':', ':\\\\', ':/\\', ':\\/', ':///', ': //', ':%2f%2f'])
    const user = int(6) === 0 ? pick(['a@', 'a:b@', ':@', '@', '%40@', 'api.example.com@', 'user%40api.example.com@', 'a\\@']) : ''
    const port = int(4) === 0 ? pick([':80', ':443', ':8443', ':9000', ':3000', ':0443', ':65536', ':*', ':', ':21', ':0', ':8080']) : ''
    const tail = int(3) === 0 ? pick(['/', '/x?y#z', '?@evil.example', '#@evil.example', '\\@evil.example', '/%2e%2e/', '/@evil.example', '/ẞ', '?ẞ', '#ẞ']) : '/'
    let s = `${scheme}${sep}${user}${host()}${port}${tail}`
    if (int(8) === 0) s = pick([' ', '\t', '\u0000', '\n', '\u001f']) + s
    if (int(8) === 0) s += pick([' ', '\t', '\u0000', '\n'])
    if (int(10) === 0) {
      const at = int(s.length)
      s = s.slice(0, at) + pick(['\t', '\n', '\r']) + s.slice(at)
    }
    return s
  }
  return { url, anyCodePoint, int, pick }
}

async function run({ seconds = 3, seed = 1, log = () => {} } = {}) {
  const patterns = MANIFEST.map(naivePattern)
  const checker = createChecker({ fetch: MANIFEST }, { plugin: 'oracle-fetch' })
  const rnd = prng(seed)
  const g = generators(rnd)
  const wrongAllows = []
  let cases = 0
  let mismatches = 0
  const mismatchSamples = []
  let modelGrants = 0
  const deadline = Date.now() + seconds * 1000
  const wrong = (entry, input, extra) => {
    if (wrongAllows.length < 50) wrongAllows.push({ entry, input: JSON.stringify(input.length > 300 ? input.slice(0, 300) : input), length: input.length, ...extra })
  }
  while (Date.now() < deadline) {
    for (let k = 0; k < 200; k++) {
      const input = g.url()
      cases++
      const model = naiveGrant(patterns, input)
      if (model.granted) modelGrants++
      const d = checker.checkFetch(input)
      if (d.allowed && !model.granted) wrong('checkFetch', input, { why: model.why })
      if (!d.allowed && model.granted) {
        mismatches++
        if (mismatchSamples.length < 20) mismatchSamples.push({ input: input.length > 160 ? `${input.slice(0, 80)}…(${input.length})…${input.slice(-60)}` : input, reason: d.reason, nodeHost: model.host.slice(0, 80) })
      }
      const cap = checker.checkCapability('fetch', { url: input })
      if (cap.allowed && !model.granted) wrong('checkCapability', input, { why: model.why })
      let canonical = null
      try {
        canonical = checker.authorizeFetch(input)
      } catch (e) {
        if (e.code !== 'PERMISSION_DENIED') wrong('authorizeFetch threw', input, { error: String(e) })
      }
      if (canonical !== null) {
        if (!model.granted) wrong('authorizeFetch', input, { why: model.why })
        const again = naiveGrant(patterns, canonical)
        if (!again.granted || again.host !== model.host || again.port !== model.port || again.scheme !== model.scheme) {
          wrong('authorizeFetch canonical', input, { canonical })
        }
      }
      const addr = checker.checkFetchAddress(input, g.pick(['8.8.8.8', '127.0.0.1', '10.0.0.1', '::1', '2606:4700::1111']))
      if (addr.allowed && !model.granted) wrong('checkFetchAddress', input, { why: model.why })
      if (model.granted && !input.startsWith('http://a.a.a')) {
        // A URL object of Node's own parse must decide as its string does.
        const viaUrl = checker.checkFetch(new URL(input))
        if (viaUrl.allowed && !naiveGrant(patterns, new URL(input).href).granted) wrong('checkFetch(URL)', input, {})
      }
    }
  }
  log(`fetch oracle: ${cases} cases, ${modelGrants} granted by the model, ${mismatches} denied that the model grants, ${wrongAllows.length} wrong allows`)
  return { cases, wrongAllows, mismatches, mismatchSamples }
}

module.exports = { run, naiveGrant, naivePattern, MANIFEST }
