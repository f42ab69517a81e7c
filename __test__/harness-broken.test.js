'use strict'
// The JS harness must be able to fail: run it, through another runner's
// describe/it, against deliberately broken adapters and assert each is caught.
const test = require('node:test')
const assert = require('node:assert/strict')
const { runPermissionsConformance, packageChecker, Skip } = require('../testing.js')
const pkg = require('..')

/** Runs the harness with collecting describe/it; resolves to { passed, failed, skipped } by case name. */
async function collect(makeChecker, options = {}) {
  const cases = []
  const describe = (_name, fn) => fn()
  const it = (name, optsOrFn, maybeFn) => {
    const fn = typeof optsOrFn === 'function' ? optsOrFn : maybeFn
    const skip = typeof optsOrFn === 'object' && optsOrFn && optsOrFn.skip
    cases.push({ name, fn, skip })
  }
  it.skip = (name, fn) => cases.push({ name, fn, skip: true })
  runPermissionsConformance('collected', makeChecker, { ...options, describe, it })
  const out = { passed: [], failed: new Map(), skipped: [] }
  for (const c of cases) {
    if (c.skip) {
      out.skipped.push(c.name)
      continue
    }
    try {
      await c.fn(undefined)
      out.passed.push(c.name)
    } catch (e) {
      if (e instanceof Skip) out.skipped.push(c.name)
      else out.failed.set(c.name, e)
    }
  }
  return out
}

const good = packageChecker(pkg)
const wrap = (override) => async (manifest, ctx) => ({ ...(await good(manifest, ctx)), ...override(manifest, ctx) })
const ALLOW = Object.freeze({ allowed: true })

test('the package checker passes through another runner', { timeout: 120_000 }, async () => {
  const r = await collect(good, { filter: 'adversarial' })
  assert.equal(r.failed.size, 0, [...r.failed].map(([n, e]) => `${n}: ${e.message}`).join('\n'))
  assert.ok(r.passed.length > 100)
})

test('an allow-all adapter is caught', async () => {
  const r = await collect(wrap(() => ({ checkFs: () => ALLOW, checkFetch: () => ALLOW, checkCapability: () => ALLOW })), { filter: 'adversarial - ' })
  for (const name of ['adversarial - traversal out of a grant', 'adversarial - userinfo', 'adversarial - prototype key __proto__']) assert.ok(r.failed.has(name), name)
})

test('a port-blind adapter is caught', async () => {
  const r = await collect(
    wrap((m, ctx) => {
      const c = new pkg.PermissionChecker(pkg.PermissionPolicy.fromManifest(m, { plugin: ctx.plugin, platform: ctx.platform }), { meter: ctx.meter })
      return { checkFetch: (u) => { const d = c.checkFetch(u); return !d.allowed && d.reason === 'port_not_allowed' ? ALLOW : d }, assertFetch: undefined, assertFetchAddress: undefined }
    }),
    { filter: 'port' },
  )
  assert.ok(r.failed.has('fetch - other port'))
  assert.ok(r.failed.has('adversarial - IPv4 on another port'))
})

test('an adapter that skips metrics is caught', async () => {
  const r = await collect(
    wrap((m, ctx) => {
      const silent = new pkg.PermissionChecker(pkg.PermissionPolicy.fromManifest(m, { plugin: ctx.plugin, platform: ctx.platform }), { meter: { createCounter: () => ({ add() {} }) } })
      return { checkFs: (p, mode) => silent.checkFs(p, mode), assertFs: undefined }
    }),
    { filter: 'fs - ' },
  )
  assert.ok(r.failed.has('fs - write to a read grant'))
  const message = r.failed.get('fs - write to a read grant').message
  assert.match(message, /metric/)
  // The report names the case's category, manifest, input, expected and actual result, and hints at the cause.
  assert.match(message, /^ {2}category: fs$/m)
  assert.match(message, /^ {2}manifest: \{.*"fs":/m)
  assert.match(message, /^ {2}input: {4}checkFs\(".*", "write"\)$/m)
  assert.match(message, /^ {2}expected: \{"allowed":false,"reason":"mode_not_granted"\}$/m)
  assert.match(message, /^ {2}actual: {3}\{"allowed":false,"capability":"fs.write","reason":"mode_not_granted"\}$/m)
  assert.match(message, /hint: .*did the adapter pass context\.meter/)
})

test('an adapter with the wrong error shape is caught', async () => {
  const r = await collect(wrap(() => ({ assertCapability: () => { throw new Error('denied') } })), { filter: 'capability - undeclared secret' })
  assert.ok(r.failed.has('capability - undeclared secret'))
})

test('declared skips are skipped, not failed', async () => {
  const r = await collect(good, { filter: 'budget', skip: { 'budget - ': 'not supported here' } })
  assert.ok(r.skipped.length > 5)
  assert.ok(r.skipped.every((n) => n.startsWith('budget - ')))
  assert.equal(r.failed.size, 0)
  // A whole case name skips that case only.
  const one = await collect(good, { filter: 'fs - ', skip: { 'fs - write to a read grant': 'not here' } })
  assert.deepEqual(one.skipped, ['fs - write to a read grant'])
  assert.equal(one.failed.size, 0)
})

const allowAll = wrap(() => ({ checkFs: () => ALLOW, checkFetch: () => ALLOW, checkCapability: () => ALLOW }))
const SKIP_KEYS_FAIL = 'options.skip names only conformance cases and categories'
const NOTHING_RUNS = 'the run checks at least one case'

test("a skip key that names no case and no category exactly ('', one letter, a prefix) skips nothing and fails the run", async () => {
  const { conformanceCases } = require('../testing.js')
  const letters = Object.fromEntries([...new Set(conformanceCases().map((c) => c.name[0]))].map((l) => [l, 'loose']))
  for (const skip of [{ '': 'everything' }, letters, { fs: 'no separator' }, { 'fs -': 'no space' }, { 'adversarial - trav': 'a prefix of a name' }, { 'adversarial - no such case': 'x' }, { 'Adversarial - ': 'case' }]) {
    const r = await collect(allowAll, { filter: 'adversarial - ', skip })
    assert.ok(r.failed.has(SKIP_KEYS_FAIL), JSON.stringify(skip))
    assert.match(r.failed.get(SKIP_KEYS_FAIL).message, /skipped nothing/)
    assert.deepEqual(r.skipped, [], `${JSON.stringify(Object.keys(skip))} skipped nothing`)
    // The allow-all adapter meets every case and fails them.
    assert.ok(r.failed.has('adversarial - traversal out of a grant'), JSON.stringify(skip))
  }
  // A good key beside a bad one still skips its case; the run still fails.
  const mixed = await collect(good, { filter: 'fs - ', skip: { 'fs - write to a read grant': 'not here', f: 'loose' } })
  assert.deepEqual(mixed.skipped, ['fs - write to a read grant'])
  assert.deepEqual([...mixed.failed.keys()], [SKIP_KEYS_FAIL])
})

test('a run in which no case runs fails: a filter that matches none, or every match skipped', async () => {
  for (const options of [{ filter: 'no case has this in its name' }, { filter: 'budget - ', skip: { 'budget - ': 'all of them' } }, { filter: 'fs - write to a read grant', skip: { 'fs - write to a read grant': 'the only one' } }]) {
    const r = await collect(allowAll, options)
    assert.deepEqual([...r.failed.keys()], [NOTHING_RUNS], JSON.stringify(options))
    assert.equal(r.passed.length, 0)
  }
  // A run whose cases all lack an adapter method the same way.
  const noTracker = await collect(async (m, ctx) => ({ ...(await good(m, ctx)), createBudgetTracker: undefined }), { filter: 'budget - ' })
  assert.ok(!noTracker.failed.has(NOTHING_RUNS), 'an async adapter is judged at run time: its cases are registered')
})

test('skip and filter of the wrong type are TypeErrors', () => {
  const describe = (_n, fn) => fn()
  const it = () => {}
  for (const [options, what] of [[{ skip: 'budget - ' }, /options.skip must be an object/], [{ skip: ['budget - '] }, /options.skip must be an object/], [{ skip: { 'budget - ': 1 } }, /must be a reason/], [{ skip: { 'budget - ': '' } }, /must be a reason/], [{ filter: /fs/ }, /options.filter must be a string/], [{ filter: 1 }, /options.filter must be a string/]]) {
    assert.throws(() => runPermissionsConformance('typed', good, { ...options, describe, it }), { name: 'TypeError', message: what }, JSON.stringify(String(options.skip ?? options.filter)))
  }
})

test('a tracker factory that silently accepts an unmeasured budget is caught', async () => {
  const MUST = 'adversarial - a memory budget with no memory sampler is refused, never silently unenforced'
  // Declares every budget measured elsewhere, whatever the host really samples.
  const lax = wrap((m, ctx) => {
    const policy = pkg.PermissionPolicy.fromManifest(m, { plugin: ctx.plugin, platform: ctx.platform })
    return { createBudgetTracker: (hooks, opts) => new pkg.BudgetTracker(policy, { hooks, cpuGraceMs: opts.cpuGraceMs, meter: ctx.meter, unmeasured: ['memoryMb', 'cpuPercent'] }) }
  })
  const r = await collect(lax, { filter: 'sampler' })
  assert.ok(r.failed.has(MUST), [...r.failed.keys()].join(', '))
  assert.match(r.failed.get(MUST).message, /silently unenforced/)
  // One that refuses with something other than a TypeError naming the budget is caught too.
  const wrongError = wrap(() => ({ createBudgetTracker: () => { throw new RangeError('no') } }))
  const r2 = await collect(wrongError, { filter: 'sampler' })
  assert.ok(r2.failed.has(MUST))
  // The good adapter passes them.
  const r3 = await collect(good, { filter: 'sampler' })
  assert.equal(r3.failed.size, 0, [...r3.failed].map(([n, e]) => `${n}: ${e.message}`).join('\n'))
  assert.ok(r3.passed.includes(MUST))
})

// SPEC §12 / §13: the harness catches an adapter whose shadow decides, or that reads a bound secret back.
test('an adapter whose shadow changes a decision is caught', async () => {
  const r = await collect(
    wrap((m, ctx) => ({
      withShadow: (shadowManifest) => {
        // Broken: enforces the candidate instead of reporting it.
        const c = new pkg.PermissionChecker(pkg.PermissionPolicy.fromManifest(shadowManifest, { plugin: ctx.plugin, platform: ctx.platform }), { meter: ctx.meter })
        return { checkFs: (p, mode) => c.checkFs(p, mode), checkFetch: (u) => c.checkFetch(u), checkCapability: (id, p) => c.checkCapability(id, p) }
      },
    })),
    { filter: 'destination-bound secrets' },
  )
  assert.ok(r.failed.has('destination-bound secrets (SPEC §13) - a bound secret is sent to its host and path'), [...r.failed.keys()].join('\n'))
  assert.match(r.failed.get('destination-bound secrets (SPEC §13) - a readable secret is read').message, /shadow must never change a decision/)
})

test('an adapter whose shadow counts in the enforced counter, or not at all, is caught', async () => {
  const miscounting = wrap((m, ctx) => ({
    withShadow: () => {
      // Broken: the shadow's denials land in plugin.permission_denied_total.
      const c = new pkg.PermissionChecker(pkg.PermissionPolicy.fromManifest(m, { plugin: ctx.plugin, platform: ctx.platform }), { meter: ctx.meter })
      const s = new pkg.PermissionChecker(pkg.PermissionPolicy.fromManifest({}, { plugin: ctx.plugin, platform: ctx.platform }), { meter: ctx.meter })
      return { checkCapability: (id, p) => (s.checkCapability(id, p), c.checkCapability(id, p)) }
    },
  }))
  const silent = wrap((m, ctx) => ({
    withShadow: () => {
      // Broken: no shadow at all.
      const c = new pkg.PermissionChecker(pkg.PermissionPolicy.fromManifest(m, { plugin: ctx.plugin, platform: ctx.platform }), { meter: ctx.meter })
      return { checkCapability: (id, p) => c.checkCapability(id, p) }
    },
  }))
  for (const adapter of [miscounting, silent]) {
    const r = await collect(adapter, { filter: 'destination-bound secrets' })
    assert.ok(r.failed.has('destination-bound secrets (SPEC §13) - a readable secret is read'))
    assert.ok(r.failed.has('destination-bound secrets (SPEC §13) - an undeclared secret'))
  }
})

test('an adapter that reads a bound secret back is caught', async () => {
  const r = await collect(
    wrap((m, ctx) => {
      const c = new pkg.PermissionChecker(pkg.PermissionPolicy.fromManifest(m, { plugin: ctx.plugin, platform: ctx.platform }), { meter: ctx.meter })
      const lenient = (id, p) => {
        const d = c.checkCapability(id, p)
        return !d.allowed && d.reason === 'secret_not_readable' ? ALLOW : d
      }
      return { checkCapability: lenient, assertCapability: undefined, withShadow: undefined }
    }),
    { filter: 'destination-bound secrets' },
  )
  assert.deepEqual([...r.failed.keys()], ['destination-bound secrets (SPEC §13) - a bound secret is never read'])
  assert.ok(r.passed.length >= 15)
})
