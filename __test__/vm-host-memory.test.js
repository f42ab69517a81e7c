'use strict'
// The example host's memoryMb (the fifth red team's case: a 1 MB budget let a
// plugin keep 10 MB, the heap cap never went below 16 MB, ArrayBuffers were
// not capped at all, and a heap-cap kill was ERR_WORKER_OUT_OF_MEMORY,
// uncounted). Real workers, a real vm.Context, a real SDK meter.
const test = require('node:test')
const assert = require('node:assert/strict')
const { PermissionPolicy } = require('..')
const { runPlugin } = require('../lib/vm-host/host.js')
const { meterHarness } = require('./helpers.js')

const KEEP_TYPED = 'const keep = []; for (let i = 0; i < 24; i++) keep.push(new Uint8Array(1 << 20).fill(1)); const t0 = Date.now(); while (Date.now() - t0 < 400) {} return keep.length'
const KEEP_HEAP = 'const keep = []; for (let i = 0; i < 80; i++) keep.push(new Array(16384).fill(i + 0.5)); const t0 = Date.now(); while (Date.now() - t0 < 400) {} return keep.length'
const BUSY_ALLOC = 'const keep = []; for (;;) keep.push({ a: [1, 2, 3, 4, 5, 6, 7, 8] })'

async function run(name, memoryMb, code, extra = {}) {
  const m = meterHarness()
  const policy = PermissionPolicy.fromManifest({ budgets: { memoryMb, wallClockMs: 30000 } }, { plugin: name })
  const r = await runPlugin({ name, code, policy, meter: m.meter, ...extra })
  const counts = await m.counts()
  await m.shutdown()
  return { r, counted: counts[`plugin.budget_exceeded_total|${name}|request|memory`] }
}

test('memoryMb under the heap floor: 10 MB kept against 2 and 4 MB budgets is BUDGET_EXCEEDED, counted once', async () => {
  for (const [name, mb, code] of [['typed', 4, KEEP_TYPED], ['heap', 2, KEEP_HEAP]]) {
    const { r, counted } = await run(name, mb, code)
    assert.deepEqual({ ok: r.ok, code: r.code, budget: r.budget }, { ok: false, code: 'BUDGET_EXCEEDED', budget: 'memoryMb' }, name)
    assert.equal(counted, 1, name)
  }
})

test('ArrayBuffers (outside the JS heap cap) count against memoryMb', async () => {
  const code = 'const keep = []; for (let i = 0; i < 96; i++) keep.push(new Uint8Array(1 << 20).fill(7)); const t0 = Date.now(); while (Date.now() - t0 < 400) {} return keep.length'
  const { r, counted } = await run('buffers', 48, code)
  assert.deepEqual({ ok: r.ok, code: r.code, budget: r.budget }, { ok: false, code: 'BUDGET_EXCEEDED', budget: 'memoryMb' })
  assert.equal(counted, 1)
})

test('a plugin that never yields is stopped by the sampler, or by the heap cap, and either way it is BUDGET_EXCEEDED, counted once', async () => {
  // Sampled every 10 ms (the default): the sampler runs on the host's thread.
  const sampled = await run('busy', 16, BUSY_ALLOC)
  assert.deepEqual({ ok: sampled.r.ok, code: sampled.r.code, budget: sampled.r.budget }, { ok: false, code: 'BUDGET_EXCEEDED', budget: 'memoryMb' })
  assert.equal(sampled.counted, 1)
  // No sample before the heap cap stops the worker: the cap's kill is the memory breach.
  const capped = await run('capped', 16, BUSY_ALLOC, { sampleEveryMs: 600_000 })
  assert.deepEqual({ ok: capped.r.ok, code: capped.r.code, budget: capped.r.budget }, { ok: false, code: 'BUDGET_EXCEEDED', budget: 'memoryMb' })
  assert.equal(capped.counted, 1)
})

test('a plugin within its memory budget runs to the end', async () => {
  const { r, counted } = await run('small', 256, 'const a = new Uint8Array(1 << 20).fill(1); return a.length')
  assert.deepEqual({ ok: r.ok, value: r.value }, { ok: true, value: String(1 << 20) })
  assert.equal(counted, undefined)
})
