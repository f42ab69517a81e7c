'use strict'
// Deny rules (SPEC §10) and path-scoped fetch grants (SPEC §11) through the
// public JS API: manifest validation and toJSON, counting, explain and lint,
// symlinks against real temp dirs, and the DNS-rebinding address check.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { PermissionPolicy, PermissionChecker, DENY_REASONS, DenyReason } = require('../index.js')
const { meterHarness, assertSchema } = require('./helpers.js')

const posix = (m) => PermissionPolicy.fromManifest(m, { plugin: 'deny-test', platform: 'posix' })

test('reasons are appended: the ones before keep their place', () => {
  const before = ['invalid_path', 'path_traversal', 'not_allowlisted', 'mode_not_granted', 'symlink_escape', 'invalid_url', 'scheme_not_allowed', 'port_not_allowed', 'host_not_allowlisted', 'credentials_in_url', 'address_not_allowed', 'secret_not_declared', 'topic_not_declared', 'database_not_declared', 'unknown_capability', 'invalid_payload']
  assert.deepEqual(DENY_REASONS.slice(0, before.length), before)
  assert.deepEqual(DENY_REASONS.slice(before.length, before.length + 2), ['explicitly_denied', 'path_not_allowed'])
  assert.equal(DenyReason.EXPLICITLY_DENIED, 'explicitly_denied')
  assert.equal(DenyReason.PATH_NOT_ALLOWED, 'path_not_allowed')
})

test('toJSON gives the normalised deny rules and canonical path scopes back, and they re-parse to the same policy', () => {
  const p = posix({
    fs: ['/data//**'],
    fetch: ['HTTPS://API.Example.com/v1/caf%c3%a9/*', 'api.example.com/x/**', 'a.example/'],
    deny: { fs: ['/data//secret/**'], fetch: ['Evil.Example.ORG', '10.0.0.0/8', '[FD00::]/8', 'docs.example.com/Admin/**'] },
  })
  const j = p.toJSON()
  assert.deepEqual(j.deny, { fs: ['/data/secret/**'], fetch: ['evil.example.org', '10.0.0.0/8', '[fd00::]/8', 'docs.example.com/Admin/**'] })
  assert.deepEqual(j.fetch, ['https://api.example.com/v1/caf%C3%A9/*', 'api.example.com/x/**', 'a.example/'])
  assert.deepEqual(posix(JSON.parse(JSON.stringify(j))).toJSON(), j)
})

test('explicitly_denied is counted once per denying call, like every denial', async () => {
  const h = meterHarness()
  const checker = new PermissionChecker(posix({ fs: ['/data/**'], fetch: ['*.example.org'], deny: { fs: ['/data/secret/**'], fetch: ['evil.example.org'] } }), { meter: h.meter })
  assert.equal(checker.checkFs('/data/secret/k', 'read').reason, 'explicitly_denied')
  assert.throws(() => checker.assertFs('/data/secret/k', 'write'), (e) => e.code === 'PERMISSION_DENIED' && e.details.reason === 'explicitly_denied' && assertSchema(e) !== undefined)
  assert.throws(() => checker.authorizeFetch('https://evil.example.org/x?secret=1'), (e) => e.details.reason === 'explicitly_denied' && e.details.target === 'https://evil.example.org:443' && assertSchema(e) !== undefined)
  assert.equal(checker.checkCapability('fetch', { url: 'https://evil.example.org/' }).reason, 'explicitly_denied')
  const points = (await h.points()).filter((x) => x.attributes.reason === 'explicitly_denied')
  const by = Object.fromEntries(points.map((x) => [x.attributes.capability, x.value]))
  assert.deepEqual(by, { 'fs.read': 1, 'fs.write': 1, fetch: 2 })
  await h.shutdown()
})

test('path_not_allowed: host, scheme and port match, the path does not; authorizeFetch returns the canonical URL', () => {
  const p = posix({ fetch: ['https://api.example.com/v1/repos/*/issues'] })
  assert.equal(p.checkFetch('https://api.example.com/v1/repos/acme/pulls').reason, 'path_not_allowed')
  assert.equal(p.checkFetch('http://api.example.com/v1/repos/acme/issues').reason, 'scheme_not_allowed')
  assert.equal(p.authorizeFetch('https://API.example.com/v1/repos/a%63me/issues?x=1#f'), 'https://api.example.com/v1/repos/a%63me/issues?x=1#f')
  assert.equal(p.authorizeFetch(new URL('https://api.example.com/v1/./repos/acme/x/../issues')), 'https://api.example.com/v1/repos/acme/issues')
  assert.throws(() => p.authorizeFetch('https://api.example.com/v1/repos/..%2fadmin/issues'), (e) => e.details.reason === 'path_not_allowed')
})

test('explain names the deny rule that decided, and whether each grant path matched', () => {
  const p = posix({ fs: ['/data/**'], fetch: ['api.example.com/public/**', '*.example.org'], deny: { fs: ['/x/**', '/data/**/*.key'], fetch: ['10.0.0.0/8', '*.internal.example.org'] } })
  const f = p.explainFs('/data/a/../b/c.key', 'read')
  assert.equal(f.decision.reason, 'explicitly_denied')
  assert.deepEqual(f.deniedBy, { index: 1, pointer: '/deny/fs/1', path: '/data/**/*.key' })
  assert.equal(p.explainFs('/data/a', 'read').deniedBy, null)
  const u = p.explainFetch('https://a.internal.example.org/')
  assert.deepEqual(u.deniedBy, { index: 1, pointer: '/deny/fetch/1', pattern: '*.internal.example.org' })
  const v = p.explainFetch('http://api.example.com/private')
  assert.equal(v.decision.reason, 'path_not_allowed')
  assert.equal(v.hostMatches[0].pathOk, false)
  assert.equal(p.explainFetch('http://[::ffff:10.1.2.3]/').deniedBy.pattern, '10.0.0.0/8')
})

test('lint warns about deny rules no grant could reach, and only those', () => {
  const p = posix({
    fs: ['/data/**'],
    fetch: ['api.example.com', 'https://static.example.net'],
    deny: { fs: ['/data/secret/**', '/etc/**'], fetch: ['api.example.com/admin/**', 'other.example.com', 'http://static.example.net', 'static.example.net:8443', '10.0.0.0/8'] },
  })
  const unreachable = p.lint().filter((w) => w.code === 'deny-unreachable').map((w) => w.pointer)
  // /etc/** is outside every fs grant; other.example.com is no granted host; http:// and :8443 are not granted for static.
  // 10.0.0.0/8 is reachable: a granted name can resolve to it (checkFetchAddress).
  assert.deepEqual(unreachable, ['/deny/fs/1', '/deny/fetch/1', '/deny/fetch/2', '/deny/fetch/3'])
})

test('deny.fs matches the real path too when symlinks are resolved', (t) => {
  if (process.platform === 'win32') return t.skip('posix symlinks')
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'deny-')))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  fs.mkdirSync(path.join(root, 'pub'))
  fs.mkdirSync(path.join(root, 'secret'))
  fs.writeFileSync(path.join(root, 'secret', 'key'), 'k')
  fs.symlinkSync(path.join(root, 'secret', 'key'), path.join(root, 'pub', 'link'))
  const p = posix({ fs: [{ path: `${root}/**`, mode: 'readwrite' }], deny: { fs: [`${root}/secret/**`] } })
  const link = `${root}/pub/link`
  // Lexically the link is granted and not denied; its real path is denied.
  assert.equal(p.checkFs(link, 'read').allowed, true)
  assert.equal(p.checkFs(link, 'read', { resolveSymlinks: true }).reason, 'explicitly_denied')
  assert.throws(() => p.authorizeFs(link, 'write', { resolveSymlinks: true }), (e) => e.details.reason === 'explicitly_denied')
  // A '..' after the link climbs from its target (open(2) order): still inside the denied directory.
  fs.symlinkSync(path.join(root, 'secret'), path.join(root, 'pub', 'dir'))
  assert.equal(p.checkFs(`${root}/pub/dir/../secret/key`, 'read', { resolveSymlinks: true }).reason, 'explicitly_denied')
  assert.equal(p.authorizeFs(`${root}/pub/x`, 'write', { resolveSymlinks: true }), `${root}/pub/x`)
})

test('CIDR denies apply to the address checkFetchAddress is given, in every embedding form', () => {
  const p = posix({ fetch: ['*.example.org'], deny: { fetch: ['10.0.0.0/8', '[fd00::]/8', '169.254.169.254/32'] } })
  const u = 'https://a.example.org/'
  for (const ip of ['10.1.2.3', '::ffff:10.1.2.3', '[::ffff:a01:203]', '64:ff9b::a01:203', '2002:a01:203::1', 'fd12::1', '169.254.169.254']) {
    assert.equal(p.checkFetchAddress(u, ip).reason, 'explicitly_denied', ip)
  }
  assert.equal(p.checkFetchAddress(u, '93.184.216.34').allowed, true)
  // Names under localhost resolve to loopback: a loopback CIDR deny catches them.
  const q = posix({ fetch: ['localhost:*', '*.localhost:*'], deny: { fetch: ['127.0.0.0/8'] } })
  assert.equal(q.checkFetch('http://localhost:3000/').reason, 'explicitly_denied')
  assert.equal(q.checkFetch('http://a.localhost:3000/').reason, 'explicitly_denied')
})

test('win32 deny folds case like the grants and catches 8.3 aliases', () => {
  const p = PermissionPolicy.fromManifest({ fs: ['C:\\data\\**', 'C:\\data\\PROGRA~1\\**'], deny: { fs: ['C:\\data\\Program Files\\**'] } }, { plugin: 'deny-test', platform: 'win32' })
  assert.equal(p.checkFs('c:/DATA/program files/x', 'read').reason, 'explicitly_denied')
  assert.equal(p.checkFs('C:\\data\\PROGRA~1\\x', 'read').reason, 'explicitly_denied')
  assert.equal(p.checkFs('C:\\data\\other\\x', 'read').allowed, true)
})

test('win32: a deny glob that spells or matches an 8.3 short name is INVALID_MANIFEST (the long name it stands for is unknown)', () => {
  const win = (deny) => () => PermissionPolicy.fromManifest({ fs: ['C:\\data\\**'], deny: { fs: ['C:\\data\\ok\\**', deny] } }, { plugin: 'deny-test', platform: 'win32' })
  for (const d of ['C:\\data\\PROGRA~1\\**', 'C:\\data\\SECRET~1.TXT', 'C:\\data\\X~?', 'C:\\data\\X~[0-9]', 'C:\\data\\{a,B~{1,2}}', 'c:/data/progra~12/x']) {
    assert.throws(win(d), (e) => e.code === 'INVALID_MANIFEST' && e.details.pointer === '/deny/fs/1' && /8\.3 short name/.test(e.details.expected), d)
  }
  // A tilde that cannot make a short name's ~N stays valid, and posix has no short names.
  for (const d of ['C:\\data\\~*.tmp', 'C:\\data\\backup~\\**', 'C:\\data\\~x', 'C:\\data\\a~b.txt']) assert.doesNotThrow(win(d), d)
  const posix = PermissionPolicy.fromManifest({ fs: ['/data/**'], deny: { fs: ['/data/PROGRA~1/**'] } }, { plugin: 'deny-test', platform: 'posix' })
  assert.equal(posix.checkFs('/data/PROGRA~1/x', 'read').reason, 'explicitly_denied')
  assert.equal(posix.checkFs('/data/Program Files/x', 'read').allowed, true)
})

test('hostile inputs stay linear: long hosts against suffix denies, long paths against nested ** scopes', () => {
  const deep = []
  for (let i = 1; i <= 200; i++) deep.push(`api.example.com/${'a/'.repeat(i)}**`)
  const p = posix({ fetch: ['*.example.org', ...deep], deny: { fetch: ['*.example.org', '*.b.example.org', 'api.example.com/x/**'] } })
  const longHost = `http://${'a.'.repeat(32_000)}example.org/`
  const longPath = `https://api.example.com/${'a/'.repeat(30_000)}%2f`
  let worst = 0
  for (const [u, want] of [
    [longHost, 'explicitly_denied'],
    [longPath, 'explicitly_denied'], // a path-scoped deny on the host, and an encoded '/': fail closed
  ]) {
    const t0 = process.hrtime.bigint()
    assert.equal(p.checkFetch(u).reason, want)
    worst = Math.max(worst, Number(process.hrtime.bigint() - t0) / 1e6)
  }
  const q = posix({ fetch: deep })
  const t0 = process.hrtime.bigint()
  assert.equal(q.checkFetch(longPath).reason, 'path_not_allowed')
  assert.equal(q.checkFetch(longPath.slice(0, -3)).allowed, true)
  worst = Math.max(worst, Number(process.hrtime.bigint() - t0) / 1e6)
  assert.ok(worst < 250, `${worst} ms`)
})
