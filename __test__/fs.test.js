'use strict'
// checkFs on a real temp directory: the lexical check, and resolveSymlinks
// catching a symlink that points out of the grant.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { createChecker, PermissionDeniedError } = require('..')

test('resolveSymlinks denies a symlink out of the grant; the lexical check cannot see it', { skip: process.platform === 'win32' && 'posix symlinks' }, (t) => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'asp-')))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  fs.mkdirSync(path.join(root, 'grant/sub'), { recursive: true })
  fs.mkdirSync(path.join(root, 'outside'))
  fs.writeFileSync(path.join(root, 'outside/secret.txt'), 'secret')
  fs.writeFileSync(path.join(root, 'grant/sub/ok.txt'), 'ok')
  fs.symlinkSync(path.join(root, 'outside'), path.join(root, 'grant/escape'))
  fs.symlinkSync(path.join(root, 'outside/created-through-link'), path.join(root, 'grant/dangling'))
  fs.symlinkSync('sub', path.join(root, 'grant/inner'))
  const c = createChecker({ fs: [{ path: `${root}/grant/**`, mode: 'readwrite' }] }, { plugin: 'p', platform: 'posix' })
  const escape = `${root}/grant/escape/secret.txt`
  assert.equal(c.checkFs(escape, 'read').allowed, true, 'lexically inside the grant')
  assert.deepEqual(c.checkFs(escape, 'read', { resolveSymlinks: true }), { allowed: false, capability: 'fs.read', reason: 'symlink_escape' })
  assert.equal(fs.readFileSync(escape, 'utf8'), 'secret', 'the link really leads out')
  assert.equal(c.checkFs(`${root}/grant/dangling`, 'write', { resolveSymlinks: true }).reason, 'symlink_escape')
  assert.equal(c.checkFs(`${root}/grant/inner/ok.txt`, 'read', { resolveSymlinks: true }).allowed, true)
  assert.equal(c.checkFs(`${root}/grant/sub/new.txt`, 'write', { resolveSymlinks: true }).allowed, true)
  assert.throws(() => c.assertFs(escape, 'read', { resolveSymlinks: true }), PermissionDeniedError)
})

test('traversal and prefix confusion on real paths', (t) => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'asp-')))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  fs.mkdirSync(path.join(root, 'plugin'))
  fs.mkdirSync(path.join(root, 'plugin-evil'))
  const c = createChecker({ fs: [`${root}/plugin/**`] }, { plugin: 'p', platform: 'posix' })
  assert.equal(c.checkFs(`${root}/plugin/a.txt`, 'read').allowed, true)
  assert.equal(c.checkFs(`${root}/plugin-evil/a.txt`, 'read').reason, 'not_allowlisted')
  assert.equal(c.checkFs(`${root}/plugin/../plugin-evil/a.txt`, 'read').reason, 'path_traversal')
  assert.equal(c.checkFs(`${root}/plugin/./../../etc/passwd`, 'read').reason, 'path_traversal')
})
