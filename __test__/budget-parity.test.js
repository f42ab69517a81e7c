'use strict'
// BudgetTracker's arithmetic is JS (lib/budget.js); Rust hosts use
// src/budget.rs. This drives the public BudgetTracker and the Rust
// BudgetState (through the test-hooks addon's raw budget functions, which
// share no code with lib/budget.js) with the same random readings, and
// compares every construction error, every status (bit for bit), the elapsed
// time, and the breaches counted in a real OpenTelemetry SDK meter (enforced
// and shadow) against the fresh-breach bits Rust returns. A fixed number of
// sequences per seed (FUZZ_SEED replays one).
const test = require('node:test')
const assert = require('node:assert/strict')
const { PermissionPolicy, BudgetTracker, LIMITS } = require('..')
const native = require('../lib/native.js')
const { SAMPLE_FIELDS, BUDGET_KIND_LIST, BUDGET_KINDS, IO, RESULT } = native
const BUDGET_EXCEEDED_TOTAL = native.BUDGET_EXCEEDED_TOTAL.name
const BUDGET_SHADOW_EXCEEDED_TOTAL = native.BUDGET_SHADOW_EXCEEDED_TOTAL.name
const { loadTestHooksAddon } = require('../scripts/test-hooks-addon.js')
const { meterHarness } = require('./helpers.js')
const { rng } = require('./oracles/rng.js')

const SEQUENCES = Number(process.env.BUDGET_PARITY_SEQUENCES || 12000)
const seed = Number(process.env.FUZZ_SEED || Date.now() % 0x7fffffff)

const LIMIT_VALUES = [1e-9, 0.5, 1, 10, 50, 99.5, 100, 512, 1000, 1e9, 1e300]
// Readings: ordinary, edge and invalid (a non-number reaches both sides as NaN).
const EDGE = [0, -0, 5e-324, 1e-9, 0.5, 1, 50, 100, 100.5, 1000, 2 ** 53, 1e300, Number.MAX_VALUE, -1, -5e-324, NaN, Infinity, -Infinity, 'x', null]
const same = (a, b) => a === b || (Number.isNaN(a) && Number.isNaN(b))

/** A Rust status from the io slots, in the shape BudgetTracker returns. */
function rustStatus(io) {
  if (io[IO.ok] === 1) {
    const s = { ok: true, elapsedMs: io[IO.elapsedMs] }
    if (io[IO.cpuPercentOrBudget] >= 0) s.cpuPercent = io[IO.cpuPercentOrBudget]
    if (io[IO.memoryMbOrLimit] >= 0) s.memoryMb = io[IO.memoryMbOrLimit]
    return s
  }
  const budget = BUDGET_KIND_LIST[io[IO.cpuPercentOrBudget]]
  return { ok: false, budget, limit: io[IO.memoryMbOrLimit], observed: io[IO.observed], reason: BUDGET_KINDS.get(budget), elapsedMs: io[IO.elapsedMs] }
}

function assertSameStatus(js, rust, where) {
  assert.deepEqual(Object.keys(js).sort(), Object.keys(rust).sort(), where)
  for (const k of Object.keys(js)) assert.ok(same(js[k], rust[k]), `${where}: ${k} ${js[k]} vs ${rust[k]}`)
}

test(`BudgetTracker (JS arithmetic) agrees with src/budget.rs on ${SEQUENCES} random sequences`, async () => {
  const hooks = loadTestHooksAddon()
  const r = rng(seed)
  // A meter per batch of sequences: one plugin id each, under the SDK's
  // default cardinality limit (2,000 series per instrument).
  const BATCH = 400
  let m = meterHarness()
  let expected = {}
  let counted = 0
  const compareCounts = async (upTo) => {
    const seen = {}
    for (const [k, v] of Object.entries(await m.counts())) if (k.startsWith(BUDGET_EXCEEDED_TOTAL) || k.startsWith(BUDGET_SHADOW_EXCEEDED_TOTAL)) seen[k] = v
    await m.shutdown()
    assert.deepEqual(seen, expected, `seed ${seed}: breaches counted in the sequences before ${upTo}`)
    counted += Object.values(expected).reduce((a, b) => a + b, 0)
    m = meterHarness()
    expected = {}
  }
  const count = (name, plugin, bits) => {
    for (let i = 0; i < BUDGET_KIND_LIST.length; i++) {
      if (bits & (1 << i)) {
        const key = `${name}|${plugin}|request|${BUDGET_KINDS.get(BUDGET_KIND_LIST[i])}`
        expected[key] = (expected[key] || 0) + 1
      }
    }
  }
  const reading = () => (r.chance(0.3) ? r.pick(EDGE) : r.chance(0.5) ? r.next() * 200 : r.int(2000))
  const budgets = () => {
    const b = {}
    for (const k of BUDGET_KIND_LIST) if (r.chance(0.6)) b[k] = r.pick(LIMIT_VALUES)
    return b
  }
  const io = new Float64Array(IO.len)
  const shadowIo = new Float64Array(IO.len)
  let steps = 0
  let breaches = 0
  let invalid = 0
  for (let n = 0; n < SEQUENCES; n++) {
    if (n > 0 && n % BATCH === 0) await compareCounts(n)
    const plugin = `p${n}`
    const where = `seed ${seed} sequence ${n}`
    const manifest = { budgets: budgets() }
    const policy = PermissionPolicy.fromManifest(manifest, { plugin, platform: 'posix' })
    const rustPolicy = hooks.compilePolicy(JSON.stringify(manifest), plugin, 'posix')
    const shadowManifest = r.chance(0.3) ? { budgets: budgets() } : undefined
    const shadow = shadowManifest && PermissionPolicy.fromManifest(shadowManifest, { plugin, platform: 'posix' })
    const rustShadowPolicy = shadowManifest && hooks.compilePolicy(JSON.stringify(shadowManifest), plugin, 'posix')
    // What the hooks return next; the clock mostly moves forward.
    let clock = r.chance(0.1) ? r.pick(EDGE) : r.int(1e6)
    let cpu = r.chance(0.1) ? r.pick(EDGE) : r.int(100)
    let rss = reading()
    const withCpu = r.chance(0.7)
    const withRss = r.chance(0.7)
    const unmeasured = BUDGET_KIND_LIST.filter(() => r.chance(0.2))
    const unmeasuredBits = unmeasured.reduce((b, k) => b | (1 << BUDGET_KIND_LIST.indexOf(k)), 0)
    const grace = r.chance(0.3) ? undefined : r.pick([0, 0.5, 10, 250, LIMITS.maxCpuGraceMs, -1, -0, NaN, 5e-324])
    const opts = { hooks: { now: () => clock }, meter: m.meter, unmeasured }
    if (withCpu) opts.hooks.cpuTimeMs = () => cpu
    if (withRss) opts.hooks.rssMb = () => rss
    if (grace !== undefined) opts.cpuGraceMs = grace
    if (shadow) opts.shadow = shadow
    const num = (v) => (typeof v === 'number' ? v : NaN)

    // Construction: the same refusal, or both built.
    const create = (h) => hooks.rawBudgetCreate(h, num(clock), withCpu ? num(cpu) : null, withRss ? num(rss) : null, grace === undefined ? LIMITS.defaultCpuGraceMs : grace, unmeasuredBits)
    const rustRefusal = (h) => {
      if (h >= 0) return undefined
      const code = -h
      const field = code >> RESULT.fieldShift
      return (code & RESULT.kindMask) === RESULT.unmeasured ? { unmeasured: BUDGET_KIND_LIST[field] } : { invalid: SAMPLE_FIELDS[field] }
    }
    const rh = create(rustPolicy)
    const rsh = rustShadowPolicy !== undefined ? create(rustShadowPolicy) : undefined
    const refusal = rustRefusal(rh) || (rsh !== undefined ? rustRefusal(rsh) : undefined)
    let tracker
    try {
      tracker = new BudgetTracker(policy, opts)
    } catch (e) {
      assert.ok(refusal, `${where}: JS refused (${e.message}) where Rust built`)
      if (refusal.unmeasured) assert.ok(e instanceof TypeError && e.message.includes(` ${refusal.unmeasured} budget has no sampler`), `${where}: ${e.message}`)
      else assert.deepEqual([e.code, e.details], ['INVALID_SAMPLE', { field: refusal.invalid }], where)
      continue
    }
    assert.equal(refusal, undefined, `${where}: Rust refused ${JSON.stringify(refusal)} where JS built`)

    const start = num(clock)
    const graceMs = grace === undefined ? LIMITS.defaultCpuGraceMs : grace
    for (let s = 0, len = 1 + r.int(30); s < len; s++, steps++) {
      // Sometimes exactly at the end of the CPU grace window, or at a budget's limit.
      if (r.chance(0.05)) clock = start + graceMs
      else if (r.chance(0.03) && manifest.budgets.wallClockMs !== undefined) clock = start + manifest.budgets.wallClockMs
      else clock = r.chance(0.1) ? r.pick(EDGE) : r.chance(0.1) ? num(clock) - r.int(50) : num(clock) + (r.chance(0.5) ? r.next() * 100 : r.int(500))
      if (r.chance(0.8)) cpu = r.chance(0.1) ? r.pick(EDGE) : num(cpu) + r.next() * 100
      if (r.chance(0.5)) rss = r.chance(0.05) && manifest.budgets.memoryMb !== undefined ? manifest.budgets.memoryMb : reading()
      // One of sample(), record(pushed) or check(), and the readings Rust gets for it.
      const how = r.int(3)
      let jsStatus
      let jsError
      let readings
      const call = (f) => {
        try {
          jsStatus = f()
        } catch (e) {
          jsError = e
        }
      }
      if (how === 0) {
        readings = [clock, withCpu ? cpu : undefined, withRss ? rss : undefined]
        call(() => tracker.sample())
      } else if (how === 1) {
        const pushed = {}
        if (r.chance(0.8)) pushed.now = clock
        if (r.chance(0.6)) pushed.cpuTimeMs = cpu
        if (r.chance(0.6)) pushed.rssMb = rss
        readings = ['now' in pushed ? pushed.now : clock, pushed.cpuTimeMs, pushed.rssMb]
        call(() => tracker.record(pushed))
      } else {
        readings = [clock, undefined, undefined]
        call(() => tracker.check())
      }
      const [now, c, m2] = readings
      const fill = (buf) => {
        buf[IO.now] = num(now)
        buf[IO.cpuTimeMs] = c === undefined ? 0 : num(c)
        buf[IO.rssMb] = m2 === undefined ? 0 : num(m2)
        buf[IO.presence] = (c === undefined ? 0 : IO.cpuPresent) | (m2 === undefined ? 0 : IO.rssPresent)
      }
      fill(io)
      const code = hooks.rawBudgetRecord(rh, io.buffer)
      const at = `${where} step ${s} (${['sample', 'record', 'check'][how]} ${readings.map(String)})`
      if ((code & RESULT.kindMask) === RESULT.invalidSample) {
        invalid++
        assert.ok(jsError, `${at}: Rust refused the readings, JS returned ${JSON.stringify(jsStatus)}`)
        assert.deepEqual([jsError.code, jsError.details], ['INVALID_SAMPLE', { field: SAMPLE_FIELDS[code >> RESULT.fieldShift] }], at)
      } else {
        assert.equal(jsError, undefined, `${at}: JS threw ${jsError}`)
        const rust = rustStatus(io)
        assertSameStatus(jsStatus, rust, at)
        if (!rust.ok) breaches++
        count(BUDGET_EXCEEDED_TOTAL, plugin, (code >> RESULT.freshShift) & RESULT.freshMask)
        if (rsh !== undefined) {
          fill(shadowIo)
          const sc = hooks.rawBudgetRecord(rsh, shadowIo.buffer)
          assert.notEqual(sc & RESULT.kindMask, RESULT.invalidSample, at)
          count(BUDGET_SHADOW_EXCEEDED_TOTAL, plugin, (sc >> RESULT.freshShift) & RESULT.freshMask)
        }
      }
      assert.ok(same(tracker.elapsedMs, hooks.rawBudgetElapsed(rh)), `${at}: elapsedMs`)
    }
    hooks.rawRelease(rh)
    if (rsh !== undefined) hooks.rawRelease(rsh)
    hooks.rawRelease(rustPolicy)
    if (rustShadowPolicy !== undefined) hooks.rawRelease(rustShadowPolicy)
  }
  await compareCounts(SEQUENCES)
  console.log(`budget parity seed ${seed}: ${SEQUENCES} sequences, ${steps} steps, ${breaches} over budget, ${invalid} invalid readings, ${counted} breaches counted`)
  // The generator reaches every outcome.
  assert.ok(steps > SEQUENCES && breaches > 100 && invalid > 100 && counted > 100, `${steps} steps, ${breaches} breaches, ${invalid} invalid`)
})
