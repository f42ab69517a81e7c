'use strict'
// Hostile JS values: each gets a TypeError, a denial or INVALID_MANIFEST,
// quickly; the process never aborts (the worst run in a child process).
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const pkg = require('..')
const { createChecker, PermissionPolicy, BudgetTracker, isInvalidManifest } = pkg
const { loadTestHooksAddon, testHooksAddonPath } = require('../scripts/test-hooks-addon.js')

const checker = createChecker(
  { fs: ['/data/**'], fetch: ['api.example.com'], secrets: ['S'], events: { publishes: ['a.b'], subscribes: ['a.*'] }, db: { database: 'd' } },
  { plugin: 'hostile', platform: 'posix' },
)

const throwingToString = { toString() { throw new Error('toString') }, valueOf() { throw new Error('valueOf') } }
const throwingGetter = Object.defineProperty({}, 'path', { get() { throw new Error('getter') }, enumerable: true })
const revoked = (() => { const r = Proxy.revocable({}, {}); r.revoke(); return r.proxy })()
const cyclic = (() => { const o = { path: '/data/x' }; o.self = o; return o })()
const HOSTILE = [undefined, null, 0, -0, NaN, Infinity, 1n, true, Symbol('x'), () => '/data/x', [], {}, throwingToString, throwingGetter, revoked, cyclic, new Proxy({}, { get() { throw new Error('trap') } }), Object.create(null), Object.freeze({ path: '/data/x' }), new String('/data/x'), Buffer.from('/data/x'), new URL('file:///data/x')]

function outcome(fn) {
  try {
    const r = fn()
    return r && typeof r === 'object' && 'allowed' in r ? (r.allowed ? 'allow' : `deny:${r.reason}`) : 'ok'
  } catch (e) {
    return e instanceof TypeError ? 'TypeError' : e && e.code ? e.code : `other:${e && e.message}`
  }
}

test('every entry point answers hostile values with a TypeError, a denial or INVALID_MANIFEST', () => {
  for (const v of HOSTILE) {
    for (const [name, fn] of [
      ['checkFs path', () => checker.checkFs(v, 'read')],
      ['checkFs mode', () => checker.checkFs('/data/x', v)],
      ['checkFs options', () => checker.checkFs('/data/x', 'read', v)],
      ['checkFetch', () => checker.checkFetch(v)],
      ['authorizeFetch', () => checker.authorizeFetch(v)],
      ['checkFetchAddress', () => checker.checkFetchAddress('https://api.example.com', v)],
      ['checkCapability id', () => checker.checkCapability(v, { name: 'S' })],
      ['checkCapability payload', () => checker.checkCapability('secrets.get', v)],
      ['checkCapability fs payload', () => checker.checkCapability('fs.read', v)],
      ['fromManifest manifest', () => PermissionPolicy.fromManifest(v, { plugin: 'p' })],
      ['fromManifest fs entry', () => PermissionPolicy.fromManifest({ fs: [v] }, { plugin: 'p' })],
      ['fromManifest options', () => PermissionPolicy.fromManifest({}, v)],
      ['BudgetTracker options', () => new BudgetTracker(checker.policy, v)],
      ['serializeError', () => pkg.serializeError(v)],
      ['reviveError', () => pkg.reviveError(v)],
      ['guards', () => pkg.isPermissionDenied(v) && pkg.isSandboxPermissionError(v)],
    ]) {
      const o = outcome(fn)
      assert.ok(['TypeError', 'INVALID_MANIFEST', 'PERMISSION_DENIED', 'ok', 'allow'].includes(o) || o.startsWith('deny:'), `${name} with ${typeof v}: ${o}`)
    }
  }
  // Plugin-controlled data is denied, never thrown on.
  for (const v of HOSTILE) {
    const o = outcome(() => checker.checkCapability('secrets.get', v))
    assert.ok(o.startsWith('deny:'), o)
  }
})

test('huge strings and huge manifests are rejected quickly', () => {
  const huge = 'a'.repeat(10 * 1024 * 1024)
  const t0 = performance.now()
  assert.equal(checker.checkFs(`/data/${huge}`, 'read').reason, 'invalid_path')
  assert.equal(checker.checkFetch(`https://api.example.com/${huge}`).reason, 'invalid_url')
  assert.equal(checker.checkCapability('secrets.get', { name: huge }).reason, 'invalid_payload')
  assert.throws(() => PermissionPolicy.fromManifest({ fs: [`/${huge}`] }, { plugin: 'p' }), (e) => isInvalidManifest(e) && e.details.pointer === '/fs/0')
  assert.throws(() => PermissionPolicy.fromManifest({ fs: new Array(100_000).fill('/a/**') }, { plugin: 'p' }), (e) => isInvalidManifest(e) && e.details.pointer === '/fs')
  assert.throws(() => PermissionPolicy.fromManifest({ fetch: new Array(100_000).fill('a.example') }, { plugin: 'p' }), (e) => isInvalidManifest(e) && e.details.pointer === '/fetch')
  let deep = []
  for (let i = 0; i < 100_000; i++) deep = [deep]
  assert.throws(() => PermissionPolicy.fromManifest({ fs: deep }, { plugin: 'p' }), isInvalidManifest)
  assert.throws(() => PermissionPolicy.fromManifest({ secrets: ['ok', 'bad\uD800'] }, { plugin: 'p' }), (e) => isInvalidManifest(e) && e.details.pointer === '/secrets/1')
  assert.throws(() => PermissionPolicy.fromManifest({ fs: ['/{a,b}'.repeat(8) + '/{c,d}'] }, { plugin: 'p' }), isInvalidManifest)
  assert.ok(performance.now() - t0 < 20_000)
})

test('the shipped addon has no test hooks (they live in a separate test-hooks build)', () => {
  const { binding } = require('../lib/native.js')
  for (const name of ['__panicForTesting', '__rawPanicForTesting', '__lockdownProbe', 'rawBudgetCreate', 'rawBudgetRecord', 'rawBudgetElapsed']) {
    assert.equal(name in binding, false, `the release addon exports ${name}`)
  }
  const hooks = loadTestHooksAddon()
  for (const name of ['__panicForTesting', '__rawPanicForTesting', '__lockdownProbe', 'rawBudgetCreate', 'rawBudgetRecord', 'rawBudgetElapsed']) {
    assert.equal(typeof hooks[name], 'function', `the test-hooks addon lacks ${name}`)
  }
})

test('a Rust panic becomes a JS error in both binding layers', () => {
  const { binding } = require('../lib/native.js')
  const hooks = loadTestHooksAddon()
  assert.throws(() => hooks.__panicForTesting(), (e) => e instanceof Error && /panic/i.test(e.message))
  assert.throws(() => hooks.__rawPanicForTesting(), (e) => e instanceof Error && /panic/.test(e.message))
  // Raw entry points reject foreign handles instead of dereferencing them.
  assert.throws(() => binding.rawCheckFs({}, '/x', 0), TypeError)
  assert.throws(() => binding.rawCheckFs(null, '/x', 0), TypeError)
})

test("the test-hooks addon's raw budget functions (the Rust arithmetic for the parity test) refuse what is not theirs", () => {
  const hooks = loadTestHooksAddon()
  assert.throws(() => hooks.rawBudgetCreate({}, 0, null, null, 0), TypeError)
  assert.throws(() => hooks.rawBudgetRecord({}, new ArrayBuffer(9 * 8)), TypeError)
  const policyHandle = hooks.compilePolicy('{}', 'p', 'posix')
  const bh = hooks.rawBudgetCreate(policyHandle, 0, null, null, 0, 0)
  assert.throws(() => hooks.rawBudgetRecord(bh, new ArrayBuffer(9 * 8 - 1)), TypeError, 'one byte short')
  assert.throws(() => hooks.rawBudgetRecord(bh, new Float64Array(9)), TypeError, 'a view, not its buffer')
  assert.throws(() => hooks.rawBudgetRecord(bh, new DataView(new ArrayBuffer(9 * 8))), TypeError, 'a DataView')
  const io = new Float64Array(9)
  structuredClone(io.buffer, { transfer: [io.buffer] })
  assert.throws(() => hooks.rawBudgetRecord(bh, io.buffer), TypeError, 'a detached buffer')
  // Another thread could write a SharedArrayBuffer while Rust reads it: refused.
  const shared = new Float64Array(new SharedArrayBuffer(9 * 8))
  assert.throws(() => hooks.rawBudgetRecord(bh, shared.buffer), TypeError, 'a SharedArrayBuffer')
  assert.deepEqual([...shared], new Array(9).fill(0), 'nothing written into shared memory')
  // An ordinary buffer longer than the nine slots works, read and written in place from its start.
  const big = new Float64Array(new ArrayBuffer(12 * 8))
  big[0] = 5
  assert.equal(hooks.rawBudgetRecord(bh, big.buffer), 0)
  assert.deepEqual([...big], [5, 0, 0, 0, 1, 5, -1, -1, 0, 0, 0, 0])
})

test('the worst inputs in a child process: it exits normally', () => {
  const script = `
    const pkg = require(${JSON.stringify(path.join(__dirname, '..'))})
    const { binding } = require(${JSON.stringify(path.join(__dirname, '..', 'lib', 'native.js'))})
    const c = pkg.createChecker({ fs: ['/data/**'] }, { plugin: 'p', platform: 'posix' })
    const huge = '\\uD800'.repeat(5e6)
    c.checkFs(huge, 'read'); c.checkFetch(huge); c.checkCapability(huge, { path: huge })
    const hooks = require(${JSON.stringify(testHooksAddonPath())})
    for (let i = 0; i < 1000; i++) { try { hooks.__rawPanicForTesting() } catch {} }
    for (let i = 0; i < 1000; i++) { try { hooks.__panicForTesting() } catch {} }
    try { binding.rawCheckFs(binding.rawCheckFs, '/x', 0) } catch {}
    try { hooks.rawBudgetRecord({}, new Float64Array(1)) } catch {}
    try { hooks.rawBudgetRecord({}, new ArrayBuffer(1)) } catch {}
    let deep = {}; for (let i = 0; i < 1e5; i++) deep = { fs: deep }
    try { pkg.PermissionPolicy.fromManifest(deep, { plugin: 'p' }) } catch {}
    try { binding.compilePolicy('['.repeat(1e6), 'p', 'posix') } catch {}
    console.log('survived')`
  // RUST_BACKTRACE=0: 2000 caught panics each print one line on stderr, not a backtrace.
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000, maxBuffer: 16 << 20, env: { ...process.env, RUST_BACKTRACE: '0' } })
  assert.equal(r.signal, null, r.stderr)
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout.trim(), 'survived')
})
