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

function toPlain(value, keys, open) {
  switch (typeof value) {
    case 'string':
      if (!value.isWellFormed()) throw invalid(keys, 'well-formed Unicode text (no lone surrogates)')
      return value
    case 'boolean':
      return value
    case 'number':
      if (Number.isFinite(value)) return value
      throw invalid(keys, keys.length > 1 && keys[0] === 'budgets' ? 'a finite number greater than 0' : 'a finite number')
    case 'object':
      if (value === null) return null
      break
    default:
      throw invalid(keys, `JSON data, got ${typeof value}`)
  }
  if (keys.length > MAX_DEPTH) throw invalid(keys, `at most ${MAX_DEPTH} levels of nesting`)
  if (open.includes(value)) throw invalid(keys, 'no cycles')
  open.push(value)
  try {
    if (Array.isArray(value)) {
      const lenDesc = Object.getOwnPropertyDescriptor(value, 'length')
      const len = lenDesc.value
      if (len > LIMITS.maxPatterns) throw invalid(keys, `at most ${LIMITS.maxPatterns} entries`)
      const out = new Array(len)
      for (let i = 0; i < len; i++) {
        const d = Object.getOwnPropertyDescriptor(value, i)
        if (d === undefined) throw invalid(keys, 'an array without holes', i)
        if (!('value' in d)) throw invalid(keys, 'a data property, not a getter', i)
        keys.push(i)
        out[i] = toPlain(d.value, keys, open)
        keys.pop()
      }
      // Only indices and `length`: another own property would be dropped silently.
      for (const key of Reflect.ownKeys(value)) {
        if (typeof key === 'symbol') throw invalid(keys, 'an array without extra properties (string keys only)')
        if (key !== 'length' && !(String(Number(key)) === key && Number(key) < len)) throw invalid(keys, 'an array without extra properties', key)
      }
      return out
    }
    const proto = Object.getPrototypeOf(value)
    if (proto !== Object.prototype && proto !== null) throw invalid(keys, 'a plain object')
    const out = Object.create(null)
    for (const key of Reflect.ownKeys(value)) {
      if (typeof key === 'symbol') throw invalid(keys, 'string keys only')
      if (!key.isWellFormed()) throw invalid(keys, 'keys of well-formed Unicode text')
      const d = Object.getOwnPropertyDescriptor(value, key)
      if (!('value' in d)) throw invalid(keys, 'a data property, not a getter', key)
      // An explicit `undefined` is an absent optional field (as TypeScript writes it).
      if (d.value === undefined) continue
      keys.push(key)
      out[key] = toPlain(d.value, keys, open)
      keys.pop()
    }
    return out
  } finally {
    open.pop()
  }
}

/** The manifest as JSON text, or throws INVALID_MANIFEST / TypeError. */
function manifestJson(manifest) {
  let plain
  try {
    plain = toPlain(manifest, [], [])
  } catch (e) {
    if (e instanceof InvalidManifestError) throw e
    throw new TypeError(`manifest could not be read as plain data (${e && e.name ? e.name : typeof e})`)
  }
  // `__proto__` keys were copied onto null-prototype objects, so stringify keeps them.
  try {
    return JSON.stringify(plain)
  } catch {
    // Past V8's longest string (about 2^29 characters): far past every limit.
    throw invalid([], 'a manifest whose JSON text fits in one JS string (every limit is far below that)')
  }
}

module.exports = { manifestJson }
