'use strict'
// SPEC §3 / §11 parser parity, applied in one place (`withParity`). The url
// crate (Rust) and this Node's URL (Ada) use different IDNA/Unicode tables
// and have read dot segments differently, so a URL with anything but plain
// ASCII, a percent-escape, a punycode label or a dot segment can read as two
// different URLs. Such a URL is parsed by both: scheme://host:port must
// agree (Rust compares, in the same crossing as the check), and when the
// check allows, Node's pathname of the input must equal Node's pathname of
// the canonical URL that was checked. Otherwise the URL is refused
// (`invalid_url`; `secret_destination_not_allowed` for secrets.use). A
// refusal carries `target` (Rust's scheme://host:port of the input, when it
// has one) like every other fetch denial (README "Errors").

const { types } = require('node:util')
const { binding, LIMITS } = require('./native.js')
const { describe } = require('./options.js')

const hrefOf = Object.getOwnPropertyDescriptor(URL.prototype, 'href').get

/**
 * The string a fetch check reads: a string as is, or the href of a plain
 * `URL` (this realm's, prototype exactly `URL.prototype`, no own properties:
 * a fresh URL has none). A subclass, a Proxy, or a URL with its own
 * `href`/`toString`/`Symbol.toPrimitive` is a TypeError, since `fetch(u)`
 * could request another URL than the href that was checked.
 */
function urlHref(url) {
  if (typeof url === 'string') return url
  if (url !== null && typeof url === 'object' && !types.isProxy(url)) {
    try {
      if (Object.getPrototypeOf(url) === URL.prototype && Reflect.ownKeys(url).length === 0) return Reflect.apply(hrefOf, url, [])
    } catch {}
    if (url instanceof URL) throw new TypeError('url must be a string or a plain URL (no subclass, no own properties)')
  }
  throw new TypeError(`url must be a string or a URL, got ${types.isProxy(url) ? 'a Proxy' : describe(url)}`)
}

/** Anything that is not printable ASCII, a percent-escape, a punycode label, or a segment starting with a dot. */
const FETCH_SUSPECT = /[^\x21-\x7e]|%|xn--|[/\\]\./i
/** What makes an authority need the second parse. */
const AUTHORITY_SUSPECT = /[^\x21-\x7e]|%|xn--/i
/**
 * A path segment that starts with a dot (or its escape): dot-segment removal
 * is where Node's URL (Ada) has read paths differently from WHATWG and the
 * core (Node 20's Ada keeps `/admin/.b/../../public/z` as written), so such a
 * path is parsed by both and must read the same (SPEC §3, §11).
 */
const PATH_DOT_SEGMENT = /[/\\](?:\.|%2e)/i
/** The authority of a URL with a scheme, as WHATWG finds it: any run of '/' or '\\' after `scheme:`, up to '/', '\\', '?' or '#'. */
const FETCH_AUTHORITY = /^[a-zA-Z][a-zA-Z0-9+.-]*:[/\\]*([^/\\?#]*)/

/**
 * Whether `s` is certainly longer than the core's URL limit: every UTF-16
 * unit is at least one UTF-8 byte. Such a string is refused by the core's
 * length check, which raw.rs's copy helper makes without copying it, so it
 * takes the raw check: no regex, no `isWellFormed` scan and no Node parse
 * (Node 20 aborts the process building the error for a 2^29-byte URL, and a
 * 64 MB one costs ~150 ms to scan). The decision stays the core's.
 */
const beyondUrlLimit = (s) => s.length > LIMITS.maxUrlBytes

/**
 * Whether `s` needs Node's parse too. Plain printable-ASCII URLs without '%',
 * 'xn--' or a dot after a slash answer after one regex test (the hot path). Otherwise the
 * authority is found as WHATWG does; tab/newline anywhere (stripped by the
 * parser) or C0/space at either end (trimmed) means "not sure": parse twice.
 */
function fetchNeedsSecondParse(s) {
  if (beyondUrlLimit(s) || !FETCH_SUSPECT.test(s)) return false
  if (/[\t\n\r]/.test(s) || s.charCodeAt(0) <= 0x20 || s.charCodeAt(s.length - 1) <= 0x20) return true
  const m = FETCH_AUTHORITY.exec(s)
  return m === null || AUTHORITY_SUSPECT.test(m[1]) || PATH_DOT_SEGMENT.test(s.slice(m[0].length))
}

/**
 * Node's view of `s` for the Rust check (wire.rs `NodeView`): `undefined`
 * when `s` needs no second parse, else `{ href }` (`{}` when Node's URL
 * refuses it, which never agrees).
 */
function nodeView(s) {
  if (!fetchNeedsSecondParse(s)) return undefined
  try {
    return { href: new URL(s).href }
  } catch {
    return {}
  }
}

/**
 * Path parity (SPEC §11): Node's pathname of the input equals its pathname
 * of the canonical URL the core checked, so a host fetching the raw string
 * reaches the path that was checked against path scopes and deny rules.
 */
function pathParity(s, canonical) {
  try {
    return new URL(s).pathname === new URL(canonical).pathname
  } catch {
    return false
  }
}

/**
 * The one application of the parity rule. `cross(node)` is the Rust check
 * of `s` (a wire `Verdict { code, url?, target? }`), given Node's view when
 * `s` needs it (Rust refuses an origin disagreement in the same crossing).
 * When the check allowed a URL that took the second parse, the path must
 * agree too, else the verdict is `refused` (a decision code) with the
 * input's target.
 */
function withParity(s, cross, refused) {
  const node = nodeView(s)
  const v = cross(node)
  if (node !== undefined && typeof v.url === 'string' && !pathParity(s, v.url)) return { code: refused, url: undefined, target: v.target }
  return v
}

/** Node's URL and the Rust core read the same scheme, host and port. */
function originsAgree(s) {
  let href
  try {
    href = new URL(s).href
  } catch {
    return false
  }
  return binding.redactedOriginOf(s) === binding.redactedOriginOf(href)
}

/** The host of a fetch pattern `[scheme://][*.]host[:port]` reads the same to Node's URL and to the core. */
function grantParity(pattern) {
  let rest = pattern
  const i = rest.indexOf('://')
  if (i >= 0) rest = rest.slice(i + 3)
  if (rest.startsWith('*.')) rest = rest.slice(2)
  if (rest.startsWith('[')) return true
  const c = rest.indexOf(':')
  if (c >= 0) rest = rest.slice(0, c)
  return !AUTHORITY_SUSPECT.test(rest) || originsAgree(`http://${rest}/`)
}

/**
 * The first fetch, deny.fetch or secrets hosts pattern of a manifest (JSON
 * text) that Node would read as another host: `{ pointer, expected }` for
 * INVALID_MANIFEST, or `undefined`.
 */
function grantParityError(json) {
  if (!/[^\x00-\x7f]|xn--|\\u/i.test(json)) return undefined
  const m = JSON.parse(json)
  const list = (patterns, pointer) => {
    if (!Array.isArray(patterns)) return undefined
    for (let i = 0; i < patterns.length; i++) {
      if (typeof patterns[i] === 'string' && !grantParity(patterns[i])) {
        return { pointer: `${pointer}/${i}`, expected: "a host that Node's URL parser reads as the same host (IDNA tables differ; write the punycode A-label)" }
      }
    }
    return undefined
  }
  if (m === null || typeof m !== 'object') return undefined
  let e = list(m.fetch, '/fetch')
  if (e === undefined && m.deny !== null && typeof m.deny === 'object') e = list(m.deny.fetch, '/deny/fetch')
  if (e === undefined && Array.isArray(m.secrets)) {
    for (let i = 0; i < m.secrets.length && e === undefined; i++) {
      const s = m.secrets[i]
      if (s !== null && typeof s === 'object') e = list(s.hosts, `/secrets/${i}/hosts`)
    }
  }
  return e
}

module.exports = { urlHref, beyondUrlLimit, fetchNeedsSecondParse, nodeView, pathParity, withParity, grantParityError }
