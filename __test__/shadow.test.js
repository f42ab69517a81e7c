'use strict'
// SPEC §12: shadow (report-only) policies beside the enforced one, recorded
// through a real in-memory OpenTelemetry MeterProvider.
const test = require('node:test')
const assert = require('node:assert/strict')
const { PermissionPolicy, PermissionChecker, BudgetTracker, createChecker, PERMISSION_SHADOW_DENIED_TOTAL, BUDGET_SHADOW_EXCEEDED_TOTAL, INSTRUMENTS, isPermissionDenied } = require('../index.js')
const { meterHarness } = require('./helpers.js')

const pol = (m, plugin = 'plug') => PermissionPolicy.fromManifest(m, { plugin, platform: 'posix' })
const enforcedManifest = { fs: ['/srv/**'], fetch: ['https://api.example.com', 'https://old.example.com'], secrets: ['A', 'B'] }
const candidateManifest = { fs: ['/srv/data/**'], fetch: ['https://api.example.com/v1/**'], secrets: ['A'] }
const rows = (points) => points.map((p) => [p.name, p.attributes.plugin, p.attributes.capability, p.attributes.reason, p.value]).sort()

test('descriptors are exported as data beside the enforced ones', () => {
  assert.equal(PERMISSION_SHADOW_DENIED_TOTAL.name, 'plugin.permission_shadow_denied_total')
  assert.equal(BUDGET_SHADOW_EXCEEDED_TOTAL.name, 'plugin.budget_shadow_exceeded_total')
  assert.deepEqual([...PERMISSION_SHADOW_DENIED_TOTAL.attributeKeys], ['plugin', 'capability', 'reason'])
  assert.ok(INSTRUMENTS.includes(PERMISSION_SHADOW_DENIED_TOTAL) && INSTRUMENTS.includes(BUDGET_SHADOW_EXCEEDED_TOTAL))
  assert.ok(Object.isFrozen(BUDGET_SHADOW_EXCEEDED_TOTAL))
})

test('decisions come from the enforced policy; the shadow counts and reports what it would deny', async () => {
  const h = meterHarness()
  const events = []
  const c = new PermissionChecker(pol(enforcedManifest), { meter: h.meter, shadow: pol(candidateManifest), onShadow: (e) => events.push(e) })
  assert.deepEqual(c.checkFs('/srv/other/x', 'read'), { allowed: true })
  assert.deepEqual(c.checkFetch('https://api.example.com/v2/secret/path?token=abc'), { allowed: true })
  assert.equal(c.authorizeFetch('https://old.example.com/x'), 'https://old.example.com/x')
  assert.deepEqual(c.checkCapability('secrets.get', { name: 'B' }), { allowed: true })
  assert.deepEqual(c.checkFs('/srv/data/x', 'read'), { allowed: true }) // both allow: no event
  assert.throws(() => c.assertFetch('https://u:p@evil.example.com/p?q'), (e) => isPermissionDenied(e) && e.details.reason === 'credentials_in_url')
  assert.deepEqual(events, [
    { capability: 'fs.read', reason: 'not_allowlisted', enforced: 'allowed' },
    { capability: 'fetch', reason: 'path_not_allowed', enforced: 'allowed', target: 'https://api.example.com:443' },
    { capability: 'fetch', reason: 'host_not_allowlisted', enforced: 'allowed', target: 'https://old.example.com:443' },
    { capability: 'secrets.get', reason: 'secret_not_declared', enforced: 'allowed' },
    { capability: 'fetch', reason: 'credentials_in_url', enforced: 'denied', target: 'https://evil.example.com:443' },
  ])
  for (const e of events) assert.ok(Object.isFrozen(e))
  assert.deepEqual(rows(await h.points()), [
    ['plugin.permission_denied_total', 'plug', 'fetch', 'credentials_in_url', 1],
    ['plugin.permission_shadow_denied_total', 'plug', 'fetch', 'credentials_in_url', 1],
    ['plugin.permission_shadow_denied_total', 'plug', 'fetch', 'host_not_allowlisted', 1],
    ['plugin.permission_shadow_denied_total', 'plug', 'fetch', 'path_not_allowed', 1],
    ['plugin.permission_shadow_denied_total', 'plug', 'fs.read', 'not_allowlisted', 1],
    ['plugin.permission_shadow_denied_total', 'plug', 'secrets.get', 'secret_not_declared', 1],
  ])
  await h.shutdown()
})

test('the shadow is looser: no shadow count, enforced denials unchanged', async () => {
  const h = meterHarness()
  const c = new PermissionChecker(pol(candidateManifest), { meter: h.meter, shadow: pol(enforcedManifest) })
  assert.equal(c.checkFs('/srv/other/x', 'read').reason, 'not_allowlisted')
  assert.throws(() => c.authorizeFs('/srv/other/x', 'read'), (e) => e.details.reason === 'not_allowlisted')
  assert.deepEqual(rows(await h.points()), [['plugin.permission_denied_total', 'plug', 'fs.read', 'not_allowlisted', 2]])
  await h.shutdown()
})

test('a throwing onShadow is isolated: same decision, same error, counters still move', async () => {
  const h = meterHarness()
  let calls = 0
  const c = new PermissionChecker(pol(enforcedManifest), {
    meter: h.meter,
    shadow: pol(candidateManifest),
    onShadow() {
      calls++
      throw new Error('boom')
    },
  })
  assert.deepEqual(c.checkFs('/srv/other/x', 'read'), { allowed: true })
  assert.throws(() => c.assertFs('/etc/passwd', 'read'), (e) => isPermissionDenied(e) && e.details.reason === 'not_allowlisted')
  assert.equal(calls, 2)
  const r = rows(await h.points())
  assert.deepEqual(r, [
    ['plugin.permission_denied_total', 'plug', 'fs.read', 'not_allowlisted', 1],
    ['plugin.permission_shadow_denied_total', 'plug', 'fs.read', 'not_allowlisted', 2],
  ])
  await h.shutdown()
})

test('options: same plugin id, a PermissionPolicy, onShadow a function and only with shadow; createChecker forwards', () => {
  const p = pol(enforcedManifest)
  assert.throws(() => new PermissionChecker(p, { shadow: pol(candidateManifest, 'other') }), /same plugin id/)
  assert.throws(() => new PermissionChecker(p, { shadow: candidateManifest }), TypeError)
  assert.throws(() => new PermissionChecker(p, { shadow: pol(candidateManifest), onShadow: 'x' }), /onShadow must be a function/)
  assert.throws(() => new PermissionChecker(p, { onShadow() {} }), /needs options.shadow/)
  assert.throws(() => new PermissionChecker(p, { get shadow() { return pol(candidateManifest) } }), /getter/)
  const c = createChecker(enforcedManifest, { plugin: 'plug', shadow: pol(candidateManifest) })
  assert.equal(c.shadow.plugin, 'plug')
  assert.equal(new PermissionChecker(p).shadow, undefined)
})

test('secrets.use targets are redacted to scheme://host:port in events', () => {
  const events = []
  const enforced = pol({ fetch: ['https://api.example.com'], secrets: [{ name: 'T', hosts: ['https://api.example.com'] }] })
  const candidate = pol({ fetch: ['https://api.example.com'], secrets: [{ name: 'T', hosts: ['https://api.example.com/v1/**'] }] })
  const c = new PermissionChecker(enforced, { shadow: candidate, onShadow: (e) => events.push(e) })
  assert.deepEqual(c.checkCapability('secrets.use', { name: 'T', url: 'https://api.example.com/v2/x?k=secret' }), { allowed: true })
  assert.deepEqual(events, [{ capability: 'secrets.use', reason: 'secret_destination_not_allowed', enforced: 'allowed', target: 'https://api.example.com:443' }])
})

test('BudgetTracker shadow: its breaches count once per kind, never thrown or in the status', async () => {
  const h = meterHarness()
  let now = 0
  const t = new BudgetTracker(pol({ budgets: { wallClockMs: 1000 } }), { meter: h.meter, hooks: { now: () => now }, shadow: pol({ budgets: { wallClockMs: 100, memoryMb: 10 } }), unmeasured: ['memoryMb'] })
  now = 150
  assert.equal(t.check().ok, true)
  t.assertWithin()
  now = 160
  assert.equal(t.record({ rssMb: 50 }).ok, true)
  t.check()
  assert.deepEqual(rows(await h.points()), [
    ['plugin.budget_shadow_exceeded_total', 'plug', 'request', 'memory', 1],
    ['plugin.budget_shadow_exceeded_total', 'plug', 'request', 'wall_clock', 1],
  ])
  now = 2000
  assert.equal(t.check().ok, false)
  assert.deepEqual(rows(await h.points()).filter((r) => r[0] === 'plugin.budget_exceeded_total'), [['plugin.budget_exceeded_total', 'plug', 'request', 'wall_clock', 1]])
  assert.throws(() => new BudgetTracker(pol({}), { shadow: pol({}, 'other') }), /same plugin id/)
  assert.throws(() => new BudgetTracker(pol({}), { shadow: pol({ budgets: { cpuPercent: 5 } }) }), /shadow policy's cpuPercent budget has no sampler/)
  await h.shutdown()
})

test('an async onShadow that rejects, or a result whose then throws, is isolated (no unhandled rejection)', async () => {
  const unhandled = []
  const on = (e) => unhandled.push(e)
  process.on('unhandledRejection', on)
  try {
    const p = pol(enforcedManifest)
    const results = [async () => { throw new Error('async boom') }, () => ({ get then() { throw new Error('then getter') } })]
    for (const onShadow of results) {
      const c = new PermissionChecker(p, { shadow: pol(candidateManifest), onShadow })
      assert.deepEqual(c.checkFs('/srv/other/x', 'read'), { allowed: true })
    }
    await new Promise((r) => setTimeout(r, 20))
    assert.deepEqual(unhandled, [])
  } finally {
    process.off('unhandledRejection', on)
  }
})
