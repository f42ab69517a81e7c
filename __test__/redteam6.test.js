'use strict'
// The sixth red team's findings (shared compiles round), pinned through the
// public API. The shared compiles held; these were older:
// - a polluted `Object.prototype.value` made every "own data property, not
//   a getter" test (`'value' in descriptor`) pass an accessor, whose
//   "value" was then the polluted one: wrong allows through a getter
//   manifest, payload, option or sample;
// - a manifest referencing one array from many places made the walk write
//   gigabytes of text (a fatal out-of-memory, not an error);
// - number-like keys on a manifest array (`-1`, `0.5`) were taken for
//   indices and dropped silently;
// - a non-enumerable manifest key was compiled though `JSON.stringify`
//   (the host's own copy or log) never shows it.
const test = require('node:test')
const assert = require('node:assert/strict')
const pkg = require('..')
const { PermissionPolicy, PermissionChecker, BudgetTracker, createChecker, learnManifest, reviveError, isInvalidManifest, InvalidManifestError } = pkg

const options = { plugin: 'p', platform: 'posix' }

/** Runs `f` with `Object.prototype[key] = value`, always restored. */
function polluted(key, value, f) {
  const had = Object.getOwnPropertyDescriptor(Object.prototype, key)
  Object.defineProperty(Object.prototype, key, { value, writable: true, configurable: true, enumerable: true })
  try {
    return f()
  } finally {
    if (had) Object.defineProperty(Object.prototype, key, had)
    else delete Object.prototype[key]
  }
}

const invalidAt = (pointer) => (e) => e instanceof InvalidManifestError && e.details.pointer === pointer

test('a polluted Object.prototype.value never stands in for a getter: manifests, options, payloads, samples, learn, errors', () => {
  const checker = createChecker({ secrets: ['ALLOWED'], fs: ['/data/**'] }, options)
  const policy = PermissionPolicy.fromManifest({ budgets: { memoryMb: 10 } }, options)
  // Built before the pollution (a descriptor literal would inherit `value` too).
  const arr = ['/srv/a/**']
  Object.defineProperty(arr, 0, { get: () => '/srv/a/**' })
  for (const value of ['ALLOWED', ['/**'], false, true, 1, 'p']) {
    polluted('value', value, () => {
      // The manifest walk: an object property and an array element.
      assert.throws(() => PermissionPolicy.fromManifest({ get fs() { return ['/srv/a/**'] } }, options), invalidAt('/fs'))
      assert.throws(() => PermissionPolicy.fromManifest({ fs: arr }, options), invalidAt('/fs/0'))
      // Options (fromManifest, checkFs) and payload fields.
      assert.throws(() => PermissionPolicy.fromManifest({}, { get plugin() { return 'p' } }), TypeError)
      assert.throws(() => checker.checkFs('/data/x', 'read', { get resolveSymlinks() { return true } }), TypeError)
      const d = checker.checkCapability('secrets.get', { get name() { return 'OTHER' } })
      assert.equal(d.allowed, false)
      assert.equal(d.reason, 'invalid_payload')
      // A budget sample and `unmeasured`.
      const tracker = new BudgetTracker(policy, { hooks: { now: () => 0, rssMb: () => 1 } })
      assert.throws(() => tracker.record({ get rssMb() { return 999 } }), (e) => e.code === 'INVALID_SAMPLE')
      assert.throws(() => new BudgetTracker(policy, { get unmeasured() { return ['memoryMb'] } }), TypeError)
      // learnManifest's options and calls.
      assert.throws(() => learnManifest([], { get platform() { return 'posix' } }), TypeError)
      const learned = learnManifest([{ capability: 'fs.read', get payload() { return { path: '/etc/shadow' } } }], { platform: 'posix' })
      assert.deepEqual(learned.manifest, {})
      // An error's code read through a getter is no code.
      assert.equal(isInvalidManifest({ get code() { return 'INVALID_MANIFEST' } }), false)
      assert.throws(() => reviveError({ get code() { return 'PERMISSION_DENIED' }, message: 'x', details: {} }))
    })
  }
  // Unpolluted, the same calls still work for data properties.
  assert.equal(checker.checkCapability('secrets.get', { name: 'ALLOWED' }).allowed, true)
  assert.equal(PermissionPolicy.fromManifest({ fs: ['/srv/a/**'] }, options).checkFs('/srv/a/x', 'read').allowed, true)
})

test('one array referenced from many places is refused at the value cap, quickly, never an out-of-memory abort', () => {
  const b = Array(10000).fill(0)
  const a = Array(10000).fill(b)
  const t0 = process.hrtime.bigint()
  assert.throws(
    () => PermissionPolicy.fromManifest({ fs: a }, options),
    (e) => e instanceof InvalidManifestError && /at most 1000000 JSON values/.test(e.details.expected),
  )
  assert.ok(Number(process.hrtime.bigint() - t0) / 1e9 < 30, 'refused within seconds')
  // Three levels of the same.
  const c = Array(1000).fill(Array(1000).fill(Array(1000).fill('x')))
  assert.throws(() => PermissionPolicy.fromManifest({ fs: c }, options), (e) => e instanceof InvalidManifestError)
  // A host that reuses one list where a manifest names it twice is fine.
  const hosts = ['api.example.com']
  const p = PermissionPolicy.fromManifest({ fetch: hosts, secrets: [{ name: 'K', hosts }] }, options)
  assert.equal(createChecker(p.toJSON(), options).checkFetch('https://api.example.com/').allowed, true)
  // The largest lists a manifest may hold are far below the cap.
  const big = { fs: Array.from({ length: 10000 }, (_, i) => ({ path: `/srv/${i}/**`, mode: 'read' })), fetch: Array.from({ length: 10000 }, (_, i) => `h${i}.example.com`) }
  assert.equal(PermissionPolicy.fromManifest(big, options).toJSON().fs.length, 10000)
})

test('number-like keys on a manifest array are extra properties, never indices', () => {
  for (const key of ['-1', '0.5', '1e-7', '-Infinity', 'Infinity', '01', '-0', 'NaN', '4294967295', '1.0']) {
    const list = ['/a/**', '/b/**']
    list[key] = '/etc/**'
    assert.throws(() => PermissionPolicy.fromManifest({ fs: list }, options), invalidAt(`/fs/${key}`), key)
    const deny = ['/a/x']
    deny[key] = '/a/secret/**'
    assert.throws(() => PermissionPolicy.fromManifest({ fs: ['/a/**'], deny: { fs: deny } }, options), InvalidManifestError, key)
  }
})

test('a non-enumerable manifest key is refused: JSON.stringify of the host’s manifest would not show it', () => {
  const m = {}
  Object.defineProperty(m, 'fs', { value: ['/**'], enumerable: false })
  assert.equal(JSON.stringify(m), '{}')
  assert.throws(() => PermissionPolicy.fromManifest(m, options), invalidAt('/fs'))
  const nested = { fs: [{ path: '/a/**' }] }
  Object.defineProperty(nested.fs[0], 'mode', { value: 'write', enumerable: false })
  assert.throws(() => PermissionPolicy.fromManifest(nested, options), invalidAt('/fs/0/mode'))
  // A non-enumerable array element is still an element (JSON.stringify writes it).
  const arr = ['/a/**']
  Object.defineProperty(arr, 0, { value: '/b/**', enumerable: false, writable: true, configurable: true })
  assert.deepEqual(PermissionPolicy.fromManifest({ fs: arr }, options).toJSON().fs, [{ path: '/b/**', mode: 'read' }])
})

test('the Deno broker’s net view copies the policy without consulting an inherited toJSON', { skip: process.platform === 'win32' && 'a Unix socket' }, async (t) => {
  const net = require('node:net')
  const policy = PermissionPolicy.fromManifest({ fetch: ['api.example.com'], deny: { fetch: ['api.example.com/admin/**'] } }, { plugin: 'p' })
  // The net view is made when the broker starts; a toJSON on Object.prototype
  // that dropped the deny would have made the host's net requests allowed.
  const broker = await polluted('toJSON', function () { return { fetch: ['api.example.com'] } }, () => pkg.serveDenoBroker(policy))
  t.after(() => broker.close())
  const sock = net.connect(broker.path)
  t.after(() => sock.destroy())
  await new Promise((r, j) => sock.once('connect', r).once('error', j))
  const reply = new Promise((r) => {
    let buf = ''
    sock.setEncoding('utf8')
    sock.on('data', (d) => {
      buf += d
      if (buf.includes('\n')) r(JSON.parse(buf.slice(0, buf.indexOf('\n'))))
    })
  })
  sock.write(`${JSON.stringify({ v: 1, pid: 4242, id: 1, datetime: new Date().toISOString(), permission: 'net', value: 'api.example.com:443' })}\n`)
  const r = await reply
  assert.equal(r.id, 1)
  assert.equal(r.result, 'deny', JSON.stringify(r))
})

// The sixth round's second red team (after the fixes above): prototype
// pollution deciding the binary dlopen runs, metric labels, budgets, the
// harness, revived errors and the Deno broker's options; and the walk's
// uncounted `undefined` keys, shared strings, Proxies and non-plain arrays.

test('a polluted Object.prototype never chooses the native binary (NAPI_RS_NATIVE_LIBRARY_PATH, env, dir)', (t) => {
  const { spawnSync } = require('node:child_process')
  const fs = require('node:fs')
  const os = require('node:os')
  const path = require('node:path')
  const { testHooksAddonPath } = require('../scripts/test-hooks-addon.js')
  const { currentPlatform } = require('../lib/binary.js')
  // Another real binary of this package: the test-hooks addon (it exports `__rawPanicForTesting`).
  const other = testHooksAddonPath()
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asp-rt6-bin-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  fs.copyFileSync(other, path.join(dir, `${require('../package.json').napi.binaryName}.${currentPlatform()}.node`))
  const root = path.join(__dirname, '..')
  for (const pollution of [`Object.prototype.NAPI_RS_NATIVE_LIBRARY_PATH = ${JSON.stringify(other)}`, `Object.prototype.env = { NAPI_RS_NATIVE_LIBRARY_PATH: ${JSON.stringify(other)} }`, `Object.prototype.dir = ${JSON.stringify(dir)}`]) {
    const env = { ...process.env }
    delete env.NAPI_RS_NATIVE_LIBRARY_PATH
    const r = spawnSync(process.execPath, ['-e', `${pollution}; const b = require(${JSON.stringify(path.join(root, 'lib', 'native.js'))}).binding; console.log(typeof b.__rawPanicForTesting, typeof b.rawCheckFs)`], { encoding: 'utf8', env })
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stdout.trim(), 'undefined function', pollution)
  }
})

test('the manifest walk: uncounted undefined keys, shared strings, Proxies, non-plain arrays and boxed primitives', () => {
  const grant = { path: '/srv/a/**' }
  for (let i = 0; i < 100000; i++) grant[`k${i}`] = undefined
  let t0 = Date.now()
  assert.throws(() => PermissionPolicy.fromManifest({ fs: Array(2000).fill(grant) }, options), (e) => e instanceof InvalidManifestError && /JSON values and keys/.test(e.details.expected))
  assert.ok(Date.now() - t0 < 10_000)
  const s = `/${'一'.repeat(530)}`
  t0 = Date.now()
  assert.throws(() => PermissionPolicy.fromManifest({ fs: Array(99).fill(Array(10000).fill(s)) }, options), (e) => e instanceof InvalidManifestError && /JSON text is at most/.test(e.details.expected))
  assert.ok(Date.now() - t0 < 10_000)
  // A Proxy that shows the walk another element than a copy of it would.
  const list = new Proxy(['/srv/plugin/**'], {
    getOwnPropertyDescriptor(target, k) {
      const d = Reflect.getOwnPropertyDescriptor(target, k)
      return k === '0' ? { ...d, value: '/**' } : d
    },
  })
  assert.equal(JSON.stringify({ fs: list }), '{"fs":["/srv/plugin/**"]}')
  assert.throws(() => PermissionPolicy.fromManifest({ fs: list }, options), invalidAt('/fs'))
  assert.throws(() => PermissionPolicy.fromManifest(new Proxy({ fs: ['/a/**'] }, {}), options), invalidAt(''))
  // An array whose prototype writes another JSON.
  const arr = Object.setPrototypeOf(['/**'], { toJSON: () => ['/srv/plugin/**'] })
  assert.throws(() => PermissionPolicy.fromManifest({ fs: arr }, options), invalidAt('/fs'))
  // A boxed primitive with its prototype reset.
  assert.throws(() => PermissionPolicy.fromManifest({ budgets: Object.setPrototypeOf(new Number(5), Object.prototype) }, options), invalidAt('/budgets'))
})

test('a polluted numeric key never relabels a denial metric', async (t) => {
  const { meterHarness } = require('./helpers.js')
  const h = meterHarness()
  t.after(() => h.shutdown())
  const c = createChecker({ fs: ['/a/**'] }, { plugin: 'victim', platform: 'posix', meter: h.meter })
  const fake = Object.freeze({ plugin: 'innocent', capability: 'fetch', reason: 'port_not_allowed' })
  const keys = Array.from({ length: 256 }, (_, i) => String(i))
  for (const k of keys) Object.defineProperty(Object.prototype, k, { value: fake, configurable: true, writable: true })
  try {
    assert.equal(c.checkFs('/etc/passwd', 'read').allowed, false)
  } finally {
    for (const k of keys) delete Object.prototype[k]
  }
  const counts = await h.counts()
  assert.deepEqual(counts, { 'plugin.permission_denied_total|victim|fs.read|not_allowlisted': 1 })
})

test('a polluted budget key adds no budget', () => {
  polluted('wallClockMs', 0, () =>
    polluted('cpuPercent', 1, () => {
      const pol = PermissionPolicy.fromManifest({ budgets: { memoryMb: 64 } }, options)
      assert.deepEqual({ ...pol.budgets }, { memoryMb: 64 })
      let now = 0
      const tracker = new BudgetTracker(pol, { hooks: { now: () => now, rssMb: () => 10 } })
      now = 5
      const st = tracker.sample()
      assert.equal(st.ok, true)
    }),
  )
})

test('a polluted filter or skip never empties the conformance suite; a polluted reviveError or broker option is never read', async () => {
  const { runPermissionsConformance } = require('../testing.js')
  const count = () => {
    const names = []
    const describe = (_n, f) => f()
    const it = (n) => names.push(n)
    runPermissionsConformance('probe', () => ({ checkFs() {}, checkFetch() {}, checkCapability() {} }), { describe, it })
    return names.length
  }
  const clean = count()
  assert.ok(clean > 100)
  assert.equal(polluted('filter', 'no such case', count), clean)
  assert.equal(polluted('skip', { '': 'everything' }, count), clean)
  // A revived error's fields come from the message itself.
  polluted('$sandboxPermissionError', 1, () => polluted('code', 'PERMISSION_DENIED', () => assert.throws(() => reviveError({}), TypeError)))
  // The broker's tmpDir from a polluted prototype would put its socket there (or fail).
  if (process.platform !== 'win32') {
    const broker = await polluted('tmpDir', '/nonexistent-asp-rt6', () => pkg.serveDenoBroker(PermissionPolicy.fromManifest({}, options)))
    await broker.close()
  }
})
