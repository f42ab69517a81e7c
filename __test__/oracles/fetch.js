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

const fs = require('node:fs')
const path = require('node:path')
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


// ---- Deny rules and path scopes (SPEC §10, §11) ----------------------------
// A second manifest with path-scoped grants and deny rules. The model reads
// each URL with Node's URL, splits its pathname and decodes each segment with
// a fatal UTF-8 decoder; it reads CIDR blocks and the IPv6 forms that embed an
// IPv4 address from the SPEC, with BigInt arithmetic. Property: whatever a
// check allows, the model grants and no deny rule of the model matches (a deny
// that fails to deny, or a path outside every scope admitted, is a wrong allow).

const DENY_MANIFEST = {
  fetch: ['https://api.example.com/v1/repos/*/issues', 'api.example.com/public/**', 'https://api.example.com/v1/', '*.example.org', '10.0.0.1', '[2001:db8::1]:*', 'docs.example.com', 'https://static.example.net', '127.0.0.1:*', '127.1.2.3', '[::1]:*', 'localhost:*'],
  deny: { fetch: ['evil.example.org', '*.internal.example.org', '10.0.0.0/8', '[fd00::]/8', '192.168.0.0/16', 'https://static.example.net:8443', 'docs.example.com/admin/**', 'api.example.com/public/secret/*', 'api.example.com/public/admin/**', 'localhost/internal/**'] },
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** Percent-decodes one segment to a string, or null when not UTF-8. */
function decodeSegment(seg) {
  const bytes = []
  for (let i = 0; i < seg.length; i++) {
    const c = seg[i]
    if (c === '%' && /^[0-9a-fA-F]{2}$/.test(seg.slice(i + 1, i + 3))) {
      bytes.push(parseInt(seg.slice(i + 1, i + 3), 16))
      i += 2
    } else for (const b of Buffer.from(c)) bytes.push(b)
  }
  try {
    return utf8.decode(Uint8Array.from(bytes))
  } catch {
    return null
  }
}

// Windows best fit, as data: src/bestfit_table.rs, which scripts/gen-bestfit.js
// derives from Microsoft's published bestfit*.txt tables (the header names
// each file and its sha256). Only the table is shared with the checker; the
// reading below is written from the SPEC (§11, §16) and NFKC is the running
// Node's own (ICU), not the Rust crate's.
const BEST_FIT_SRC = fs.readFileSync(path.join(__dirname, '../../src/bestfit_table.rs'), 'utf8')
const BEST_FIT = new Map(
  [...BEST_FIT_SRC.matchAll(/^\s*\('\\u\{([0-9A-F]+)\}', (?:b'(\\\\|.)'|0x([0-9a-f]{2}))\),/gm)].map((m) => [parseInt(m[1], 16), m[3] ? String.fromCharCode(parseInt(m[3], 16)) : m[2] === '\\\\' ? '\\' : m[2]]),
)
if (BEST_FIT.size < 20) throw new Error(`src/bestfit_table.rs: ${BEST_FIT.size} entries read`)
const bestFit = (s) => Array.from(s, (c) => BEST_FIT.get(c.codePointAt(0)) ?? c).join('')
/** Code points whose NFKC form holds a character the reading treats specially (from Node's ICU, every code point). */
const NFKC_SPECIAL = []
for (let c = 0x80; c < 0x110000; c++) {
  if (c >= 0xd800 && c <= 0xdfff) continue
  if (/[./\\:;%\p{White_Space}]/u.test(String.fromCodePoint(c).normalize('NFKC'))) NFKC_SPECIAL.push(c)
}
const IGNORABLE = /\p{Default_Ignorable_Code_Point}/gu

/** What a server may read in a decoded segment: as written, NFKC, and each through best fit. */
const readingsOf = (d) => {
  const n = d.normalize('NFKC')
  return [d, n, bestFit(d), bestFit(n)]
}

/** SPEC §11/§16, one reading: the name before the first ';' or ':', trailing dots, white space and ignorables dropped (ignorables inside too), is empty or only dots; or the reading holds '/', '\' or '%'. */
function readingBad(r) {
  const name = r.split(/[;:]/)[0].replace(/[.\p{White_Space}\p{Default_Ignorable_Code_Point}]+$/u, '').replace(IGNORABLE, '')
  return /^\.*$/.test(name) || /[/\\%]/.test(r)
}

/**
 * A non-empty segment any of whose readings is bad is a dot segment or a
 * separator to some server. An empty segment is not (it is `/v1/`'s last
 * segment).
 */
function readsAsDots(d) {
  if (d === '') return false
  return readingsOf(d).some(readingBad)
}

/** A decoded segment that never matches a path scope (SPEC §11, plus '%': double encoding; README: readsAsDots). */
const badSegment = (d) => d === null || readsAsDots(d) || /[/\\%\u0000-\u001f\u007f-\u009f]/.test(d)

/**
 * A decoded segment as a deny reads it (SPEC §10 "never narrower than it
 * reads"; README deny section): cut at the first ';' (servlet parameters)
 * or ':' (NTFS streams), trailing dots, white space and default-ignorables
 * dropped, every default-ignorable dropped, case folded through upper case
 * and back. `undefined`: a dot segment or a separator to some server (the
 * path is bad).
 */
function denySegment(d) {
  if (readsAsDots(d)) return undefined
  const t = bestFit(d.normalize('NFKC')).split(/[;:]/)[0].replace(/[.\p{White_Space}\p{Default_Ignorable_Code_Point}]+$/u, '').replace(IGNORABLE, '')
  return t.toUpperCase().toLowerCase()
}

/** Whether a (Node-serialised) host is a loopback address, in any form that carries one. */
const isLoopback = (host) => host === '[::1]' || ipForms(host).some((f) => !f.v6 && f.n >> 24n === 127n)

/** `[scheme://]host[:port][/path]` or a CIDR block, as the SPEC states it. */
function naiveRule(p, isDeny) {
  const cidr = /^(\d+\.\d+\.\d+\.\d+|\[[0-9a-fA-F:.]+\])\/(\d+)$/.exec(p)
  if (isDeny && cidr) return { cidr: true, net: ipToBig(cidr[1]), v6: cidr[1].startsWith('['), len: Number(cidr[2]) }
  // The path starts at the first '/' after the scheme; the rest is a pattern as above.
  const scheme = p.indexOf('://')
  const slash = p.indexOf('/', scheme >= 0 ? scheme + 3 : 0)
  if (slash < 0) return { ...naivePattern(p), path: null }
  const path = p.slice(slash + 1).split('/').map((s) => (s === '*' || s === '**' ? s : { lit: decodeSegment(s) }))
  return { ...naivePattern(p.slice(0, slash)), path }
}

/** An IP literal (`1.2.3.4` or `[v6]`, Node's serialisation) as a BigInt, or null. */
function ipToBig(h) {
  if (/^\d+\.\d+\.\d+\.\d+$/.test(h)) return h.split('.').reduce((a, x) => (a << 8n) | BigInt(Number(x)), 0n)
  if (!h.startsWith('[')) return null
  let s = h.slice(1, -1)
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(s)
  if (v4) {
    const n = ipToBig(v4[1])
    s = s.slice(0, -v4[1].length) + (n >> 16n).toString(16) + ':' + (n & 0xffffn).toString(16)
  }
  const [head, tail] = s.includes('::') ? s.split('::') : [s, null]
  const hs = head === '' ? [] : head.split(':')
  const ts = tail === null || tail === '' ? [] : tail.split(':')
  const parts = tail === null ? hs : [...hs, ...Array(8 - hs.length - ts.length).fill('0'), ...ts]
  return parts.reduce((a, x) => (a << 16n) | BigInt(parseInt(x, 16)), 0n)
}

const M32 = 0xffffffffn
const bits = (x, from, n) => (x >> BigInt(128 - from - n)) & ((1n << BigInt(n)) - 1n)
const NAT64_LOCAL = 0x64ff9b0001n << 80n

/**
 * The IPv4 addresses (BigInt) an IPv6 address carries, per SPEC §3 and §16's
 * list of embedding forms, read from the RFCs with bit numbers counted from
 * the most significant bit: mapped, compatible, translated and NAT64 /96 in
 * bits 96-127; local-use NAT64 64:ff9b:1::/48 at every RFC 6052 position
 * (/96: 96-127, /64: 72-103, /56: 56-63 and 72-95, /48: 48-63 and 72-87);
 * 6to4 bits 16-47; Teredo server 32-63 and client 96-127 inverted; ISATAP
 * an interface id (bits 64-95) of 00-00-5E-FE with any u/g bits under any /64.
 */
function embeddedV4(x) {
  const out = []
  const low = x & M32
  const top96 = x >> 32n
  if (top96 === 0n || top96 === 0xffffn || top96 === 0xffff0000n || top96 === 0x64ff9bn << 64n) out.push(low)
  if (x >> 80n === NAT64_LOCAL >> 80n) {
    out.push(low, bits(x, 72, 32), (bits(x, 56, 8) << 24n) | bits(x, 72, 24), (bits(x, 48, 16) << 16n) | bits(x, 72, 16))
  }
  if (x >> 112n === 0x2002n) out.push(bits(x, 16, 32))
  if (x >> 96n === 0x20010000n) out.push(bits(x, 32, 32), low ^ M32)
  const iid = bits(x, 64, 32)
  if ((iid & ~0x03000000n & M32) === 0x5efen) out.push(low)
  return out
}

/**
 * The IPv6 forms of the IPv4 address `a` that are closest to `fill`: each
 * form's fixed bits and `a` where the form puts it, every other bit taken
 * from `fill`. So some form of `a` lies in the IPv6 block `net/len` exactly
 * when the one built with `fill = net` does. ISATAP only for blocks longer
 * than /64 (README: a /64 or shorter names links, not IPv4 addresses).
 */
function formsNear(a, fill, len) {
  const keep = (from, n) => bits(fill, from, n) << BigInt(128 - from - n)
  const out = [
    (0xffffn << 32n) | a,
    a,
    (0xffff0000n << 32n) | a,
    (0x64ff9bn << 96n) | a,
    NAT64_LOCAL | keep(48, 48) | a,
    NAT64_LOCAL | keep(48, 24) | (a << 24n) | keep(104, 24),
    NAT64_LOCAL | ((a >> 24n) << 64n) | keep(64, 8) | ((a & 0xffffffn) << 32n) | keep(96, 32),
    NAT64_LOCAL | ((a >> 16n) << 64n) | keep(64, 8) | ((a & 0xffffn) << 40n) | keep(88, 40),
    (0x2002n << 112n) | (a << 80n) | keep(48, 80),
    (0x20010000n << 96n) | (a << 64n) | keep(64, 64),
    (0x20010000n << 96n) | keep(32, 64) | (a ^ M32),
  ]
  if (len > 64) out.push(keep(0, 64) | (((bits(fill, 64, 8) & 0x03n) << 24n) << 32n) | (0x5efen << 32n) | a)
  return out
}

/** Every (family, address) a deny of an IP is compared with. */
function ipForms(host) {
  const n = ipToBig(host)
  if (n === null) return []
  if (!host.startsWith('[')) return [{ v6: false, n }, { v6: true, n: (0xffffn << 32n) | n }]
  return [{ v6: true, n }, ...embeddedV4(n).map((v) => ({ v6: false, n: v }))]
}

const sameBlock = (r, n, width) => r.len === 0 || n >> BigInt(width - r.len) === r.net >> BigInt(width - r.len)
/**
 * Whether the CIDR deny `r` holds the address form `f` (SPEC §10, §16: a
 * deny is never narrower than it reads): same family and inside; or an IPv4
 * address some IPv6 form of which lies in an IPv6 block.
 */
const inCidr = (r, f) => {
  if (r.v6 === f.v6) return sameBlock(r, f.n, r.v6 ? 128 : 32)
  return r.v6 && formsNear(f.n, r.net, r.len).some((x) => sameBlock(r, x, 128))
}

function hostMatches(r, host) {
  if (r.suffix) {
    if (host.startsWith('[') || /^\d+\.\d+\.\d+\.\d+$/.test(host)) return false
    return host.endsWith(`.${r.host}`) && host.length > r.host.length + 1
  }
  if (r.host === host) return true
  // An IP deny also catches the IPv6 forms that carry it, and an IPv6 deny every form of an IPv4 address it carries.
  return ipDenyHits(r.host, host)
}

/** Whether a deny of the IP literal `deny` catches the host (or resolved address) `host`, in any form. */
function ipDenyHits(deny, host) {
  const want = ipToBig(deny)
  if (want === null) return false
  const keys = [{ v6: deny.startsWith('['), n: want }, ...(deny.startsWith('[') ? embeddedV4(want).map((n) => ({ v6: false, n })) : [])]
  return ipForms(host).some((f) => keys.some((k) => k.v6 === f.v6 && k.n === f.n))
}

/** The model: `{ denied, granted, why }` for one URL (and optionally the address it resolved to). */
function naiveDecide(rules, denies, input, resolved) {
  let u
  try {
    u = new URL(input)
  } catch {
    return { denied: false, granted: false, why: 'node rejects' }
  }
  const scheme = u.protocol.slice(0, -1)
  const port = u.port === '' ? DEFAULT_PORT[scheme] : Number(u.port)
  const host = naiveHost(u.hostname)
  const rawSegs = u.pathname.startsWith('/') ? u.pathname.slice(1).split('/') : null
  const segs = rawSegs === null ? null : rawSegs.map(decodeSegment)
  const bad = segs === null || segs.some(badSegment)
  const hostForms = resolved === undefined ? (host === 'localhost' || host.endsWith('.localhost') ? ipForms('127.0.0.1') : ipForms(host)) : ipForms(resolved.includes(':') ? `[${resolved}]` : resolved)
  for (const d of denies) {
    if (d.cidr) {
      if (hostForms.some((f) => inCidr(d, f))) return { denied: true, why: 'cidr deny' }
      continue
    }
    if (d.scheme !== null && d.scheme !== scheme) continue
    if (d.port !== null && d.port !== '*' && Number(d.port) !== port) continue
    const resolvedHost = resolved === undefined ? host : resolved.includes(':') ? `[${resolved}]` : resolved
    // A deny naming localhost also denies every loopback address (SPEC §10 "never narrower").
    const loop = (d.host === 'localhost' || (d.suffix && d.host === 'localhost')) && isLoopback(resolvedHost)
    const hostHit = loop || (resolved === undefined ? hostMatches(d, host) : d.host !== undefined && ipDenyHits(d.host, resolvedHost))
    if (!hostHit) continue
    const folded = bad ? [] : segs.map(denySegment)
    if (d.path === null || bad || folded.includes(undefined)) return { denied: true, why: 'deny' }
    // Broad: empty segments dropped, ;params and ::streams cut, trailing dots and spaces dropped, case folded, last ** covers zero or more.
    const req = folded.filter((s) => s !== '')
    const pat = d.path.filter((p) => !(typeof p === 'object' && p.lit === ''))
    let ok = true
    let k = 0
    for (; k < pat.length; k++) {
      if (pat[k] === '**') break
      if (k >= req.length || (pat[k] !== '*' && req[k] !== denySegment(pat[k].lit))) {
        ok = false
        break
      }
    }
    if (ok && (k < pat.length || req.length === pat.length)) return { denied: true, why: 'path deny' }
  }
  if (u.username !== '' || u.password !== '') return { denied: false, granted: false, why: 'credentials' }
  if (!(scheme in DEFAULT_PORT)) return { denied: false, granted: false, why: 'scheme' }
  for (const r of rules) {
    if (r.scheme === null ? scheme !== 'http' && scheme !== 'https' : r.scheme !== scheme) continue
    if (r.port === null ? port !== DEFAULT_PORT[scheme] : r.port !== '*' && Number(r.port) !== port) continue
    if (r.suffix ? !hostMatches(r, host) || host.slice(0, -r.host.length - 1).split('.').includes('') : host !== r.host) continue
    if (r.path === null) return { denied: false, granted: true }
    if (bad) continue
    const n = r.path.length
    let ok = true
    for (let k = 0; k < n; k++) {
      const p = r.path[k]
      if (p === '**') {
        ok = segs.length > k
        break
      }
      if (k >= segs.length || (p === '*' ? segs[k] === '' : segs[k] !== p.lit)) ok = false
      if (k === n - 1 && segs.length !== n) ok = false
      if (!ok) break
    }
    if (ok) return { denied: false, granted: true }
  }
  return { denied: false, granted: false, why: 'no grant' }
}

const PATH_SEGS = ['v1', 'repos', 'acme', 'issues', 'pulls', 'public', 'secret', 'SECRET', 'admin', 'ADMIN', 'Admin', 'guide', '', '.', '..', '%2e', '%2E%2e', '.%2e', '.b', '.ab', '..b', '.%62', '%2f', '..%2f', 'a%2fb', '%5c', 'a\\b', '%00', '%09', '%ff', '%C3%A9', 'é', '%252f', '%25', 'a;b', 'admin;x=1', '%69ssues', '%61dmin', '*', 'x', '\u{1f600}', '%F0%9F%98%80', '%E2%82', '?q', '#f', '..;', '.;', '..;x', '%2e%2e;', '.%2E;', '..%3B', '.%3bx', ';x', 'admin.', 'admin%20', 'admin.%20', 'ADMIN::$DATA', 'adm%C4%B1n', 'adm\u0131n', '%C5%BFecret', 'internal', 'INTERNAL.', 'secret..', '..%20', '...', '..:', '..%EF%BC%8F', '%2e%2e%20', '....', '.%E2%80%8B.', '..%E2%80%8E', '..%F3%A0%80%81', '%20', ':x', '..::$DATA', 'a%E2%88%95b', '%E2%84%80', 'a%C2%A5b', 'admin%E2%80%8E', 'adm%CD%8Fin', 'admin%EF%B8%8F', 'admin%F3%A0%80%81', '%E2%80%AEadmin', 'ad%E1%85%9Fmin', 'a.', 'a:b', '.well-known']
const DENY_HOSTS = ['api.example.com', 'API.example.com.', 'docs.example.com', 'evil.example.org', 'EVIL.example.org.', 'a.evil.example.org', 'x.internal.example.org', 'internal.example.org', 'a.example.org', '10.0.0.1', '0xa000001', '167772161', '10.0.0.1.', '[::ffff:10.0.0.1]', '[::ffff:a00:1]', '[::a00:1]', '[64:ff9b::a00:1]', '[64:ff9b:1:a00:0:100::]', '[2002:a00:1::1]', '[2001:0:4136:e378:8000:63bf:f5ff:fffe]', '[fd00::1]', '[2001:db8::1]', '[::ffff:c0a8:101]', 'static.example.net', 'localhost', '127.0.0.1', '127.1.2.3', '[::1]', '[::ffff:127.0.0.1]', '[64:ff9b::7f00:1]', 'a.localhost']

/** Code points NFKC (Node's ICU) or best fit (the published tables) turn into something the reading treats specially. */
const LOOK_ALIKES = [...new Set([...NFKC_SPECIAL, ...BEST_FIT.keys()])].map((c) => String.fromCodePoint(c))
/** Segment shapes a look-alike makes a dot segment, a separator or a name (SPEC §11/§16). */
const LOOK_ALIKE_SHAPES = ['X', 'XX', '.X', 'X.', 'XXX', 'X;x', 'X:x', '..X', 'X..', 'aXb', 'X%20', 'Xadmin', 'adminX', 'adXmin', '.X;', 'X.:$DATA']
/** One look-alike in one shape, raw or percent-encoded as UTF-8. */
function lookAlikeSegment(int, pick) {
  const x = pick(LOOK_ALIKES)
  const seg = pick(LOOK_ALIKE_SHAPES).replace(/X/g, () => (int(3) === 0 ? pick(LOOK_ALIKES) : x))
  return int(2) === 0 ? seg : Array.from(seg, (c) => (c.codePointAt(0) < 0x80 ? c : encodeURIComponent(c))).join('')
}

/**
 * The one case-recording loop both models run: `one(wrong)` in batches of 200
 * until `seconds` pass. `wrong(entry, input, extra)` records a wrong allow
 * (the first 50, inputs capped at 300 characters).
 */
function explore(seconds, one) {
  const wrongAllows = []
  const wrong = (entry, input, extra) => {
    if (wrongAllows.length < 50) wrongAllows.push({ entry, input: JSON.stringify(input.length > 300 ? input.slice(0, 300) : input), length: input.length, ...extra })
  }
  let cases = 0
  const deadline = Date.now() + seconds * 1000
  while (Date.now() < deadline) {
    for (let k = 0; k < 200; k++, cases++) one(wrong)
  }
  return { cases, wrongAllows }
}

/** `authorizeFetch(input)`: the canonical URL, or null on PERMISSION_DENIED (any other throw is recorded). */
function authorized(checker, input, wrong) {
  try {
    return checker.authorizeFetch(input)
  } catch (e) {
    if (e.code !== 'PERMISSION_DENIED') wrong('authorizeFetch threw', input, { error: String(e) })
    return null
  }
}

async function runDeny({ seconds, seed, log }) {
  const rules = DENY_MANIFEST.fetch.map((p) => naiveRule(p, false))
  const denies = DENY_MANIFEST.deny.fetch.map((p) => naiveRule(p, true))
  const checker = createChecker(DENY_MANIFEST, { plugin: 'oracle-fetch-deny' })
  const rnd = prng(seed ^ 0x9e3779b9)
  const g = generators(rnd)
  const { int, pick } = g
  let allowed = 0
  let denied = 0
  // Path scopes are exact on both sides: a path the model grants (and no deny
  // matches) that the checker calls path_not_allowed is a disagreement.
  const pathMismatches = []
  const r = explore(seconds, (wrong) => {
    const segs = [...Array(int(6))].map(() => (int(8) === 0 ? g.anyCodePoint() : int(5) === 0 ? lookAlikeSegment(int, pick) : pick(PATH_SEGS)))
    const sep = () => pick(['/', '/', '/', '/', '\\', '//'])
    const path = segs.map((s) => sep() + s).join('') + (int(4) === 0 ? '/' : '')
    const input = `${pick(['https', 'https', 'http', 'ws', 'HTTPS'])}://${int(12) === 0 ? 'u@' : ''}${pick(DENY_HOSTS)}${int(6) === 0 ? pick([':8443', ':443', ':80', ':1']) : ''}${path}${int(5) === 0 ? '?x=/admin#/y' : ''}`
    const model = naiveDecide(rules, denies, input)
    const d = checker.checkFetch(input)
    if (d.allowed) allowed++
    if (d.reason === 'explicitly_denied') denied++
    if (d.allowed && (model.denied || !model.granted)) wrong('checkFetch', input, { model })
    if (d.reason === 'path_not_allowed' && model.granted && !model.denied && pathMismatches.length < 50) pathMismatches.push({ input })
    const canonical = authorized(checker, input, wrong)
    if (canonical !== null) {
      if (model.denied || !model.granted) wrong('authorizeFetch', input, { model })
      const again = naiveDecide(rules, denies, canonical)
      if (again.denied || !again.granted) wrong('authorizeFetch canonical', input, { canonical, again })
    }
    const ip = pick(['8.8.8.8', '127.0.0.1', '::1', '10.2.3.4', '::ffff:10.2.3.4', '64:ff9b::a02:304', '2002:a02:304::1', 'fd00::9', '192.168.7.7', '2606:4700::1111', '93.184.216.34'])
    const a = checker.checkFetchAddress(input, ip)
    if (a.allowed) {
      const m2 = naiveDecide(rules, denies, input, ip)
      if (model.denied || !model.granted || m2.denied) wrong('checkFetchAddress', input, { ip, model, m2 })
    }
  })
  log(`fetch deny/path oracle: ${r.cases} cases, ${allowed} allowed, ${denied} explicitly denied, ${pathMismatches.length} path scope disagreements, ${r.wrongAllows.length} wrong allows`)
  return { ...r, mismatches: pathMismatches }
}

// ---- Embedded IPv4 (SPEC §3, §10, §16) -------------------------------------
// IPv4 addresses from every not-globally-reachable IPv4 block and from the
// rest of the space, each written in every IPv6 form that embeds it (random
// prefixes, Teredo servers and flags, ISATAP u/g bits, local-use NAT64 at
// each RFC 6052 position), against CIDR denies written in every form
// (IPv4, mapped, compatible, translated, NAT64 /96 and /48, 6to4, Teredo
// server and client, ISATAP) and random IPv6 blocks. The model above
// (`embeddedV4`, `formsNear`: BigInt arithmetic from the RFC bit positions)
// decides; the IPv4 blocks below are typed from the IANA IPv4
// special-purpose registry (not globally reachable rows) plus multicast.
// Property: an explicit deny exactly when the model denies (both ways: a
// deny is never narrower nor wider than it reads), and checkFetchAddress
// under a name grant never allows an address that carries a special IPv4
// address. The Deno broker answers a batch of `[v6]:port` targets too.

const IANA_V4_NOT_GLOBAL = [['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4]].map(([a, len]) => ({ net: ipToBig(a), len, v6: false }))
const v4Special = (n) => IANA_V4_NOT_GLOBAL.some((b) => sameBlock(b, n, 32))
const big6 = (x) => `[${[...Array(8)].map((_, i) => ((x >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(':')}]`
const big4 = (x) => [24n, 16n, 8n, 0n].map((k) => String((x >> k) & 0xffn)).join('.')

function embeddedGen(rnd) {
  const int = (n) => Math.floor(rnd() * n)
  const pick = (a) => a[int(a.length)]
  const rand = (nbits) => {
    let r = 0n
    for (let i = 0; i < nbits; i += 16) r = (r << 16n) | BigInt(int(0x10000))
    return r & ((1n << BigInt(nbits)) - 1n)
  }
  const v4 = () => {
    if (rnd() < 0.55) {
      const b = pick(IANA_V4_NOT_GLOBAL)
      return b.net | (rand(32) & ((1n << BigInt(32 - b.len)) - 1n))
    }
    return pick([() => rand(32), () => 0x08080808n + BigInt(int(512)) - 256n, () => 0x01010101n, () => pick([0n, 1n, M32])])()
  }
  /** One IPv6 form of the IPv4 address `a`, free bits random (sometimes zero). */
  const form = (a) => {
    const z = rnd() < 0.3
    const r = (n) => (z ? 0n : rand(n))
    const which = int(13)
    switch (which) {
      case 0: return (0xffffn << 32n) | a
      case 1: return a
      case 2: return (0xffff0000n << 32n) | a
      case 3: return (0x64ff9bn << 96n) | a
      case 4: return NAT64_LOCAL | (r(48) << 32n) | a
      case 5: return NAT64_LOCAL | (r(24) << 56n) | (a << 24n) | r(24)
      case 6: return NAT64_LOCAL | ((a >> 24n) << 64n) | (r(8) << 56n) | ((a & 0xffffffn) << 32n) | r(32)
      case 7: return NAT64_LOCAL | ((a >> 16n) << 64n) | (r(8) << 56n) | ((a & 0xffffn) << 40n) | r(40)
      case 8: return (0x2002n << 112n) | (a << 80n) | r(80)
      case 9: return (0x20010000n << 96n) | (a << 64n) | r(64)
      case 10: return (0x20010000n << 96n) | (r(64) << 32n) | (a ^ M32)
      default: {
        // ISATAP: a global-looking /64 (2000::/3), ::/64 or anything, u/g bits random.
        const prefix = pick([() => (0x2n << 60n) | rand(60), () => 0n, () => rand(64), () => 0x2606470000100020n])()
        return (prefix << 64n) | (BigInt(pick([0, 1, 2, 3])) << 56n) | (0x5efen << 32n) | a
      }
    }
  }
  /** A CIDR deny: an IPv4 block written in one of the forms, or an IPv6 block. */
  const cidr = () => {
    const k = pick([0, 4, 8, 10, 12, 15, 16, 20, 24, 25, 28, 30, 31, 32, 8, 16, 24, 32])
    const mask = k === 0 ? 0n : (M32 << BigInt(32 - k)) & M32
    const a = v4() & mask
    const c = (a ^ M32) & mask
    const server = pick([0x41367e78n, 0n, 0xc0a80001n])
    switch (int(12)) {
      case 0: return `${big4(a)}/${k}`
      case 1: return `${big6((0xffffn << 32n) | a)}/${96 + k}`
      case 2: return `${big6(a)}/${96 + k}`
      case 3: return `${big6((0xffff0000n << 32n) | a)}/${96 + k}`
      case 4: return `${big6((0x64ff9bn << 96n) | a)}/${96 + k}`
      case 5: return `${big6(NAT64_LOCAL | a)}/${96 + k}`
      case 6: return k <= 16 ? `${big6(NAT64_LOCAL | ((a >> 16n) << 64n))}/${48 + k}` : `${big4(a)}/${k}`
      case 7: return `${big6((0x2002n << 112n) | (a << 80n))}/${16 + k}`
      case 8: return `${big6((0x20010000n << 96n) | (a << 64n))}/${32 + k}`
      case 9: return `${big6((0x20010000n << 96n) | (server << 64n) | (0x800063bfn << 32n) | c)}/${96 + k}`
      case 10: return `${big6((0x2606470000100020n << 64n) | (BigInt(pick([0, 2])) << 56n) | (0x5efen << 32n) | a)}/${96 + k}`
      default: {
        // A random IPv6 block, sometimes one holding whole embedding regions.
        const len = pick([0, 3, 8, 16, 32, 48, 60, 64, 65, 72, 80, 95, 96, 100, 120, 128])
        const base = pick([() => rand(128), () => 0n, () => 0x64ff9bn << 96n, () => 0x2002n << 112n, () => 0x20010000n << 96n, () => 0xfd00n << 112n, () => (0x2606470000100020n << 64n) | (0x5efen << 32n)])()
        const m = len === 0 ? 0n : ((1n << 128n) - 1n) ^ ((1n << BigInt(128 - len)) - 1n)
        return `${big6(base & m)}/${len}`
      }
    }
  }
  return { v4, form, cidr, int, pick }
}

/** One request line per target to a live broker; its replies, in order. */
async function brokerAsk(sockPath, targets) {
  const net = require('node:net')
  const sock = net.connect(sockPath)
  await new Promise((r, j) => {
    sock.once('connect', r)
    sock.once('error', j)
  })
  sock.setEncoding('utf8')
  let buf = ''
  const replies = []
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`broker answered ${replies.length} of ${targets.length}`)), 20000)
    sock.on('data', (d) => {
      buf += d
      let i
      while ((i = buf.indexOf('\n')) >= 0) {
        replies.push(JSON.parse(buf.slice(0, i)))
        buf = buf.slice(i + 1)
      }
      if (replies.length >= targets.length) {
        clearTimeout(timer)
        resolve()
      }
    })
    targets.forEach((value, k) => sock.write(`${JSON.stringify({ v: 1, pid: 99, id: k + 1, datetime: new Date().toISOString(), permission: 'net', value })}\n`))
  })
  sock.destroy()
  return replies.sort((x, y) => x.id - y.id)
}

async function runEmbedded({ seconds, seed, log }) {
  const { PermissionPolicy, serveDenoBroker } = require('../../index.js')
  const rnd = prng(seed ^ 0x5efe)
  const g = embeddedGen(rnd)
  const explicitMismatches = []
  let denied = 0
  let allowed = 0
  let policy = null
  let denies = null
  const r = explore(seconds, (wrong) => {
    if (policy === null || g.int(25) === 0) {
      const rules = [...Array(1 + g.int(3))].map(() => g.cidr())
      policy = PermissionPolicy.fromManifest({ fetch: ['*.example.org'], deny: { fetch: rules } }, { plugin: 'oracle-fetch-embedded', platform: 'posix' })
      denies = rules.map((p) => naiveRule(p, true))
    }
    const a = g.v4()
    const x = g.form(a)
    const ip = big6(x).slice(1, -1)
    const forms6 = [{ v6: true, n: x }, ...embeddedV4(x).map((n) => ({ v6: false, n }))]
    const forms4 = [{ v6: false, n: a }, { v6: true, n: (0xffffn << 32n) | a }]
    const modelDenied6 = denies.some((d) => forms6.some((f) => inCidr(d, f)))
    const modelDenied4 = denies.some((d) => forms4.some((f) => inCidr(d, f)))
    const carriesSpecial = embeddedV4(x).some(v4Special)
    for (const [entry, d, want] of [
      ['checkFetch [v6]', policy.checkFetch(`http://[${ip}]/`), modelDenied6],
      ['checkFetchAddress v6', policy.checkFetchAddress('https://a.example.org/', ip), modelDenied6],
      ['checkFetch v4', policy.checkFetch(`http://${big4(a)}/`), modelDenied4],
      ['checkFetchAddress v4', policy.checkFetchAddress('https://a.example.org/', big4(a)), modelDenied4],
    ]) {
      const got = d.reason === 'explicitly_denied'
      if (got) denied++
      if (d.allowed) allowed++
      // A deny the checker misses is a wrong allow when nothing else denies; a wrong reason otherwise.
      if (want && d.allowed) wrong(entry, ip, { v4: big4(a), deny: policy.toJSON().deny.fetch })
      if (want !== got && !d.allowed && explicitMismatches.length < 50) explicitMismatches.push({ entry, ip, v4: big4(a), deny: policy.toJSON().deny.fetch, model: want ? 'explicitly_denied' : 'no deny', reason: d.reason })
    }
    const addr = policy.checkFetchAddress('https://a.example.org/', ip)
    if (addr.allowed && carriesSpecial) wrong('checkFetchAddress special', ip, { carries: embeddedV4(x).map(big4) })
  })
  // The Deno broker: one policy with a deny in each form, a batch of targets.
  let brokerCases = 0
  if (process.platform !== 'win32') {
    const os = require('node:os')
    const fsm = require('node:fs')
    const path = require('node:path')
    const rules = [...Array(6)].map(() => g.cidr())
    const targets = []
    const grants = ['https://*.example.org']
    for (let k = 0; k < 150; k++) {
      const a = g.v4()
      const x = g.form(a)
      targets.push({ target: `${big6(x)}:443`, forms: [{ v6: true, n: x }, ...embeddedV4(x).map((n) => ({ v6: false, n }))] })
      targets.push({ target: `${big4(a)}:443`, forms: [{ v6: false, n: a }, { v6: true, n: (0xffffn << 32n) | a }] })
      grants.push(`https://${big6(x)}`, `https://${big4(a)}`)
    }
    const tmp = fsm.mkdtempSync(path.join(os.tmpdir(), 'oracle-embedded-'))
    const broker = await serveDenoBroker(PermissionPolicy.fromManifest({ fetch: grants, deny: { fetch: rules } }, { plugin: 'oracle-fetch-embedded', platform: 'posix' }), { tmpDir: tmp })
    try {
      const replies = await brokerAsk(broker.path, targets.map((t) => t.target))
      const model = rules.map((p) => naiveRule(p, true))
      replies.forEach((rep, k) => {
        const want = model.some((d) => targets[k].forms.some((f) => inCidr(d, f)))
        brokerCases++
        if (rep.result === 'allow' && want) r.wrongAllows.push({ entry: 'deno broker net', input: targets[k].target, deny: rules })
        if (rep.result !== 'allow' && !want && explicitMismatches.length < 50) explicitMismatches.push({ entry: 'deno broker net', target: targets[k].target, deny: rules, reason: rep.reason })
      })
    } finally {
      await broker.close()
      fsm.rmSync(tmp, { recursive: true, force: true })
    }
  }
  log(`fetch embedded-IPv4 oracle: ${r.cases} cases (${brokerCases} Deno broker targets), ${denied} explicitly denied, ${allowed} allowed, ${explicitMismatches.length} explicit denials the model disagrees with, ${r.wrongAllows.length} wrong allows`)
  return { cases: r.cases + brokerCases, wrongAllows: r.wrongAllows, mismatches: explicitMismatches }
}

async function run({ seconds = 3, seed = 1, log = () => {} } = {}) {
  // A third of the time for deny rules and path scopes, a sixth for embedded IPv4.
  const second = await runDeny({ seconds: seconds / 3, seed, log })
  const third = await runEmbedded({ seconds: seconds / 6, seed, log })
  seconds -= seconds / 3 + seconds / 6
  const patterns = MANIFEST.map(naivePattern)
  const checker = createChecker({ fetch: MANIFEST }, { plugin: 'oracle-fetch' })
  const rnd = prng(seed)
  const g = generators(rnd)
  let mismatches = 0
  const mismatchSamples = []
  let modelGrants = 0
  const r = explore(seconds, (wrong) => {
    const input = g.url()
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
    const canonical = authorized(checker, input, wrong)
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
  })
  log(`fetch oracle: ${r.cases} cases, ${modelGrants} granted by the model, ${mismatches} denied that the model grants, ${r.wrongAllows.length} wrong allows`)
  // Denials the model grants are counted, not failures (a deny is never unsafe):
  // reported as `deniedButGranted`, not as `mismatches` (which the runner fails on);
  // `mismatches` are the deny/path model's path-scope disagreements (grants are exact on both sides).
  return { cases: r.cases + second.cases + third.cases, wrongAllows: [...r.wrongAllows, ...second.wrongAllows, ...third.wrongAllows], mismatches: [...second.mismatches, ...third.mismatches], deniedButGranted: mismatches, mismatchSamples }
}

module.exports = { run, runEmbedded, naiveGrant, naivePattern, naiveDecide, naiveRule, embeddedV4, MANIFEST, DENY_MANIFEST, readingsOf, readsAsDots, badSegment, denySegment, decodeSegment, BEST_FIT, NFKC_SPECIAL, LOOK_ALIKES, LOOK_ALIKE_SHAPES }
