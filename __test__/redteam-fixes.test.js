'use strict'
// Pins the fixes of the independent red team's findings F2-F6, each through
// the public JS API, with the attack as the red team wrote it.
const test = require('node:test')
const assert = require('node:assert/strict')
const vm = require('node:vm')
const pkg = require('../index.js')
const { PermissionPolicy, PermissionChecker, BudgetTracker, createChecker, learnManifest, reviveError, errorReviverSource, serializeError, isInvalidManifest, LIMITS } = pkg
const { meterHarness, assertSchema } = require('./helpers.js')

const mk = (m, platform = 'posix') => new PermissionChecker(PermissionPolicy.fromManifest(m, { plugin: 't', platform }))

test('F2: learn never turns a literal * host or published topic into a wildcard grant', () => {
  const r = learnManifest([{ capability: 'fetch', payload: { url: 'http://*.example.com/' } }], { platform: 'posix' })
  assert.deepEqual(r.manifest, {})
  assert.equal(r.unlearned.length, 1)
  assert.match(r.unlearned[0].why, /wildcard/)
  const c = mk(r.manifest)
  for (const u of ['http://*.example.com/', 'http://attacker-chosen.example.com/', 'http://a.b.example.com/']) assert.equal(c.checkFetch(u).allowed, false, u)

  const t = learnManifest(
    [
      { capability: 'events.subscribe', payload: { topic: 'orders.*' } },
      { capability: 'events.publish', payload: { topic: 'audit.**' } },
      { capability: 'events.publish', payload: { topic: 'orders.created' } },
    ],
    { platform: 'posix' },
  )
  // A subscription may itself be a pattern (SPEC §4): granted exactly as it was asked, no wider.
  assert.deepEqual(t.manifest, { events: { publishes: ['orders.created'], subscribes: ['orders.*'] } })
  assert.deepEqual(
    t.unlearned.map((u) => u.call),
    [1],
  )
  const e = mk(t.manifest)
  assert.equal(e.checkCapability('events.publish', { topic: 'audit.x' }).allowed, false)
  assert.equal(e.checkCapability('events.publish', { topic: 'orders.paid' }).allowed, false)
  assert.equal(e.checkCapability('events.subscribe', { topic: 'orders.**' }).allowed, false)
})

test('F2: every learned grant admits exactly the recorded calls (self-check under the learned manifest)', () => {
  const paths = ['/data/*', '/data/**', '/d/{a,b}', '/e/[x]', '/f/a\\*', '/i/?', '/j/plain', '/k/é😀?']
  const calls = paths.map((p) => ({ capability: 'fs.read', payload: { path: p } }))
  calls.push({ capability: 'fetch', payload: { url: 'https://api.example.com:8443/x' } })
  const r = learnManifest(calls, { platform: 'posix' })
  assert.deepEqual(r.unlearned, [])
  const c = mk(r.manifest)
  for (const p of paths) assert.equal(c.checkFs(p, 'read').allowed, true, p)
  // Nothing the recorded paths do not name literally.
  for (const p of ['/data/secret', '/data/x/y', '/d/a', '/e/x', '/f/ab', '/i/z', '/j/plainx', '/k/é😀z']) assert.equal(c.checkFs(p, 'read').reason, 'not_allowlisted', p)
  assert.equal(c.checkFetch('https://api.example.com:8443/y').allowed, true)
  assert.equal(c.checkFetch('https://other.example.com:8443/').allowed, false)
  for (const g of r.manifest.fs) assert.equal(require('../lib/learn.js').hasUnescapedWildcard(g, 'posix'), false, g)
})

test('F2: on win32, learn writes no grant for a path the checker rejects as invalid_path', () => {
  const bad = ['C:\\data\\*', 'C:\\data\\a?b', 'C:\\data\\name.', 'C:\\data\\name. .']
  const calls = [...bad, 'C:\\data\\[a]', 'C:\\data\\ok.txt'].map((p) => ({ capability: 'fs.read', payload: { path: p } }))
  const r = learnManifest(calls, { platform: 'win32' })
  assert.deepEqual(
    r.unlearned.map((u) => u.call),
    [0, 1, 2, 3],
  )
  for (const u of r.unlearned) assert.match(u.why, /invalid_path/)
  const c = mk(r.manifest, 'win32')
  assert.equal(c.checkFs('C:\\data\\[a]', 'read').allowed, true)
  assert.equal(c.checkFs('C:\\data\\ok.txt', 'read').allowed, true)
  assert.equal(c.checkFs('C:\\data\\zzz', 'read').allowed, false)
})

const twoFaced = (checked, used, key) =>
  new Proxy(
    {},
    {
      ownKeys: () => [key],
      getOwnPropertyDescriptor: () => ({ value: checked, writable: true, enumerable: true, configurable: true }),
      get: (t, p) => (p === key ? used : undefined),
      has: () => true,
    },
  )

test('F3: a Proxy payload is invalid_payload, counted once, in check, assert, explain and learn', async () => {
  const h = meterHarness()
  const c = new PermissionChecker(PermissionPolicy.fromManifest({ secrets: ['PUBLIC_KEY'], fs: ['/srv/plugin/**'] }, { plugin: 't', platform: 'posix' }), { meter: h.meter })
  const p1 = twoFaced('PUBLIC_KEY', 'DB_ROOT_PASSWORD', 'name')
  assert.deepEqual({ ...c.checkCapability('secrets.get', p1) }, { allowed: false, capability: 'secrets.get', reason: 'invalid_payload' })
  assert.throws(() => c.assertCapability('fs.read', twoFaced('/srv/plugin/x', '/etc/shadow', 'path')), (e) => e.code === 'PERMISSION_DENIED' && e.details.reason === 'invalid_payload')
  const counted = (await h.points()).map((pt) => [pt.name, pt.attributes.capability, pt.attributes.reason, pt.value]).sort()
  assert.deepEqual(counted, [
    ['plugin.permission_denied_total', 'fs.read', 'invalid_payload', 1],
    ['plugin.permission_denied_total', 'secrets.get', 'invalid_payload', 1],
  ])
  await h.shutdown()
  // A Proxy whose every trap throws: still a denial, not the trap's error.
  const throwing = new Proxy({}, { getOwnPropertyDescriptor: () => { throw new Error('trap') }, getPrototypeOf: () => { throw new Error('trap') } })
  assert.equal(c.checkCapability('secrets.get', throwing).reason, 'invalid_payload')
  assert.equal(c.policy.explainCapability('secrets.get', p1).decision.allowed, false)
  const r = learnManifest([{ capability: 'secrets.get', payload: p1 }], { platform: 'posix' })
  assert.deepEqual(r.manifest, {})
  assert.match(r.unlearned[0].why, /Proxy/)
  // Plain payloads still allowed.
  assert.equal(c.checkCapability('secrets.get', { name: 'PUBLIC_KEY' }).allowed, true)
})

test('F4: only a plain URL is read by href; subclasses, own props and Proxies are TypeErrors', () => {
  const c = mk({ fetch: ['api.example.com'] })
  const lying = []
  const a = new URL('https://evil.example/')
  Object.defineProperty(a, 'href', { get: () => 'https://api.example.com/' })
  const b = new URL('https://evil.example/')
  b.toString = () => 'https://api.example.com/'
  class U3 extends URL {
    toString() {
      return 'https://evil.example/'
    }
  }
  const h = new URL('https://api.example.com/')
  h[Symbol.toPrimitive] = () => 'https://evil.example/'
  const k = new URL('https://evil.example/')
  Object.setPrototypeOf(k, Object.create(URL.prototype, { href: { get: () => 'https://api.example.com/' } }))
  const l = new Proxy(new URL('https://evil.example/'), {})
  const throwing = new Proxy(new URL('https://api.example.com/'), { getPrototypeOf: () => { throw new Error('trap') } })
  lying.push(a, b, new U3('https://api.example.com/'), h, k, l, throwing, Object.create(URL.prototype), vm.runInNewContext('({ href: "https://api.example.com/" })'))
  for (const u of lying) {
    for (const call of [() => c.checkFetch(u), () => c.assertFetch(u), () => c.authorizeFetch(u), () => c.checkFetchAddress(u, '1.2.3.4'), () => c.assertFetchAddress(u, '1.2.3.4'), () => c.policy.explainFetch(u)]) {
      assert.throws(call, TypeError)
    }
  }
  assert.deepEqual(Reflect.ownKeys(new URL('http://a/')), [])
  assert.equal(c.checkFetch(new URL('https://api.example.com/x')).allowed, true)
  assert.equal(c.authorizeFetch(new URL('https://api.example.com/x')), 'https://api.example.com/x')
  assert.equal(c.policy.explainFetch(new URL('https://api.example.com/x')).decision.allowed, true)
})

const cpuPolicy = () => PermissionPolicy.fromManifest({ budgets: { cpuPercent: 50 } }, { plugin: 'x' })

test('F5a: without a CPU sampler, pushed cpuTimeMs counts from the request start (baseline 0)', () => {
  let now = 0
  const t = new BudgetTracker(cpuPolicy(), { hooks: { now: () => now }, unmeasured: ['cpuPercent'] })
  now = 1000
  const s = t.record({ cpuTimeMs: 1000 })
  assert.equal(s.ok, false)
  assert.equal(s.budget, 'cpuPercent')
  assert.equal(s.observed, 100)
  // Same workload with a sampler: the same verdict.
  let cpu = 0
  now = 0
  const t2 = new BudgetTracker(cpuPolicy(), { hooks: { now: () => now, cpuTimeMs: () => cpu } })
  now = 1000
  cpu = 1000
  assert.equal(t2.sample().observed, 100)
  // Within budget when the pushed total is within.
  now = 0
  const t3 = new BudgetTracker(cpuPolicy(), { hooks: { now: () => now }, unmeasured: ['cpuPercent'] })
  now = 1000
  assert.deepEqual(t3.record({ cpuTimeMs: 400 }), { ok: true, elapsedMs: 1000, cpuPercent: 40 })
})

test('F5b/c: cpuGraceMs is capped at LIMITS.maxCpuGraceMs and read strictly', () => {
  assert.equal(LIMITS.maxCpuGraceMs, 60000)
  const base = () => ({ hooks: { now: () => 0, cpuTimeMs: () => 0 } })
  assert.ok(new BudgetTracker(cpuPolicy(), { ...base(), cpuGraceMs: LIMITS.maxCpuGraceMs }))
  for (const g of [LIMITS.maxCpuGraceMs + 1, 1e300, Infinity, '5']) assert.throws(() => new BudgetTracker(cpuPolicy(), { ...base(), cpuGraceMs: g }), TypeError, String(g))
  assert.throws(() => new BudgetTracker(cpuPolicy(), Object.defineProperty(base(), 'cpuGraceMs', { get: () => 0, enumerable: true })), TypeError)
  assert.throws(() => new BudgetTracker(cpuPolicy(), Object.assign(Object.create({ cpuGraceMs: 1e300 }), base())), TypeError)
  assert.throws(() => new BudgetTracker(cpuPolicy(), new Proxy({ ...base(), cpuGraceMs: 1 }, {})), TypeError)
  // Default grace still enforces an hour of full CPU.
  let now = 0
  let cpu = 0
  const t = new BudgetTracker(cpuPolicy(), { hooks: { now: () => now, cpuTimeMs: () => cpu } })
  now = cpu = 3600e3
  assert.equal(t.sample().ok, false)
})

test('F5d: unknown option keys are TypeErrors (PermissionChecker, BudgetTracker, createChecker)', () => {
  const pol = cpuPolicy()
  const strict = PermissionPolicy.fromManifest({}, { plugin: 'p' })
  // `shadow`/`onShadow` are known keys since SPEC §12; a misspelling is not.
  assert.ok(new PermissionChecker(pol, { shadow: PermissionPolicy.fromManifest({}, { plugin: pol.plugin }), onShadow() {} }))
  assert.throws(() => new PermissionChecker(pol, { shadow: strict, onShadow() {} }), /same plugin id/)
  assert.throws(() => new PermissionChecker(pol, { shadw: strict }), /unknown key "shadw"/)
  assert.throws(() => new PermissionChecker(pol, { metre: {} }), TypeError)
  assert.throws(() => new BudgetTracker(pol, { hooks: { now: () => 0, cpuTimeMs: () => 0 }, cpuGraceMS: 5 }), TypeError)
  // A symbol key names no option (no option is read by a symbol): it is left alone.
  assert.ok(new BudgetTracker(pol, { hooks: { now: () => 0, cpuTimeMs: () => 0 }, [Symbol('cpuGraceMS')]: 1 }))
  assert.throws(() => createChecker({}, { plugin: 'p', shadow: true }), TypeError)
  // fromManifest too (the fifth red team): a misspelt platform is a TypeError, never the host's platform in its place.
  assert.throws(() => PermissionPolicy.fromManifest({}, { plugin: 'p', platfrom: 'win32' }), /unknown key "platfrom"/)
  assert.throws(() => PermissionPolicy.fromManifest({}, Object.create({ plugin: 'p' })), TypeError)
  assert.throws(() => PermissionPolicy.fromManifest({}, { get plugin() { return 'p' } }), TypeError)
  assert.throws(() => PermissionPolicy.fromManifest({}, new Proxy({ plugin: 'p' }, {})), TypeError)
  const h = meterHarness()
  const c = createChecker({}, { plugin: 'p', platform: 'win32', meter: h.meter })
  assert.equal(c.policy.platform, 'win32')
  assert.ok(new PermissionChecker(pol, { meter: h.meter }))
  assert.ok(new PermissionChecker(pol))
})

test('F5e: the budget capability label is a closed shape, never a path or URL', () => {
  const opts = (capability) => ({ hooks: { now: () => 0, cpuTimeMs: () => 0 }, capability })
  for (const bad of ['/etc/passwd', 'https://x.example/', 'C:\\x', 'Fs.read', 'a b', '', 'a'.repeat(65), '1abc', 'é']) {
    assert.throws(() => new BudgetTracker(cpuPolicy(), opts(bad)), TypeError, bad)
  }
  for (const ok of ['request', 'fs.read', 'tool.call', 'a_b-c', 'a'.repeat(64)]) assert.ok(new BudgetTracker(cpuPolicy(), opts(ok)), ok)
})

const base = { $sandboxPermissionError: 1, code: 'PERMISSION_DENIED', id: 'SAND_PERM_001', message: 'permission denied' }
const forged = {
  bidiDetails: { ...base, details: { plugin: 'p\u202E', capability: 'fs.read', reason: 'not_allowlisted', target: 'https://x\u202E:443' } },
  bidiMessage: { ...base, message: '\u202Eevil\u0007', details: { plugin: 'p', capability: 'fs.read', reason: 'not_allowlisted' } },
  secretInDetails: { ...base, details: { plugin: 'p', capability: 'fetch', reason: 'host_not_allowlisted', target: 'https://u:hunter2@x.com/path?q' } },
  extraKeys: { ...base, details: { plugin: 'p', capability: 'fs.read', reason: 'not_allowlisted', path: '/etc/shadow' } },
  protoKey: JSON.parse('{"$sandboxPermissionError":1,"code":"PERMISSION_DENIED","id":"SAND_PERM_001","message":"x","details":{"__proto__":{"polluted":1},"plugin":"p","capability":"fs.read","reason":"not_allowlisted"}}'),
  hugeMessage: { ...base, message: 'x'.repeat(1e6), details: { plugin: 'p', capability: 'fs.read', reason: 'not_allowlisted' } },
  budget: { $sandboxPermissionError: 1, code: 'BUDGET_EXCEEDED', id: 'SAND_PERM_002', details: { plugin: 'p\u2066', capability: 'request', budget: 'memoryMb', reason: 'memory', limit: 1, observed: 2, elapsedMs: 3, x: 1 } },
  manifest: { $sandboxPermissionError: 1, code: 'INVALID_MANIFEST', id: 'SAND_PERM_003', details: { pointer: '/fs/0\u202E', expected: 'e'.repeat(2000) } },
}
const rejected = {
  unknownReason: { ...base, details: { plugin: 'p', capability: 'fs.read', reason: 'allowed' } },
  codeMismatch: { ...base, id: 'SAND_PERM_002', details: { plugin: 'p', capability: 'fs.read', reason: 'not_allowlisted' } },
  badCapability: { ...base, details: { plugin: 'p', capability: '/etc/passwd', reason: 'not_allowlisted' } },
  missingPlugin: { ...base, details: { capability: 'fs.read', reason: 'not_allowlisted' } },
  budgetReasonMismatch: { ...forged.budget, details: { ...forged.budget.details, reason: 'cpu' } },
  negativeObserved: { ...forged.budget, details: { ...forged.budget.details, observed: -1 } },
  badSampleField: { $sandboxPermissionError: 1, code: 'INVALID_SAMPLE', id: 'SAND_PERM_004', details: { field: 'path' } },
}

test('F6a: revived errors are rebuilt from known, validated fields and match the schema (host and vm.Context)', () => {
  const ctx = vm.createContext({})
  const revive = vm.runInContext(errorReviverSource, ctx)
  for (const [name, o] of Object.entries(forged)) {
    for (const [realm, e] of [
      ['host', reviveError(o)],
      ['context', revive(JSON.stringify(o))],
    ]) {
      const plain = { code: e.code, id: e.id, details: JSON.parse(JSON.stringify(e.details)) }
      assertSchema(plain)
      assert.ok(!/hunter2|\/etc\/shadow|\u202E|\u2066|\u0007/.test(JSON.stringify(plain) + e.message), `${name} ${realm}`)
      assert.ok(e.message.length < 1200, `${name} ${realm}: message is re-made from the template`)
      assert.equal(Object.getPrototypeOf(e.details), realm === 'host' ? Object.prototype : vm.runInContext('Object.prototype', ctx))
    }
  }
  assert.equal(reviveError(forged.secretInDetails).details.target, undefined)
  assert.equal(reviveError({ ...forged.secretInDetails, details: { ...forged.secretInDetails.details, target: 'https://x.com:443' } }).details.target, 'https://x.com:443')
  for (const [name, o] of Object.entries(rejected)) {
    assert.throws(() => reviveError(o), TypeError, name)
    assert.throws(() => revive(JSON.stringify(o)), (e) => e instanceof vm.runInContext('TypeError', ctx), name)
  }
  // A real error still round-trips exactly.
  let err
  try {
    mk({ fetch: ['api.example.com'] }).assertFetch('https://u:p@evil.example:8443/x?y')
  } catch (e) {
    err = e
  }
  const back = reviveError(serializeError(err))
  assert.deepEqual(back.details, err.details)
  assert.equal(back.message, err.message)
  assert.deepEqual({ ...revive(JSON.stringify(serializeError(err))).details }, { ...err.details })
})

test('F6b: extra own properties on a manifest array are INVALID_MANIFEST at their pointer', () => {
  const at = (m) => {
    try {
      PermissionPolicy.fromManifest(m, { plugin: 't', platform: 'posix' })
    } catch (e) {
      return isInvalidManifest(e) ? e.details.pointer : e.name
    }
    return 'accepted'
  }
  assert.equal(at({ fs: Object.assign(['/a'], { extra: '/b' }) }), '/fs/extra')
  assert.equal(at({ fs: Object.assign(['/a'], { [Symbol('x')]: 1 }) }), '/fs')
  assert.equal(at({ events: { publishes: Object.assign(['a'], { 'x/y': 'b' }) } }), '/events/publishes/x~1y')
  assert.equal(at({ fs: ['/a'] }), 'accepted')
})

test('F6c: a Proxy whose traps throw is a TypeError in checkFetch, BudgetTracker and learnManifest', () => {
  const boom = () => {
    throw new Error('caller trap')
  }
  const traps = { get: boom, getOwnPropertyDescriptor: boom, ownKeys: boom, getPrototypeOf: boom, has: boom }
  const p = () => new Proxy({}, traps)
  const pa = () => new Proxy([], traps)
  const c = mk({ fetch: ['api.example.com'] })
  const pol = PermissionPolicy.fromManifest({ budgets: { wallClockMs: 10 } }, { plugin: 'x' })
  const t = new BudgetTracker(pol, { hooks: { now: () => 0 } })
  for (const [name, f] of [
    ['checkFetch', () => c.checkFetch(p())],
    ['authorizeFetch', () => c.authorizeFetch(p())],
    ['BudgetTracker policy', () => new BudgetTracker(p())],
    ['BudgetTracker options', () => new BudgetTracker(pol, p())],
    ['BudgetTracker hooks', () => new BudgetTracker(pol, { hooks: p() })],
    ['BudgetTracker record', () => t.record(p())],
    ['PermissionChecker policy', () => new PermissionChecker(p())],
    ['PermissionChecker options', () => new PermissionChecker(pol, p())],
    ['learnManifest calls', () => learnManifest(pa())],
    ['learnManifest options', () => learnManifest([], p())],
  ]) {
    assert.throws(f, (e) => e instanceof TypeError && e.message !== 'caller trap', name)
  }
  // A Proxy call or payload inside the calls is unlearned, not thrown.
  const r = learnManifest([p(), { capability: 'secrets.get', payload: p() }], { platform: 'posix' })
  assert.deepEqual(
    r.unlearned.map((u) => u.call),
    [0, 1],
  )
})
