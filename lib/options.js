'use strict'
// Reading options and arguments: JS types only (SPEC §2 "Security options").
// Values are validated once, in Rust; what is checked here is what Rust
// cannot see: getters, Proxies, inherited keys, unknown keys, JS types.

const { metrics } = require('@opentelemetry/api')
const { types } = require('node:util')
const native = require('./native.js')
const { redact } = require('./errors.js')

const VERSION = require('../package.json').version

function describe(v) {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'an array'
  return typeof v
}

function optionsObject(options, what) {
  if (options === undefined) return {}
  if (options === null || typeof options !== 'object') throw new TypeError(`${what} must be an object, got ${describe(options)}`)
  return options
}

/**
 * One security option, read strictly (SPEC §2 "Security options"): an own
 * data property's value, or `undefined` when neither the object nor its
 * prototype chain has `key`. An accessor (getter), an inherited value, or a
 * Proxy (the object or anywhere on its prototype chain) is a TypeError, so a
 * host never silently gets the default of a field it meant to set.
 */
function securityOption(obj, key, what) {
  if (types.isProxy(obj)) throw new TypeError(`${what} must be a plain object, not a Proxy`)
  return acceptedOption(obj, key, what)
}

/** `securityOption` of an object `securityOptions` accepted (so not a Proxy). */
function acceptedOption(obj, key, what) {
  const d = Object.getOwnPropertyDescriptor(obj, key)
  if (d !== undefined) {
    if (!Object.hasOwn(d, 'value')) throw new TypeError(`${what}.${key} must be a data property, not a getter`)
    return d.value
  }
  for (let p = Object.getPrototypeOf(obj); p !== null; p = Object.getPrototypeOf(p)) {
    if (types.isProxy(p)) throw new TypeError(`${what} must not inherit from a Proxy`)
    if (Object.getOwnPropertyDescriptor(p, key) !== undefined) throw new TypeError(`${what}.${key} must be an own property, not inherited`)
  }
  return undefined
}

/**
 * An options object carrying only security options: `undefined` (every
 * default) or an object whose own string keys are all in `keys`, each read
 * with `securityOption`. An unknown key (a typo such as `resolveSymLinks`) is
 * a TypeError rather than a silently weaker check. Symbol keys are left
 * alone: no option is read by a symbol, so none can stand for a misspelt one
 * (and `Object.getOwnPropertySymbols` would cost this hot path more than the
 * rest of it).
 */
function securityOptions(options, what, keys) {
  if (options === undefined) return undefined
  if (options === null || typeof options !== 'object') throw new TypeError(`${what} must be an object, got ${describe(options)}`)
  if (types.isProxy(options)) throw new TypeError(`${what} must be a plain object, not a Proxy`)
  // Every own string key, enumerable or not (`Object.getOwnPropertyNames` is
  // on V8's fast path for a small object; `Reflect.ownKeys` costs ten times as much).
  const names = Object.getOwnPropertyNames(options)
  for (let i = 0; i < names.length; i++) {
    if (!isOneOf(names[i], keys)) throw new TypeError(`${what} has an unknown key ${JSON.stringify(redact(names[i]))}; allowed: ${keys.join(', ')}`)
  }
  return options
}

/**
 * `options` as a null-prototype object of its own data properties (each
 * read with `securityOption`: a getter, an inherited value or a Proxy is a
 * TypeError, an unknown key too): no field is ever read from a polluted
 * `Object.prototype`. `undefined` options read as `{}`.
 */
function ownOptions(options, what, keys) {
  const out = Object.create(null)
  const opts = securityOptions(options, what, keys)
  if (opts === undefined) return out
  for (const k of keys) {
    const v = acceptedOption(opts, k, what)
    if (v !== undefined) out[k] = v
  }
  return out
}

/** `keys.includes(k)` for a handful of keys, without the builtin's call. */
function isOneOf(k, keys) {
  for (let i = 0; i < keys.length; i++) if (keys[i] === k) return true
  return false
}

/** Reads an own data property without invoking getters; `undefined` otherwise. */
function ownValue(obj, key) {
  try {
    const d = Object.getOwnPropertyDescriptor(obj, key)
    return d !== undefined && Object.hasOwn(d, 'value') ? d.value : undefined
  } catch {
    return undefined
  }
}

/**
 * Resolves the meter: an explicit one, or the global provider's at this
 * moment. `meter` is read like a security option: a getter or an inherited
 * meter is a TypeError, never the global meter silently in its place (the
 * host's own meter would never see a denial or a breach).
 */
function meterFrom(opts) {
  const meter = securityOption(opts, 'meter', 'options')
  if (meter === undefined) return metrics.getMeter(native.METER_NAME, VERSION)
  if (meter === null || typeof meter.createCounter !== 'function') throw new TypeError('options.meter must be an OpenTelemetry Meter')
  return meter
}

/**
 * The counter `d` describes, from `meter`. What it returns must have an
 * `add` function: checked here, so a meter that returns nothing fails when
 * the host builds the checker or tracker, not at the first denial or breach
 * (which would then go uncounted).
 */
function counterFor(meter, d) {
  const c = meter.createCounter(d.name, { description: d.description, unit: d.unit })
  if (c === null || (typeof c !== 'object' && typeof c !== 'function') || typeof c.add !== 'function') {
    throw new TypeError(`options.meter.createCounter('${d.name}') must return a Counter (an object with an add method)`)
  }
  return c
}

module.exports = { VERSION, describe, optionsObject, securityOption, acceptedOption, securityOptions, ownOptions, ownValue, meterFrom, counterFor }
