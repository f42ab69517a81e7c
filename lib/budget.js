'use strict'
// The budget arithmetic of SPEC §6, as a state machine over plain numbers:
// the JS twin of `src/budget.rs` `BudgetState`, with the same operations in
// the same order, so both give the same figures bit for bit. It is in JS
// because a sample is a few comparisons, and crossing into the addon for
// them cost more than the arithmetic itself (the Node-API call floor alone
// is about the whole of the plain JS arithmetic it replaces; issue 27 goal
// 4). `__test__/budget-parity.test.js` drives both with the same random
// sequences (the Rust one through the test-hooks addon) and compares every
// status; `src/budget.rs` stays the implementation of Rust hosts.
//
// Readings are validated first, all of them, and an invalid one changes
// nothing. A missing optional reading is `undefined`.

const { BUDGET_KIND_LIST, BUDGET_KINDS, LIMITS } = require('./native.js')

/** The budget indices (`BUDGET_KIND_LIST` order, which is `BudgetKind::index`). */
const WALL = BUDGET_KIND_LIST.indexOf('wallClockMs')
const MEMORY = BUDGET_KIND_LIST.indexOf('memoryMb')
const CPU = BUDGET_KIND_LIST.indexOf('cpuPercent')
if (WALL < 0 || MEMORY < 0 || CPU < 0 || BUDGET_KIND_LIST.length !== 3) throw new Error('api-sandbox-permissions: unexpected budget kinds')

/** A reading the arithmetic accepts: a finite number, not negative (-0 is 0). */
const valid = (v) => typeof v === 'number' && v >= 0 && v !== Infinity

/** A budget's limit: an own property of `budgets` only (a polluted prototype sets none). */
const limit = (budgets, key) => (Object.hasOwn(budgets, key) ? budgets[key] : undefined)

/**
 * The first budget (memory, then CPU) that `budgets` sets, that no sampler
 * measures and that `declared` (a bit set by budget index) does not name;
 * -1 when every budget is enforced. The wall clock always has the clock.
 */
function unmeasuredBudget(budgets, hasCpu, hasRss, declared) {
  if (limit(budgets, 'memoryMb') !== undefined && !hasRss && !(declared & (1 << MEMORY))) return MEMORY
  if (limit(budgets, 'cpuPercent') !== undefined && !hasCpu && !(declared & (1 << CPU))) return CPU
  return -1
}

class BudgetState {
  // The limits; undefined when the policy sets none.
  #wallLimit
  #memoryLimit
  #cpuLimit
  #graceMs
  #startMs
  #lastNowMs
  // The CPU reading at start, or 0 without one (pushed readings count from the request's start).
  #cpuBase
  #cpuLast
  #rssLast
  // The first breach: its budget index (-1 none), limit and observed value. Sticky.
  #breach = -1
  #breachLimit = 0
  #breachObserved = 0
  // Budgets already counted, a bit per index.
  #counted = 0

  /**
   * The field of the first invalid reading, or undefined. The constructor
   * and `record()` set it; when set, nothing else changed.
   */
  invalid
  /** The budgets newly breached by the last `record()`, a bit per index. */
  fresh = 0

  /**
   * Starts at `now` (time zero), with the CPU reading at start as the
   * baseline. Readings and the grace window are validated in that order; the
   * first invalid field is left in `invalid` (the state is unusable then).
   */
  constructor(budgets, now, cpu, rss, graceMs) {
    this.#wallLimit = limit(budgets, 'wallClockMs')
    this.#memoryLimit = limit(budgets, 'memoryMb')
    this.#cpuLimit = limit(budgets, 'cpuPercent')
    if (!valid(now)) this.invalid = 'now'
    else if (cpu !== undefined && !valid(cpu)) this.invalid = 'cpuTimeMs'
    else if (rss !== undefined && !valid(rss)) this.invalid = 'rssMb'
    else if (!valid(graceMs) || graceMs > LIMITS.maxCpuGraceMs) this.invalid = 'cpuGraceMs'
    this.#graceMs = graceMs
    this.#startMs = now
    this.#lastNowMs = now
    this.#cpuBase = cpu === undefined ? 0 : cpu
    this.#cpuLast = cpu
    this.#rssLast = rss
  }

  /** Wall-clock ms since the start: the largest clock reading seen minus the first. */
  get elapsed() {
    return this.#lastNowMs - this.#startMs
  }

  /**
   * Records readings (all validated first) and evaluates: the status
   * (`{ ok: true, elapsedMs, cpuPercent?, memoryMb? }` or the first breach,
   * `{ ok: false, budget, limit, observed, reason, elapsedMs }`), or
   * undefined with `invalid` set.
   */
  record(now, cpu, rss) {
    if (!valid(now)) return this.#reject('now')
    if (cpu !== undefined && !valid(cpu)) return this.#reject('cpuTimeMs')
    if (rss !== undefined && !valid(rss)) return this.#reject('rssMb')
    this.invalid = undefined
    if (now > this.#lastNowMs) this.#lastNowMs = now
    if (cpu !== undefined && !(this.#cpuLast >= cpu)) this.#cpuLast = cpu
    if (rss !== undefined) this.#rssLast = rss
    return this.#evaluate()
  }

  #reject(field) {
    this.invalid = field
    this.fresh = 0
    return undefined
  }

  /** The status now (see `record`), and the budgets newly breached in `fresh`. */
  #evaluate() {
    const elapsed = this.#lastNowMs - this.#startMs
    const cpuLast = this.#cpuLast
    const cpuPercent = cpuLast !== undefined && elapsed > 0 ? (100 * (cpuLast - this.#cpuBase)) / elapsed : undefined
    const rss = this.#rssLast
    let fresh = 0
    // Wall clock, memory, CPU: the first over its limit is the breach reported.
    const wall = this.#wallLimit
    if (wall !== undefined && elapsed > wall) fresh |= this.#hit(WALL, wall, elapsed)
    const memory = this.#memoryLimit
    if (memory !== undefined && rss !== undefined && rss > memory) fresh |= this.#hit(MEMORY, memory, rss)
    const cpu = this.#cpuLimit
    if (elapsed >= this.#graceMs && cpu !== undefined && cpuPercent !== undefined && cpuPercent > cpu) fresh |= this.#hit(CPU, cpu, cpuPercent)
    this.fresh = fresh
    const breach = this.#breach
    if (breach >= 0) {
      const budget = BUDGET_KIND_LIST[breach]
      return { ok: false, budget, limit: this.#breachLimit, observed: this.#breachObserved, reason: BUDGET_KINDS.get(budget), elapsedMs: elapsed }
    }
    // One literal per set of present fields (a literal is one allocation
    // with its final shape; adding fields one by one moves it through several).
    if (cpuPercent !== undefined) return rss !== undefined ? { ok: true, elapsedMs: elapsed, cpuPercent, memoryMb: rss } : { ok: true, elapsedMs: elapsed, cpuPercent }
    return rss !== undefined ? { ok: true, elapsedMs: elapsed, memoryMb: rss } : { ok: true, elapsedMs: elapsed }
  }

  /** A budget over its limit: counted once, and the breach if it is the first. Its fresh bit, or 0. */
  #hit(index, limit, observed) {
    if (this.#breach < 0) {
      this.#breach = index
      this.#breachLimit = limit
      this.#breachObserved = observed
    }
    const bit = 1 << index
    if (this.#counted & bit) return 0
    this.#counted |= bit
    return bit
  }
}

module.exports = { BudgetState, unmeasuredBudget }
