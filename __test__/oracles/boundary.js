'use strict'
// Boundary oracle: strings whose 1-, 2-, 3- and 4-byte UTF-8 characters (and
// lone surrogates) sit at every offset around every buffer size and limit of
// the JS<->Rust boundary, through the public JS API only. Asserts that
// (a) every input over its documented UTF-8 byte limit is denied with the
// entry point's invalid reason, (b) check and assert/authorize agree, and
// (c) the verdict equals a naive model written from SPEC §2-§5, which shares
// no code with the checker (its own UTF-8 count, its own path normaliser,
// the running Node's URL for fetch).
//
// Sizes come from src/binding/raw.rs (stack buffers: paths and payload
// strings 4096 + 5 bytes, URLs 2048, capability ids 59 + 5; before the fix:
// 4098, 2048 and 64) and the limits (4096 path/payload bytes, 65536 URL
// bytes, 256 plugin-id bytes).

const { createChecker, isPermissionDenied } = require('../../index.js')

const LIMIT = { path: 4096, payload: 4096, url: 65536, name: 256 }
const BOUNDARIES = [59, 62, 63, 64, 69, 256, 2046, 2047, 2048, 2049, 4094, 4095, 4096, 4097, 4098, 4100, 4101, 4102, 65535, 65536, 65537]
// Characters by UTF-8 width; 'lone' is a lone surrogate (3 bytes as U+FFFD, ill-formed in JS).
const WIDE = {
  1: ['a', 'Z', '0'],
  2: ['é', 'ÿ', '\u00AD', 'ж'],
  3: ['€', '中', '\u200B', '\uFE00'],
  4: ['😀', '\u{10348}', '\u{E0100}'],
  lone: ['\uD800', '\uDBFF', '\uDC00', '\uDFFF'],
}

/** UTF-8 bytes of a JS string, lone surrogates as 3 (U+FFFD). Written here, not borrowed. */
function utf8len(s) {
  let n = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x80) n += 1
    else if (c < 0x800) n += 2
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && s.charCodeAt(i + 1) >= 0xdc00 && s.charCodeAt(i + 1) <= 0xdfff) {
      n += 4
      i++
    } else n += 3
  }
  return n
}

function wellFormed(s) {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < s.length ? s.charCodeAt(i + 1) : 0
      if (d < 0xdc00 || d > 0xdfff) return false
      i++
    } else if (c >= 0xdc00 && c <= 0xdfff) return false
  }
  return true
}

const ALLOW = { allowed: true }
const deny = (reason) => ({ allowed: false, reason })

/** SPEC §2 (posix): invalid, then lexical normalisation, then `/data/plugin/**`. */
function fsModel(p) {
  if (!wellFormed(p) || p === '' || p[0] !== '/' || p.includes('\0') || utf8len(p) > LIMIT.path) return deny('invalid_path')
  const stack = []
  for (const seg of p.split('/')) {
    if (seg === '' || seg === '.') continue
    if (seg === '..') {
      if (stack.length === 0) return deny('path_traversal')
      stack.pop()
    } else stack.push(seg)
  }
  return stack.length >= 3 && stack[0] === 'data' && stack[1] === 'plugin' ? ALLOW : deny('not_allowlisted')
}

/** SPEC §3 with Node's own URL: `api.example.com`, http(s), default port. */
function fetchModel(s) {
  if (!wellFormed(s) || utf8len(s) > LIMIT.url) return deny('invalid_url')
  let u
  try {
    u = new URL(s)
  } catch {
    return deny('invalid_url')
  }
  if (u.username !== '' || u.password !== '') return deny('credentials_in_url')
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return deny('scheme_not_allowed')
  if (u.hostname !== 'api.example.com') return deny('host_not_allowlisted')
  return u.port === '' ? ALLOW : deny('port_not_allowed')
}

/** SPEC §4: `orders.*` is exactly two segments, the first `orders`, within 4096 bytes. */
function topicModel(t) {
  if (!wellFormed(t) || t === '' || utf8len(t) > LIMIT.payload) return deny('invalid_payload')
  const parts = t.split('.')
  return parts.length === 2 && parts[0] === 'orders' && parts[1] !== '' ? ALLOW : deny('topic_not_declared')
}

/** A string of exactly `total` UTF-8 bytes: `pre`, ASCII lead, a run of `ch`, ASCII pad, `suf`; a `ch` starts `phase` bytes before `boundary`. */
function build(pre, total, ch, boundary, phase, suf) {
  const w = utf8len(ch)
  const body = total - utf8len(pre) - utf8len(suf)
  if (body < 0) return null
  const start = boundary - phase - utf8len(pre)
  const lead = Math.min(body, start >= 0 ? start % w : 0)
  const n = Math.floor((body - lead) / w)
  return pre + 'b'.repeat(lead) + ch.repeat(n) + 'b'.repeat(body - lead - n * w) + suf
}

function mulberry32(a) {
  return () => {
    a |= 0
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const short = (s) => (s.length > 80 ? `${JSON.stringify(s.slice(0, 40))}…${JSON.stringify(s.slice(-30))} (${utf8len(s)} bytes)` : JSON.stringify(s))

/** The shapes: [kind, prefix, suffix]. Suffixes are what a truncated copy would lose. */
const SHAPES = [
  ['fs', '/data/plugin/', ''],
  ['fs', '/data/plugin/', '/../../../etc/passwd'],
  ['fs', '/data/plugin/x/', '/../../y'],
  ['fs', '/data/plugin/', '/..'],
  ['fetch', 'http://api.example.com/', ''],
  ['fetch', 'https://api.example.com/p?', '#x'],
  ['fetch', 'http://api.example.com', '.evil.com/'],
  ['fetch', 'http://api.example.com', '@evil.com/'],
  ['fetch', 'http://api.example.com/', ':81'],
  ['topic', 'orders.', ''],
  ['topic', 'orders.', '.x'],
  ['topic', 'orders', '.x'],
  ['id', 'events.publish', ''],
]

async function run({ seconds = 3, seed = 1, log = () => {} } = {}) {
  const checker = createChecker({ fs: ['/data/plugin/**'], fetch: ['api.example.com'], events: { publishes: ['orders.*'] } }, { plugin: 'boundary-oracle', platform: 'posix' })
  const wrongAllows = []
  const mismatches = []
  let cases = 0
  const verdict = (d) => (d.allowed ? 'allow' : d.reason)

  const outcome = (fn) => {
    try {
      const r = fn()
      return { ok: true, r }
    } catch (e) {
      return { ok: false, reason: isPermissionDenied(e) ? e.details.reason : `threw ${e && e.name}: ${e && e.message}` }
    }
  }

  function record(kind, input, want, got, extra) {
    cases++
    if (got.allowed && !want.allowed) wrongAllows.push({ kind, input: short(input), want: verdict(want), got: verdict(got), ...extra })
    else if (got.allowed !== want.allowed) mismatches.push({ kind, input: short(input), want: verdict(want), got: verdict(got), ...extra })
    // (a) over the limit: exactly the invalid reason.
    else if (!want.allowed && /^invalid_/.test(want.reason) && got.reason !== want.reason && want.overLimit) {
      mismatches.push({ kind, input: short(input), want: want.reason, got: verdict(got), ...extra })
    }
  }

  function agree(kind, input, check, assertOutcome) {
    // (b) the assert/authorize form throws exactly when the check denies, with its reason.
    if (check.allowed ? !assertOutcome.ok : assertOutcome.ok || assertOutcome.reason !== check.reason) {
      mismatches.push({ kind: `${kind} check/assert`, input: short(input), check: verdict(check), assert: assertOutcome.ok ? 'allow' : assertOutcome.reason })
    }
  }

  function one(kind, s) {
    if (kind === 'fs') {
      const want = { ...fsModel(s), overLimit: utf8len(s) > LIMIT.path }
      for (const mode of ['read', 'write']) {
        const got = checker.checkFs(s, mode)
        // The grant is read-only (the default mode): a write it covers is mode_not_granted.
        record(`fs.${mode}`, s, mode === 'write' && want.allowed ? deny('mode_not_granted') : want, got)
        agree(`fs.${mode}`, s, got, outcome(() => checker.assertFs(s, mode)))
        const viaCap = checker.checkCapability(`fs.${mode}`, { path: s })
        // SPEC §4: a payload string over 4096 bytes (or ill-formed) is invalid_payload; else checkFs's verdict.
        const payloadInvalid = utf8len(s) > LIMIT.payload || !wellFormed(s)
        if (payloadInvalid ? viaCap.allowed || viaCap.reason !== 'invalid_payload' : viaCap.allowed !== got.allowed || viaCap.reason !== got.reason) {
          mismatches.push({ kind: `fs.${mode} checkFs/checkCapability`, input: short(s), checkFs: verdict(got), checkCapability: verdict(viaCap) })
        }
        agree(`fs.${mode} capability`, s, viaCap, outcome(() => checker.assertCapability(`fs.${mode}`, { path: s })))
      }
    } else if (kind === 'fetch') {
      const want = { ...fetchModel(s), overLimit: utf8len(s) > LIMIT.url }
      const got = checker.checkFetch(s)
      record('fetch', s, want, got)
      const auth = outcome(() => checker.authorizeFetch(s))
      agree('fetch authorize', s, got, auth)
      if (auth.ok && typeof auth.r !== 'string') mismatches.push({ kind: 'fetch authorize', input: short(s), got: typeof auth.r })
      agree('fetch assert', s, got, outcome(() => checker.assertFetch(s)))
      const viaCap = checker.checkCapability('fetch', { url: s })
      // The payload field has its own limit (4096 bytes): over it, invalid_payload; else checkFetch's verdict.
      const capWant = utf8len(s) > LIMIT.payload || !wellFormed(s) ? { allowed: false, reason: 'invalid_payload', overLimit: true } : want
      record('fetch capability', s, capWant, viaCap)
      // A public address after resolution changes nothing for a DNS-name grant.
      const addr = checker.checkFetchAddress(s, '93.184.215.14')
      record('fetch address', s, want, addr)
      agree('fetch address', s, addr, outcome(() => checker.assertFetchAddress(s, '93.184.215.14')))
    } else if (kind === 'topic') {
      const want = { ...topicModel(s), overLimit: utf8len(s) > LIMIT.payload || !wellFormed(s) }
      const got = checker.checkCapability('events.publish', { topic: s })
      record('topic', s, want.overLimit ? { allowed: false, reason: 'invalid_payload', overLimit: true } : want, got)
      agree('topic', s, got, outcome(() => checker.assertCapability('events.publish', { topic: s })))
    } else if (kind === 'id') {
      // Only the exact ids exist; anything longer is unknown.
      const want = s === 'events.publish' ? ALLOW : deny('unknown_capability')
      const got = checker.checkCapability(s, { topic: 'orders.created' })
      record('capability id', s, want, got)
    }
  }

  // Every shape x boundary x width x phase x total length around the boundary.
  const plan = []
  for (const [kind, pre, suf] of SHAPES) {
    for (const b of BOUNDARIES) {
      if (kind !== 'fetch' && b > 5000 && kind !== 'id') continue
      if (kind === 'id' && b > 300) continue
      for (const w of Object.keys(WIDE)) {
        for (let d = -6; d <= 6; d++) plan.push([kind, pre, suf, b, w, d])
      }
    }
  }
  const rnd = mulberry32(seed)
  for (let i = plan.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1))
    ;[plan[i], plan[j]] = [plan[j], plan[i]]
  }
  const deadline = Date.now() + seconds * 1000
  let i = 0
  let rounds = 0
  while (Date.now() < deadline) {
    if (i === plan.length) {
      i = 0
      rounds++
    }
    const [kind, pre, suf, b, w, d] = plan[i++]
    const chars = WIDE[w]
    const ch = chars[Math.floor(rnd() * chars.length)]
    const width = utf8len(ch)
    const phase = Math.floor(rnd() * width)
    // The total lands around the boundary itself, or around the limit with the run crossing the boundary.
    const limit = kind === 'fs' ? LIMIT.path : kind === 'fetch' ? (rnd() < 0.5 ? LIMIT.url : LIMIT.payload) : kind === 'topic' ? LIMIT.payload : 64
    const total = rounds === 0 && rnd() < 0.6 ? b + d : Math.max(b, limit) + d + Math.floor(rnd() * 4)
    let s = build(pre, total, ch, b, phase, suf)
    if (s === null) continue
    // Sometimes one lone surrogate at the boundary instead of a run.
    if (w !== 'lone' && rnd() < 0.1) {
      const at = Math.max(pre.length, Math.min(s.length - suf.length, b - pre.length))
      s = s.slice(0, at) + WIDE.lone[Math.floor(rnd() * 4)] + s.slice(at)
    }
    one(kind, s)
  }
  // Plugin ids: UTF-8 bytes, 256 at most, the same TypeError in JS as in Rust.
  for (const ch of ['a', 'é', '€', '😀', '\u202E']) {
    for (let total = 250; total <= 262; total++) {
      const id = build('p', total, ch, 256, 0, '')
      if (id === null) continue
      let threw = null
      try {
        createChecker({}, { plugin: id, platform: 'posix' })
      } catch (e) {
        threw = e
      }
      cases++
      const want = utf8len(id) > LIMIT.name
      if (want !== (threw !== null) || (threw !== null && threw.name !== 'TypeError')) {
        ;(want ? wrongAllows : mismatches).push({ kind: 'plugin id', input: short(id), want: want ? 'TypeError' : 'accepted', got: threw ? `${threw.name} ${threw.code || ''}` : 'accepted' })
      }
    }
  }
  log(`boundary oracle: ${cases} cases, ${wrongAllows.length} wrong allows, ${mismatches.length} mismatches`)
  return { cases, wrongAllows, mismatches }
}

module.exports = { run, utf8len, fsModel, fetchModel, topicModel, build }
