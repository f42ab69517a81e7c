'use strict'
// Copies a manifest into plain JSON data without invoking getters, so the
// Rust core parses exactly what was checked. Anything that is not JSON data
// is INVALID_MANIFEST at its JSON pointer; hostile objects (throwing Proxy
// traps, cycles) become a TypeError or INVALID_MANIFEST, never a crash.

const { LIMITS } = require('./native.js')
const { InvalidManifestError } = require('./errors.js')

const MAX_DEPTH = 16

const escapeKey = (k) => k.replace(/~/g, '~0').replace(/\//g, '~1')

/**
 * The walk's position: the keys and indices from the root (`keys`) and the
 * containers being copied (`open`, for cycles; at most MAX_DEPTH + 1 deep).
 * The JSON pointer is only spelled out for an error.
 */
function pointerOf(keys, extra) {
  let p = ''
  for (const k of keys) p += `/${typeof k === 'number' ? k : escapeKey(k)}`
  return extra === undefined ? p : `${p}/${typeof extra === 'number' ? extra : escapeKey(extra)}`
}

function invalid(keys, expected, extra) {
  return new InvalidManifestError({ pointer: pointerOf(keys, extra), expected })
}

/**
 * `value` as JSON text, written while it is read: strings, numbers and
 * booleans by `JSON.stringify` of the primitive (no `toJSON` is consulted
 * for a primitive), arrays and objects by their own data properties in
 * `Reflect.ownKeys` order, which is the order `JSON.stringify` writes an
 * object's keys in. No intermediate copy is built, so no setter or
 * inherited `toJSON` of any prototype can take part.
 */
function toJson(value, keys, open) {
  switch (typeof value) {
    case 'string':
      if (!value.isWellFormed()) throw invalid(keys, 'well-formed Unicode text (no lone surrogates)')
      return quote(value)
    case 'boolean':
      return value ? 'true' : 'false'
    case 'number':
      if (Number.isFinite(value)) return JSON.stringify(value)
      throw invalid(keys, keys.length > 1 && keys[0] === 'budgets' ? 'a finite number greater than 0' : 'a finite number')
    case 'object':
      if (value === null) return 'null'
      break
    default:
      throw invalid(keys, `JSON data, got ${typeof value}`)
  }
  if (keys.length > MAX_DEPTH) throw invalid(keys, `at most ${MAX_DEPTH} levels of nesting`)
  if (open.includes(value)) throw invalid(keys, 'no cycles')
  // `open` is this walk's own (manifestJson makes it): a throw ends the walk,
  // so nothing needs popping on the way out.
  open.push(value)
  const out = Array.isArray(value) ? arrayJson(value, keys, open) : objectJson(value, keys, open)
  open.pop()
  return out
}

function arrayJson(value, keys, open) {
  const len = Object.getOwnPropertyDescriptor(value, 'length').value
  if (len > LIMITS.maxPatterns) throw invalid(keys, `at most ${LIMITS.maxPatterns} entries`)
  let out = '['
  for (let i = 0; i < len; i++) {
    const d = Object.getOwnPropertyDescriptor(value, i)
    if (d === undefined) throw invalid(keys, 'an array without holes', i)
    if (!('value' in d)) throw invalid(keys, 'a data property, not a getter', i)
    keys.push(i)
    out += i === 0 ? toJson(d.value, keys, open) : `,${toJson(d.value, keys, open)}`
    keys.pop()
  }
  // Only indices and `length`: another own property would be dropped silently.
  for (const key of Reflect.ownKeys(value)) {
    if (typeof key === 'symbol') throw invalid(keys, 'an array without extra properties (string keys only)')
    if (key !== 'length' && !(String(Number(key)) === key && Number(key) < len)) throw invalid(keys, 'an array without extra properties', key)
  }
  return `${out}]`
}

function objectJson(value, keys, open) {
  const proto = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== null) throw invalid(keys, 'a plain object')
  // Every own key, as `Reflect.ownKeys` lists them, at V8's fast-path
  // prices: an object with no enumerable key is read with `Reflect.ownKeys`
  // (one call; it is `{}` unless it hides a key), any other with
  // `Object.getOwnPropertyNames` and `Object.getOwnPropertySymbols`
  // (`Reflect.ownKeys` of an object with keys costs three times the two).
  const names = Object.keys(value).length === 0 ? Reflect.ownKeys(value) : Object.getOwnPropertyNames(value)
  if (names.length === 0) return '{}'
  if (Object.getOwnPropertySymbols(value).length !== 0) throw invalid(keys, 'string keys only')
  let out = '{'
  for (let i = 0; i < names.length; i++) {
    const key = names[i]
    if (!key.isWellFormed()) throw invalid(keys, 'keys of well-formed Unicode text')
    const d = Object.getOwnPropertyDescriptor(value, key)
    if (!('value' in d)) throw invalid(keys, 'a data property, not a getter', key)
    // An explicit `undefined` is an absent optional field (as TypeScript writes it).
    if (d.value === undefined) continue
    keys.push(key)
    const v = toJson(d.value, keys, open)
    keys.pop()
    out += `${out.length === 1 ? '' : ','}${quote(key)}:${v}`
  }
  return `${out}}`
}

/** What JSON escapes in a well-formed string: `"`, `\` and the C0 controls. */
const NEEDS_ESCAPE = /["\\\u0000-\u001f]/
/** `JSON.stringify(s)` of a well-formed string (without its call when nothing needs escaping). */
const quote = (s) => (NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : `"${s}"`)

/** The manifest as JSON text, or throws INVALID_MANIFEST / TypeError. */
function manifestJson(manifest) {
  let text
  try {
    text = toJson(manifest, [], [])
  } catch (e) {
    if (e instanceof InvalidManifestError) throw e
    // Past V8's longest string (about 2^29 characters): far past every limit.
    if (e instanceof RangeError && /string length/i.test(e.message)) {
      throw invalid([], 'a manifest whose JSON text fits in one JS string (every limit is far below that)')
    }
    throw new TypeError(`manifest could not be read as plain data (${e && e.name ? e.name : typeof e})`)
  }
  return text
}

module.exports = { manifestJson }
