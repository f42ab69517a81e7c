'use strict'
// @suaveplan/api-sandbox-permissions — the public JS API over the Rust core.
// Argument types are validated here (TypeError); decisions come back from
// Rust as numeric codes and map to frozen decision objects; denials are
// counted through @opentelemetry/api exactly once per call.

const { metrics } = require('@opentelemetry/api')
const { types } = require('node:util')
const native = require('./lib/native.js')
const errors = require('./lib/errors.js')
const { manifestJson } = require('./lib/plain.js')
const { learnManifest } = require('./lib/learn.js')

const { binding, DECISIONS, ALLOW, codeOf, CAPABILITY_FIELDS, CAPABILITY_SECOND_FIELDS, LIMITS, BUDGET_KIND_LIST, BUDGET_KINDS } = native
const { PermissionDeniedError, BudgetExceededError, InvalidManifestError, InvalidSampleError, redact } = errors

const VERSION = require('./package.json').version
const PLATFORMS = new Set(['posix', 'win32'])
const hostPlatform = () => (process.platform === 'win32' ? 'win32' : 'posix')
const hrefOf = Object.getOwnPropertyDescriptor(URL.prototype, 'href').get

/**
 * The string a fetch check reads: a string as is, or the href of a plain
 * `URL` (this realm's, prototype exactly `URL.prototype`, no own properties:
 * a fresh URL has none). A subclass, a Proxy, or a URL with its own
 * `href`/`toString`/`Symbol.toPrimitive` is a TypeError, since `fetch(u)`
 * could request another URL than the href that was checked.
 */
function urlHref(url) {
  if (typeof url === 'string') return url
  if (url !== null && typeof url === 'object' && !types.isProxy(url)) {
    try {
      if (Object.getPrototypeOf(url) === URL.prototype && Reflect.ownKeys(url).length === 0) return Reflect.apply(hrefOf, url, [])
    } catch {}
    if (url instanceof URL) throw new TypeError('url must be a string or a plain URL (no subclass, no own properties)')
  }
  throw new TypeError(`url must be a string or a URL, got ${types.isProxy(url) ? 'a Proxy' : describe(url)}`)
}

// SPEC §3 parser parity. The url crate (Rust) and this Node's URL (Ada) use
// different IDNA/Unicode tables, so a host with anything but plain ASCII can
// read as two different hosts. Such URLs (and manifest grants) are parsed by
// both; scheme://host:port must agree, else the URL is `invalid_url` (the
// grant INVALID_MANIFEST). Both views go through the same Rust serialiser:
// Node's href is plain ASCII, which both parsers read alike.
const { redactedOrigin } = binding
/** Anything that is not printable ASCII, a percent-escape, a punycode label, or a segment starting with a dot. */
const FETCH_SUSPECT = /[^\x21-\x7e]|%|xn--|[/\\]\./i
/** What makes an authority need the second parse. */
const AUTHORITY_SUSPECT = /[^\x21-\x7e]|%|xn--/i
/**
 * A path segment that starts with a dot (or its escape): dot-segment removal
 * is where Node's URL (Ada) has read paths differently from WHATWG and the
 * core (Node 20's Ada keeps `/admin/.b/../../public/z` as written), so such a
 * path is parsed by both and must read the same (SPEC §3, §11).
 */
const PATH_DOT_SEGMENT = /[/\\](?:\.|%2e)/i
/** The authority of a URL with a scheme, as WHATWG finds it: any run of '/' or '\\' after `scheme:`, up to '/', '\\', '?' or '#'. */
const FETCH_AUTHORITY = /^[a-zA-Z][a-zA-Z0-9+.-]*:[/\\]*([^/\\?#]*)/

/**
 * Whether `s` needs Node's parse too. Plain printable-ASCII URLs without '%',
 * 'xn--' or a dot after a slash answer after one regex test (the hot path). Otherwise the
 * authority is found as WHATWG does; tab/newline anywhere (stripped by the
 * parser) or C0/space at either end (trimmed) means "not sure": parse twice.
 */
function fetchNeedsSecondParse(s) {
  if (!FETCH_SUSPECT.test(s)) return false
  if (/[\t\n\r]/.test(s) || s.charCodeAt(0) <= 0x20 || s.charCodeAt(s.length - 1) <= 0x20) return true
  const m = FETCH_AUTHORITY.exec(s)
  return m === null || AUTHORITY_SUSPECT.test(m[1]) || PATH_DOT_SEGMENT.test(s.slice(m[0].length))
}

/** Node's URL and the Rust core read the same scheme, host and port (or Rust finds no origin: it denies). */
function fetchParsersAgree(s) {
  let href
  try {
    href = new URL(s).href
  } catch {
    return false
  }
  return redactedOrigin(s) === redactedOrigin(href)
}

/**
 * Path parity (SPEC §11): for a URL that took the second parse and was
 * allowed, Node's pathname of the input must equal its pathname of the
 * canonical URL the core checked, so a host fetching the raw string reaches
 * the path that was checked against path scopes and deny rules.
 */
function pathParity(s, canonical) {
  try {
    return new URL(s).pathname === new URL(canonical).pathname
  } catch {
    return false
  }
}

/** `true` unless `s` is a URL the two parsers read differently (SPEC §3). */
const fetchParity = (s) => !fetchNeedsSecondParse(s) || fetchParsersAgree(s)

/** The host of a fetch pattern `[scheme://][*.]host[:port]` reads the same to Node's URL and to the core. */
function grantParity(pattern) {
  let rest = pattern
  const i = rest.indexOf('://')
  if (i >= 0) rest = rest.slice(i + 3)
  if (rest.startsWith('*.')) rest = rest.slice(2)
  if (rest.startsWith('[')) return true
  const c = rest.indexOf(':')
  if (c >= 0) rest = rest.slice(0, c)
  return !AUTHORITY_SUSPECT.test(rest) || fetchParsersAgree(`http://${rest}/`)
}

/** INVALID_MANIFEST for a fetch, deny.fetch or secrets hosts pattern that Node would read as another host. */
function checkGrantParity(json) {
  if (!/[^\x00-\x7f]|xn--|\\u/i.test(json)) return
  const m = JSON.parse(json)
  const list = (patterns, pointer) => {
    if (!Array.isArray(patterns)) return
    for (let i = 0; i < patterns.length; i++) {
      if (typeof patterns[i] === 'string' && !grantParity(patterns[i])) {
        throw new InvalidManifestError({
          pointer: `${pointer}/${i}`,
          expected: "a host that Node's URL parser reads as the same host (IDNA tables differ; write the punycode A-label)",
        })
      }
    }
  }
  if (m === null || typeof m !== 'object') return
  list(m.fetch, '/fetch')
  if (m.deny !== null && typeof m.deny === 'object') list(m.deny.fetch, '/deny/fetch')
  if (Array.isArray(m.secrets)) {
    m.secrets.forEach((s, i) => {
      if (s !== null && typeof s === 'object') list(s.hosts, `/secrets/${i}/hosts`)
    })
  }
}

const NATIVE = Symbol('native')
const HANDLE = Symbol('handle')
const { rawCheckFs, rawCheckFetch, rawCheckCapability, rawBudgetCreate, rawBudgetRecord, rawBudgetElapsed } = binding

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

const { isProxy } = require('node:util').types

/**
 * One security option, read strictly (SPEC §2 "Security options"): an own
 * data property's value, or `undefined` when neither the object nor its
 * prototype chain has `key`. An accessor (getter), an inherited value, or a
 * Proxy (the object or anywhere on its prototype chain) is a TypeError, so a
 * host never silently gets the default of a field it meant to set.
 */
function securityOption(obj, key, what) {
  if (isProxy(obj)) throw new TypeError(`${what} must be a plain object, not a Proxy`)
  const d = Object.getOwnPropertyDescriptor(obj, key)
  if (d !== undefined) {
    if (!('value' in d)) throw new TypeError(`${what}.${key} must be a data property, not a getter`)
    return d.value
  }
  for (let p = Object.getPrototypeOf(obj); p !== null; p = Object.getPrototypeOf(p)) {
    if (isProxy(p)) throw new TypeError(`${what} must not inherit from a Proxy`)
    if (Object.getOwnPropertyDescriptor(p, key) !== undefined) throw new TypeError(`${what}.${key} must be an own property, not inherited`)
  }
  return undefined
}

/**
 * An options object carrying only security options: `undefined` (every
 * default) or an object whose own keys are all in `keys`, each read with
 * `securityOption`. An unknown key (a typo such as `resolveSymLinks`) is a
 * TypeError rather than a silently weaker check.
 */
function securityOptions(options, what, keys) {
  if (options === undefined) return undefined
  if (options === null || typeof options !== 'object') throw new TypeError(`${what} must be an object, got ${describe(options)}`)
  if (isProxy(options)) throw new TypeError(`${what} must be a plain object, not a Proxy`)
  for (const k of Reflect.ownKeys(options)) {
    if (!keys.includes(k)) throw new TypeError(`${what} has an unknown key ${typeof k === 'string' ? JSON.stringify(redact(k)) : 'symbol'}; allowed: ${keys.join(', ')}`)
  }
  return options
}

/** Reads an own data property without invoking getters; `undefined` otherwise. */
function ownValue(obj, key) {
  try {
    const d = Object.getOwnPropertyDescriptor(obj, key)
    return d !== undefined && 'value' in d ? d.value : undefined
  } catch {
    return undefined
  }
}

const INSPECT = Symbol.for('nodejs.util.inspect.custom')
/** A meter that records nothing, for explain views (which count no metric). */
const NOOP_METER = require('@opentelemetry/api').createNoopMeter()

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

/** The validated, compiled permissions of one plugin. Immutable; build with `fromManifest`. */
class PermissionPolicy {
  #native
  #handle
  #plugin
  #platform
  #json
  #checker

  /** @private use `PermissionPolicy.fromManifest` */
  constructor(token, nativePolicy, plugin, platform) {
    if (token !== NATIVE) throw new TypeError('use PermissionPolicy.fromManifest(manifest, { plugin })')
    this.#native = nativePolicy
    this.#handle = nativePolicy.handle()
    this.#plugin = plugin
    this.#platform = platform
    Object.freeze(this)
  }

  /**
   * Validates and compiles a manifest. Throws `INVALID_MANIFEST` (with
   * `details.pointer` and `details.expected`) for any invalid field, and a
   * TypeError for invalid options.
   */
  static fromManifest(manifest, options) {
    const opts = optionsObject(options, 'options')
    const plugin = ownValue(opts, 'plugin')
    if (typeof plugin !== 'string' || plugin.length === 0 || tooLong(plugin, LIMITS.maxNameBytes) || /[\u0000-\u001f\u007f-\u009f]/.test(plugin) || !plugin.isWellFormed()) {
      throw new TypeError(`options.plugin must be a plugin id of 1 to ${LIMITS.maxNameBytes} UTF-8 bytes without control characters`)
    }
    const platformOpt = securityOption(opts, 'platform', 'options')
    const platform = platformOpt === undefined ? hostPlatform() : platformOpt
    if (!PLATFORMS.has(platform)) throw new TypeError("options.platform must be 'posix' or 'win32'")
    const json = manifestJson(manifest)
    const nativePolicy = new binding.NativePolicy(json, plugin, platform)
    const err = nativePolicy.error()
    if (err !== null) throw new InvalidManifestError({ pointer: err[0], expected: err[1] })
    checkGrantParity(json)
    return new PermissionPolicy(NATIVE, nativePolicy, plugin, platform)
  }

  get plugin() {
    return this.#plugin
  }

  get platform() {
    return this.#platform
  }

  /** Budgets from the manifest; absent ones are omitted. */
  get budgets() {
    const [cpuPercent, memoryMb, wallClockMs] = this.#native.budgets()
    const b = {}
    if (cpuPercent >= 0) b.cpuPercent = cpuPercent
    if (memoryMb >= 0) b.memoryMb = memoryMb
    if (wallClockMs >= 0) b.wallClockMs = wallClockMs
    return Object.freeze(b)
  }

  /** The normalised manifest (deep-frozen). */
  toJSON() {
    if (this.#json === undefined) this.#json = native.deepFreeze(JSON.parse(this.#native.toJson()))
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
    return JSON.parse(this.#native.explain(`fs-${mode}`, path, null))
  }

  explainFetch(url) {
    url = urlHref(url)
    const explained = JSON.parse(this.#native.explain('fetch', url, null))
    if (url.isWellFormed() && !fetchParity(url)) {
      // SPEC §3 parity: the checks deny what Node's URL reads differently.
      explained.decision = { allowed: false, capability: 'fetch', reason: 'invalid_url' }
      let node = null
      try {
        node = new URL(url).host
      } catch {}
      explained.parity = { node, core: explained.url ? explained.url.host : null }
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
      const explained = JSON.parse(this.#native.explain('cap-json', capabilityId, JSON.stringify(p)))
      // The decision the checks make (SPEC §3 parity included).
      explained.decision = new PermissionChecker(this, { meter: NOOP_METER }).checkCapability(capabilityId, payload)
      return explained
    }
    const value = field !== undefined && plain ? ownValue(payload, field) : undefined
    return JSON.parse(this.#native.explain('cap', capabilityId, typeof value === 'string' ? value : null))
  }

  /**
   * The checks, straight on the policy: a `PermissionChecker` on the global
   * meter provider (resolved at the first check), so denials are counted as
   * always. Use `new PermissionChecker(policy, { meter })` for another meter.
   */
  #default() {
    if (this.#checker === undefined) this.#checker = new PermissionChecker(this)
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
    return JSON.parse(this.#native.lint())
  }

  /** `util.inspect(policy)`: `PermissionPolicy { plugin, platform, grants: { fs: 2, ... }, budgets }`. */
  [INSPECT](depth, options, inspect) {
    return inspectAs('PermissionPolicy', policySummary(this), options, inspect)
  }

  static [NATIVE](policy) {
    return policy.#native
  }

  static [HANDLE](policy) {
    return policy.#handle
  }
}

const nativeOf = (policy) => {
  if (types.isProxy(policy) || !(policy instanceof PermissionPolicy)) throw new TypeError('expected a PermissionPolicy (from PermissionPolicy.fromManifest)')
  return PermissionPolicy[NATIVE](policy)
}
const handleOf = (policy) => {
  nativeOf(policy)
  return PermissionPolicy[HANDLE](policy)
}

/** Resolves the meter: an explicit one, or the global provider's at this moment. */
function meterFrom(opts) {
  const meter = ownValue(opts, 'meter')
  if (meter === undefined) return metrics.getMeter(native.METER_NAME, VERSION)
  if (meter === null || typeof meter.createCounter !== 'function') throw new TypeError('options.meter must be an OpenTelemetry Meter')
  return meter
}

function counterFor(meter, d) {
  return meter.createCounter(d.name, { description: d.description, unit: d.unit })
}

const FETCH_INVALID_URL = codeOf('fetch', 'invalid_url')
const FS_READ_INVALID = codeOf('fs.read', 'invalid_path')
const FS_WRITE_INVALID = codeOf('fs.write', 'invalid_path')
const FS_MODES = new Map([
  ['read', 0],
  ['write', 1],
])
const FS_OPTION_KEYS = Object.freeze(['resolveSymlinks'])
/** Every option `PermissionChecker` knows; any other key is a TypeError. */
const CHECKER_OPTION_KEYS = Object.freeze(['meter', 'shadow', 'onShadow'])
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
/** `PermissionPolicy.fromManifest` options that `createChecker` forwards. */
const POLICY_OPTION_KEYS = Object.freeze(['plugin', 'platform'])

/**
 * Whether `s` has more than `max` UTF-8 bytes, the unit of every limit
 * (SPEC §5). A UTF-16 unit is 1 to 3 UTF-8 bytes (a surrogate pair 4 for 2,
 * a lone one 3, as U+FFFD), so only lengths in between are counted.
 */
const tooLong = (s, max) => s.length > max || (s.length * 3 > max && Buffer.byteLength(s, 'utf8') > max)

/**
 * Checks capability calls against a policy and counts every denial once in
 * `plugin.permission_denied_total{plugin, capability, reason}`.
 */
class PermissionChecker {
  #native
  #handle
  #policy
  #counter
  #attrs = []
  /** The shadow (report-only) checker, SPEC §12; `undefined` on the hot path. */
  #shadow
  #onShadow

  /**
   * @param {PermissionPolicy} policy
   * @param {{ meter?: import('@opentelemetry/api').Meter, shadow?: PermissionPolicy, onShadow?: (event: object) => void }} [options]
   */
  constructor(policy, options) {
    this.#native = nativeOf(policy)
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
      nativeOf(shadow)
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
    if (url !== undefined && (d.capability === 'fetch' || d.capability === 'secrets.use')) {
      const origin = typeof url === 'string' && url.isWellFormed() ? binding.redactedOrigin(url) : null
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
      let attrs = this.#attrs[code]
      if (attrs === undefined) {
        const d = DECISIONS[code]
        attrs = this.#attrs[code] = Object.freeze({ plugin: this.#policy.plugin, capability: d.capability, reason: d.reason })
      }
      this.#counter.add(1, attrs)
    }
    return DECISIONS[code]
  }

  #deny(capability, reason) {
    return this.#decide(codeOf(capability, reason))
  }

  /** Validates fs arguments: the mode bits for the core (1: write, 2: resolve symlinks). */
  #fsBits(path, mode, options) {
    const m = FS_MODES.get(mode)
    if (m === undefined) throw new TypeError(`mode must be 'read' or 'write', got ${typeof mode === 'string' ? JSON.stringify(redact(mode)) : describe(mode)}`)
    if (typeof path !== 'string') throw new TypeError(`path must be a string, got ${describe(path)}`)
    const opts = securityOptions(options, 'options', FS_OPTION_KEYS)
    if (opts === undefined) return m
    const resolve = securityOption(opts, 'resolveSymlinks', 'options')
    if (resolve !== undefined && typeof resolve !== 'boolean') throw new TypeError('options.resolveSymlinks must be a boolean')
    return resolve ? m | 2 : m
  }

  #fsCode(path, mode, options) {
    const m = this.#fsBits(path, mode, options)
    if (!path.isWellFormed()) return m & 1 ? FS_WRITE_INVALID : FS_READ_INVALID
    return rawCheckFs(this.#handle, path, m)
  }

  /** `checkFs(path, 'read' | 'write', { resolveSymlinks? })` → decision. */
  checkFs(path, mode, options) {
    // The hot path: a string, a known mode, no options.
    if (typeof path === 'string' && options === undefined && (mode === 'read' || mode === 'write')) {
      const m = mode === 'read' ? 0 : 1
      const code = path.isWellFormed() ? rawCheckFs(this.#handle, path, m) : m === 0 ? FS_READ_INVALID : FS_WRITE_INVALID
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
    const r = path.isWellFormed() && !tooLong(path, LIMITS.maxPathBytes) ? this.#native.authorizeFs(path, m) : m & 1 ? FS_WRITE_INVALID : FS_READ_INVALID
    if (this.#shadow !== undefined) this.#observe((sh) => sh.checkFs(path, mode, options), typeof r === 'string' ? ALLOW : DECISIONS[r])
    if (typeof r === 'string') return r
    throw this.#error(this.#decide(r))
  }

  #urlString(url) {
    return urlHref(url)
  }

  /** `checkFetch(url)` → decision. */
  checkFetch(url) {
    const s = typeof url === 'string' ? url : this.#urlString(url)
    const d = !s.isWellFormed() ? this.#deny('fetch', 'invalid_url') : this.#fetchDecision(s)
    if (this.#shadow !== undefined) this.#observe((sh) => sh.checkFetch(s), d, s)
    return d
  }

  #fetchDecision(s) {
    const code = fetchNeedsSecondParse(s) ? this.#fetchSlowCode(s) : rawCheckFetch(this.#handle, s)
    return code === 0 ? ALLOW : this.#decide(code)
  }

  /**
   * The decision code for a URL that takes the second parse (SPEC §3 parity):
   * `invalid_url` unless Node's URL and the core agree, else the core's
   * decision on the whole string through napi-rs, as authorizeFetch makes it
   * (the raw hot path copies into a fixed buffer).
   */
  #fetchSlowCode(s) {
    if (!fetchParsersAgree(s)) return FETCH_INVALID_URL
    const r = this.#native.checkFetchUrl(s)
    if (typeof r !== 'string') return r
    return pathParity(s, r) ? 0 : FETCH_INVALID_URL
  }

  #fetchResult(r, s) {
    if (typeof r === 'string') {
      if (fetchNeedsSecondParse(s) && !pathParity(s, r)) throw this.#error(this.#deny('fetch', 'invalid_url'))
      return r
    }
    const d = this.#decide(r)
    throw this.#error(d, s)
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
    const s = this.#urlString(url)
    if (this.#shadow !== undefined) this.#observeFetch(s)
    if (!s.isWellFormed() || !fetchParity(s)) throw this.#error(this.#deny('fetch', 'invalid_url'))
    return this.#fetchResult(this.#native.checkFetchUrl(s), s)
  }

  /** The shadow's view of a fetch an assert/authorize is about to decide (the enforced decision computed uncounted). */
  #observeFetch(s, ip) {
    let enforced
    try {
      if (!s.isWellFormed() || !fetchParity(s)) enforced = DECISIONS[FETCH_INVALID_URL]
      else {
        const r = ip === undefined ? this.#native.checkFetchUrl(s) : this.#native.checkFetchAddress(s, ip)
        enforced = typeof r === 'string' ? (fetchNeedsSecondParse(s) && !pathParity(s, r) ? DECISIONS[FETCH_INVALID_URL] : ALLOW) : DECISIONS[r]
      }
    } catch {
      return
    }
    this.#observe((sh) => (ip === undefined ? sh.checkFetch(s) : sh.checkFetchAddress(s, ip)), enforced, s)
  }

  #addressArgs(url, resolvedIp) {
    const s = this.#urlString(url)
    if (typeof resolvedIp !== 'string') throw new TypeError(`resolvedIp must be a string, got ${describe(resolvedIp)}`)
    return s
  }

  /** DNS-rebinding defence: re-check after resolution → decision. */
  checkFetchAddress(url, resolvedIp) {
    const s = this.#addressArgs(url, resolvedIp)
    if (this.#shadow !== undefined) this.#observeFetch(s, resolvedIp)
    if (!s.isWellFormed() || !fetchParity(s)) return this.#deny('fetch', 'invalid_url')
    const r = this.#native.checkFetchAddress(s, resolvedIp)
    if (typeof r === 'string' && fetchNeedsSecondParse(s) && !pathParity(s, r)) return this.#deny('fetch', 'invalid_url')
    return typeof r === 'string' ? ALLOW : this.#decide(r)
  }

  /** Throws `PERMISSION_DENIED` unless `checkFetchAddress` allows; returns the canonical URL. */
  assertFetchAddress(url, resolvedIp) {
    const s = this.#addressArgs(url, resolvedIp)
    if (this.#shadow !== undefined) this.#observeFetch(s, resolvedIp)
    if (!s.isWellFormed() || !fetchParity(s)) throw this.#error(this.#deny('fetch', 'invalid_url'))
    return this.#fetchResult(this.#native.checkFetchAddress(s, resolvedIp), s)
  }

  #capabilityCode(capabilityId, payload) {
    const field = typeof capabilityId === 'string' ? CAPABILITY_FIELDS.get(capabilityId) : undefined
    if (field === undefined) return { code: codeOf('unknown', 'unknown_capability') }
    const invalid = { code: codeOf(capabilityId, 'invalid_payload') }
    // A Proxy could show this check one value and the host another (its
    // getOwnPropertyDescriptor and get traps disagree): invalid, like a getter.
    if (payload === null || typeof payload !== 'object' || types.isProxy(payload) || Array.isArray(payload)) return invalid
    const value = ownValue(payload, field)
    if (typeof value !== 'string' || tooLong(value, LIMITS.maxPayloadStringBytes) || !value.isWellFormed()) return invalid
    const second = CAPABILITY_SECOND_FIELDS.get(capabilityId)
    if (second !== undefined) return this.#twoFieldCode(capabilityId, value, ownValue(payload, second), invalid)
    if (field === 'url' && fetchNeedsSecondParse(value)) {
      return { code: Buffer.byteLength(value) > LIMITS.maxPayloadStringBytes ? invalid.code : this.#fetchSlowCode(value), value }
    }
    return { code: rawCheckCapability(this.#handle, capabilityId, value), value }
  }

  /**
   * `secrets.use { name, url }` (SPEC §13): both fields strings of at most
   * 4096 UTF-8 bytes; a URL the two parsers read differently (SPEC §3
   * parity, host or path) is never a granted destination.
   */
  #twoFieldCode(capabilityId, name, url, invalid) {
    if (typeof url !== 'string' || tooLong(url, LIMITS.maxPayloadStringBytes) || !url.isWellFormed()) return invalid
    if (fetchNeedsSecondParse(url)) {
      if (Buffer.byteLength(url) > LIMITS.maxPayloadStringBytes) return invalid
      const refused = { code: codeOf(capabilityId, 'secret_destination_not_allowed'), value: url }
      if (!fetchParsersAgree(url)) return refused
      const r = this.#native.checkFetchUrl(url)
      if (typeof r === 'string' && !pathParity(url, r)) return refused
    }
    return { code: rawCheckCapability(this.#handle, capabilityId, name, url), value: url }
  }

  /** `checkCapability(id, payload)` → decision. Payload fields are read as own data properties only. */
  checkCapability(capabilityId, payload) {
    const { code, value } = this.#capabilityCode(capabilityId, payload)
    const d = this.#decide(code)
    if (this.#shadow !== undefined) this.#observe((sh) => sh.checkCapability(capabilityId, payload), d, value)
    return d
  }

  /** Throws `PERMISSION_DENIED` unless `checkCapability` allows. */
  assertCapability(capabilityId, payload) {
    const { code, value } = this.#capabilityCode(capabilityId, payload)
    const d = this.#decide(code)
    if (this.#shadow !== undefined) this.#observe((sh) => sh.checkCapability(capabilityId, payload), d, value)
    if (!d.allowed) throw this.#error(d, d.capability === 'fetch' || d.capability === 'secrets.use' ? value : undefined)
  }

  #error(d, url) {
    const details = { plugin: redact(this.#policy.plugin), capability: d.capability, reason: d.reason }
    if (url !== undefined) {
      const origin = binding.redactedOrigin(url)
      if (origin !== null) details.target = redact(origin)
    }
    return new PermissionDeniedError(details)
  }
}

const SAMPLE_FIELDS = ['now', 'cpuTimeMs', 'rssMb', 'cpuGraceMs']
/** Every option `BudgetTracker` knows; any other key is a TypeError. */
const TRACKER_OPTION_KEYS = Object.freeze(['hooks', 'capability', 'cpuGraceMs', 'unmeasured', 'meter', 'shadow'])
/**
 * A budget metric label: the shape of a capability id (`request`, `fs.read`,
 * `tool.call`), never a path or URL (no `/`, `:`, `\\`, spaces or upper case).
 */
const BUDGET_LABEL = /^[a-z][a-z0-9_.-]{0,63}$/

function hook(hooks, name) {
  const f = ownValue(hooks, name)
  if (f !== undefined && typeof f !== 'function') throw new TypeError(`hooks.${name} must be a function`)
  return f
}

/** A number for the core; anything else becomes NaN, which the core rejects as INVALID_SAMPLE. */
const num = (v) => (typeof v === 'number' ? v : NaN)

const defaultNow = () => performance.now()

/** The sampler hook each budget needs, by budget name (the wall clock has `now`, always). */
const SAMPLER_OF = new Map([
  ['cpuPercent', 'cpuTimeMs'],
  ['memoryMb', 'rssMb'],
  ['wallClockMs', 'now'],
])

/**
 * `options.unmeasured` as a bit set by budget index. A security option: an
 * own data property holding a plain array of distinct budget names; a
 * getter, an inherited value, a Proxy or anything else is a TypeError.
 */
function unmeasuredBits(opts) {
  const bad = () => new TypeError(`options.unmeasured must be an array of distinct budget names (${BUDGET_KIND_LIST.join(', ')})`)
  let list
  try {
    if (types.isProxy(opts)) throw bad()
    const d = Object.getOwnPropertyDescriptor(opts, 'unmeasured')
    if (d === undefined) {
      if ('unmeasured' in opts) throw bad()
      return 0
    }
    if (!('value' in d)) throw bad()
    list = d.value
    if (!Array.isArray(list) || types.isProxy(list) || list.length > BUDGET_KIND_LIST.length) throw bad()
  } catch {
    throw bad()
  }
  let bits = 0
  for (let i = 0; i < list.length; i++) {
    const d = Object.getOwnPropertyDescriptor(list, i)
    const name = d !== undefined && 'value' in d ? d.value : undefined
    const index = typeof name === 'string' ? BUDGET_KIND_LIST.indexOf(name) : -1
    if (index < 0 || bits & (1 << index)) throw bad()
    bits |= 1 << index
  }
  return bits
}

/**
 * Tracks one request's wall clock, memory and CPU against a policy's budgets.
 * Hooks: `now()` (monotonic ms, default `performance.now`), `cpuTimeMs()`
 * (cumulative CPU ms), `rssMb()` (resident MB). Each breach counts once in
 * `plugin.budget_exceeded_total{plugin, capability, reason}`. A `cpuPercent`
 * budget without `cpuTimeMs`, or a `memoryMb` budget without `rssMb`, is a
 * TypeError at construction unless `options.unmeasured` names it (the host
 * measures it elsewhere, e.g. pushes it with `record()`): a budget is never
 * silently unenforced.
 */
class BudgetTracker {
  #native
  // Readings in io[0..4], status out in io[4..9] (see rawBudgetRecord).
  #io = new Float64Array(9)
  #policy
  #now
  #cpu
  #rss
  #counter
  #capability
  /** The shadow policy's tracker (SPEC §12): its own handle, readings and status buffer. */
  #shadowNative
  #shadowIo
  #shadowCounter

  constructor(policy, options) {
    const policyHandle = handleOf(policy)
    const opts = securityOptions(options, 'options', TRACKER_OPTION_KEYS) || {}
    const hooks = optionsObject(ownValue(opts, 'hooks'), 'options.hooks')
    if (types.isProxy(hooks)) throw new TypeError('options.hooks must be a plain object, not a Proxy')
    this.#now = hook(hooks, 'now') || defaultNow
    this.#cpu = hook(hooks, 'cpuTimeMs')
    this.#rss = hook(hooks, 'rssMb')
    const capability = ownValue(opts, 'capability')
    if (capability !== undefined && (typeof capability !== 'string' || !BUDGET_LABEL.test(capability))) {
      throw new TypeError('options.capability must be a metric label of 1 to 64 characters a-z 0-9 _ . - starting with a letter (e.g. request, fs.read); never a path or URL')
    }
    this.#capability = capability === undefined ? 'request' : capability
    const grace = securityOption(opts, 'cpuGraceMs', 'options')
    if (grace !== undefined && (typeof grace !== 'number' || grace > LIMITS.maxCpuGraceMs)) {
      throw new TypeError(`options.cpuGraceMs must be a number of ms, at most LIMITS.maxCpuGraceMs (${LIMITS.maxCpuGraceMs})`)
    }
    const unmeasured = unmeasuredBits(opts)
    const shadow = securityOption(opts, 'shadow', 'options')
    if (shadow !== undefined) {
      nativeOf(shadow)
      if (shadow.plugin !== policy.plugin) throw new TypeError('options.shadow must be a PermissionPolicy for the same plugin id as the enforced policy')
    }
    this.#policy = policy
    const meter = meterFrom(opts)
    this.#counter = counterFor(meter, native.BUDGET_EXCEEDED_TOTAL)
    const now = num(this.#now())
    const cpu = this.#cpu ? num(this.#cpu()) : undefined
    const rss = this.#rss ? num(this.#rss()) : undefined
    const graceMs = grace === undefined ? LIMITS.defaultCpuGraceMs : num(grace)
    const create = (handleFor, which) => {
      const handle = rawBudgetCreate(handleFor, now, cpu, rss, graceMs, unmeasured)
      if (typeof handle === 'number') {
        if ((handle & 0xf) === 4) {
          const budget = BUDGET_KIND_LIST[handle >> 8]
          throw new TypeError(
            `BudgetTracker: ${which} ${budget} budget has no sampler (hooks.${SAMPLER_OF.get(budget)}); pass one, or list it in options.unmeasured if the host measures it elsewhere (record() pushes, or its own enforcement)`,
          )
        }
        throw new InvalidSampleError({ field: SAMPLE_FIELDS[handle >> 8] })
      }
      return handle
    }
    this.#native = create(policyHandle, "the policy's")
    if (shadow !== undefined) {
      this.#shadowNative = create(handleOf(shadow), "the shadow policy's")
      this.#shadowIo = new Float64Array(9)
      this.#shadowCounter = counterFor(meter, native.BUDGET_SHADOW_EXCEEDED_TOTAL)
    }
    Object.freeze(this)
  }

  /** The shadow policy's budgets see the same readings; each of its breaches counts once (never thrown). */
  #recordShadow() {
    const io = this.#shadowIo
    for (let i = 0; i < 4; i++) io[i] = this.#io[i]
    let code
    try {
      code = rawBudgetRecord(this.#shadowNative, io)
    } catch {
      return
    }
    if ((code & 0xf) === 2) return
    const fresh = (code >> 4) & 0x7
    for (let i = 0; i < BUDGET_KIND_LIST.length; i++) {
      if (fresh & (1 << i)) {
        this.#shadowCounter.add(1, { plugin: this.#policy.plugin, capability: this.#capability, reason: BUDGET_KINDS.get(BUDGET_KIND_LIST[i]) })
      }
    }
  }

  /** Wall-clock ms since the tracker started (never decreasing). */
  get elapsedMs() {
    return rawBudgetElapsed(this.#native)
  }

  #apply(code) {
    if ((code & 0xf) === 2) throw new InvalidSampleError({ field: SAMPLE_FIELDS[code >> 8] })
    const fresh = (code >> 4) & 0x7
    if (fresh !== 0) {
      for (let i = 0; i < BUDGET_KIND_LIST.length; i++) {
        if (fresh & (1 << i)) {
          this.#counter.add(1, { plugin: this.#policy.plugin, capability: this.#capability, reason: BUDGET_KINDS.get(BUDGET_KIND_LIST[i]) })
        }
      }
    }
    const s = this.#io
    if (s[4] === 1) {
      const st = { ok: true, elapsedMs: s[5] }
      if (s[6] >= 0) st.cpuPercent = s[6]
      if (s[7] >= 0) st.memoryMb = s[7]
      return st
    }
    const budget = BUDGET_KIND_LIST[s[6]]
    return { ok: false, budget, limit: s[7], observed: s[8], reason: BUDGET_KINDS.get(budget), elapsedMs: s[5] }
  }

  #record(now, cpu, rss) {
    const io = this.#io
    io[0] = now
    io[1] = cpu === undefined ? 0 : cpu
    io[2] = rss === undefined ? 0 : rss
    io[3] = (cpu === undefined ? 0 : 1) | (rss === undefined ? 0 : 2)
    const code = rawBudgetRecord(this.#native, io)
    if (this.#shadowNative !== undefined && (code & 0xf) !== 2) this.#recordShadow()
    return this.#apply(code)
  }

  /** Reads every hook, records and evaluates. Hook errors propagate. */
  sample() {
    const now = num(this.#now())
    const cpu = this.#cpu ? num(this.#cpu()) : undefined
    const rss = this.#rss ? num(this.#rss()) : undefined
    return this.#record(now, cpu, rss)
  }

  /** Records pushed readings `{ now?, cpuTimeMs?, rssMb? }` (`now` defaults to the clock) and evaluates. */
  record(sample) {
    const s = optionsObject(sample, 'sample')
    if (types.isProxy(s)) throw new TypeError('sample must be a plain object, not a Proxy')
    const nowV = ownValue(s, 'now')
    const cpuV = ownValue(s, 'cpuTimeMs')
    const rssV = ownValue(s, 'rssMb')
    const now = nowV === undefined ? num(this.#now()) : num(nowV)
    return this.#record(now, cpuV === undefined ? undefined : num(cpuV), rssV === undefined ? undefined : num(rssV))
  }

  /** Reads the clock only and evaluates. */
  check() {
    return this.#record(num(this.#now()), undefined, undefined)
  }

  /** `check()`, throwing `BUDGET_EXCEEDED` when over budget. */
  assertWithin() {
    const st = this.check()
    if (!st.ok) {
      throw new BudgetExceededError({
        plugin: redact(this.#policy.plugin),
        capability: this.#capability,
        budget: st.budget,
        reason: st.reason,
        limit: st.limit,
        observed: st.observed,
        elapsedMs: st.elapsedMs,
      })
    }
  }
}

/**
 * Process tier (Linux x64/arm64): installs a TSYNC seccomp filter on every
 * thread so this process can no longer open files, create sockets, start
 * processes, trace, mount, load BPF, use io_uring or enter namespaces; open
 * descriptors keep working. Irreversible. Refuses (LOCKDOWN_REFUSED) unless
 * the process was started with UV_USE_IO_URING=0 and no io_uring is open;
 * fails closed (LOCKDOWN_FAILED) when seccomp or TSYNC is unavailable; throws
 * ERR_UNSUPPORTED_PLATFORM elsewhere. Returns what was installed.
 */
function lockdown(options) {
  optionsObject(options, 'options')
  if (process.platform !== 'linux' || (process.arch !== 'x64' && process.arch !== 'arm64')) {
    throw new errors.UnsupportedPlatformError({ feature: 'lockdown', platform: `${process.platform}-${process.arch}` })
  }
  let json
  try {
    json = binding.lockdown()
  } catch (e) {
    const m = /^(LOCKDOWN_REFUSED|LOCKDOWN_FAILED|ERR_UNSUPPORTED_PLATFORM):(.*)$/s.exec(String(e && e.message))
    if (!m) throw e
    if (m[1] === 'ERR_UNSUPPORTED_PLATFORM') throw new errors.UnsupportedPlatformError({ feature: 'lockdown', platform: `${process.platform}-${process.arch}` })
    throw new errors.SandboxPermissionError(m[1], { reason: redact(m[2], 511) })
  }
  return native.deepFreeze(JSON.parse(json))
}

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
  lockdown,
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
