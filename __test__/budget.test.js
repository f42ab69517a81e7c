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
