'use strict'
// Errors: one class per registry code, guards that work across realms by
// `code`, and serialisation for postMessage with a reviver that can run
// inside a vm.Context (so the plugin never holds a host-realm object).

const { types } = require('node:util')
const { ERROR_REGISTRY, ErrorCode, DENY_REASONS, CAPABILITY_IDS, BUDGET_KINDS, SAMPLE_FIELDS } = require('./native.js')

const SPEC_BY_CODE = new Map(ERROR_REGISTRY.map((e) => [e.code, e]))
const MAX_DETAIL_CHARS = 256

/**
 * Whether a detail escapes code point `c`: control characters, U+2028/2029,
 * every Bidi_Control character (U+061C, U+200E, U+200F, U+202A-202E,
 * U+2066-2069) and lone surrogates. The same set as `escaped_in_details` in
 * src/error.rs (which also escapes the pointer of a Rust `ManifestError`).
 */
const escaped = (c) =>
  c < 0x20 || (c >= 0x7f && c <= 0x9f) || c === 0x061c || c === 0x200e || c === 0x200f || c === 0x2028 || c === 0x2029 || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || (c >= 0xd800 && c <= 0xdfff)

/**
 * Caps a detail string and escapes control and bidi characters, so a detail
 * can be logged without letting plugin-chosen text forge, reorder or hide log lines.
 */
function redact(s, max = MAX_DETAIL_CHARS) {
  s = String(s)
  let out = ''
  for (const ch of s) {
    const c = ch.codePointAt(0)
    const piece = escaped(c) ? `\\u{${c.toString(16)}}` : ch
    if (out.length + piece.length > max) return out + '…'
    out += piece
  }
  return out
}

function formatMessage(template, details) {
  return template.replace(/\{(\w+)\}/g, (_, k) => (details[k] === undefined ? k : String(details[k])))
}

/** Base class of every error this package throws with a registry code. */
class SandboxPermissionError extends Error {
  constructor(code, details, message) {
    const spec = SPEC_BY_CODE.get(code)
    if (!spec) throw new TypeError(`unknown error code ${redact(code)}`)
    const frozen = Object.freeze({ ...details })
    super(message === undefined ? formatMessage(spec.message, frozen) : message)
    Object.defineProperties(this, {
      name: { value: new.target.name, enumerable: false, configurable: true, writable: true },
      code: { value: code, enumerable: true },
      id: { value: spec.id, enumerable: true },
      details: { value: frozen, enumerable: true },
    })
  }
}

class PermissionDeniedError extends SandboxPermissionError {
  constructor(details) {
    super(ErrorCode.PERMISSION_DENIED, details)
  }
}
class BudgetExceededError extends SandboxPermissionError {
  constructor(details) {
    super(ErrorCode.BUDGET_EXCEEDED, details)
  }
}
class InvalidManifestError extends SandboxPermissionError {
  constructor(details) {
    // The pointer holds manifest keys, which are third-party text.
    super(ErrorCode.INVALID_MANIFEST, { pointer: redact(details.pointer), expected: redact(details.expected, 511) })
  }
}
class InvalidSampleError extends SandboxPermissionError {
  constructor(details) {
    super(ErrorCode.INVALID_SAMPLE, details)
  }
}
class UnsupportedPlatformError extends SandboxPermissionError {
  constructor(details) {
    super(ErrorCode.ERR_UNSUPPORTED_PLATFORM, details)
  }
}

const CLASS_BY_CODE = new Map([
  [ErrorCode.PERMISSION_DENIED, PermissionDeniedError],
  [ErrorCode.BUDGET_EXCEEDED, BudgetExceededError],
  [ErrorCode.INVALID_MANIFEST, InvalidManifestError],
  [ErrorCode.INVALID_SAMPLE, InvalidSampleError],
  [ErrorCode.ERR_UNSUPPORTED_PLATFORM, UnsupportedPlatformError],
])

/**
 * The `code` of a value, read as an own data property only (no getters, no
 * prototype chain, no Proxy trap that throws escapes): works on errors from
 * any realm or revived from a message.
 */
function codeOf(e) {
  if (e === null || (typeof e !== 'object' && typeof e !== 'function')) return undefined
  try {
    const d = Object.getOwnPropertyDescriptor(e, 'code')
    return d && Object.hasOwn(d, 'value') && typeof d.value === 'string' ? d.value : undefined
  } catch {
    return undefined
  }
}

const isPermissionDenied = (e) => codeOf(e) === ErrorCode.PERMISSION_DENIED
const isBudgetExceeded = (e) => codeOf(e) === ErrorCode.BUDGET_EXCEEDED
const isInvalidManifest = (e) => codeOf(e) === ErrorCode.INVALID_MANIFEST
const isInvalidSample = (e) => codeOf(e) === ErrorCode.INVALID_SAMPLE
const isSandboxPermissionError = (e) => SPEC_BY_CODE.has(codeOf(e))

/** An own, enumerable data property's value; `undefined` for an accessor or anything else (never runs a getter). */
function ownData(o, key) {
  const d = Object.getOwnPropertyDescriptor(o, key)
  return d !== undefined && d.enumerable && Object.hasOwn(d, 'value') ? d.value : undefined
}

/** A plain array of strings, read through own data properties; `undefined` for anything else. */
function stringArray(v) {
  if (!Array.isArray(v) || types.isProxy(v)) return undefined
  const len = Object.getOwnPropertyDescriptor(v, 'length').value
  const out = []
  for (let i = 0; i < len; i++) {
    const d = Object.getOwnPropertyDescriptor(v, i)
    if (d === undefined || !Object.hasOwn(d, 'value') || typeof d.value !== 'string') return undefined
    out.push(d.value)
  }
  return out
}

/**
 * Keeps only primitive detail values (and arrays of strings), redacted,
 * read as own enumerable data properties: a getter is never run and its
 * field is left out, like a field of another type. A Proxy, or a read that
 * throws, is a TypeError (never the thrown value itself).
 */
function sanitizeDetails(details) {
  const out = {}
  if (details === null || typeof details !== 'object') return out
  try {
    if (types.isProxy(details)) throw new TypeError('a Proxy')
    for (const key of Reflect.ownKeys(details)) {
      if (typeof key !== 'string' || key === '__proto__') continue
      const v = ownData(details, key)
      if (typeof v === 'string') out[redact(key)] = redact(v, key === 'expected' ? 511 : MAX_DETAIL_CHARS)
      else if (typeof v === 'number' || typeof v === 'boolean' || v === null) out[redact(key)] = v
      else {
        const list = stringArray(v)
        if (list !== undefined) out[redact(key)] = list.map((x) => redact(x))
      }
    }
  } catch {
    throw new TypeError('error details must be a plain object of data properties')
  }
  return out
}

/**
 * A plain, structured-clone- and JSON-safe form of a package error, for
 * `postMessage`. Throws a TypeError for anything else.
 */
function serializeError(e) {
  const code = codeOf(e)
  const spec = SPEC_BY_CODE.get(code)
  if (!spec) throw new TypeError('serializeError: not an error of @suaveplan/api-sandbox-permissions')
  let details
  try {
    details = Object.getOwnPropertyDescriptor(e, 'details')?.value
  } catch {
    throw new TypeError('serializeError: its details could not be read')
  }
  let clean
  try {
    clean = sanitizeDetails(details)
  } catch {
    throw new TypeError('serializeError: details must be a plain object of data properties')
  }
  return { $sandboxPermissionError: 1, code, id: spec.id, message: formatMessage(spec.message, clean), details: clean }
}

/**
 * What a revived error may hold, from the registry and the Rust tables:
 * per code its id, message template and detail fields (the shape of
 * schema/error-details.schema.json). Plain JSON, so the in-context reviver
 * embeds it.
 */
const REVIVE_TABLES = {
  codes: Object.fromEntries(ERROR_REGISTRY.map((e) => [e.code, { id: e.id, message: e.message }])),
  capabilities: [...CAPABILITY_IDS],
  reasons: [...DENY_REASONS],
  budgets: Object.fromEntries(BUDGET_KINDS),
  sampleFields: [...SAMPLE_FIELDS],
  // scheme://host:port, nothing else (the schema's `target`).
  target: '^[a-z][a-z0-9+.-]*://([a-z0-9.-]+|\\[[0-9a-f:.]+\\]|[0-9.]+):[0-9]{1,5}$',
  pointer: '^(/([^~/]|~[01])*)*$',
  // The class name of each code with a class (CLASS_BY_CODE), for errors revived in a vm.Context.
  names: Object.fromEntries([...CLASS_BY_CODE].map(([code, Cls]) => [code, Cls.name])),
}

/**
 * Self-contained (it also runs inside a vm.Context, see errorReviverSource):
 * rebuilds `{ code, id, message, details }` from a parsed serialised error,
 * taking only the known detail fields of its code, each validated and
 * redacted as the error classes do; the message is re-made from the
 * registry template. Anything else is a TypeError: an unknown code, an id
 * that is not the code's, a reason not in the registry, a missing or
 * mistyped field. A `target` that is not exactly scheme://host:port is dropped.
 */
function rebuildSerialized(o, T, redact) {
  const fail = () => new TypeError('not a serialised @suaveplan/api-sandbox-permissions error')
  // Own properties only: a field polluted onto Object.prototype is never read.
  const own = (obj, k) => (Object.prototype.hasOwnProperty.call(obj, k) ? obj[k] : undefined)
  if (o === null || typeof o !== 'object' || Array.isArray(o)) throw fail()
  const code = own(o, 'code')
  if (own(o, '$sandboxPermissionError') !== 1 || typeof code !== 'string') throw fail()
  const spec = Object.prototype.hasOwnProperty.call(T.codes, code) ? T.codes[code] : undefined
  if (spec === undefined || own(o, 'id') !== spec.id) throw fail()
  const rawDetails = own(o, 'details')
  const fields = rawDetails !== null && typeof rawDetails === 'object' && !Array.isArray(rawDetails) ? rawDetails : {}
  const src = Object.create(null)
  for (const k of Object.keys(fields)) src[k] = fields[k]
  const has = (k) => Object.prototype.hasOwnProperty.call(src, k)
  const details = {}
  const str = (k, max) => {
    if (typeof src[k] !== 'string') throw fail()
    details[k] = redact(src[k], max)
  }
  const oneOf = (k, list) => {
    if (typeof src[k] !== 'string' || !list.includes(src[k])) throw fail()
    details[k] = src[k]
  }
  const numAtLeast = (k, min, strict) => {
    const v = src[k]
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min || (strict && v === min)) throw fail()
    details[k] = v
  }
  switch (code) {
    case 'PERMISSION_DENIED':
      str('plugin', 256)
      oneOf('capability', T.capabilities)
      oneOf('reason', T.reasons)
      if (has('target') && typeof src.target === 'string' && src.target.length <= 257 && new RegExp(T.target).test(src.target)) details.target = src.target
      break
    case 'BUDGET_EXCEEDED':
      str('plugin', 256)
      str('capability', 256)
      oneOf('budget', Object.keys(T.budgets))
      oneOf('reason', [T.budgets[src.budget]])
      numAtLeast('limit', 0, true)
      numAtLeast('observed', 0, false)
      numAtLeast('elapsedMs', 0, false)
      break
    case 'INVALID_MANIFEST':
      str('pointer', 256)
      if (!new RegExp(T.pointer).test(details.pointer)) throw fail()
      str('expected', 511)
      break
    case 'INVALID_SAMPLE':
      oneOf('field', T.sampleFields)
      break
    case 'ERR_UNSUPPORTED_PLATFORM':
      str('feature', 256)
      str('platform', 256)
      break
    case 'LOCKDOWN_REFUSED':
    case 'LOCKDOWN_FAILED':
      str('reason', 511)
      break
    default:
      // A registry code this reviver has no field list for keeps no details.
      break
  }
  const message = spec.message.replace(/\{(\w+)\}/g, (_, k) => (own(details, k) === undefined ? k : String(details[k])))
  return { code, id: spec.id, message, details }
}

/**
 * The error class instance for an error thrown by the Rust wire (lib/native.js
 * `decodeError`): `code` is a registry code, `details` the raw fields Rust set;
 * each class redacts its fields as it does for errors made in JS.
 */
function fromWire(code, details) {
  const str = (k) => (typeof details[k] === 'string' ? details[k] : '')
  switch (code) {
    case ErrorCode.INVALID_MANIFEST:
      return new InvalidManifestError({ pointer: str('pointer'), expected: str('expected') })
    case ErrorCode.ERR_UNSUPPORTED_PLATFORM:
      return new UnsupportedPlatformError({ feature: redact(str('feature')), platform: redact(str('platform')) })
    case ErrorCode.LOCKDOWN_REFUSED:
    case ErrorCode.LOCKDOWN_FAILED:
      return new SandboxPermissionError(code, { reason: redact(str('reason'), 511) })
    default:
      return new SandboxPermissionError(code, sanitizeDetails(details))
  }
}

/** Rebuilds the error (this realm's classes) from `serializeError` output or its JSON. */
function reviveError(obj) {
  // A JSON round trip: whatever the input (getters, Proxies, cycles), what is
  // revived is plain data, and anything unreadable is a TypeError.
  let r
  try {
    obj = JSON.parse(typeof obj === 'string' ? obj : JSON.stringify(obj))
    r = rebuildSerialized(obj, REVIVE_TABLES, redact)
  } catch {
    throw new TypeError('reviveError: not a serialised @suaveplan/api-sandbox-permissions error')
  }
  const Cls = CLASS_BY_CODE.get(r.code) || SandboxPermissionError
  return Cls === SandboxPermissionError ? new Cls(r.code, r.details) : new Cls(r.details)
}

/**
 * Self-contained: evaluated inside a vm.Context, it builds the error from
 * the context's own `Error`, so plugin code never reaches a host-realm
 * object (whose `constructor.constructor` would be the host's `Function`).
 * Takes the JSON text of `serializeError` output.
 */
function reviveInRealm(json) {
  'use strict'
  // `rebuild`, `T` and `redact` are bound by errorReviverSource.
  const r = rebuild(JSON.parse(json), T, redact)
  const e = new Error(r.message)
  const name = Object.prototype.hasOwnProperty.call(T.names, r.code) ? T.names[r.code] : undefined
  Object.defineProperties(e, {
    name: { value: name || 'SandboxPermissionError', configurable: true, writable: true },
    code: { value: r.code, enumerable: true },
    id: { value: r.id, enumerable: true },
    details: { value: Object.freeze(r.details), enumerable: true },
  })
  return e
}

/**
 * Source of a function expression `(json) => Error`; run it in a vm.Context
 * to revive errors there. It carries its own copies of `redact`, the
 * registry tables and `rebuildSerialized`, so it validates exactly as
 * `reviveError` does and reaches nothing outside the context.
 */
const errorReviverSource = `(() => {
  'use strict'
  const MAX_DETAIL_CHARS = ${MAX_DETAIL_CHARS}
  const escaped = ${escaped.toString()}
  const redact = ${redact.toString()}
  const T = ${JSON.stringify(REVIVE_TABLES)}
  const rebuild = ${rebuildSerialized.toString()}
  return ${reviveInRealm.toString()}
})()`

module.exports = {
  redact,
  fromWire,
  SandboxPermissionError,
  PermissionDeniedError,
  BudgetExceededError,
  InvalidManifestError,
  InvalidSampleError,
  UnsupportedPlatformError,
  isPermissionDenied,
  isBudgetExceeded,
  isInvalidManifest,
  isInvalidSample,
  isSandboxPermissionError,
  serializeError,
  reviveError,
  errorReviverSource,
}
