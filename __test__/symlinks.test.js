'use strict'
// resolveSymlinks resolves the raw path as open(2) does; authorizeFs hands
// back the path to open; security options are read strictly. Real temp dirs,
// the real OpenTelemetry SDK for the counts, the kernel to confirm each
// attack really leaves the grant.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { createChecker, PermissionChecker, PermissionPolicy, isPermissionDenied } = require('..')
const { meterHarness, assertSchema } = require('./helpers.js')

const posixOnly = { skip: process.platform === 'win32' && 'posix symlinks' }

function tempRoot(t) {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'asp-links-')))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  return root
}

const denied = (fn) => {
  try {
    fn()
  } catch (e) {
    if (isPermissionDenied(e)) return assertSchema(e).details.reason
    throw e
  }
  return null
}

test('a `..` after a directory link climbs from the link target (the issue, and links to `.`)', posixOnly, (t) => {
  const T = tempRoot(t)
  fs.mkdirSync(`${T}/grant/a/b/c`, { recursive: true })
  fs.writeFileSync(`${T}/protected.md`, 'protected')
  fs.writeFileSync(`${T}/grant/a/ok.txt`, 'ok')
  fs.symlinkSync('/', `${T}/grant/rootlink`)
  fs.symlinkSync('.', `${T}/grant/a/b/c/dot`)
  const c = createChecker({ fs: [{ path: `${T}/grant/**`, mode: 'readwrite' }] }, { plugin: 'p', platform: 'posix' })
  const opts = { resolveSymlinks: true }

  const passwd = `${T}/grant/rootlink/../etc/passwd`
  assert.equal(c.checkFs(passwd, 'read').allowed, true, 'lexically inside')
  assert.deepEqual(c.checkFs(passwd, 'read', opts), { allowed: false, capability: 'fs.read', reason: 'symlink_escape' })
  assert.equal(denied(() => c.authorizeFs(passwd, 'read', opts)), 'symlink_escape')

  // Depth 3 under the grant: a link to `.` climbs three levels too many.
  const climb = `${T}/grant/a/b/c/dot/../../../../protected.md`
  assert.equal(fs.readFileSync(climb, 'utf8'), 'protected', 'the kernel leaves the grant')
  assert.equal(c.checkFs(climb, 'read').allowed, true, 'lexically inside')
  assert.equal(c.checkFs(climb, 'read', opts).reason, 'symlink_escape')
  assert.equal(c.checkFs(climb, 'write', opts).reason, 'symlink_escape')

  // Used within the grant, the same link resolves where the kernel goes.
  const within = `${T}/grant/a/b/c/dot/../../ok.txt`
  assert.equal(fs.readFileSync(within, 'utf8'), 'ok')
  assert.equal(c.authorizeFs(within, 'read', opts), `${T}/grant/a/ok.txt`)
})

test("Node's TRAVERSALSYMLINK regression (test-permission-fs-symlink.js) is denied", posixOnly, (t) => {
  const T = tempRoot(t)
  const allowed = `${T}/allowed-folder`
  fs.mkdirSync(`${allowed}/deep1/deep2/deep3`, { recursive: true })
  fs.writeFileSync(`${T}/protected-file.md`, 'protected')
  fs.symlinkSync(allowed, `${allowed}/deep1/deep2/deep3/gotcha`)
  const c = createChecker({ fs: [{ path: `${allowed}/**`, mode: 'readwrite' }] }, { plugin: 'p', platform: 'posix' })
  const raw = `${allowed}/deep1/deep2/deep3/gotcha/../protected-file.md`
  assert.equal(fs.readFileSync(raw, 'utf8'), 'protected')
  for (const mode of ['read', 'write']) {
    assert.equal(c.checkFs(raw, mode).allowed, true)
    assert.equal(c.checkFs(raw, mode, { resolveSymlinks: true }).reason, 'symlink_escape')
  }
})

test('authorizeFs returns the path to open, counts a denial once, and exists on the policy', posixOnly, async (t) => {
  const T = tempRoot(t)
  fs.mkdirSync(`${T}/grant/sub`, { recursive: true })
  fs.mkdirSync(`${T}/outside`)
  fs.writeFileSync(`${T}/grant/sub/f.txt`, 'f')
  fs.symlinkSync('sub', `${T}/grant/inner`)
  fs.symlinkSync('../outside/created', `${T}/grant/dangling`)
  fs.symlinkSync('sub/created', `${T}/grant/dangling-in`)
  const h = meterHarness()
  t.after(() => h.shutdown())
  const policy = PermissionPolicy.fromManifest({ fs: [{ path: `${T}/grant/**`, mode: 'readwrite' }] }, { plugin: 'p', platform: 'posix' })
  const c = new PermissionChecker(policy, { meter: h.meter })

  assert.equal(c.authorizeFs(`${T}/grant/./inner//f.txt`, 'read'), `${T}/grant/inner/f.txt`, 'normalised, links kept')
  assert.equal(c.authorizeFs(`${T}/grant/./inner//f.txt`, 'read', { resolveSymlinks: true }), `${T}/grant/sub/f.txt`)
  assert.equal(c.authorizeFs(`${T}/grant/inner/new.txt`, 'write', { resolveSymlinks: true }), `${T}/grant/sub/new.txt`)
  assert.equal(c.authorizeFs(`${T}/grant/dangling-in`, 'write', { resolveSymlinks: true }), `${T}/grant/sub/created`)
  assert.equal(policy.authorizeFs(`${T}/grant/inner/f.txt`, 'read', { resolveSymlinks: true }), `${T}/grant/sub/f.txt`)

  // The host opens the returned path without following a final link.
  const fd = fs.openSync(c.authorizeFs(`${T}/grant/inner/f.txt`, 'read', { resolveSymlinks: true }), fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW)
  fs.closeSync(fd)

  assert.equal(denied(() => c.authorizeFs(`${T}/grant/dangling`, 'write', { resolveSymlinks: true })), 'symlink_escape')
  assert.equal(denied(() => c.authorizeFs(`${T}/grant/../outside/x`, 'read')), 'path_traversal')
  assert.equal(denied(() => c.authorizeFs(`${T}/grant/\ud800`, 'read')), 'invalid_path')
  assert.equal(denied(() => c.authorizeFs(`${T}/grant/${'é'.repeat(2100)}`, 'write')), 'invalid_path')
  assert.equal(denied(() => c.authorizeFs('relative', 'read', { resolveSymlinks: true })), 'invalid_path')
  assert.equal(denied(() => c.authorizeFs(`${T}/grant/sub/missing/../f.txt`, 'read', { resolveSymlinks: true })), 'symlink_escape', "'..' after a missing directory")
  const counts = (await h.points()).filter((p) => p.name === 'plugin.permission_denied_total').map((p) => `${p.attributes.capability}:${p.attributes.reason}=${p.value}`).sort()
  assert.deepEqual(counts, ['fs.read:invalid_path=2', 'fs.read:path_traversal=1', 'fs.read:symlink_escape=1', 'fs.write:invalid_path=1', 'fs.write:symlink_escape=1'])

  assert.throws(() => c.authorizeFs(42, 'read'), TypeError)
  assert.throws(() => c.authorizeFs(`${T}/grant/x`, 'exec'), TypeError)
})

test('a win32 policy on a posix host cannot resolve symlinks: denied, never lexical-only', { skip: process.platform === 'win32' && 'posix host only' }, () => {
  const c = createChecker({ fs: ['C:\\data\\**'] }, { plugin: 'p', platform: 'win32' })
  assert.equal(c.checkFs('C:\\data\\x', 'read').allowed, true)
  assert.equal(c.checkFs('C:\\data\\x', 'read', { resolveSymlinks: true }).reason, 'symlink_escape')
  assert.equal(c.authorizeFs('C:\\data\\.\\x', 'read'), 'C:/data/x')
})

test('security options: a getter, an inherited value, a Proxy or an unknown key is a TypeError, and nothing is counted', async (t) => {
  const h = meterHarness()
  t.after(() => h.shutdown())
  const policy = PermissionPolicy.fromManifest({ fs: ['/data/**'] }, { plugin: 'p', platform: 'posix' })
  const c = new PermissionChecker(policy, { meter: h.meter })
  const proxyProto = Object.create(new Proxy({}, { getPrototypeOf() { throw new Error('trap') } }))
  const hostile = {
    inherited: Object.create({ resolveSymlinks: true }),
    inheritedFalse: Object.create({ resolveSymlinks: false }),
    deepInherited: Object.create(Object.create({ resolveSymlinks: true })),
    getter: Object.defineProperty({}, 'resolveSymlinks', { get: () => true, enumerable: true }),
    setterOnly: Object.defineProperty({}, 'resolveSymlinks', { set() {}, enumerable: true }),
    proxy: new Proxy({ resolveSymlinks: true }, {}),
    revoked: (() => { const r = Proxy.revocable({ resolveSymlinks: true }, {}); r.revoke(); return r.proxy })(),
    proxyProto,
    typo: { resolveSymLinks: true },
    extra: { resolveSymlinks: true, follow: false },
    array: [true],
    string: 'resolveSymlinks',
    nonBoolean: { resolveSymlinks: 1 },
  }
  for (const [name, o] of Object.entries(hostile)) {
    for (const [api, fn] of [
      ['checker.checkFs', () => c.checkFs('/data/x', 'read', o)],
      ['checker.assertFs', () => c.assertFs('/data/x', 'read', o)],
      ['checker.authorizeFs', () => c.authorizeFs('/data/x', 'write', o)],
      ['policy.checkFs', () => policy.checkFs('/etc/x', 'read', o)],
      ['policy.authorizeFs', () => policy.authorizeFs('/data/x', 'read', o)],
    ]) {
      assert.throws(fn, TypeError, `${api} with ${name}`)
    }
  }
  // Own data properties (an undefined value, a null prototype, frozen) are fine.
  assert.equal(c.checkFs('/data/x', 'read', { resolveSymlinks: undefined }).allowed, true)
  assert.equal(c.checkFs('/data/x', 'read', { resolveSymlinks: false }).allowed, true)
  assert.equal(c.checkFs('/data/x', 'read', Object.freeze(Object.assign(Object.create(null), { resolveSymlinks: false }))).allowed, true)
  assert.equal(c.checkFs('/data/x', 'read', {}).allowed, true)
  // A symbol key names no option (none is read by a symbol): it is left alone.
  assert.equal(c.checkFs('/data/x', 'read', { resolveSymlinks: false, [Symbol('resolveSymlinks')]: true }).allowed, true)
  assert.equal((await h.points()).filter((p) => p.name === 'plugin.permission_denied_total').length, 0, 'a TypeError is not a denial')

  // fromManifest: `platform` decides how every path is matched.
  for (const opts of [
    Object.create({ plugin: 'p', platform: 'win32' }, { plugin: { value: 'p', enumerable: true } }),
    Object.defineProperty({ plugin: 'p' }, 'platform', { get: () => 'posix', enumerable: true }),
    new Proxy({ plugin: 'p', platform: 'posix' }, {}),
  ]) {
    assert.throws(() => PermissionPolicy.fromManifest({ fs: ['/a/**'] }, opts), TypeError)
    assert.throws(() => createChecker({ fs: ['/a/**'] }, opts), TypeError)
  }
  assert.equal(PermissionPolicy.fromManifest({}, { plugin: 'p', platform: undefined }).platform, process.platform === 'win32' ? 'win32' : 'posix')
})
