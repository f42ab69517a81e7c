'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { Worker } = require('node:worker_threads')
const { execFileSync } = require('node:child_process')
const pkg = require('..')
const { PermissionPolicy, PermissionChecker, createChecker, isInvalidManifest } = pkg

const manifest = {
  fs: ['/data/plugin/**', { path: '/data/out/*.json', mode: 'write' }],
  fetch: ['api.example.com', '*.cdn.example.net'],
  secrets: ['API_KEY'],
  events: { publishes: ['orders.created'], subscribes: ['orders.*'] },
  db: { database: 'plugin_db' },
  budgets: { wallClockMs: 5000 },
}

test('an empty policy grants nothing', () => {
  const c = createChecker({}, { plugin: 'p', platform: 'posix' })
  assert.equal(c.checkFs('/', 'read').allowed, false)
  assert.equal(c.checkFs('/tmp/x', 'write').allowed, false)
  assert.equal(c.checkFetch('https://example.com/').allowed, false)
  assert.equal(c.checkFetch('http://127.0.0.1/').allowed, false)
  for (const [id, payload] of [
    ['secrets.get', { name: 'X' }],
    ['events.publish', { topic: 'a' }],
    ['events.subscribe', { topic: '**' }],
    ['db.query', { database: 'd' }],
  ]) {
    assert.equal(c.checkCapability(id, payload).allowed, false, id)
  }
})

test('decisions have the documented shape and are frozen', () => {
  const c = createChecker(manifest, { plugin: 'p', platform: 'posix' })
  const allow = c.checkFs('/data/plugin/a', 'read')
  assert.deepEqual(allow, { allowed: true })
  const deny = c.checkFs('/data/plugin/a', 'write')
  assert.deepEqual(deny, { allowed: false, capability: 'fs.write', reason: 'mode_not_granted' })
  assert.ok(Object.isFrozen(allow) && Object.isFrozen(deny))
  assert.throws(() => {
    'use strict'
    deny.allowed = true
  }, TypeError)
  assert.equal(c.checkFs('/data/plugin/a', 'write').allowed, false)
})

test('policy is immutable and exposes its normalised form', () => {
  const p = PermissionPolicy.fromManifest({ ...manifest, fetch: ['API.Example.COM.', 'bücher.example:8443'] }, { plugin: 'p', platform: 'posix' })
  assert.ok(Object.isFrozen(p))
  const json = p.toJSON()
  assert.ok(Object.isFrozen(json) && Object.isFrozen(json.fs))
  assert.deepEqual(json.fetch, ['api.example.com', 'xn--bcher-kva.example:8443'])
  assert.deepEqual(json.fs, [
    { path: '/data/plugin/**', mode: 'read' },
    { path: '/data/out/*.json', mode: 'write' },
  ])
  assert.deepEqual(p.budgets, { wallClockMs: 5000 })
  assert.equal(p.plugin, 'p')
  assert.equal(p.platform, 'posix')
  assert.deepEqual(JSON.parse(JSON.stringify(p)), json)
  // Mutating the input after compiling changes nothing.
  const input = { fs: ['/a/**'] }
  const q = PermissionPolicy.fromManifest(input, { plugin: 'p', platform: 'posix' })
  input.fs.push('/**')
  assert.equal(createChecker({}, { plugin: 'p' }).policy instanceof PermissionPolicy, true)
  assert.equal(new PermissionChecker(q).checkFs('/etc/passwd', 'read').allowed, false)
  assert.throws(() => new PermissionPolicy(), TypeError)
})

test('the platform option selects the path flavour', () => {
  const w = createChecker({ fs: ['C:\\data\\**'] }, { plugin: 'p', platform: 'win32' })
  assert.equal(w.checkFs('c:/DATA/x', 'read').allowed, true)
  assert.equal(w.checkFs('\\\\server\\share\\x', 'read').reason, 'invalid_path')
  const p = createChecker({ fs: ['/data/**'] }, { plugin: 'p', platform: 'posix' })
  assert.equal(p.checkFs('/DATA/x', 'read').allowed, false)
  const host = createChecker({}, { plugin: 'p' })
  assert.equal(host.policy.platform, process.platform === 'win32' ? 'win32' : 'posix')
})

test('wrong argument types are TypeErrors', () => {
  const c = createChecker(manifest, { plugin: 'p', platform: 'posix' })
  const bad = [undefined, null, 1, true, {}, [], Symbol('s'), 10n, () => '/data/plugin/x', Buffer.from('/data/plugin/x'), new String('/data/plugin/x')]
  for (const v of bad) {
    assert.throws(() => c.checkFs(v, 'read'), TypeError)
    assert.throws(() => c.assertFs(v, 'read'), TypeError)
    assert.throws(() => c.checkFs('/data/plugin/x', v), TypeError)
    assert.throws(() => c.checkFetch(v), TypeError)
    assert.throws(() => c.checkFetchAddress('https://api.example.com', v), TypeError)
  }
  assert.throws(() => c.checkFs('/data/plugin/x', 'READ'), TypeError)
  assert.throws(() => c.checkFs('/data/plugin/x', 'readwrite'), TypeError)
  assert.throws(() => c.checkFs('/data/plugin/x', 'read', { resolveSymlinks: 'yes' }), TypeError)
  assert.throws(() => c.checkFs('/data/plugin/x', 'read', 5), TypeError)
  assert.throws(() => PermissionPolicy.fromManifest({}, undefined), TypeError)
  assert.throws(() => PermissionPolicy.fromManifest({}, {}), TypeError)
  assert.throws(() => PermissionPolicy.fromManifest({}, { plugin: '' }), TypeError)
  assert.throws(() => PermissionPolicy.fromManifest({}, { plugin: 'a\nb' }), TypeError)
  assert.throws(() => PermissionPolicy.fromManifest({}, { plugin: 'p', platform: 'darwin' }), TypeError)
  assert.throws(() => new PermissionChecker({}), TypeError)
  assert.throws(() => new PermissionChecker(c.policy, { meter: {} }), TypeError)
  // Capability ids and payloads come from plugins: denials, not exceptions.
  assert.equal(c.checkCapability(42, { name: 'API_KEY' }).reason, 'unknown_capability')
  assert.equal(c.checkCapability(null, null).reason, 'unknown_capability')
})

test('a URL object is checked by its href; a subclass that could lie is a TypeError', () => {
  const c = createChecker(manifest, { plugin: 'p', platform: 'posix' })
  assert.equal(c.checkFetch(new URL('https://api.example.com/x')).allowed, true)
  class Liar extends URL {
    get href() {
      return 'https://api.example.com/'
    }
  }
  assert.throws(() => c.checkFetch(new Liar('https://evil.com/')), TypeError)
  assert.equal(c.authorizeFetch('HTTPS://API.EXAMPLE.COM:443/a/../b?q#f'), 'https://api.example.com/b?q#f')
})

test('lone surrogates and over-long strings are denied without crossing', () => {
  const c = createChecker(manifest, { plugin: 'p', platform: 'posix' })
  assert.equal(c.checkFs('/data/plugin/\uD800', 'read').reason, 'invalid_path')
  assert.equal(c.checkFs('/data/plugin/' + 'a'.repeat(5000), 'read').reason, 'invalid_path')
  assert.equal(c.checkFetch('https://api.example.com/\uDC00').reason, 'invalid_url')
  assert.equal(c.checkCapability('secrets.get', { name: 'API_KEY\uD800' }).reason, 'invalid_payload')
  assert.equal(c.checkCapability('secrets.get', { name: 'A'.repeat(4097) }).reason, 'invalid_payload')
})

test('payloads are read as own data properties, never through getters or prototypes', () => {
  const c = createChecker(manifest, { plugin: 'p', platform: 'posix' })
  let calls = 0
  const getter = {
    get name() {
      calls++
      return 'API_KEY'
    },
  }
  assert.equal(c.checkCapability('secrets.get', getter).reason, 'invalid_payload')
  assert.equal(calls, 0)
  const inherited = Object.create({ name: 'API_KEY' })
  assert.equal(c.checkCapability('secrets.get', inherited).reason, 'invalid_payload')
  const proxy = new Proxy(
    { name: 'API_KEY' },
    {
      getOwnPropertyDescriptor() {
        throw new Error('trap')
      },
    },
  )
  assert.equal(c.checkCapability('secrets.get', proxy).reason, 'invalid_payload')
  const nullProto = Object.assign(Object.create(null), { name: 'API_KEY' })
  assert.equal(c.checkCapability('secrets.get', nullProto).allowed, true)
  assert.equal(c.checkCapability('secrets.get', Object.freeze({ name: 'API_KEY' })).allowed, true)
  const cyclic = { name: 'API_KEY' }
  cyclic.self = cyclic
  assert.equal(c.checkCapability('secrets.get', cyclic).allowed, true)
  assert.equal(c.checkCapability('secrets.get', { name: new String('API_KEY') }).reason, 'invalid_payload')
})

// Manifests JSON can spell are rows of data/conformance/manifest-errors.json; here the values only JS has.
test('manifest errors name the JSON pointer; getters and non-JSON values are rejected', () => {
  const expectPointer = (m, pointer) => {
    try {
      PermissionPolicy.fromManifest(m, { plugin: 'p', platform: 'posix' })
    } catch (e) {
      assert.ok(isInvalidManifest(e), `${e}`)
      assert.equal(e.details.pointer, pointer)
      assert.match(e.message, new RegExp(`at ${pointer.replace(/[/~]/g, (c) => `\\${c}`)}`))
      return
    }
    assert.fail(`accepted ${JSON.stringify(m)}`)
  }
  expectPointer({ budgets: { memoryMb: NaN } }, '/budgets/memoryMb')
  expectPointer({ budgets: { wallClockMs: Infinity } }, '/budgets/wallClockMs')
  expectPointer({ fs: ['/a', () => 1] }, '/fs/1')
  expectPointer({ fs: [Symbol('x')] }, '/fs/0')
  expectPointer({ fs: ['/a', , '/b'] }, '/fs/1') // eslint-disable-line no-sparse-arrays
  expectPointer({ secrets: [1n] }, '/secrets/0')
  expectPointer({ db: new Map() }, '/db')
  expectPointer(
    {
      get fs() {
        return ['/**']
      },
    },
    '/fs',
  )
  const cyclic = { fs: [] }
  cyclic.fs.push(cyclic)
  expectPointer(cyclic, '/fs/0')
  expectPointer({ [Symbol('k')]: 1 }, '')
  // An explicit undefined is an absent optional field.
  assert.doesNotThrow(() => PermissionPolicy.fromManifest({ fs: undefined }, { plugin: 'p' }))
  // A Proxy is refused before any of its traps runs (sixth round).
  let trapped = 0
  const throwingProxy = new Proxy({}, { ownKeys() {
    trapped++
    throw new Error('trap')
  }, getPrototypeOf() {
    trapped++
    throw new Error('trap')
  } })
  assert.throws(() => PermissionPolicy.fromManifest(throwingProxy, { plugin: 'p' }), (e) => isInvalidManifest(e) && e.details.pointer === '')
  assert.equal(trapped, 0)
})

test('ESM import exposes the same API as require', () => {
  const out = execFileSync(
    process.execPath,
    ['--input-type=module', '-e', `import * as m from ${JSON.stringify(path.join(__dirname, '..', 'index.mjs'))}; import cjs from ${JSON.stringify(path.join(__dirname, '..', 'index.js'))}; const keys = Object.keys(m).filter(k => k !== 'default').sort(); console.log(JSON.stringify({ keys, same: m.PermissionChecker === cjs.PermissionChecker, allow: m.createChecker({ fs: ['/a/**'] }, { plugin: 'p', platform: 'posix' }).checkFs('/a/b', 'read').allowed }))`],
    { encoding: 'utf8' },
  )
  const r = JSON.parse(out)
  assert.deepEqual(r.keys, Object.keys(pkg).sort())
  assert.equal(r.same, true)
  assert.equal(r.allow, true)
})

test('the addon loads and checks inside a worker thread', async () => {
  const worker = new Worker(
    `const { parentPort } = require('node:worker_threads')
     const { createChecker } = require(${JSON.stringify(path.join(__dirname, '..'))})
     const c = createChecker({ fs: ['/data/**'], fetch: ['api.example.com'] }, { plugin: 'w', platform: 'posix' })
     parentPort.postMessage([c.checkFs('/data/x', 'read'), c.checkFs('/data/../etc', 'read'), c.checkFetch('https://evil.com')])`,
    { eval: true },
  )
  const [msg] = await Promise.all([new Promise((resolve, reject) => worker.once('message', resolve).once('error', reject)), new Promise((r) => worker.once('exit', r))])
  assert.deepEqual(msg, [
    { allowed: true },
    { allowed: false, capability: 'fs.read', reason: 'path_traversal' },
    { allowed: false, capability: 'fetch', reason: 'host_not_allowlisted' },
  ])
})
