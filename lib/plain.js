'use strict'
// Copies a manifest into plain JSON data without invoking getters, so the
// Rust core parses exactly what was checked. Anything that is not JSON data
// is INVALID_MANIFEST at its JSON pointer; hostile objects (throwing Proxy
// traps, cycles) become a TypeError or INVALID_MANIFEST, never a crash.

const { LIMITS } = require('./native.js')
const { InvalidManifestError } = require('./errors.js')

const MAX_DEPTH = 16

const escapeKey = (k) => k.replace(/~/g, '~0').replace(/\//g, '~1')

function invalid(pointer, expected) {
  return new InvalidManifestError({ pointer, expected })
}

function toPlain(value, pointer, depth, seen) {
  switch (typeof value) {
    case 'string':
      if (!value.isWellFormed()) throw invalid(pointer, 'well-formed Unicode text (no lone surrogates)')
      return value
    case 'boolean':
      return value
    case 'number':
      if (Number.isFinite(value)) return value
      throw invalid(pointer, pointer.startsWith('/budgets/') ? 'a finite number greater than 0' : 'a finite number')
    case 'object':
      if (value === null) return null
      break
    default:
      throw invalid(pointer, `JSON data, got ${typeof value}`)
  }
  if (depth > MAX_DEPTH) throw invalid(pointer, `at most ${MAX_DEPTH} levels of nesting`)
  if (seen.has(value)) throw invalid(pointer, 'no cycles')
  seen.add(value)
  try {
    if (Array.isArray(value)) {
      const lenDesc = Object.getOwnPropertyDescriptor(value, 'length')
      const len = lenDesc.value
      if (len > LIMITS.maxPatterns) throw invalid(pointer, `at most ${LIMITS.maxPatterns} entries`)
      const out = new Array(len)
      for (let i = 0; i < len; i++) {
        const d = Object.getOwnPropertyDescriptor(value, i)
        if (d === undefined) throw invalid(`${pointer}/${i}`, 'an array without holes')
        if (!('value' in d)) throw invalid(`${pointer}/${i}`, 'a data property, not a getter')
        out[i] = toPlain(d.value, `${pointer}/${i}`, depth + 1, seen)
      }
      // Only indices and `length`: another own property would be dropped silently.
      for (const key of Reflect.ownKeys(value)) {
        if (typeof key === 'symbol') throw invalid(pointer, 'an array without extra properties (string keys only)')
        if (key !== 'length' && !(String(Number(key)) === key && Number(key) < len)) throw invalid(`${pointer}/${escapeKey(key)}`, 'an array without extra properties')
      }
      return out
    }
    const proto = Object.getPrototypeOf(value)
    if (proto !== Object.prototype && proto !== null) throw invalid(pointer, 'a plain object')
    const out = Object.create(null)
    for (const key of Reflect.ownKeys(value)) {
      if (typeof key === 'symbol') throw invalid(pointer, 'string keys only')
      if (!key.isWellFormed()) throw invalid(pointer, 'keys of well-formed Unicode text')
      const d = Object.getOwnPropertyDescriptor(value, key)
      const ptr = `${pointer}/${escapeKey(key)}`
      if (!('value' in d)) throw invalid(ptr, 'a data property, not a getter')
      // An explicit `undefined` is an absent optional field (as TypeScript writes it).
      if (d.value === undefined) continue
      out[key] = toPlain(d.value, ptr, depth + 1, seen)
    }
    return out
  } finally {
    seen.delete(value)
  }
}

/** The manifest as JSON text, or throws INVALID_MANIFEST / TypeError. */
function manifestJson(manifest) {
  let plain
  try {
    plain = toPlain(manifest, '', 0, new Set())
  } catch (e) {
    if (e instanceof InvalidManifestError) throw e
    throw new TypeError(`manifest could not be read as plain data (${e && e.name ? e.name : typeof e})`)
  }
  // `__proto__` keys were copied onto null-prototype objects, so stringify keeps them.
  return JSON.stringify(plain)
}

module.exports = { manifestJson }
