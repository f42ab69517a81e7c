'use strict'
// PermissionPolicy: a compiled manifest (one crossing: wire.rs
// `compilePolicy` returns the handle, or throws INVALID_MANIFEST; the budgets
// are read on first use), its explain views and the checks straight on it.

const { types } = require('node:util')
const native = require('./native.js')
const { InvalidManifestError } = require('./errors.js')
const { manifestJson } = require('./plain.js')
const { acceptedOption, securityOptions, ownValue } = require('./options.js')
const { urlHref, withParity, nodeView, grantParityError } = require('./url-parity.js')

const { binding, call, Capability, DenyReason, CAPABILITY_FIELDS, CAPABILITY_SECOND_FIELDS, PLATFORMS, DECISIONS, codeOf } = native

const TOKEN = Symbol('compiled')
/** The options of `PermissionPolicy.fromManifest` (any other key is a TypeError). */
const POLICY_OPTION_KEYS = Object.freeze(['plugin', 'platform'])
/** `PermissionPolicy`'s handle reader (set by its static block; not reachable from outside this module). */
let readHandle
const INSPECT = Symbol.for('nodejs.util.inspect.custom')
const FS_MODES = new Set(['read', 'write'])
const FETCH_INVALID_URL = codeOf(Capability.FETCH, DenyReason.INVALID_URL)
const hostPlatform = () => (process.platform === 'win32' ? 'win32' : 'posix')
/** The checker module (it requires this one). */
const checkerModule = () => require('./checker.js')
const ILL_FORMED = 'the string is not well-formed UTF-16 (a lone surrogate): the checks refuse it'
const PARITY = "Node's URL parser reads this URL's host otherwise than the core: refused as invalid_url"
/**
 * Puts the checks' decision in an explanation; when it differs from the one
 * the core explained, `why` says why instead of the core's sentence.
 */
function overrideDecision(explained, decision, why) {
  const before = explained.decision
  explained.decision = decision
  if (before.allowed !== decision.allowed || before.reason !== decision.reason) explained.why = why
}

/** A meter that records nothing, for explain views (which count no metric). */
let noopMeter
const NOOP_METER = () => (noopMeter ??= require('@opentelemetry/api').createNoopMeter())

/** What `util.inspect` shows of a policy: plugin, platform, grant counts and budgets (never the grants). */
function policySummary(policy) {
  const m = policy.toJSON()
  const n = (list) => (Array.isArray(list) ? list.length : 0)
  const grants = { fs: n(m.fs), fetch: n(m.fetch), secrets: n(m.secrets), publishes: n(m.events && m.events.publishes), subscribes: n(m.events && m.events.subscribes), db: m.db ? 1 : 0 }
  return { plugin: policy.plugin, platform: policy.platform, grants, budgets: policy.budgets }
}

function inspectAs(name, summary, options, inspect) {
  return `${name} ${(inspect || require('node:util').inspect)(summary, options)}`
}

/** The wire's budgets as the public object: absent ones omitted, frozen. */
function budgetsOf(b) {
  const out = {}
  for (const k of native.BUDGET_KIND_LIST) if (Object.hasOwn(b, k) && typeof b[k] === 'number') out[k] = b[k]
  return Object.freeze(out)
}

const MAX_NAME_BYTES = native.LIMITS.maxNameBytes
/**
 * Whether `id` is a plugin id: a well-formed string of 1 to `maxNameBytes`
 * UTF-8 bytes without control characters (Rust's `char::is_control`, general
 * category Cc: U+0000-U+001F, U+007F-U+009F). The rule of Rust's
 * `PermissionPolicy::is_valid_plugin_id`, which still judges every id a
 * compile sees; __test__/policy-share.test.js holds the two together.
 */
function isPluginId(id) {
  if (typeof id !== 'string' || id.length === 0 || !id.isWellFormed()) return false
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i)
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return false
  }
  // At most 3 UTF-8 bytes per UTF-16 unit, so only a long id needs counting.
  return id.length * 3 <= MAX_NAME_BYTES || Buffer.byteLength(id, 'utf8') <= MAX_NAME_BYTES
}

/**
 * Compiled rules are a function of the manifest's JSON text and the platform
 * only: the plugin id is a label the JS side keeps (the checks, explain
 * views, toJSON, lint and diff never read Rust's copy). So the policies of a
 * short text share one compile (issue K: the fixed per-policy cost):
 * `SHARED[platform]` maps the text to its `Rules` (`{ handle }`, the slot's
 * one owner), and every policy compiled from that text holds it; the slot,
 * the compile and the FinalizationRegistry registration are paid once. The
 * table holds its `Rules` strongly (a WeakRef's `deref` costs every hit a
 * runtime call) and is bounded: when it holds SHARE_MAX_TEXTS texts it is
 * emptied, and a `Rules` no policy holds is then released by the registry.
 * So a short text stays compiled at most until that many other short texts
 * have been compiled after it (a compile of at most 128 characters is a
 * couple of kilobytes at most). A longer text is compiled per policy, which
 * owns its handle: keeping the text as a key (about 130 bytes plus the
 * text) would cost as much as the fixed part a repeat saves, and its
 * grants, not the fixed part, are most of its compile.
 */
const SHARE_MAX_TEXT = 128
/** Texts the table holds per platform before it is emptied. */
const SHARE_MAX_TEXTS = 1024
const SHARED = PLATFORMS.map(() => new Map())
/** Releases the slot (the held handle) of a collected owner: a policy or a shared `Rules`. */
const ownerRegistry = new FinalizationRegistry(binding.rawRelease)

/** Compiles `json` for platform index `p`: the handle, or throws INVALID_MANIFEST. */
function compile(json, plugin, p) {
  // The raw fast path; on any refusal `compilePolicy` compiles again and throws the error.
  const handle = binding.rawCompile(json, plugin, p) ?? call(binding.compilePolicy, json, plugin, PLATFORMS[p])
  const parity = grantParityError(json)
  if (parity !== undefined) {
    binding.rawRelease(handle)
    throw new InvalidManifestError(parity)
  }
  return handle
}

/** The shared `Rules` of a new compile of `json`. */
function share(handle, json, p) {
  const rules = Object.freeze({ handle })
  const table = SHARED[p]
  if (table.size >= SHARE_MAX_TEXTS) table.clear()
  table.set(json, rules)
  ownerRegistry.register(rules, handle)
  return rules
}

/** The validated, compiled permissions of one plugin. Immutable; build with `fromManifest`. */
class PermissionPolicy {
  /** The handle of its compiled rules, or the `Rules` it shares with the other policies of its manifest text. */
  #rules
  #plugin
  #platform
  #budgets
  #json
  #checker
  #quietChecker

  get #handle() {
    const r = this.#rules
    return typeof r === 'number' ? r : r.handle
  }

  /** @private use `PermissionPolicy.fromManifest` */
  constructor(token, rules, plugin, platform) {
    if (token !== TOKEN) throw new TypeError('use PermissionPolicy.fromManifest(manifest, { plugin })')
    this.#rules = rules
    this.#plugin = plugin
    this.#platform = platform
    Object.freeze(this)
  }

  /**
   * Validates and compiles a manifest. Throws `INVALID_MANIFEST` (with
   * `details.pointer` and `details.expected`) for any invalid field, and a
   * TypeError for invalid options (the plugin id by Rust's rule, `isPluginId`).
   */
  static fromManifest(manifest, options) {
    // Read strictly: an unknown key (`platfrom`) is a TypeError, never a
    // policy compiled for the host's platform in its place.
    const opts = securityOptions(options, 'options', POLICY_OPTION_KEYS) || {}
    const plugin = acceptedOption(opts, 'plugin', 'options')
    if (!isPluginId(plugin)) {
      throw new TypeError(`options.plugin must be a plugin id of 1 to ${MAX_NAME_BYTES} UTF-8 bytes without control characters`)
    }
    const platformOpt = acceptedOption(opts, 'platform', 'options')
    const platform = platformOpt === undefined ? hostPlatform() : platformOpt
    const p = typeof platform === 'string' ? PLATFORMS.indexOf(platform) : -1
    if (p === -1) throw new TypeError("options.platform must be 'posix' or 'win32'")
    const json = manifestJson(manifest)
    if (json.length <= SHARE_MAX_TEXT) {
      const rules = SHARED[p].get(json) ?? share(compile(json, plugin, p), json, p)
      return new PermissionPolicy(TOKEN, rules, plugin, platform)
    }
    const handle = compile(json, plugin, p)
    const policy = new PermissionPolicy(TOKEN, handle, plugin, platform)
    ownerRegistry.register(policy, handle)
    return policy
  }

  get plugin() {
    return this.#plugin
  }

  get platform() {
    return this.#platform
  }

  /** Budgets from the manifest; absent ones are omitted. */
  get budgets() {
    return (this.#budgets ??= budgetsOf(binding.policyBudgets(this.#handle)))
  }

  /** The normalised manifest (deep-frozen). */
  toJSON() {
    if (this.#json === undefined) this.#json = native.deepFreeze(JSON.parse(binding.policyToJson(this.#handle)))
    return this.#json
  }

  /**
   * Why `checkFs`/`checkFetch`/`checkCapability` decide as they do: the
   * decision plus the grants that matched (or none). For tools, not hot paths;
   * counts no metric.
   */
  explainFs(path, mode) {
    if (typeof path !== 'string') throw new TypeError('path must be a string')
    if (!FS_MODES.has(mode)) throw new TypeError("mode must be 'read' or 'write'")
    const explained = JSON.parse(binding.policyExplain(this.#handle, `fs-${mode}`, path, null))
    // The decision the checks make: a string the core cannot see as written
    // (a lone surrogate crosses as U+FFFD) is refused by the check, so explain
    // must not report the U+FFFD path's answer.
    if (!path.isWellFormed()) overrideDecision(explained, this.#quiet().checkFs(path, mode), ILL_FORMED)
    return explained
  }

  explainFetch(url) {
    url = urlHref(url)
    const explained = JSON.parse(binding.policyExplain(this.#handle, 'fetch', url, null))
    if (!url.isWellFormed()) overrideDecision(explained, this.#quiet().checkFetch(url), ILL_FORMED)
    else {
      // SPEC §3/§11 parity: the decision the checks make.
      const v = withParity(url, (node) => binding.policyCheckFetch(this.#handle, url, null, node), FETCH_INVALID_URL)
      if (v.code === FETCH_INVALID_URL && explained.decision.reason !== DenyReason.INVALID_URL) {
        overrideDecision(explained, DECISIONS[FETCH_INVALID_URL], PARITY)
        const node = nodeView(url)
        explained.parity = { node: node !== undefined && node.href !== undefined ? new URL(node.href).host : null, core: explained.url ? explained.url.host : null }
      }
    }
    return explained
  }

  explainCapability(capabilityId, payload) {
    if (typeof capabilityId !== 'string') throw new TypeError('capabilityId must be a string')
    const field = CAPABILITY_FIELDS.get(capabilityId)
    const plain = payload !== null && typeof payload === 'object' && !types.isProxy(payload) && !Array.isArray(payload)
    const second = CAPABILITY_SECOND_FIELDS.get(capabilityId)
    if (second !== undefined) {
      // Two fields (secrets.use): the own string values only, as the checks read them.
      const p = {}
      for (const k of [field, second]) {
        const v = plain ? ownValue(payload, k) : undefined
        if (typeof v === 'string' && v.isWellFormed()) p[k] = v
      }
      const explained = JSON.parse(binding.policyExplain(this.#handle, 'cap-json', capabilityId, JSON.stringify(p)))
      // The decision the checks make (SPEC §3 parity included).
      overrideDecision(explained, this.#quiet().checkCapability(capabilityId, payload), 'the checks read this payload otherwise (a lone surrogate, or a URL host Node reads differently): refused')
      return explained
    }
    const value = field !== undefined && plain ? ownValue(payload, field) : undefined
    const explained = JSON.parse(binding.policyExplain(this.#handle, 'cap', capabilityId, typeof value === 'string' ? value : null))
    // As explainFs: an ill-formed field is refused by the check, whatever its U+FFFD form would match.
    if (typeof value === 'string' && !value.isWellFormed()) overrideDecision(explained, this.#quiet().checkCapability(capabilityId, payload), ILL_FORMED)
    return explained
  }

  /** A checker that counts nothing, for explain's decisions. */
  #quiet() {
    if (this.#quietChecker === undefined) this.#quietChecker = new (checkerModule().PermissionChecker)(this, { meter: NOOP_METER() })
    return this.#quietChecker
  }

  /**
   * The checks, straight on the policy: a `PermissionChecker` on the global
   * meter provider (resolved at the first check), so denials are counted as
   * always. Use `new PermissionChecker(policy, { meter })` for another meter.
   */
  #default() {
    if (this.#checker === undefined) this.#checker = new (checkerModule().PermissionChecker)(this)
    return this.#checker
  }

  checkFs(path, mode, options) {
    return this.#default().checkFs(path, mode, options)
  }

  assertFs(path, mode, options) {
    return this.#default().assertFs(path, mode, options)
  }

  authorizeFs(path, mode, options) {
    return this.#default().authorizeFs(path, mode, options)
  }

  checkFetch(url) {
    return this.#default().checkFetch(url)
  }

  assertFetch(url) {
    return this.#default().assertFetch(url)
  }

  authorizeFetch(url) {
    return this.#default().authorizeFetch(url)
  }

  checkFetchAddress(url, resolvedIp) {
    return this.#default().checkFetchAddress(url, resolvedIp)
  }

  assertFetchAddress(url, resolvedIp) {
    return this.#default().assertFetchAddress(url, resolvedIp)
  }

  checkCapability(capabilityId, payload) {
    return this.#default().checkCapability(capabilityId, payload)
  }

  assertCapability(capabilityId, payload) {
    return this.#default().assertCapability(capabilityId, payload)
  }

  /** Warnings `{ pointer, code, message }` for grants broader than they likely mean to be. */
  lint() {
    return JSON.parse(binding.policyLint(this.#handle))
  }

  /** `util.inspect(policy)`: `PermissionPolicy { plugin, platform, grants: { fs: 2, ... }, budgets }`. */
  [INSPECT](depth, options, inspect) {
    return inspectAs('PermissionPolicy', policySummary(this), options, inspect)
  }

  static {
    // The one reader of a policy's handle outside the class; module-private.
    readHandle = (policy) => policy.#handle
  }
}

/** The policy handle of a real PermissionPolicy (never a Proxy or a look-alike), else a TypeError. */
function handleOf(policy) {
  if (types.isProxy(policy) || !(policy instanceof PermissionPolicy)) throw new TypeError('expected a PermissionPolicy (from PermissionPolicy.fromManifest)')
  return readHandle(policy)
}

/** A policy's budgets, read through its handle (never a getter anyone could redefine). */
function policyBudgets(policy) {
  return budgetsOf(binding.policyBudgets(handleOf(policy)))
}

module.exports = { PermissionPolicy, POLICY_OPTION_KEYS, handleOf, policyBudgets, policySummary, inspectAs }
