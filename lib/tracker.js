'use strict'
// BudgetTracker: one request's wall clock, memory and CPU against a policy's
// budgets: hooks, options and metrics around the arithmetic of lib/budget.js.

const { types } = require('node:util')
const native = require('./native.js')
const { BudgetExceededError, InvalidSampleError, redact } = require('./errors.js')
const { optionsObject, securityOption, securityOptions, meterFrom, counterFor } = require('./options.js')
const { handleOf, policyBudgets } = require('./policy.js')
const { BudgetState, unmeasuredBudget } = require('./budget.js')

const { LIMITS, BUDGET_KIND_LIST, BUDGET_KINDS } = native

/** Every option `BudgetTracker` knows; any other key is a TypeError. */
const TRACKER_OPTION_KEYS = Object.freeze(['hooks', 'capability', 'cpuGraceMs', 'unmeasured', 'meter', 'shadow'])
/**
 * A budget metric label: the shape of a capability id (`request`, `fs.read`,
 * `tool.call`), never a path or URL (no `/`, `:`, `\\`, spaces or upper case).
 */
const BUDGET_LABEL = /^[a-z][a-z0-9_.-]{0,63}$/

/** The hooks a tracker reads; any other key of `options.hooks` is a TypeError (a typo would leave a reading unsampled). */
const HOOK_KEYS = Object.freeze(['now', 'cpuTimeMs', 'rssMb'])

/**
 * One hook, read strictly like a security option: an own data property
 * holding a function, or absent. A getter or an inherited hook is a
 * TypeError: read, it would run code; skipped, the tracker would fall back
 * to the default clock or leave a budget unsampled.
 */
function hook(hooks, name) {
  const f = securityOption(hooks, name, 'options.hooks')
  if (f !== undefined && typeof f !== 'function') throw new TypeError(`hooks.${name} must be a function`)
  return f
}

/** A number for the core; anything else becomes NaN, which the core rejects as INVALID_SAMPLE. */
const num = (v) => (typeof v === 'number' ? v : NaN)

const defaultNow = () => performance.now()

/**
 * A pushed sample's field: an own data property's value (`undefined` when
 * neither the sample nor its prototype chain has it). A getter or an
 * inherited field is INVALID_SAMPLE for that field: read, it would run code;
 * skipped, the reading would be silently ignored and the record "within
 * budget". A Proxy anywhere on the prototype chain is INVALID_SAMPLE too
 * (its traps could hide a field from the check that the host then reads),
 * as is a chain that throws.
 */
function sampleField(s, field) {
  let d
  try {
    d = Object.getOwnPropertyDescriptor(s, field)
    if (d === undefined) {
      for (let p = Object.getPrototypeOf(s); p !== null; p = Object.getPrototypeOf(p)) {
        if (types.isProxy(p) || Object.getOwnPropertyDescriptor(p, field) !== undefined) throw new InvalidSampleError({ field })
      }
      return undefined
    }
  } catch {
    d = undefined
  }
  if (d === undefined || !Object.hasOwn(d, 'value')) throw new InvalidSampleError({ field })
  return d.value
}

/** The sampler hook each budget needs, by budget name (the wall clock has `now`, always). */
const SAMPLER_OF = new Map([
  ['cpuPercent', 'cpuTimeMs'],
  ['memoryMb', 'rssMb'],
  ['wallClockMs', 'now'],
])

/**
 * `options.unmeasured` as a bit set by budget index. A security option: an
 * own data property holding a plain array of distinct budget names, or
 * `undefined` (the same as absent, as for every other option: nothing is
 * declared measured elsewhere, so no budget is exempt from its sampler); a
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
    if (!Object.hasOwn(d, 'value')) throw bad()
    list = d.value
    if (list === undefined) return 0
    if (!Array.isArray(list) || types.isProxy(list) || list.length > BUDGET_KIND_LIST.length) throw bad()
  } catch {
    throw bad()
  }
  let bits = 0
  for (let i = 0; i < list.length; i++) {
    const d = Object.getOwnPropertyDescriptor(list, i)
    const name = d !== undefined && Object.hasOwn(d, 'value') ? d.value : undefined
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
  /** The budget arithmetic (lib/budget.js): readings in, status fields out. */
  #state
  #policy
  #now
  #cpu
  #rss
  #counter
  #capability
  /** The shadow policy's arithmetic (SPEC §12): the same readings, its own budgets and counter. */
  #shadow
  #shadowCounter

  constructor(policy, options) {
    handleOf(policy)
    const opts = securityOptions(options, 'options', TRACKER_OPTION_KEYS) || {}
    // Hooks are read like security options: a getter or inherited hook
    // (or `hooks` object) is a TypeError, never the default clock or an
    // unsampled budget in its place; so is a key that names no hook.
    const hooks = securityOptions(securityOption(opts, 'hooks', 'options'), 'options.hooks', HOOK_KEYS) || {}
    this.#now = hook(hooks, 'now') || defaultNow
    this.#cpu = hook(hooks, 'cpuTimeMs')
    this.#rss = hook(hooks, 'rssMb')
    const capability = securityOption(opts, 'capability', 'options')
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
      handleOf(shadow)
      if (shadow.plugin !== policy.plugin) throw new TypeError('options.shadow must be a PermissionPolicy for the same plugin id as the enforced policy')
    }
    this.#policy = policy
    const meter = meterFrom(opts)
    this.#counter = counterFor(meter, native.BUDGET_EXCEEDED_TOTAL)
    const now = num(this.#now())
    const cpu = this.#cpu ? num(this.#cpu()) : undefined
    const rss = this.#rss ? num(this.#rss()) : undefined
    const graceMs = grace === undefined ? LIMITS.defaultCpuGraceMs : num(grace)
    const create = (p, which) => {
      const budgets = policyBudgets(p)
      const missing = unmeasuredBudget(budgets, cpu !== undefined, rss !== undefined, unmeasured)
      if (missing >= 0) {
        const budget = BUDGET_KIND_LIST[missing]
        throw new TypeError(
          `BudgetTracker: ${which} ${budget} budget has no sampler (hooks.${SAMPLER_OF.get(budget)}); pass one, or list it in options.unmeasured if the host measures it elsewhere (record() pushes, or its own enforcement)`,
        )
      }
      const state = new BudgetState(budgets, now, cpu, rss, graceMs)
      if (state.invalid !== undefined) throw new InvalidSampleError({ field: state.invalid })
      return state
    }
    this.#state = create(policy, "the policy's")
    if (shadow !== undefined) {
      this.#shadow = create(shadow, "the shadow policy's")
      this.#shadowCounter = counterFor(meter, native.BUDGET_SHADOW_EXCEEDED_TOTAL)
    }
    Object.freeze(this)
  }

  /** Wall-clock ms since the tracker started (never decreasing). */
  get elapsedMs() {
    return this.#state.elapsed
  }

  /**
   * Counts each budget in `fresh` (a bit per index) once in `counter`. Every
   * add is attempted, whatever an earlier one threw (a meter is host code:
   * one that throws, or records on this tracker again, must not lose the
   * other breaches); the first error, if any, is returned.
   */
  #count(counter, fresh) {
    let error
    for (let i = 0; i < BUDGET_KIND_LIST.length; i++) {
      if (fresh & (1 << i)) {
        try {
          counter.add(1, { plugin: this.#policy.plugin, capability: this.#capability, reason: BUDGET_KINDS.get(BUDGET_KIND_LIST[i]) })
        } catch (e) {
          error ??= { e }
        }
      }
    }
    return error
  }

  /**
   * Records and evaluates: the status, and the first error the enforced
   * counter threw while counting (every breach is counted first), if any.
   */
  #evaluate(now, cpu, rss) {
    const s = this.#state
    // The status and fresh breaches are taken before any counter runs: a
    // meter is host code and may record on this tracker again.
    const status = s.record(now, cpu, rss)
    if (status === undefined) throw new InvalidSampleError({ field: s.invalid })
    const fresh = s.fresh
    const shadow = this.#shadow
    let shadowFresh = 0
    if (shadow !== undefined) {
      // The same readings, just accepted.
      shadow.record(now, cpu, rss)
      shadowFresh = shadow.fresh
    }
    // The enforced counter first; the shadow's breaches are counted, never thrown (SPEC §12).
    const failed = fresh === 0 ? undefined : this.#count(this.#counter, fresh)
    if (shadowFresh !== 0) this.#count(this.#shadowCounter, shadowFresh)
    return [status, failed]
  }

  /** `#evaluate`, the meter's error thrown: it is the host's to see, once every breach was counted. */
  #record(now, cpu, rss) {
    const [status, failed] = this.#evaluate(now, cpu, rss)
    if (failed !== undefined) throw failed.e
    return status
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
    const nowV = sampleField(s, 'now')
    const cpuV = sampleField(s, 'cpuTimeMs')
    const rssV = sampleField(s, 'rssMb')
    const now = nowV === undefined ? num(this.#now()) : num(nowV)
    return this.#record(now, cpuV === undefined ? undefined : num(cpuV), rssV === undefined ? undefined : num(rssV))
  }

  /** Reads the clock only and evaluates. */
  check() {
    return this.#record(num(this.#now()), undefined, undefined)
  }

  /**
   * `check()`, throwing `BUDGET_EXCEEDED` when over budget: also when the
   * enforced counter threw while counting this breach (that error is the
   * `cause`), so a host that stops on `isBudgetExceeded` always stops.
   */
  assertWithin() {
    const [st, failed] = this.#evaluate(num(this.#now()), undefined, undefined)
    if (!st.ok) {
      const e = new BudgetExceededError({
        plugin: redact(this.#policy.plugin),
        capability: this.#capability,
        budget: st.budget,
        reason: st.reason,
        limit: st.limit,
        observed: st.observed,
        elapsedMs: st.elapsedMs,
      })
      if (failed !== undefined) Object.defineProperty(e, 'cause', { value: failed.e, writable: true, configurable: true })
      throw e
    }
    // Within budget, nothing was counted, so no counter ran.
  }
}

module.exports = { BudgetTracker }
