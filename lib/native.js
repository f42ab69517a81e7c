'use strict'
// The one decoder of the wire (src/binding/wire.rs): the addon, the tables
// the Rust core exports (loaded once, frozen), the numeric layouts the hot
// paths use (read here by name, never by position), and the conversion of a
// thrown wire error (`code` + `details`, set in Rust) to this package's
// error classes. Nothing else in lib/ reads a number or an error off the
// addon without going through a name defined here.

const binding = require('./binary.js').loadBinary()

function deepFreeze(value) {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const key of Object.keys(value)) deepFreeze(value[key])
  }
  return value
}

const data = deepFreeze(JSON.parse(binding.exportData()))

/** Constant-case key for a wire name: `not_allowlisted` -> `NOT_ALLOWLISTED`. */
const constantKey = (s) => s.replace(/[.]/g, '_').toUpperCase()

const ERROR_REGISTRY = data.registry
const ErrorCode = deepFreeze(Object.fromEntries(ERROR_REGISTRY.map((e) => [e.code, e.code])))
const DENY_REASONS = data.denyReasons
const DenyReason = deepFreeze(Object.fromEntries(DENY_REASONS.map((r) => [constantKey(r), r])))
/** capability id -> payload field. A Map, so prototype keys are never found. */
const CAPABILITY_FIELDS = new Map(data.capabilities.map(([c, f]) => [c, f]))
/** capability id -> its second payload field (`secrets.use` -> `url`). */
const CAPABILITY_SECOND_FIELDS = new Map(data.capabilities.filter((e) => e.length > 2).map(([c, , f]) => [c, f]))
/** Every capability label, `unknown` last. */
const CAPABILITY_IDS = Object.freeze([...CAPABILITY_FIELDS.keys(), 'unknown'])
const Capability = deepFreeze(Object.fromEntries(CAPABILITY_IDS.map((c) => [constantKey(c), c])))
const BUDGET_KINDS = new Map(data.budgetKinds)
const BUDGET_KIND_LIST = Object.freeze(data.budgetKinds.map(([k]) => k))
/** The fields an INVALID_SAMPLE error names, by the index its code carries. */
const SAMPLE_FIELDS = data.sampleFields
const PLATFORMS = data.platforms
const [PERMISSION_DENIED_TOTAL, BUDGET_EXCEEDED_TOTAL, PERMISSION_SHADOW_DENIED_TOTAL, BUDGET_SHADOW_EXCEEDED_TOTAL] = data.instruments
const INSTRUMENTS = data.instruments
const LIMITS = data.limits
const METER_NAME = data.meterName
/**
 * The numeric layouts of the hot paths (wire.rs `io`, `code`, `fs_bits`):
 * `IO` the slots of the Float64Array and `RESULT` the result codes of the
 * test-hooks addon's raw budget functions (the parity test's Rust side;
 * `BudgetTracker` computes in JS, lib/budget.js), `FS_BITS` the fs mode bits.
 */
const IO = data.wire.io
const RESULT = data.wire.code
const FS_BITS = data.wire.fsBits
/** The flag bits of a checked open (wire.rs `open_bits`), read by name in lib/open.js. */
const OPEN_BITS = data.wire.openBits

const ALLOW = Object.freeze({ allowed: true })
/** Decision objects by code: 0 allow, else frozen `{ allowed: false, capability, reason }`. */
const DECISIONS = [ALLOW]
/** `capability\0reason` -> code. */
const CODE_OF = new Map()
for (const [code, capability, reason] of data.decisions) {
  DECISIONS[code] = Object.freeze({ allowed: false, capability, reason })
  CODE_OF.set(`${capability}\0${reason}`, code)
}
/** The decision code of a denial. */
const codeOf = (capability, reason) => CODE_OF.get(`${capability}\0${reason}`)

const REGISTRY_CODES = new Set(ERROR_REGISTRY.map((e) => e.code))

/**
 * A thrown wire error as this package's error: Rust set `code` (a registry
 * code) and `details` (wire.rs `WireError::throw`); anything else (a
 * TypeError from an argument check, an internal error) is returned as is.
 */
function decodeError(e) {
  let code
  let details
  try {
    code = e !== null && typeof e === 'object' ? Object.getOwnPropertyDescriptor(e, 'code')?.value : undefined
    details = code === undefined ? undefined : Object.getOwnPropertyDescriptor(e, 'details')?.value
  } catch {
    return e
  }
  if (typeof code !== 'string' || !REGISTRY_CODES.has(code) || details === null || typeof details !== 'object') return e
  return require('./errors.js').fromWire(code, details)
}

/** Calls the addon, converting a thrown wire error (see `decodeError`). */
function call(f, ...args) {
  try {
    return f(...args)
  } catch (e) {
    throw decodeError(e)
  }
}

module.exports = {
  binding,
  deepFreeze,
  decodeError,
  call,
  ERROR_REGISTRY,
  ErrorCode,
  DENY_REASONS,
  DenyReason,
  Capability,
  CAPABILITY_IDS,
  CAPABILITY_FIELDS,
  CAPABILITY_SECOND_FIELDS,
  BUDGET_KINDS,
  BUDGET_KIND_LIST,
  SAMPLE_FIELDS,
  PLATFORMS,
  PERMISSION_DENIED_TOTAL,
  BUDGET_EXCEEDED_TOTAL,
  PERMISSION_SHADOW_DENIED_TOTAL,
  BUDGET_SHADOW_EXCEEDED_TOTAL,
  INSTRUMENTS,
  LIMITS,
  METER_NAME,
  IO,
  RESULT,
  FS_BITS,
  OPEN_BITS,
  ALLOW,
  DECISIONS,
  codeOf,
}
