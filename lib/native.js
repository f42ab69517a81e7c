'use strict'
// The addon and the data the Rust core exports: one load, frozen.

const binding = require('../binding.js')

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
const Capability = deepFreeze(Object.fromEntries([...CAPABILITY_FIELDS.keys(), 'unknown'].map((c) => [constantKey(c), c])))
const BUDGET_KINDS = new Map(data.budgetKinds)
const BUDGET_KIND_LIST = Object.freeze(data.budgetKinds.map(([k]) => k))
const [PERMISSION_DENIED_TOTAL, BUDGET_EXCEEDED_TOTAL, PERMISSION_SHADOW_DENIED_TOTAL, BUDGET_SHADOW_EXCEEDED_TOTAL] = data.instruments
const INSTRUMENTS = data.instruments
const LIMITS = data.limits
const METER_NAME = data.meterName

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

module.exports = {
  binding,
  deepFreeze,
  ERROR_REGISTRY,
  ErrorCode,
  DENY_REASONS,
  DenyReason,
  Capability,
  CAPABILITY_FIELDS,
  CAPABILITY_SECOND_FIELDS,
  BUDGET_KINDS,
  BUDGET_KIND_LIST,
  PERMISSION_DENIED_TOTAL,
  BUDGET_EXCEEDED_TOTAL,
  PERMISSION_SHADOW_DENIED_TOTAL,
  BUDGET_SHADOW_EXCEEDED_TOTAL,
  INSTRUMENTS,
  LIMITS,
  METER_NAME,
  ALLOW,
  DECISIONS,
  codeOf,
}
