'use strict'
// @suaveplan/api-sandbox-permissions — the public JS API over the Rust core.
// This file is the public face only; each concept lives under lib/:
//   lib/native.js      the addon, the tables Rust exports, the wire decoder
//   lib/errors.js      the error classes, guards, serialisation
//   lib/options.js     reading options (JS types only; values are Rust's)
//   lib/url-parity.js  SPEC §3/§11 parser parity (withParity)
//   lib/policy.js      PermissionPolicy
//   lib/checker.js     PermissionChecker
//   lib/tracker.js     BudgetTracker
//   lib/lockdown.js    lockdown(), landlockCommand()

const native = require('./lib/native.js')
const errors = require('./lib/errors.js')
const { learnManifest } = require('./lib/learn.js')
const { diffPolicies } = require('./lib/diff.js')
const { VERSION, securityOption, securityOptions } = require('./lib/options.js')
const { PermissionPolicy, POLICY_OPTION_KEYS } = require('./lib/policy.js')
const { PermissionChecker, CHECKER_OPTION_KEYS } = require('./lib/checker.js')
const { BudgetTracker } = require('./lib/tracker.js')
const { lockdown, landlockCommand } = require('./lib/lockdown.js')

const { PermissionDeniedError, BudgetExceededError, InvalidManifestError, InvalidSampleError } = errors


/** Convenience: `new PermissionChecker(PermissionPolicy.fromManifest(manifest, options), options)`. */
function createChecker(manifest, options) {
  // One options object for both: each gets only its own keys, and a key
  // neither knows is a TypeError (read strictly, so no getter runs twice).
  const opts = securityOptions(options, 'options', [...POLICY_OPTION_KEYS, ...CHECKER_OPTION_KEYS])
  const split = (keys) => {
    const out = {}
    for (const k of keys) {
      const v = securityOption(opts, k, 'options')
      if (v !== undefined) out[k] = v
    }
    return out
  }
  if (opts === undefined) return new PermissionChecker(PermissionPolicy.fromManifest(manifest, undefined))
  return new PermissionChecker(PermissionPolicy.fromManifest(manifest, split(POLICY_OPTION_KEYS)), split(CHECKER_OPTION_KEYS))
}

/**
 * Serves Deno's permission broker (SPEC §15) for `policy` on a private Unix
 * socket: resolves `{ path, env, stats, expectPid(pid), close() }`. Loaded
 * on first use (lib/deno-broker.js).
 */
function serveDenoBroker(policy, options) {
  return require('./lib/deno-broker.js').serveDenoBroker(policy, options)
}

module.exports = {
  VERSION,
  PermissionPolicy,
  PermissionChecker,
  BudgetTracker,
  createChecker,
  learnManifest,
  diffPolicies,
  lockdown,
  landlockCommand,
  serveDenoBroker,
  ERROR_REGISTRY: native.ERROR_REGISTRY,
  ErrorCode: native.ErrorCode,
  DenyReason: native.DenyReason,
  DENY_REASONS: native.DENY_REASONS,
  Capability: native.Capability,
  INSTRUMENTS: native.INSTRUMENTS,
  PERMISSION_DENIED_TOTAL: native.PERMISSION_DENIED_TOTAL,
  BUDGET_EXCEEDED_TOTAL: native.BUDGET_EXCEEDED_TOTAL,
  PERMISSION_SHADOW_DENIED_TOTAL: native.PERMISSION_SHADOW_DENIED_TOTAL,
  BUDGET_SHADOW_EXCEEDED_TOTAL: native.BUDGET_SHADOW_EXCEEDED_TOTAL,
  METER_NAME: native.METER_NAME,
  LIMITS: native.LIMITS,
  SandboxPermissionError: errors.SandboxPermissionError,
  PermissionDeniedError,
  BudgetExceededError,
  InvalidManifestError,
  InvalidSampleError,
  UnsupportedPlatformError: errors.UnsupportedPlatformError,
  isPermissionDenied: errors.isPermissionDenied,
  isBudgetExceeded: errors.isBudgetExceeded,
  isInvalidManifest: errors.isInvalidManifest,
  isInvalidSample: errors.isInvalidSample,
  isSandboxPermissionError: errors.isSandboxPermissionError,
  serializeError: errors.serializeError,
  reviveError: errors.reviveError,
  errorReviverSource: errors.errorReviverSource,
}
