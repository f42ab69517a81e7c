'use strict'
// Copies a manifest into plain JSON data without invoking getters, so the
// Rust core parses exactly what was checked. Anything that is not JSON data
// is INVALID_MANIFEST at its JSON pointer; hostile objects (throwing Proxy
// traps, cycles) become a TypeError or INVALID_MANIFEST, never a crash.

const { types } = require('node:util')
const { LIMITS } = require('./native.js')
const { InvalidManifestError } = require('./errors.js')

const MAX_DEPTH = 16
/**
 * Values one walk reads at most. A valid manifest has about 120,000 at most
 * (seven lists of `maxPatterns` entries, a grant object three values); an
 * array or object the manifest references from many places is read (and
 * counted) at each, so a few small shared arrays cannot make the walk write
 * gigabytes of text (a process-killing out-of-memory, not an error).
 */
const MAX_VALUES = 1_000_000
/**
 * Characters of JSON text one walk writes at most (32 Mi). Shared strings
 * multiply text without values: 99 references to one list of 10,000 1.6 KB
 * strings would be half a gigabyte. Only a manifest of thousands of
 * multi-kilobyte topic or host patterns could be valid and longer.
 */
const MAX_TEXT = 32 * 1024 * 1024

const escapeKey = (k) => k.replace(/~/g, '~0').replace(/\//g, '~1')

/**
 * The walk's position: the keys and indices from the root (`keys`); its
 * state `w`: the containers being copied (`w.open`, for cycles; at most
 * MAX_DEPTH + 1 deep) and the values read so far (`w.values`). The JSON
 * pointer is only spelled out for an error.
 */
function pointerOf(keys, extra) {
  let p = ''
  for (const k of keys) p += `/${typeof k === 'number' ? k : escapeKey(k)}`
  return extra === undefined ? p : `${p}/${typeof extra === 'number' ? extra : escapeKey(extra)}`
}

function invalid(keys, expected, extra) {
  return new InvalidManifestError({ pointer: pointerOf(keys, extra), expected })
}

const tooMany = (keys) => invalid(keys, `a manifest of at most ${MAX_VALUES} JSON values and keys (a value referenced from n places counts n times)`)
const tooLong = (keys) => invalid(keys, `a manifest whose JSON text is at most ${MAX_TEXT} characters (a value referenced from n places is written n times)`)

/**
 * `value` as JSON text, written while it is read: strings, numbers and
 * booleans by `JSON.stringify` of the primitive (no `toJSON` is consulted
 * for a primitive), arrays by their elements, objects by their own
 * enumerable data properties in `Reflect.ownKeys` order, which is the order
 * `JSON.stringify` writes an object's keys in (a getter, a symbol key or a
 * non-enumerable key is INVALID_MANIFEST, never skipped). No intermediate
 * copy is built, so no setter or inherited `toJSON` of any prototype can
 * take part.
 */
function toJson(value, keys, w) {
  if (++w.values > MAX_VALUES) throw tooMany(keys)
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
  if (w.open.includes(value)) throw invalid(keys, 'no cycles')
  // A Proxy could show this walk one thing and a copy of it another.
  if (types.isProxy(value)) throw invalid(keys, 'plain data, not a Proxy')
  // `w` is this walk's own (manifestJson makes it): a throw ends the walk,
  // so nothing needs popping on the way out.
  w.open.push(value)
  const out = Array.isArray(value) ? arrayJson(value, keys, w) : objectJson(value, keys, w)
  w.open.pop()
  return out
}

function arrayJson(value, keys, w) {
  if (Object.getPrototypeOf(value) !== Array.prototype) throw invalid(keys, 'a plain array')
  const len = Object.getOwnPropertyDescriptor(value, 'length').value
  if (len > LIMITS.maxPatterns) throw invalid(keys, `at most ${LIMITS.maxPatterns} entries`)
  let out = '['
  for (let i = 0; i < len; i++) {
    const d = Object.getOwnPropertyDescriptor(value, i)
    if (d === undefined) throw invalid(keys, 'an array without holes', i)
    if (!Object.hasOwn(d, 'value')) throw invalid(keys, 'a data property, not a getter', i)
    keys.push(i)
    out += i === 0 ? toJson(d.value, keys, w) : `,${toJson(d.value, keys, w)}`
    keys.pop()
    if (out.length > MAX_TEXT) throw tooLong(keys)
  }
  // Only indices and `length`: another own property would be dropped silently.
  for (const key of Reflect.ownKeys(value)) {
    if (typeof key === 'symbol') throw invalid(keys, 'an array without extra properties (string keys only)')
    if (key !== 'length' && !isIndexBelow(key, len)) throw invalid(keys, 'an array without extra properties', key)
  }
  return `${out}]`
}

/** Whether `key` is an array index below `len`, as written (`-1`, `0.5`, `1e-7` and `01` are not). */
function isIndexBelow(key, len) {
  const n = Number(key)
  return Number.isInteger(n) && n >= 0 && n < len && String(n) === key
}

function objectJson(value, keys, w) {
  const proto = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== null) throw invalid(keys, 'a plain object')
  // Every own key, as `Reflect.ownKeys` lists them (a symbol or a
  // non-enumerable key is refused below), at V8's fast-path prices: an
  // object with no enumerable key is read with `Reflect.ownKeys` (one call;
  // it is `{}` unless it hides a key), any other with
  // `Object.getOwnPropertyNames` and `Object.getOwnPropertySymbols`
  // (`Reflect.ownKeys` of an object with keys costs three times the two).
  const names = Object.keys(value).length === 0 ? Reflect.ownKeys(value) : Object.getOwnPropertyNames(value)
  if (names.length === 0) {
    // A boxed number, boolean, bigint or symbol has no own key (a boxed
    // string's `length` is refused below as non-enumerable).
    if (types.isBoxedPrimitive(value)) throw invalid(keys, 'a primitive, not a boxed one')
    return '{}'
  }
  // Every key counts, the skipped `undefined` ones too (a shared object of
  // many such keys would otherwise be walked again at each reference uncounted).
  if ((w.values += names.length) > MAX_VALUES) throw tooMany(keys)
  if (Object.getOwnPropertySymbols(value).length !== 0) throw invalid(keys, 'string keys only')
  let out = '{'
  for (let i = 0; i < names.length; i++) {
    const key = names[i]
    if (!key.isWellFormed()) throw invalid(keys, 'keys of well-formed Unicode text')
    const d = Object.getOwnPropertyDescriptor(value, key)
    if (!Object.hasOwn(d, 'value')) throw invalid(keys, 'a data property, not a getter', key)
    // `JSON.stringify` would not write it: a grant the host's own copy or
    // log of the manifest does not show is refused, never compiled.
    if (!d.enumerable) throw invalid(keys, 'an enumerable property', key)
    // An explicit `undefined` is an absent optional field (as TypeScript writes it).
    if (d.value === undefined) continue
    keys.push(key)
    const v = toJson(d.value, keys, w)
    keys.pop()
    out += `${out.length === 1 ? '' : ','}${quote(key)}:${v}`
    if (out.length > MAX_TEXT) throw tooLong(keys)
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
    text = toJson(manifest, [], { open: [], values: 0 })
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
