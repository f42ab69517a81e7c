'use strict'
// PermissionChecker: the checks of one policy, each denial counted once in
// plugin.permission_denied_total, with an optional shadow policy (SPEC §12).
// Hot paths (checkFs, checkFetch on a plain URL, checkCapability) call the
// raw functions of src/binding/raw.rs and get a decision code; the rest take
// one wire.rs call that returns a `Verdict { code, url?, target? }`.

const { types } = require('node:util')
const native = require('./native.js')
const { PermissionDeniedError, redact } = require('./errors.js')
const { describe, securityOption, securityOptions, ownValue, meterFrom, counterFor } = require('./options.js')
const { urlHref, beyondUrlLimit, fetchNeedsSecondParse, withParity } = require('./url-parity.js')
const { handleOf, policySummary, inspectAs } = require('./policy.js')

const { binding, DECISIONS, ALLOW, codeOf, Capability, DenyReason, CAPABILITY_FIELDS, CAPABILITY_SECOND_FIELDS, FS_BITS } = native
const { rawCheckFs, rawCheckFetch, rawCheckCapability, policyCheckFetch, policyCheckCapability, policyAuthorizeFs, policyCheckNet } = binding

const INSPECT = Symbol.for('nodejs.util.inspect.custom')
const FETCH_INVALID_URL = codeOf(Capability.FETCH, DenyReason.INVALID_URL)
const FS_READ_INVALID = codeOf(Capability.FS_READ, DenyReason.INVALID_PATH)
const FS_WRITE_INVALID = codeOf(Capability.FS_WRITE, DenyReason.INVALID_PATH)
/** The fs mode bits as plain constants (the hot path reads no table). */
const FS_WRITE = FS_BITS.write
const FS_RESOLVE = FS_BITS.resolve
const FS_MODES = new Map([
  ['read', 0],
  ['write', FS_WRITE],
])
const FS_OPTION_KEYS = Object.freeze(['resolveSymlinks'])
const RESOLVE_OPTIONS = Object.freeze({ resolveSymlinks: true })
/** Every option `PermissionChecker` knows; any other key is a TypeError. */
const CHECKER_OPTION_KEYS = Object.freeze(['meter', 'shadow', 'onShadow'])
/** `checkNet(checker, target, use)`: set by `PermissionChecker`'s static block (module-private). */
let checkNetOf
/** lib/open.js's way to a checker's handle and counting (set by `PermissionChecker`'s static block). */
let openHandleOf
let openSettleOf
/** Set only while a checker builds its shadow checker: the shadow counter it records to. */
let shadowCounterInit = null
/** A throwing `onShadow` is reported once per process (process.emitWarning), then ignored. */
let shadowCallbackWarned = false
function warnShadowCallback() {
  if (shadowCallbackWarned) return
  shadowCallbackWarned = true
  try {
    process.emitWarning('api-sandbox-permissions: options.onShadow threw; the error is ignored (the shadow never changes a decision)', { code: 'SAND_PERM_SHADOW_CALLBACK' })
  } catch {}
}

const UNKNOWN_CAPABILITY = codeOf(Capability.UNKNOWN, DenyReason.UNKNOWN_CAPABILITY)
/** capability id -> its invalid_payload code, looked up once (not a key built per call). */
const INVALID_PAYLOAD = new Map([...CAPABILITY_FIELDS.keys()].map((id) => [id, codeOf(id, DenyReason.INVALID_PAYLOAD)]))
/** A capability verdict, always of one shape (the hot path stays monomorphic). */
const verdict = (code, url, target) => ({ code, url, target })

/** `scheme://host:port` of a URL string, or null (for a target the check did not return). */
const originOf = (url) => (typeof url === 'string' && !beyondUrlLimit(url) && url.isWellFormed() ? binding.redactedOriginOf(url) : null)

const { maxPathBytes: MAX_PATH_BYTES, maxPayloadStringBytes: MAX_PAYLOAD_BYTES } = native.LIMITS
/**
 * Whether the core may be shown `s` by a raw call: it is well-formed, or it
 * is certainly over `limit` (every UTF-16 unit is at least one UTF-8 byte),
 * which raw.rs's copy helper refuses from a buffer-sized copy. The length
 * test first, so a huge string costs no `isWellFormed` scan; the decision
 * stays the core's.
 */
const crossable = (s, limit) => s.length > limit || s.isWellFormed()

/**
 * Counts the decision `code` of a compound operation decided on the
 * policy (lib/wasi.js: a WASI call, its rules in the core) once, as the
 * checks below count theirs, and evaluates the shadow on the same
 * operation: `shadowCode(policy)` decides it on the shadow policy. Not part
 * of the public API (set by the class's static block).
 * @type {(checker: PermissionChecker, code: number, shadowCode: (policy: object) => number) => object}
 */
let countCompound

/**
 * Checks capability calls against a policy and counts every denial once in
 * `plugin.permission_denied_total{plugin, capability, reason}`.
 */
class PermissionChecker {
  #handle
  #policy
  #counter
  /** Metric attributes by decision code (a Map, made at the first denial: a code is never found on a prototype). */
  #attrs
  /** The shadow (report-only) checker, SPEC §12; `undefined` on the hot path. */
  #shadow
  #onShadow

  /**
   * @param {PermissionPolicy} policy
   * @param {{ meter?: import('@opentelemetry/api').Meter, shadow?: PermissionPolicy, onShadow?: (event: object) => void }} [options]
   */
  constructor(policy, options) {
    this.#handle = handleOf(policy)
    this.#policy = policy
    if (shadowCounterInit !== null) {
      // The private shadow checker of another checker: records to the shadow counter.
      this.#counter = shadowCounterInit
      shadowCounterInit = null
      Object.freeze(this)
      return
    }
    const opts = securityOptions(options, 'options', CHECKER_OPTION_KEYS) || {}
    const shadow = securityOption(opts, 'shadow', 'options')
    const onShadow = securityOption(opts, 'onShadow', 'options')
    if (onShadow !== undefined && typeof onShadow !== 'function') throw new TypeError('options.onShadow must be a function')
    if (onShadow !== undefined && shadow === undefined) throw new TypeError('options.onShadow needs options.shadow (a PermissionPolicy)')
    if (shadow !== undefined) {
      handleOf(shadow)
      if (shadow.plugin !== policy.plugin) throw new TypeError('options.shadow must be a PermissionPolicy for the same plugin id as the enforced policy')
    }
    const meter = meterFrom(opts)
    this.#counter = counterFor(meter, native.PERMISSION_DENIED_TOTAL)
    if (shadow !== undefined) {
      shadowCounterInit = counterFor(meter, native.PERMISSION_SHADOW_DENIED_TOTAL)
      try {
        this.#shadow = new PermissionChecker(shadow)
      } finally {
        shadowCounterInit = null
      }
      this.#onShadow = onShadow
    }
    Object.freeze(this)
  }

  /** The shadow policy (SPEC §12), or `undefined`. */
  get shadow() {
    return this.#shadow === undefined ? undefined : this.#shadow.policy
  }

  /**
   * Evaluates the shadow on the same call (SPEC §12): its denial counts in
   * `plugin.permission_shadow_denied_total` and is reported to `onShadow`.
   * Never throws and never changes the enforced decision.
   * @param {(shadow: PermissionChecker) => object} evaluate the shadow's non-throwing check
   */
  #observe(evaluate, enforced, url) {
    let d
    try {
      d = evaluate(this.#shadow)
    } catch {
      return
    }
    if (d.allowed || this.#onShadow === undefined) return
    const event = { capability: d.capability, reason: d.reason, enforced: enforced.allowed ? 'allowed' : 'denied' }
    if (url !== undefined && (d.capability === Capability.FETCH || d.capability === Capability.SECRETS_USE)) {
      const origin = originOf(url)
      if (origin !== null) event.target = redact(origin)
    }
    try {
      const r = this.#onShadow(Object.freeze(event))
      // An async callback's rejection is isolated too (never an unhandled rejection).
      if (r !== null && (typeof r === 'object' || typeof r === 'function') && typeof r.then === 'function') r.then(undefined, warnShadowCallback)
    } catch {
      warnShadowCallback()
    }
  }

  get policy() {
    return this.#policy
  }

  /** `util.inspect(checker)`: `PermissionChecker { plugin, platform, grants: { fs: 2, ... }, budgets }`. */
  [INSPECT](depth, options, inspect) {
    return inspectAs('PermissionChecker', policySummary(this.#policy), options, inspect)
  }

  #decide(code) {
    if (code !== 0) {
      const cache = (this.#attrs ??= new Map())
      let attrs = cache.get(code)
      if (attrs === undefined) {
        const d = DECISIONS[code]
        attrs = Object.freeze({ plugin: this.#policy.plugin, capability: d.capability, reason: d.reason })
        cache.set(code, attrs)
      }
      this.#counter.add(1, attrs)
    }
    return DECISIONS[code]
  }

  #deny(capability, reason) {
    return this.#decide(codeOf(capability, reason))
  }

  /** Validates fs arguments: the mode bits for the core (wire `fsBits`). */
  #fsBits(path, mode, options) {
    const m = FS_MODES.get(mode)
    if (m === undefined) throw new TypeError(`mode must be 'read' or 'write', got ${typeof mode === 'string' ? JSON.stringify(redact(mode)) : describe(mode)}`)
    if (typeof path !== 'string') throw new TypeError(`path must be a string, got ${describe(path)}`)
    const opts = securityOptions(options, 'options', FS_OPTION_KEYS)
    if (opts === undefined) return m
    const resolve = securityOption(opts, 'resolveSymlinks', 'options')
    if (resolve !== undefined && typeof resolve !== 'boolean') throw new TypeError('options.resolveSymlinks must be a boolean')
    return resolve ? m | FS_RESOLVE : m
  }

  #fsCode(path, mode, options) {
    const m = this.#fsBits(path, mode, options)
    if (!crossable(path, MAX_PATH_BYTES)) return m & FS_WRITE ? FS_WRITE_INVALID : FS_READ_INVALID
    return rawCheckFs(this.#handle, path, m)
  }

  /** `checkFs(path, 'read' | 'write', { resolveSymlinks? })` → decision. */
  checkFs(path, mode, options) {
    // The hot path: a string, a known mode, no options.
    if (typeof path === 'string' && options === undefined && (mode === 'read' || mode === 'write')) {
      const m = mode === 'read' ? 0 : FS_WRITE
      const code = crossable(path, MAX_PATH_BYTES) ? rawCheckFs(this.#handle, path, m) : m === 0 ? FS_READ_INVALID : FS_WRITE_INVALID
      const d = code === 0 ? ALLOW : this.#decide(code)
      if (this.#shadow !== undefined) this.#observe((sh) => sh.checkFs(path, mode), d)
      return d
    }
    const d = this.#decide(this.#fsCode(path, mode, options))
    if (this.#shadow !== undefined) this.#observe((sh) => sh.checkFs(path, mode, options), d)
    return d
  }

  /** Throws `PERMISSION_DENIED` unless `checkFs` allows. */
  assertFs(path, mode, options) {
    const d = this.checkFs(path, mode, options)
    if (!d.allowed) throw this.#error(d)
  }

  /**
   * Asserts like `assertFs` (a denial counts once), then returns the path
   * the host must open: the normalised path, or with `resolveSymlinks` the
   * real path (what the kernel reaches from the raw path, symlinks and `..`
   * resolved left to right). Open exactly this path, without following a
   * final symlink (`O_NOFOLLOW`), so what is opened is what was checked.
   */
  authorizeFs(path, mode, options) {
    const m = this.#fsBits(path, mode, options)
    // Over the limit: the raw check's refusal (no full copy of the string for the cold call).
    const v =
      path.length > MAX_PATH_BYTES
        ? { code: rawCheckFs(this.#handle, path, m & ~FS_RESOLVE) }
        : path.isWellFormed()
          ? policyAuthorizeFs(this.#handle, path, m)
          : { code: m & FS_WRITE ? FS_WRITE_INVALID : FS_READ_INVALID }
    if (this.#shadow !== undefined) this.#observe((sh) => sh.checkFs(path, mode, options), DECISIONS[v.code])
    if (v.code === 0) return v.url
    throw this.#error(this.#decide(v.code))
  }

  /**
   * Settles a checked open (lib/open.js) whose core verdict is `code`: the
   * shadow sees the same checks (symlinks resolved, each of `modes` until
   * one denies); a denial is counted once and returned as its error
   * (`undefined` when allowed).
   */
  #openSettled(path, modes, code) {
    if (this.#shadow !== undefined) {
      this.#observe((sh) => {
        let d = ALLOW
        for (const m of modes) if ((d = sh.checkFs(path, m, RESOLVE_OPTIONS)).allowed === false) break
        return d
      }, DECISIONS[code])
    }
    return code === 0 ? undefined : this.#error(this.#decide(code))
  }

  static {
    openHandleOf = (c) => c.#handle
    openSettleOf = (c, path, modes, code) => c.#openSettled(path, modes, code)
  }

  /** `checkFetch(url)` → decision. */
  checkFetch(url) {
    const s = typeof url === 'string' ? url : urlHref(url)
    const d = beyondUrlLimit(s) ? this.#decide(rawCheckFetch(this.#handle, s)) : !s.isWellFormed() ? this.#deny(Capability.FETCH, DenyReason.INVALID_URL) : this.#fetchDecision(s)
    if (this.#shadow !== undefined) this.#observe((sh) => sh.checkFetch(s), d, s)
    return d
  }

  #fetchDecision(s) {
    const code = fetchNeedsSecondParse(s) ? this.#fetchVerdict(s).code : rawCheckFetch(this.#handle, s)
    return code === 0 ? ALLOW : this.#decide(code)
  }

  /**
   * The fetch check on the cold path, one crossing: `{ code, url?, target? }`
   * with the SPEC §3/§11 parity applied (`withParity`). Uncounted.
   */
  #fetchVerdict(s, ip) {
    // Over the limit: the core's refusal, from the raw copy helper (no full copy, no parse, no target).
    if (beyondUrlLimit(s)) return { code: rawCheckFetch(this.#handle, s), url: undefined, target: undefined }
    if (!s.isWellFormed()) return { code: FETCH_INVALID_URL, url: undefined, target: undefined }
    return withParity(s, (node) => policyCheckFetch(this.#handle, s, ip === undefined ? null : ip, node), FETCH_INVALID_URL)
  }

  /** The canonical URL of an allowed verdict, else throws `PERMISSION_DENIED` (counted once). */
  #authorized(v) {
    if (v.code === 0) return v.url
    throw this.#error(this.#decide(v.code), v.target)
  }

  /** Throws `PERMISSION_DENIED` unless `checkFetch` allows. */
  assertFetch(url) {
    this.authorizeFetch(url)
  }

  /**
   * Asserts, then returns the canonical (WHATWG-serialised) URL: fetch exactly
   * this string, so what is fetched is what was checked.
   */
  authorizeFetch(url) {
    const s = urlHref(url)
    const v = this.#fetchVerdict(s)
    if (this.#shadow !== undefined) this.#observe((sh) => sh.checkFetch(s), DECISIONS[v.code], s)
    return this.#authorized(v)
  }

  #addressArgs(url, resolvedIp) {
    const s = urlHref(url)
    if (typeof resolvedIp !== 'string') throw new TypeError(`resolvedIp must be a string, got ${describe(resolvedIp)}`)
    return s
  }

  /** DNS-rebinding defence: re-check after resolution → decision. */
  checkFetchAddress(url, resolvedIp) {
    const s = this.#addressArgs(url, resolvedIp)
    const v = this.#fetchVerdict(s, resolvedIp)
    if (this.#shadow !== undefined) this.#observe((sh) => sh.checkFetchAddress(s, resolvedIp), DECISIONS[v.code], s)
    return v.code === 0 ? ALLOW : this.#decide(v.code)
  }

  /** Throws `PERMISSION_DENIED` unless `checkFetchAddress` allows; returns the canonical URL. */
  assertFetchAddress(url, resolvedIp) {
    const s = this.#addressArgs(url, resolvedIp)
    const v = this.#fetchVerdict(s, resolvedIp)
    if (this.#shadow !== undefined) this.#observe((sh) => sh.checkFetchAddress(s, resolvedIp), DECISIONS[v.code], s)
    return this.#authorized(v)
  }

  /**
   * `{ code, url?, target? }` of `checkCapability`: `url` is the URL field
   * of a fetch or secrets.use payload. JS checks only JS types here (own
   * data properties, strings, well-formed); every length limit is Rust's.
   * A URL that needs the second parse takes the cold path with the parity
   * rule, which also returns the target.
   */
  #capabilityVerdict(capabilityId, payload) {
    const field = typeof capabilityId === 'string' ? CAPABILITY_FIELDS.get(capabilityId) : undefined
    if (field === undefined) return verdict(UNKNOWN_CAPABILITY)
    const invalid = verdict(INVALID_PAYLOAD.get(capabilityId))
    // A Proxy could show this check one value and the host another (its
    // getOwnPropertyDescriptor and get traps disagree): invalid, like a getter.
    if (payload === null || typeof payload !== 'object' || types.isProxy(payload) || Array.isArray(payload)) return invalid
    const value = ownValue(payload, field)
    if (typeof value !== 'string' || !crossable(value, MAX_PAYLOAD_BYTES)) return invalid
    const second = CAPABILITY_SECOND_FIELDS.get(capabilityId)
    if (second !== undefined) {
      // secrets.use { name, url } (SPEC §13): a URL the two parsers read
      // differently (host or path) is never a granted destination.
      const url = ownValue(payload, second)
      if (typeof url !== 'string' || !crossable(url, MAX_PAYLOAD_BYTES)) return invalid
      if (!fetchNeedsSecondParse(url)) return verdict(rawCheckCapability(this.#handle, capabilityId, value, url), url)
      const refused = codeOf(capabilityId, DenyReason.SECRET_DESTINATION_NOT_ALLOWED)
      const v = withParity(url, (node) => policyCheckCapability(this.#handle, capabilityId, value, url, node), refused)
      return verdict(v.code, url, v.target)
    }
    if (field === 'url') {
      if (!fetchNeedsSecondParse(value)) return verdict(rawCheckCapability(this.#handle, capabilityId, value), value)
      const v = withParity(value, (node) => policyCheckCapability(this.#handle, capabilityId, value, null, node), FETCH_INVALID_URL)
      return verdict(v.code, value, v.target)
    }
    return verdict(rawCheckCapability(this.#handle, capabilityId, value))
  }

  /** `checkCapability(id, payload)` → decision. Payload fields are read as own data properties only. */
  checkCapability(capabilityId, payload) {
    const v = this.#capabilityVerdict(capabilityId, payload)
    const d = this.#decide(v.code)
    if (this.#shadow !== undefined) this.#observe((sh) => sh.checkCapability(capabilityId, payload), d, v.url)
    return d
  }

  /** Throws `PERMISSION_DENIED` unless `checkCapability` allows. */
  assertCapability(capabilityId, payload) {
    const v = this.#capabilityVerdict(capabilityId, payload)
    const d = this.#decide(v.code)
    if (this.#shadow !== undefined) this.#observe((sh) => sh.checkCapability(capabilityId, payload), d, v.url)
    if (d.allowed) return
    // The raw hot path returns a code only: its denial's target is read here (a denial is cold).
    const target = d.capability !== Capability.FETCH && d.capability !== Capability.SECRETS_USE ? undefined : v.target !== undefined ? v.target : originOf(v.url)
    throw this.#error(d, target)
  }

  /**
   * A raw connection target (Deno's `net` / `import`, SPEC §15, §17),
   * decided by the core (`PermissionPolicy::check_net`) and counted here
   * like every other check: `{ decision, url }`, `url` the
   * `https://host[:port]/` the target names, or null when it is not one.
   */
  #checkNet(target, use) {
    const v = policyCheckNet(this.#handle, typeof target === 'string' && target.isWellFormed() ? target : '', use === 'import')
    const decision = v.code === 0 ? ALLOW : this.#decide(v.code)
    if (this.#shadow !== undefined) this.#observe((sh) => checkNetOf(sh, target, use).decision, decision)
    return { decision, url: typeof v.url === 'string' ? v.url : null }
  }

  static {
    countCompound = (checker, code, shadowCode) => {
      const d = code === 0 ? ALLOW : checker.#decide(code)
      if (checker.#shadow !== undefined) checker.#observe((sh) => countCompound(sh, shadowCode(sh.policy), () => 0), d)
      return d
    }
    checkNetOf = (checker, target, use) => checker.#checkNet(target, use)
  }

  #error(d, target) {
    const details = { plugin: redact(this.#policy.plugin), capability: d.capability, reason: d.reason }
    if (typeof target === 'string') details.target = redact(target)
    return new PermissionDeniedError(details)
  }
}

/**
 * Deno's `net` (`use` 'net') or `import` ('import') check of a raw
 * `host[:port]` target through `checker` (lib/deno-broker.js; not public
 * API): the core's verdict, the denial counted once in the checker's
 * counter, its shadow observed. `{ decision, url }`.
 */
function checkNet(checker, target, use) {
  if (!(checker instanceof PermissionChecker)) throw new TypeError('expected a PermissionChecker')
  return checkNetOf(checker, target, use)
}

/**
 * For lib/open.js (not public API): `handle(checker)`, the policy handle of
 * a PermissionChecker (a TypeError for anything else), and `settle(checker,
 * path, modes, code)`, which settles a checked open's verdict (the shadow
 * observed, a denial counted once and returned as its error).
 */
const checkedOpenGate = Object.freeze({
  handle(checker) {
    if (!(checker instanceof PermissionChecker)) throw new TypeError(`checker must be a PermissionChecker, got ${describe(checker)}`)
    return openHandleOf(checker)
  },
  settle: (checker, path, modes, code) => openSettleOf(checker, path, modes, code),
})

module.exports = { PermissionChecker, CHECKER_OPTION_KEYS, checkNet, checkedOpenGate, countCompound: (checker, code, shadowCode) => countCompound(checker, code, shadowCode) }
