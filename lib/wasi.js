'use strict'
// The WASI gate for node:wasi hosts: the rules of compound fs operations
// (an open's flags to its mode, which calls follow a final symlink, the two
// readings of a path, what a rename or link moves, whether a deny rule
// reaches below a directory) are the core's (src/wasi.rs), decided through
// the binding (src/binding/wasi.rs) on the compiled policy and its own fold;
// this module only validates arguments and counts each refused call once
// through the host's PermissionChecker (its shadow policy too).

const { types } = require('node:util')
const native = require('./native.js')
const { handleOf } = require('./policy.js')
const { PermissionChecker, countCompound } = require('./checker.js')
const { describe, securityOptions, securityOption } = require('./options.js')

const { binding, DECISIONS, codeOf, DenyReason, Capability } = native

/** WASI preview1 errno values a gate answers with (`wasi_snapshot_preview1` `errno`). */
const ERRNO = Object.freeze({ SUCCESS: 0, ACCES: 2, BADF: 8, EXIST: 20, FAULT: 21, ILSEQ: 25, INVAL: 28, IO: 29, LOOP: 32, NOENT: 44, NOTSUP: 58, PERM: 63, NOTCAPABLE: 76 })

function deepFreeze(v) {
  if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v)
    for (const k of Object.keys(v)) deepFreeze(v[k])
  }
  return v
}

/**
 * Every `wasi_snapshot_preview1` import and the check it needs (the core's
 * table, `data/wasi-calls.json`): `{ gate: 'none' | 'fd' | 'path' | 'refuse', mode?, right?, follow?, refuseFlags?, errno? }`.
 * A host links only what it lists. A null-prototype object: no inherited name is ever an import.
 */
const WASI_CALLS = deepFreeze(Object.assign(Object.create(null), JSON.parse(binding.wasiCalls()).calls))

/** The path fields of each path call, in the order the core checks them. */
const PATH_FIELDS = new Map([
  ['path_open', ['path']],
  ['path_filestat_get', ['path']],
  ['path_filestat_set_times', ['path']],
  ['path_readlink', ['path']],
  ['path_create_directory', ['path']],
  ['path_remove_directory', ['path']],
  ['path_unlink_file', ['path']],
  ['path_rename', ['oldPath', 'newPath']],
  ['path_link', ['oldPath', 'newPath']],
  ['path_symlink', ['newPath', 'target']],
])
const FLAG_FIELDS = ['flags', 'dirflags', 'oflags', 'oldFlags', 'fdflags']
const CALL_OPTION_KEYS = Object.freeze(['timeLeftMs'])
const FD_OPTION_KEYS = Object.freeze(['capable', 'reread', 'timeLeftMs'])
const CHECK_OPTION_KEYS = Object.freeze(['follow', 'timeLeftMs'])

/** An own data property of a plain argument object (a getter or an inherited value is never read). */
function own(obj, key) {
  const d = Object.getOwnPropertyDescriptor(obj, key)
  return d !== undefined && Object.hasOwn(d, 'value') ? d.value : undefined
}

/** `rightsBase` as the decimal u64 the core reads: a bigint, a safe integer or a decimal string. */
function rightsText(v) {
  if (typeof v === 'bigint') return BigInt.asUintN(64, v).toString()
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return String(v)
  if (typeof v === 'string' && /^[0-9]{1,20}$/.test(v) && BigInt(v) < 1n << 64n) return v
  throw new TypeError(`args.rightsBase must be a u64 (a bigint, a non-negative integer or a decimal string), got ${describe(v)}`)
}

/** The wall-clock budget left for the host's work on the call, from the options (`undefined`: none). */
function timeLeft(opts, name) {
  const ms = opts === undefined ? undefined : securityOption(opts, 'timeLeftMs', name)
  if (ms !== undefined && (typeof ms !== 'number' || Number.isNaN(ms))) throw new TypeError(`${name}.timeLeftMs must be a number (ms)`)
  return ms === undefined || ms === Infinity ? null : ms
}

/** The answer as the host reads it; a denial counted once (and the shadow's). */
function settle(checker, answer, again) {
  if (answer.outOfBudget) return { errno: ERRNO.IO, outOfBudget: true }
  const d = countCompound(checker, answer.code, (policy) => {
    try {
      return again(handleOf(policy)).code
    } catch {
      return 0
    }
  })
  if (!d.allowed) return { errno: answer.errno, capability: d.capability, reason: d.reason }
  if (answer.errno !== ERRNO.SUCCESS) return { errno: answer.errno }
  const out = { errno: ERRNO.SUCCESS, paths: answer.paths, kernelPaths: answer.kernelPaths }
  if (answer.base != null) out.base = answer.base
  return out
}

/**
 * The gate a node:wasi host calls before each path and fd call of a guest.
 * Every rule is the core's; a refused call is counted once in
 * `plugin.permission_denied_total` through `checker` (its shadow policy
 * evaluated on the same call). A call the budget stopped (`timeLeftMs` ran
 * out during the host's work: a rename's walk over the links it moves) is
 * `{ errno: EIO, outOfBudget: true }`, not a denial: end the guest with the
 * budget breach your `BudgetTracker` reports.
 */
class WasiGate {
  #checker
  #handle

  /** @param {PermissionChecker} checker the checker every refusal is counted on */
  constructor(checker) {
    if (!(checker instanceof PermissionChecker)) throw new TypeError(`checker must be a PermissionChecker, got ${describe(checker)}`)
    this.#checker = checker
    this.#handle = handleOf(checker.policy)
    Object.freeze(this)
  }

  get checker() {
    return this.#checker
  }

  /**
   * One path call, its paths already joined to the host directories of
   * their fds (an absolute guest path as written). `op`: the import's name;
   * `args`: `{ path, dirflags, oflags, rightsBase, fdflags }` (`path_open`),
   * `{ path, flags }` (`path_filestat_get`, `path_filestat_set_times`),
   * `{ path }` (`path_readlink`, `path_create_directory`,
   * `path_remove_directory`, `path_unlink_file`), `{ oldPath, newPath }`
   * (`path_rename`), `{ oldPath, oldFlags, newPath }` (`path_link`),
   * `{ target, newPath }` (`path_symlink`).
   * Returns `{ errno: 0, paths, kernelPaths, base? }` (perform it: `paths`
   * as node:wasi reads them, checked), `{ errno, capability, reason }` (a
   * denial, counted), `{ errno }` (not performed, what the runtime itself
   * answers: ELOOP / EEXIST for a no-follow open of a final symlink, EPERM
   * for an absolute link target, EINVAL for refused flags), or
   * `{ errno: EIO, outOfBudget: true }`.
   */
  pathCall(op, args, options) {
    const fields = typeof op === 'string' ? PATH_FIELDS.get(op) : undefined
    if (fields === undefined) throw new TypeError(`op must be a gated WASI path call (${[...PATH_FIELDS.keys()].join(', ')}), got ${describe(op)}`)
    // A Proxy could show this check one path and the host another: refused before any trap runs.
    if (args === null || typeof args !== 'object' || types.isProxy(args)) throw new TypeError(`args must be a plain object, got ${describe(args)}`)
    const opts = securityOptions(options, 'options', CALL_OPTION_KEYS)
    const call = { op }
    for (const f of fields) {
      const v = own(args, f)
      if (typeof v !== 'string') throw new TypeError(`args.${f} must be a string, got ${describe(v)}`)
      // A string that is not well-formed UTF-16 names no file: refused, counted.
      if (!v.isWellFormed()) return settle(this.#checker, { code: codeOf(f === 'target' ? Capability.FS_READ : Capability.FS_WRITE, DenyReason.INVALID_PATH), errno: ERRNO.ACCES }, () => ({ code: 0 }))
      call[f] = v
    }
    for (const f of FLAG_FIELDS) {
      const v = own(args, f)
      if (v === undefined) continue
      if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new TypeError(`args.${f} must be a u32, got ${describe(v)}`)
      call[f] = v
    }
    if (op === 'path_open') call.rightsBase = rightsText(own(args, 'rightsBase') ?? 0n)
    const left = timeLeft(opts, 'options')
    const started = performance.now()
    const answer = binding.wasiPathCall(this.#handle, call, left)
    // The shadow's reading of the same call, within what is left of the budget.
    const again = (h) => binding.wasiPathCall(h, call, left === null ? null : left - (performance.now() - started))
    return settle(this.#checker, answer, again)
  }

  /**
   * An fd-level call (`fd_write`, `fd_readdir`, `fd_filestat_set_times`,
   * ...: WASI_CALLS `gate: 'fd'`): `mode` on the path the host recorded for
   * the fd. `options.reread`: the runtime reaches the file again through
   * that path string (node:wasi's directory fds): checked as a followed
   * path, every reading; else lexically. `options.capable`: the fd was
   * opened with the call's right (else ENOTCAPABLE, after the check).
   * Returns `{ errno: 0 }`, `{ errno, capability, reason }` (counted),
   * `{ errno: ENOTCAPABLE }` or `{ errno: EIO, outOfBudget: true }`.
   */
  fdCall(path, mode, options) {
    if (typeof path !== 'string') throw new TypeError(`path must be a string, got ${describe(path)}`)
    if (mode !== 'read' && mode !== 'write') throw new TypeError(`mode must be 'read' or 'write', got ${describe(mode)}`)
    const opts = securityOptions(options, 'options', FD_OPTION_KEYS)
    const flag = (k, dflt) => {
      const v = opts === undefined ? undefined : securityOption(opts, k, 'options')
      if (v !== undefined && typeof v !== 'boolean') throw new TypeError(`options.${k} must be a boolean`)
      return v === undefined ? dflt : v
    }
    const capable = flag('capable', true)
    const reread = flag('reread', false)
    if (!path.isWellFormed()) return settle(this.#checker, { code: codeOf(mode === 'write' ? Capability.FS_WRITE : Capability.FS_READ, DenyReason.INVALID_PATH), errno: ERRNO.ACCES }, () => ({ code: 0 }))
    const left = timeLeft(opts, 'options')
    const w = mode === 'write'
    const answer = binding.wasiFdCall(this.#handle, path, w, capable, reread, left)
    return settle(this.#checker, answer, (h) => binding.wasiFdCall(h, path, w, capable, reread, left))
  }

  /**
   * One path check under every reading a runtime may act on (as written,
   * as node:wasi normalises it, and, when following, its final link
   * followed lexically). `options.follow`: the call follows a final
   * symlink (the real path is checked); else it acts on the name (the real
   * directory plus the name). Returns `{ allowed: true, path, kernelPath }`
   * or the denial decision (counted), or `{ allowed: false, outOfBudget: true }`.
   */
  checkPath(path, mode, options) {
    if (typeof path !== 'string') throw new TypeError(`path must be a string, got ${describe(path)}`)
    if (mode !== 'read' && mode !== 'write') throw new TypeError(`mode must be 'read' or 'write', got ${describe(mode)}`)
    const opts = securityOptions(options, 'options', CHECK_OPTION_KEYS)
    const follow = opts === undefined ? undefined : securityOption(opts, 'follow', 'options')
    if (follow !== undefined && typeof follow !== 'boolean') throw new TypeError('options.follow must be a boolean')
    const w = mode === 'write'
    const left = timeLeft(opts, 'options')
    const answer = path.isWellFormed() ? binding.wasiCheckPath(this.#handle, path, w, follow === true, left) : { code: codeOf(mode === 'write' ? Capability.FS_WRITE : Capability.FS_READ, DenyReason.INVALID_PATH), errno: ERRNO.ACCES }
    const r = settle(this.#checker, answer, (h) => (path.isWellFormed() ? binding.wasiCheckPath(h, path, w, follow === true, left) : { code: 0 }))
    if (r.outOfBudget) return { allowed: false, outOfBudget: true }
    if (r.errno !== ERRNO.SUCCESS) return DECISIONS[codeOf(r.capability, r.reason)]
    return { allowed: true, path: r.paths[0], kernelPath: r.kernelPaths[0] }
  }
}

/** The mode a `path_open` needs (SPEC §14): create, truncate, append or any write right is a write. */
function openMode(oflags, rightsBase, fdflags) {
  for (const [k, v] of [['oflags', oflags], ['fdflags', fdflags]]) if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new TypeError(`${k} must be a u32, got ${describe(v)}`)
  return binding.wasiOpenMode(oflags, rightsText(rightsBase), fdflags) ? 'write' : 'read'
}

module.exports = { WasiGate, WASI_CALLS, ERRNO, openMode }
