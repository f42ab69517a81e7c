'use strict'
// The JS<->Rust boundary (SPEC §5, §6, §8): no string is ever checked as a
// prefix of itself, every limit counts UTF-8 bytes, details escape Bidi
// controls, and a budget is never silently unenforced.
const test = require('node:test')
const assert = require('node:assert/strict')
const { createChecker, PermissionPolicy, BudgetTracker, PermissionDeniedError, isInvalidManifest, serializeError, LIMITS } = require('..')
const { binding } = require('../lib/native.js')
const { assertSchema, meterHarness } = require('./helpers.js')

const bytes = (s) => Buffer.byteLength(s, 'utf8')

test('a URL whose multi-byte tail V8 cannot fit in the stack buffer is checked whole', () => {
  const c = createChecker({ fetch: ['api.example.com'] }, { plugin: 'x', platform: 'posix' })
  // 22 + 2 x 1012 = 2046 bytes fit; the next soft hyphen (2 bytes) does not fit in 2047.
  const url = 'http://api.example.com' + '\u00AD'.repeat(1100) + '.evil.com/'
  assert.equal(new URL(url).hostname, 'api.example.com.evil.com', 'the soft hyphens vanish: the host is evil')
  assert.deepEqual(c.checkFetch(url), { allowed: false, capability: 'fetch', reason: 'host_not_allowlisted' })
  assert.throws(() => c.authorizeFetch(url), PermissionDeniedError)
  assert.throws(() => c.assertFetch(url), PermissionDeniedError)
  assert.equal(c.checkFetchAddress(url, '93.184.215.14').allowed, false)
  // The same shape with every multi-byte width straddling the 2048-byte buffer.
  for (const ch of ['\u00AD', '\u200B', '\u{E0100}']) {
    for (let pad = 0; pad < 4; pad++) {
      const u = 'http://api.example.com' + ch.repeat(Math.ceil((2048 + pad) / bytes(ch))) + '.evil.com/'
      if (new URL(u).hostname === 'api.example.com') continue
      assert.equal(c.checkFetch(u).allowed, false, `${JSON.stringify(ch)} pad ${pad}`)
    }
  }
  // And allowed URLs around the buffer size stay allowed.
  for (let n = 2040; n <= 2056; n++) {
    const u = 'http://api.example.com/' + 'é'.repeat(Math.floor((n - 23) / 2)) + 'a'.repeat((n - 23) % 2)
    assert.equal(bytes(u), n)
    assert.equal(c.checkFetch(u).allowed, true, `${n} bytes`)
  }
})

test('a path over 4096 UTF-8 bytes is invalid_path even when its first 4096 bytes are inside the grant', () => {
  const c = createChecker({ fs: ['/data/plugin/**'] }, { plugin: 'x', platform: 'posix' })
  const path = '/data/plugin/' + '€'.repeat(1400) + '/../../../etc/passwd'
  assert.ok(path.length < 4096 && bytes(path) > 4096)
  assert.deepEqual(c.checkFs(path, 'read'), { allowed: false, capability: 'fs.read', reason: 'invalid_path' })
  assert.throws(() => c.assertFs(path, 'read'), (e) => e instanceof PermissionDeniedError && e.details.reason === 'invalid_path')
  assert.equal(c.checkFs(path, 'read', { resolveSymlinks: false }).reason, 'invalid_path')
  assert.equal(c.checkCapability('fs.read', { path }).reason, 'invalid_payload')
  // Exactly at the limit, with a 3-byte character ending at byte 4096: allowed; one byte more: invalid.
  const at = '/data/plugin/' + 'a'.repeat(4096 - 13 - 3 * 1000) + '€'.repeat(1000)
  assert.equal(bytes(at), 4096)
  assert.equal(c.checkFs(at, 'read').allowed, true)
  assert.equal(c.checkFs(at + 'a', 'read').reason, 'invalid_path')
  for (const ch of ['é', '€', '😀']) {
    for (let extra = 1; extra <= 4; extra++) {
      const p = '/data/plugin/' + 'a'.repeat(4096 - 13 - extra) + ch
      assert.equal(c.checkFs(p, 'read').allowed, bytes(p) <= 4096, `${JSON.stringify(ch)} at ${4096 - extra}`)
    }
  }
})

test('a topic over 4096 UTF-8 bytes is invalid_payload, in JS and in the raw binding', () => {
  const c = createChecker({ events: { publishes: ['orders.*'] } }, { plugin: 'x', platform: 'posix' })
  const topic = 'orders.x.' + 'é'.repeat(2048) // 4105 bytes, 2057 UTF-16 units, three segments
  assert.ok(topic.length <= 4096 && bytes(topic) > 4096)
  assert.deepEqual(c.checkCapability('events.publish', { topic }), { allowed: false, capability: 'events.publish', reason: 'invalid_payload' })
  assert.throws(() => c.assertCapability('events.publish', { topic }), (e) => e instanceof PermissionDeniedError && e.details.reason === 'invalid_payload')
  // The raw entry point, past the JS pre-check: the Rust copy is whole, or refused.
  const handle = binding.compilePolicy(JSON.stringify({ events: { publishes: ['orders.*'] } }), 'x', 'posix')
  const invalid = binding.rawCheckCapability(handle, 'events.publish', 'orders.x.' + 'é'.repeat(2043)) // 4095 bytes, three segments
  assert.notEqual(invalid, 0)
  assert.notEqual(binding.rawCheckCapability(handle, 'events.publish', topic), 0)
  for (const [pad, ch] of [[0, 'é'], [1, 'é'], [0, '€'], [1, '€'], [2, '€'], [0, '😀'], [3, '😀']]) {
    // Fill to just under the 4101-byte stack buffer so the '.x' lands past it.
    const t = 'orders.' + 'b'.repeat(pad) + ch.repeat(Math.ceil((4101 - 7 - pad) / bytes(ch))) + '.x'
    assert.notEqual(binding.rawCheckCapability(handle, 'events.publish', t), 0, `${JSON.stringify(ch)} pad ${pad}`)
  }
  assert.equal(binding.rawCheckCapability(handle, 'events.publish', 'orders.' + 'é'.repeat(2044)), 0, '4095 bytes, two segments')
})

test('the plugin id limit counts UTF-8 bytes, in JS as in Rust (a TypeError, never INVALID_MANIFEST)', () => {
  const ok = 'é'.repeat(128)
  assert.equal(bytes(ok), 256)
  assert.equal(PermissionPolicy.fromManifest({}, { plugin: ok }).plugin, ok)
  for (const id of ['é'.repeat(129), '€'.repeat(86), '😀'.repeat(65), 'a'.repeat(255) + 'é']) {
    assert.ok(id.length <= 256 && bytes(id) > 256)
    assert.throws(() => PermissionPolicy.fromManifest({}, { plugin: id }), (e) => e instanceof TypeError && !isInvalidManifest(e) && /UTF-8 bytes/.test(e.message), id.slice(0, 4))
  }
  // The budget label is a closed ASCII shape (at most 64 characters), so no multi-byte label at all.
  assert.throws(() => new BudgetTracker(PermissionPolicy.fromManifest({}, { plugin: 'p' }), { capability: 'é'.repeat(129) }), TypeError)
  assert.throws(() => new BudgetTracker(PermissionPolicy.fromManifest({}, { plugin: 'p' }), { capability: 'é' }), TypeError)
  assert.ok(new BudgetTracker(PermissionPolicy.fromManifest({}, { plugin: 'p' }), { capability: 'a'.repeat(64) }))
  assert.equal(LIMITS.maxNameBytes, 256)
})

test('Bidi controls are escaped in details.plugin and in INVALID_MANIFEST pointers', () => {
  const bidi = ['\u061C', '\u200E', '\u200F', '\u202A', '\u202B', '\u202C', '\u202D', '\u202E', '\u2066', '\u2067', '\u2068', '\u2069']
  for (const ch of bidi) {
    const hex = ch.codePointAt(0).toString(16)
    const c = createChecker({}, { plugin: `evil${ch}gnp.exe`, platform: 'posix' })
    let err
    try {
      c.assertFs('/x', 'read')
    } catch (e) {
      err = e
    }
    assert.ok(err instanceof PermissionDeniedError)
    assert.equal(err.details.plugin, `evil\\u{${hex}}gnp.exe`)
    assert.ok(assertSchema(err))
    assert.equal(serializeError(err).details.plugin, `evil\\u{${hex}}gnp.exe`)
    assert.throws(
      () => PermissionPolicy.fromManifest({ [`fs${ch}x`]: [] }, { plugin: 'p' }),
      (e) => isInvalidManifest(e) && e.details.pointer === `/fs\\u{${hex}}x` && !e.message.includes(ch) && assertSchema(e) === e,
    )
  }
  // Their neighbours are ordinary text.
  const c = createChecker({}, { plugin: 'a\u061Bb\u200Dc\u2065d', platform: 'posix' })
  assert.equal(c.checkFs('/x', 'read').allowed, false)
  try {
    c.assertFs('/x', 'read')
  } catch (e) {
    assert.equal(e.details.plugin, 'a\u061Bb\u200Dc\u2065d')
  }
})

test('a budget with no sampler is a TypeError unless declared unmeasured', async () => {
  const policy = PermissionPolicy.fromManifest({ budgets: { cpuPercent: 50, memoryMb: 64, wallClockMs: 100 } }, { plugin: 'bp', platform: 'posix' })
  const now = () => 0
  const cases = [
    [{ now }, 'memoryMb'],
    [{ now, cpuTimeMs: () => 0 }, 'memoryMb'],
    [{ now, rssMb: () => 1 }, 'cpuPercent'],
  ]
  for (const [hooks, budget] of cases) {
    assert.throws(() => new BudgetTracker(policy, { hooks }), (e) => e instanceof TypeError && e.message.includes(budget) && e.message.includes('unmeasured'))
  }
  assert.throws(() => new BudgetTracker(policy, { hooks: { now }, unmeasured: ['memoryMb'] }), (e) => e instanceof TypeError && /cpuPercent/.test(e.message))
  assert.throws(() => new BudgetTracker(policy, { hooks: { now }, unmeasured: ['wallClockMs'] }), (e) => e instanceof TypeError && /memoryMb/.test(e.message))
  assert.throws(() => new BudgetTracker(policy), TypeError, 'the default hooks measure no CPU and no memory')
  // Declared: enforced from pushed samples.
  const h = meterHarness()
  const t = new BudgetTracker(policy, { hooks: { now }, unmeasured: ['memoryMb', 'cpuPercent'], meter: h.meter, cpuGraceMs: 0 })
  assert.equal(t.record({ rssMb: 64 }).ok, true)
  assert.deepEqual(t.record({ rssMb: 65 }), { ok: false, budget: 'memoryMb', limit: 64, observed: 65, reason: 'memory', elapsedMs: 0 })
  assert.deepEqual((await h.points()).map((p) => p.attributes.reason), ['memory'])
  await h.shutdown()
  // Both samplers: nothing to declare. No CPU/memory budget: nothing needed.
  assert.ok(new BudgetTracker(policy, { hooks: { now, cpuTimeMs: () => 0, rssMb: () => 1 } }))
  assert.ok(new BudgetTracker(PermissionPolicy.fromManifest({ budgets: { wallClockMs: 5 } }, { plugin: 'bp' })))
  assert.ok(new BudgetTracker(PermissionPolicy.fromManifest({}, { plugin: 'bp' }), { unmeasured: [] }))
})

test('options.unmeasured is validated strictly', () => {
  const policy = PermissionPolicy.fromManifest({ budgets: { memoryMb: 64 } }, { plugin: 'bp', platform: 'posix' })
  const hooks = { now: () => 0 }
  const bad = [
    'memoryMb',
    ['memory'],
    ['memoryMb', 'memoryMb'],
    ['memoryMb', 1],
    [['memoryMb']],
    ['cpuPercent', 'memoryMb', 'wallClockMs', 'cpuPercent'],
    { 0: 'memoryMb', length: 1 },
    new Proxy(['memoryMb'], {}),
    null,
    // eslint-disable-next-line no-sparse-arrays
    [, 'memoryMb'],
    Object.defineProperty([], 0, { get: () => 'memoryMb', enumerable: true }),
  ]
  for (const v of bad) assert.throws(() => new BudgetTracker(policy, { hooks, unmeasured: v }), TypeError, String(v))
  // A getter, an inherited value or a Proxy as the options object: TypeError, never ignored.
  assert.throws(() => new BudgetTracker(policy, Object.defineProperty({ hooks }, 'unmeasured', { get: () => ['memoryMb'], enumerable: true })), TypeError)
  assert.throws(() => new BudgetTracker(policy, Object.assign(Object.create({ unmeasured: ['memoryMb'] }), { hooks })), TypeError)
  assert.throws(() => new BudgetTracker(policy, new Proxy({ hooks, unmeasured: ['memoryMb'] }, {})), TypeError)
  assert.ok(new BudgetTracker(policy, { hooks, unmeasured: ['memoryMb'] }))
  assert.ok(new BudgetTracker(policy, { hooks, unmeasured: Object.freeze(['memoryMb', 'cpuPercent', 'wallClockMs']) }))
  // An own `undefined` is the same as no key, as for every other option:
  // nothing declared measured elsewhere, so a missing sampler is still refused.
  assert.throws(() => new BudgetTracker(policy, { hooks, unmeasured: undefined }), (e) => e instanceof TypeError && /memoryMb budget has no sampler/.test(e.message))
  assert.ok(new BudgetTracker(policy, { hooks: { ...hooks, rssMb: () => 1 }, unmeasured: undefined }))
})
