'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const { Worker } = require('node:worker_threads')
const { PermissionPolicy, BudgetTracker, isBudgetExceeded, isInvalidSample, BudgetExceededError } = require('..')
const { meterHarness, assertSchema } = require('./helpers.js')

const policy = (budgets) => PermissionPolicy.fromManifest({ budgets }, { plugin: 'bp', platform: 'posix' })

function manual(start = 0) {
  const s = { now: start, cpu: 0, rss: 10 }
  return { s, hooks: { now: () => s.now, cpuTimeMs: () => s.cpu, rssMb: () => s.rss } }
}

test('wall clock, memory and CPU against their limits with a manual clock', async () => {
  const h = meterHarness()
  const { s, hooks } = manual(1000)
  const t = new BudgetTracker(policy({ wallClockMs: 1000, memoryMb: 64, cpuPercent: 50 }), { hooks, meter: h.meter, cpuGraceMs: 100 })
  assert.equal(t.elapsedMs, 0)
  s.now = 1050
  s.cpu = 50 // 100% CPU, inside the grace window
  assert.deepEqual(t.sample(), { ok: true, elapsedMs: 50, cpuPercent: 100, memoryMb: 10 })
  s.now = 1200
  s.cpu = 100 // 50%: at the limit
  assert.equal(t.sample().ok, true)
  s.rss = 64.5
  const st = t.sample()
  assert.deepEqual(st, { ok: false, budget: 'memoryMb', limit: 64, observed: 64.5, reason: 'memory', elapsedMs: 200 })
  // Sticky, and counted once however often it is checked.
  s.rss = 1
  for (let i = 0; i < 5; i++) assert.equal(t.sample().budget, 'memoryMb')
  assert.throws(() => t.assertWithin(), (e) => isBudgetExceeded(e) && e instanceof BudgetExceededError && assertSchema(e) && e.details.budget === 'memoryMb' && e.details.plugin === 'bp')
  const points = await h.points()
  assert.deepEqual(points.map((p) => [p.name, p.attributes, p.value]), [['plugin.budget_exceeded_total', { plugin: 'bp', capability: 'request', reason: 'memory' }, 1]])
  await h.shutdown()
})

test('check() reads the clock only; record() takes pushed samples', () => {
  const { s, hooks } = manual()
  let rssReads = 0
  hooks.rssMb = () => {
    rssReads++
    return s.rss
  }
  const t = new BudgetTracker(policy({ wallClockMs: 100, memoryMb: 50 }), { hooks })
  const reads = rssReads
  s.now = 100
  assert.equal(t.check().ok, true)
  assert.equal(rssReads, reads)
  assert.equal(t.record({ rssMb: 51 }).budget, 'memoryMb')
  const t2 = new BudgetTracker(policy({ wallClockMs: 100 }), { hooks: { now: () => 0 } })
  assert.deepEqual(t2.record({ now: 100.5 }), { ok: false, budget: 'wallClockMs', limit: 100, observed: 100.5, reason: 'wall_clock', elapsedMs: 100.5 })
})

test('a backwards clock never shrinks elapsed time', () => {
  const { s, hooks } = manual(500)
  const t = new BudgetTracker(policy({ wallClockMs: 1000 }), { hooks })
  s.now = 800
  t.sample()
  s.now = 100
  assert.equal(t.sample().elapsedMs, 300)
  assert.equal(t.elapsedMs, 300)
})

test('invalid samples are INVALID_SAMPLE, never within budget', () => {
  for (const bad of [NaN, Infinity, -Infinity, -1, '5', null, {}, 10n]) {
    const { s, hooks } = manual()
    const t = new BudgetTracker(policy({ memoryMb: 64 }), { hooks })
    s.rss = bad
    assert.throws(() => t.sample(), (e) => isInvalidSample(e) && assertSchema(e) && e.details.field === 'rssMb', String(bad))
    assert.throws(() => t.record({ cpuTimeMs: bad }), (e) => isInvalidSample(e) && e.details.field === 'cpuTimeMs')
    assert.throws(() => t.record({ now: bad }), (e) => isInvalidSample(e) && e.details.field === 'now')
  }
  assert.throws(() => new BudgetTracker(policy({}), { hooks: { now: () => NaN } }), (e) => isInvalidSample(e) && e.details.field === 'now')
  assert.throws(() => new BudgetTracker(policy({}), { cpuGraceMs: -5 }), (e) => isInvalidSample(e) && e.details.field === 'cpuGraceMs')
})

test('a budget limit reads back as exactly the number the manifest wrote (one ULP over it is a breach)', () => {
  // The red team's case: 1/11 came back 2 ULP wider, so a reading just over
  // the manifest's limit passed (serde_json's default float parse).
  const v = 1 / 11
  const p = policy({ memoryMb: v, wallClockMs: v, cpuPercent: v })
  assert.deepEqual(p.budgets, { cpuPercent: v, memoryMb: v, wallClockMs: v })
  assert.equal(p.toJSON().budgets.memoryMb, v)
  const next = v + Number.EPSILON * v
  const t = new BudgetTracker(p, { hooks: { now: () => 0 }, unmeasured: ['memoryMb', 'cpuPercent'] })
  assert.deepEqual(t.record({ now: next, rssMb: v }), { ok: false, budget: 'wallClockMs', limit: v, observed: next, reason: 'wall_clock', elapsedMs: next })
  // Random doubles (every exponent), their own oracle: V8 wrote the text, the limit must read back as the same number.
  const bits = new BigUint64Array(1)
  const f = new Float64Array(bits.buffer)
  let seed = 0x9e3779b97f4a7c15n
  let n = 0
  for (let i = 0; i < 20000; i++) {
    seed = (seed * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn
    bits[0] = seed & 0x7fffffffffffffffn
    const x = f[0]
    if (!(Number.isFinite(x) && x > 0)) continue
    const b = policy({ memoryMb: x, wallClockMs: i / 7 + 1 }).budgets
    assert.ok(Object.is(b.memoryMb, x) && Object.is(b.wallClockMs, i / 7 + 1), `${x} read back as ${b.memoryMb}; ${i / 7 + 1} as ${b.wallClockMs}`)
    n++
  }
  assert.ok(n > 19000)
})

test('hooks, meter and capability are read like security options (never the default clock or global meter in their place)', () => {
  const p = policy({ wallClockMs: 10, memoryMb: 10 })
  const getter = (o, k, v) => Object.defineProperty(o, k, { get: () => v, enumerable: true })
  const refused = [
    ['a getter now', () => ({ hooks: getter({}, 'now', () => 0) })],
    ['an inherited now', () => ({ hooks: Object.create({ now: () => 0 }) })],
    ['a getter hooks', () => getter({}, 'hooks', { now: () => 0 })],
    ['inherited hooks', () => Object.create({ hooks: { now: () => 0 } })],
    ['a hook key that is a typo', () => ({ hooks: { now: () => 0, rssMB: () => 1 } })],
    ['a Proxy hooks', () => ({ hooks: new Proxy({ now: () => 0 }, {}) })],
    ['a getter meter', () => getter({ hooks: { now: () => 0 } }, 'meter', { createCounter() {} })],
    ['an inherited meter', () => Object.assign(Object.create({ meter: { createCounter() {} } }), { hooks: { now: () => 0 } })],
    ['a getter capability', () => getter({ hooks: { now: () => 0 } }, 'capability', 'fs.read')],
  ]
  for (const [what, opts] of refused) {
    const o = opts()
    o.unmeasured = ['memoryMb']
    assert.throws(() => new BudgetTracker(p, o), TypeError, what)
  }
  // The same hooks as own data properties are accepted.
  assert.equal(new BudgetTracker(p, { hooks: { now: () => 0 }, capability: 'fs.read', unmeasured: ['memoryMb'] }).check().ok, true)
  const { PermissionChecker } = require('..')
  assert.throws(() => new PermissionChecker(p, getter({}, 'meter', { createCounter() {} })), TypeError, 'a getter meter on a checker')
  assert.throws(() => new PermissionChecker(p, Object.create({ meter: { createCounter() {} } })), TypeError, 'an inherited meter on a checker')
})

test('record(): a field the sample lacks while a Proxy is on its prototype chain is INVALID_SAMPLE (a trap could hide it)', () => {
  const t = new BudgetTracker(policy({ memoryMb: 10 }), { hooks: { now: () => 0 }, unmeasured: ['memoryMb'] })
  const hidden = Object.create(new Proxy({ rssMb: 5000 }, { has: () => false }))
  assert.equal(hidden.rssMb, 5000)
  assert.throws(() => t.record(hidden), isInvalidSample)
  // Every field an own data property: read without looking at the chain.
  assert.equal(t.record(Object.assign(Object.create(new Proxy({}, {})), { now: 1, cpuTimeMs: 0, rssMb: 1 })).ok, true)
})

test('a meter that throws or records on the tracker again loses no breach, and the shadow counter never throws', async () => {
  const h = meterHarness()
  let now = 0
  let t
  // The shadow's counter calls back into the tracker, which throws BUDGET_EXCEEDED inside the meter.
  const reentrant = {
    createCounter(name, o) {
      const c = h.meter.createCounter(name, o)
      return { add: (v, a) => { c.add(v, a); if (name === 'plugin.budget_shadow_exceeded_total') t.assertWithin() } }
    },
  }
  t = new BudgetTracker(PermissionPolicy.fromManifest({ budgets: { wallClockMs: 10 } }, { plugin: 'reenter' }), {
    hooks: { now: () => now },
    meter: reentrant,
    shadow: PermissionPolicy.fromManifest({ budgets: { wallClockMs: 5 } }, { plugin: 'reenter' }),
  })
  now = 20
  assert.equal(t.check().budget, 'wallClockMs')
  // An enforced counter whose first add throws: the other breach is still counted, then the error reaches the caller.
  let glitch = true
  const flaky = {
    createCounter(name, o) {
      const c = h.meter.createCounter(name, o)
      return { add: (v, a) => { if (glitch) { glitch = false; throw new Error('exporter glitch') } c.add(v, a) } }
    },
  }
  const t2 = new BudgetTracker(PermissionPolicy.fromManifest({ budgets: { wallClockMs: 10, memoryMb: 10 } }, { plugin: 'flaky' }), { hooks: { now: () => 0 }, meter: flaky, unmeasured: ['memoryMb'] })
  assert.throws(() => t2.record({ now: 20, rssMb: 20 }), /exporter glitch/)
  assert.equal(t2.check().ok, false, 'the breach stays')
  // assertWithin on a breach whose counting threw: still BUDGET_EXCEEDED (a host stopping on it stops), the meter's error its cause.
  const broken = { createCounter: () => ({ add() { throw new Error('meter down') } }) }
  let clock = 0
  const t3 = new BudgetTracker(PermissionPolicy.fromManifest({ budgets: { wallClockMs: 10 } }, { plugin: 'down' }), { hooks: { now: () => clock }, meter: broken })
  clock = 50
  assert.throws(() => t3.assertWithin(), (e) => isBudgetExceeded(e) && e.details.budget === 'wallClockMs' && e.cause instanceof Error && e.cause.message === 'meter down')
  assert.throws(() => t3.assertWithin(), (e) => isBudgetExceeded(e) && e.cause === undefined, 'counted once: no counter runs the second time')
  // A meter whose counters are not counters is refused when the tracker or checker is built, not at the first breach.
  for (const c of [null, undefined, {}, { add: 1 }]) {
    const m = { createCounter: () => c }
    assert.throws(() => new BudgetTracker(policy({ wallClockMs: 10 }), { hooks: { now: () => 0 }, meter: m }), TypeError, String(c))
    assert.throws(() => new (require('..').PermissionChecker)(policy({}), { meter: m }), TypeError, String(c))
  }
  const counts = await h.counts()
  assert.equal(counts['plugin.budget_exceeded_total|reenter|request|wall_clock'], 1)
  assert.equal(counts['plugin.budget_shadow_exceeded_total|reenter|request|wall_clock'], 1)
  // memoryMb (index 1) was added first and is the one the meter dropped; wallClockMs still counted.
  assert.equal(counts['plugin.budget_exceeded_total|flaky|request|wall_clock'], 1)
  assert.equal(counts['plugin.budget_exceeded_total|flaky|request|memory'], undefined)
  await h.shutdown()
})

test('hooks that throw are surfaced, not swallowed', () => {
  const boom = new Error('sampler failed')
  let fail = false
  const t = new BudgetTracker(policy({ memoryMb: 64 }), {
    hooks: {
      now: () => 0,
      rssMb: () => {
        if (fail) throw boom
        return 1
      },
    },
  })
  fail = true
  assert.throws(() => t.sample(), (e) => e === boom)
  assert.throws(() => new BudgetTracker(policy({}), { hooks: { now: 5 } }), TypeError)
  assert.throws(() => new BudgetTracker(policy({}), { capability: '' }), TypeError)
  assert.throws(() => new BudgetTracker({}, {}), TypeError)
})

test('the default clock is performance.now', async () => {
  const t = new BudgetTracker(policy({ wallClockMs: 10_000 }))
  await new Promise((r) => setTimeout(r, 20))
  const st = t.check()
  assert.equal(st.ok, true)
  assert.ok(st.elapsedMs >= 15, `${st.elapsedMs}`)
})

test('a busy-looping vm.Context plugin in a Worker is terminated on BUDGET_EXCEEDED', async () => {
  const h = meterHarness()
  const worker = new Worker(
    `const vm = require('node:vm')
     const { parentPort } = require('node:worker_threads')
     const ctx = vm.createContext({})
     parentPort.postMessage('started')
     vm.runInContext('for (;;) {}', ctx)`,
    { eval: true },
  )
  await new Promise((resolve) => worker.once('message', resolve))
  const tracker = new BudgetTracker(policy({ cpuPercent: 50, wallClockMs: 20_000 }), {
    hooks: { now: () => performance.now(), cpuTimeMs: () => worker.performance.eventLoopUtilization().active },
    cpuGraceMs: 100,
    meter: h.meter,
    capability: 'request',
  })
  const exited = new Promise((resolve) => worker.once('exit', resolve))
  const breach = await new Promise((resolve) => {
    const timer = setInterval(() => {
      try {
        tracker.assertWithin()
        tracker.sample()
      } catch (e) {
        clearInterval(timer)
        worker.terminate()
        resolve(e)
      }
    }, 10)
  })
  await exited
  assert.ok(isBudgetExceeded(breach), String(breach))
  assert.equal(breach.details.budget, 'cpuPercent')
  assert.ok(breach.details.observed > 50)
  assert.ok(breach.details.elapsedMs < 20_000)
  const points = await h.points()
  assert.deepEqual(points.map((p) => [p.attributes, p.value]), [[{ plugin: 'bp', capability: 'request', reason: 'cpu' }, 1]])
  await h.shutdown()
})
