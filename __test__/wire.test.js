'use strict'
// The wire (src/binding/wire.rs ↔ lib/native.js): one place decides each
// value, errors arrive with code and details set in Rust, and the numeric
// layouts are read by name.
const test = require('node:test')
const assert = require('node:assert/strict')
const pkg = require('../index.js')
const native = require('../lib/native.js')
const { loadTestHooksAddon } = require('../scripts/test-hooks-addon.js')

const { PermissionPolicy, createChecker, InvalidManifestError, PermissionDeniedError, SandboxPermissionError, UnsupportedPlatformError, LIMITS } = pkg
const bytes = (s) => Buffer.byteLength(s, 'utf8')

test('plugin id: at most maxNameBytes UTF-8 bytes, decided in Rust, a TypeError past it (2-, 3-, 4-byte characters)', () => {
  const max = LIMITS.maxNameBytes
  assert.equal(max, 256)
  let cases = 0
  for (const ch of ['a', 'é', '€', '😀']) {
    const n = bytes(ch)
    for (let pad = 0; pad < n; pad++) {
      // The longest id of `ch` with `pad` ASCII bytes that fits, and one byte more.
      const fit = 'a'.repeat(pad) + ch.repeat(Math.floor((max - pad) / n))
      const exact = fit + 'a'.repeat(max - bytes(fit))
      assert.equal(bytes(exact), max)
      const p = PermissionPolicy.fromManifest({}, { plugin: exact, platform: 'posix' })
      assert.equal(p.plugin, exact)
      const over = exact + 'a'
      assert.throws(() => PermissionPolicy.fromManifest({}, { plugin: over, platform: 'posix' }), (e) => e instanceof TypeError && !('code' in e) && /options\.plugin .*1 to 256 UTF-8 bytes/.test(e.message))
      // The last character crossing the limit: n bytes where only n - 1 fit.
      const crossing = exact.slice(0, -Math.max(1, n - 1) || undefined)
      const cut = crossing + ch
      if (bytes(cut) > max) assert.throws(() => PermissionPolicy.fromManifest({}, { plugin: cut, platform: 'posix' }), TypeError)
      cases += 2
    }
  }
  for (const bad of ['', 'a\u0000b', 'a\u007fb', 'a\u009fb', '\ud800']) assert.throws(() => PermissionPolicy.fromManifest({}, { plugin: bad, platform: 'posix' }), TypeError, JSON.stringify(bad))
  assert.throws(() => PermissionPolicy.fromManifest({}, { plugin: 'p', platform: 'darwin' }), /options\.platform must be 'posix' or 'win32'/)
  console.log(`plugin id limit: ${cases} cases`)
})

test('INVALID_MANIFEST is thrown by Rust with code and details, and decoded to the class', () => {
  let raw
  try {
    native.binding.compilePolicy('{"fs":[1]}', 'p', 'posix')
  } catch (e) {
    raw = e
  }
  assert.equal(raw.code, 'INVALID_MANIFEST')
  assert.deepEqual({ ...raw.details }, { pointer: '/fs/0', expected: raw.details.expected })
  const e = native.decodeError(raw)
  assert.ok(e instanceof InvalidManifestError)
  assert.deepEqual(e.details, { pointer: '/fs/0', expected: raw.details.expected })
  // The class redacts what Rust passed raw (a manifest key is third-party text).
  assert.throws(() => PermissionPolicy.fromManifest({ budgets: { ['x\u202e']: 1 } }, { plugin: 'p' }), (e) => e instanceof InvalidManifestError && e.details.pointer === '/budgets/x\\u{202e}')
})

test('decodeError: only registry codes with details become package errors; lockdown codes keep their reason', () => {
  const wire = (code, details) => Object.assign(new Error('m'), { code, details })
  const refused = native.decodeError(wire('LOCKDOWN_REFUSED', { reason: 'io_uring \u0007 open' }))
  assert.ok(refused instanceof SandboxPermissionError)
  assert.equal(refused.code, 'LOCKDOWN_REFUSED')
  assert.equal(refused.details.reason, 'io_uring \\u{7} open')
  const unsupported = native.decodeError(wire('ERR_UNSUPPORTED_PLATFORM', { feature: 'lockdown', platform: 'linux-x64' }))
  assert.ok(unsupported instanceof UnsupportedPlatformError)
  assert.deepEqual(unsupported.details, { feature: 'lockdown', platform: 'linux-x64' })
  const other = new Error('x')
  assert.equal(native.decodeError(other), other)
  const napiError = Object.assign(new Error('y'), { code: 'InvalidArg' })
  assert.equal(native.decodeError(napiError), napiError)
  assert.equal(native.decodeError(wire('PERMISSION_DENIED', null)).code, 'PERMISSION_DENIED')
  assert.equal(native.decodeError(wire('PERMISSION_DENIED', null)).details, null)
})

test('the tracker slot layout and result codes are exported by name', () => {
  const { IO, RESULT, FS_BITS, SAMPLE_FIELDS } = native
  assert.deepEqual(Object.keys(IO).sort(), ['cpuPercentOrBudget', 'cpuPresent', 'cpuTimeMs', 'elapsedMs', 'len', 'memoryMbOrLimit', 'now', 'observed', 'ok', 'presence', 'rssMb', 'rssPresent'])
  const slots = [IO.now, IO.cpuTimeMs, IO.rssMb, IO.presence, IO.ok, IO.elapsedMs, IO.cpuPercentOrBudget, IO.memoryMbOrLimit, IO.observed]
  assert.equal(new Set(slots).size, slots.length)
  assert.ok(slots.every((s) => Number.isInteger(s) && s >= 0 && s < IO.len))
  assert.deepEqual([...SAMPLE_FIELDS], ['now', 'cpuTimeMs', 'rssMb', 'cpuGraceMs'])
  assert.equal(typeof RESULT.invalidSample, 'number')
  assert.equal(FS_BITS.write & FS_BITS.resolve, 0)
  // cpuGraceMs (the last sample field) reaches JS by name: a negative grace is INVALID_SAMPLE { field: 'cpuGraceMs' }.
  const policy = PermissionPolicy.fromManifest({ budgets: { wallClockMs: 10 } }, { plugin: 'p' })
  assert.throws(() => new pkg.BudgetTracker(policy, { cpuGraceMs: -1 }), (e) => e.code === 'INVALID_SAMPLE' && e.details.field === 'cpuGraceMs')
})

test('policy: one call builds it (the handle alone crosses); budgets, read on first use, omit absent ones', () => {
  const handle = native.binding.compilePolicy('{"budgets":{"memoryMb":5}}', 'p', 'posix')
  assert.equal(typeof handle, 'number')
  assert.deepEqual({ ...native.binding.policyBudgets(handle) }, { memoryMb: 5 })
  assert.throws(() => native.binding.policyBudgets({}), TypeError, 'a foreign handle')
  native.binding.rawRelease(handle)
  assert.throws(() => native.binding.policyBudgets(handle), TypeError, 'a released handle')
  const p = PermissionPolicy.fromManifest({ budgets: { memoryMb: 5 } }, { plugin: 'p' })
  assert.deepEqual(p.budgets, { memoryMb: 5 })
  assert.ok(Object.isFrozen(p.budgets))
  assert.deepEqual(PermissionPolicy.fromManifest({}, { plugin: 'p' }).budgets, {})
})

test('a fetch denial carries the target of its one parse, parity refusals included (SPEC §3/§11, README Errors)', () => {
  const c = createChecker({ fetch: ['api.example.com', 'xn--fuball-cta.de'], secrets: [{ name: 'K', hosts: ['api.example.com'] }] }, { plugin: 'p', platform: 'posix' })
  const target = (f) => {
    try {
      f()
    } catch (e) {
      assert.ok(e instanceof PermissionDeniedError)
      return [e.details.reason, e.details.target]
    }
    assert.fail('did not throw')
  }
  assert.deepEqual(target(() => c.authorizeFetch('https://evil.example/x')), ['host_not_allowlisted', 'https://evil.example:443'])
  // Parity refusals (Node reads another host): the same shape at every entry point.
  // Node reads ẞ as ss (fussball.de); the core as xn--fuball-cta.de: the target is the core's reading.
  const url = 'https://fuẞball.de/'
  assert.equal(new URL(url).host, 'fussball.de')
  const want = ['invalid_url', 'https://xn--fuball-cta.de:443']
  assert.deepEqual(target(() => c.authorizeFetch(url)), want)
  assert.deepEqual(target(() => c.assertFetch(url)), want)
  assert.deepEqual(target(() => c.assertFetchAddress(url, '93.184.216.34')), want)
  assert.deepEqual(target(() => c.assertCapability('fetch', { url })), want)
  assert.deepEqual(target(() => c.assertCapability('secrets.use', { name: 'K', url })), ['secret_destination_not_allowed', 'https://xn--fuball-cta.de:443'])
  assert.deepEqual(c.checkFetch(url), { allowed: false, capability: 'fetch', reason: 'invalid_url' })
  // No origin, no target.
  assert.deepEqual(target(() => c.authorizeFetch('not a url')), ['invalid_url', undefined])
})

test('payload limit: Rust alone decides, at the exact byte limit with 2-, 3- and 4-byte characters', () => {
  const c = createChecker({ events: { publishes: ['t.*'] }, secrets: ['S'] }, { plugin: 'p', platform: 'posix' })
  const max = LIMITS.maxPayloadStringBytes
  let cases = 0
  for (const ch of ['é', '€', '😀']) {
    const n = bytes(ch)
    // Ends with at least one ASCII byte, so swapping it for `ch` crosses the limit by n - 1.
    const body = ch.repeat(Math.floor((max - 3) / n))
    const exact = 't.' + body + 'x'.repeat(max - 2 - bytes(body))
    assert.equal(bytes(exact), max)
    assert.ok(exact.endsWith('x'))
    assert.deepEqual(c.checkCapability('events.publish', { topic: exact }), { allowed: true }, ch)
    assert.equal(c.checkCapability('events.publish', { topic: exact + 'x' }).reason, 'invalid_payload')
    assert.equal(c.checkCapability('events.publish', { topic: exact.slice(0, -1) + ch }).reason, 'invalid_payload')
    const url = `https://api.example.com/${ch.repeat(Math.floor((max - 24) / n))}`
    const over = url + 'x'.repeat(max - bytes(url) + 1)
    assert.equal(c.checkCapability('secrets.use', { name: 'S', url: over }).reason, 'invalid_payload')
    assert.equal(c.checkCapability('fetch', { url: over }).reason, 'invalid_payload')
    cases += 5
  }
  console.log(`payload limit: ${cases} cases`)
})

test('handles: a number names only a live slot of its own table; an owner collected releases its slot', async () => {
  const { binding } = native
  const h = binding.compilePolicy('{"fs":["/data/**"]}', 'p', 'posix')
  assert.equal(binding.rawCheckFs(h, '/data/x', 0), 0)
  // A budget handle (the other table; only the test-hooks addon makes them).
  const hooks = loadTestHooksAddon()
  const hooksPolicy = hooks.compilePolicy('{"fs":["/data/**"]}', 'p', 'posix')
  const tracker = hooks.rawBudgetCreate(hooksPolicy, 0, null, null, 0, 0)
  assert.ok(Number.isSafeInteger(tracker) && tracker >= 0)
  assert.throws(() => hooks.rawCheckFs(tracker, '/data/x', 0), TypeError, 'a budget handle is not a policy handle')
  assert.throws(() => hooks.rawBudgetElapsed(hooksPolicy), TypeError, 'a policy handle is not a budget handle')
  assert.equal(typeof hooks.rawBudgetElapsed(tracker), 'number')
  hooks.rawRelease(tracker)
  assert.throws(() => hooks.rawBudgetElapsed(tracker), TypeError)
  // Not a handle, or a handle of the other table, or of no slot: a TypeError, never another policy.
  for (const bad of [h + 0.5, -h, h + 2 ** 24, tracker, NaN, Infinity, 2 ** 53, '0', `${h}`, null, undefined, {}, [h], Object(h), 10n]) {
    assert.throws(() => binding.rawCheckFs(bad, '/data/x', 0), TypeError, String(bad))
    assert.throws(() => binding.policyBudgets(bad), TypeError, String(bad))
  }
  // Released: refused, and refused still once its slot holds another policy.
  binding.rawRelease(h)
  binding.rawRelease(h)
  assert.throws(() => binding.rawCheckFs(h, '/data/x', 0), TypeError)
  const next = binding.compilePolicy('{"fs":["/**"]}', 'q', 'posix')
  assert.notEqual(next, h)
  assert.throws(() => binding.rawCheckFs(h, '/data/x', 0), TypeError, 'the old handle never names the new occupant')
  assert.equal(binding.rawCheckFs(next, '/data/x', 0), 0)
  binding.rawRelease(next)
  // The FinalizationRegistry: once a policy and its tracker are collected, their handles name nothing.
  require('node:v8').setFlagsFromString('--expose-gc')
  const gc = require('node:vm').runInNewContext('gc')
  let policyHandle
  ;(() => {
    // Longer than a shared text (lib/policy.js SHARE_MAX_TEXT): the policy owns its handle
    // (a shared one is held by the table too: __test__/policy-share.test.js).
    const m = { fs: ['/data/**', ...Array.from({ length: 8 }, (_, i) => `/srv/owned-by-one-policy-${i}/**`)], budgets: { wallClockMs: 1000 } }
    assert.ok(JSON.stringify(m).length > 128)
    const p = PermissionPolicy.fromManifest(m, { plugin: 'p', platform: 'posix' })
    policyHandle = require('../lib/policy.js').handleOf(p)
    assert.ok(new pkg.BudgetTracker(p, { hooks: { now: () => 0 } }).check().ok)
    assert.equal(binding.rawCheckFs(policyHandle, '/data/x', 0), 0)
  })()
  for (let i = 0; i < 50; i++) {
    gc()
    await new Promise((r) => setTimeout(r, 10))
    try {
      binding.rawCheckFs(policyHandle, '/data/x', 0)
    } catch (e) {
      assert.ok(e instanceof TypeError)
      return
    }
  }
  assert.fail('the collected policy was never released')
})

test("handles: another thread's handle names nothing in this thread, though its tables fill the same slots", async () => {
  const { Worker } = require('node:worker_threads')
  const { binding } = native
  const denyAll = binding.compilePolicy('{}', 'main', 'posix')
  assert.equal(binding.rawCheckFs(denyAll, '/etc/passwd', 0) !== 0, true)
  const src = `
    const { parentPort, workerData } = require('node:worker_threads')
    const { binding } = require(${JSON.stringify(require.resolve('../lib/native.js'))})
    const mine = Array.from({ length: 64 }, () => binding.compilePolicy('{"fs":["/**"]}', 'w', 'posix'))
    const out = []
    for (const h of workerData) {
      try { out.push(binding.rawCheckFs(h, '/etc/passwd', 0)) } catch (e) { out.push(e.constructor.name) }
    }
    parentPort.postMessage({ out, allowsOwn: binding.rawCheckFs(mine[0], '/etc/passwd', 0) })
  `
  const w = new Worker(src, { eval: true, workerData: [denyAll, denyAll + 1, denyAll - 1] })
  const { out, allowsOwn } = await new Promise((resolve, reject) => w.once('message', resolve).once('error', reject))
  assert.equal(allowsOwn, 0, "the worker's own allow-all policy allows")
  assert.deepEqual(out, ['TypeError', 'TypeError', 'TypeError'])
  binding.rawRelease(denyAll)
})
