'use strict'
// deny.fs is never narrower than it reads (SPEC §10; second red team F4, F5),
// through the public JS API: a trailing `/**` denies the directory itself
// (lexically and on the real path of a real temp dir), and posix denies match
// case- and normalisation-insensitively; explain names the rule, lint agrees.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { PermissionPolicy } = require('../index.js')

const posix = (m) => PermissionPolicy.fromManifest(m, { plugin: 'deny-fold-test', platform: 'posix' })

test("the README's deny leaves no way to rename, remove or swap the denied directory", () => {
  const p = posix({ fs: [{ path: '/srv/app/**', mode: 'readwrite' }], deny: { fs: ['/srv/app/secrets/**', '/srv/app/tmp*/**'] } })
  for (const mode of ['read', 'write']) {
    for (const dir of ['/srv/app/secrets', '/srv/app/secrets/', '/srv/app/x/../secrets', '/srv/app/tmp', '/srv/app/tmp-1']) {
      assert.equal(p.checkFs(dir, mode).reason, 'explicitly_denied', `${dir} ${mode}`)
    }
  }
  assert.equal(p.explainFs('/srv/app/secrets', 'write').deniedBy.pointer, '/deny/fs/0')
  assert.equal(p.explainFs('/srv/app/tmp-1', 'write').deniedBy.pointer, '/deny/fs/1')
  assert.equal(p.checkFs('/srv/app/moved', 'write').allowed, true)
  assert.equal(p.checkFs('/srv/app/secretsx', 'write').allowed, true)
})

test('a symlink to the denied directory is denied on its real path', (t) => {
  if (process.platform === 'win32') return t.skip('posix symlinks')
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'deny-fold-')))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  fs.mkdirSync(path.join(root, 'pub'))
  fs.mkdirSync(path.join(root, 'secret'))
  fs.symlinkSync(path.join(root, 'secret'), path.join(root, 'pub', 's'))
  fs.symlinkSync('../secret', path.join(root, 'pub', 'rel'))
  const p = posix({ fs: [{ path: `${root}/**`, mode: 'readwrite' }], deny: { fs: [`${root}/secret/**`] } })
  for (const link of [`${root}/pub/s`, `${root}/pub/rel`]) {
    // The kernel's answer, the oracle: the link's real path is the denied directory.
    assert.equal(fs.realpathSync(link), `${root}/secret`)
    assert.equal(p.checkFs(link, 'write').allowed, true, 'lexically the link itself is not denied')
    for (const mode of ['read', 'write']) assert.equal(p.checkFs(link, mode, { resolveSymlinks: true }).reason, 'explicitly_denied', `${link} ${mode}`)
  }
})

test('posix denies match every case and normalisation spelling; grants stay exact', () => {
  const p = posix({ fs: ['/Users/me/app/**'], deny: { fs: ['/Users/me/app/secrets/**', '/Users/me/app/café/**', '/Users/me/app/[a-c]fg/x'] } })
  const denied = [
    '/Users/me/app/SECRETS/db.key',
    '/Users/me/app/Secrets/db.key',
    '/Users/me/app/\u017Fecrets/db.key',
    '/Users/me/app/cafe\u0301/x',
    '/Users/me/app/CAFE\u0301/x',
    '/Users/me/app/CAF\u00C9/x',
    '/Users/me/app/BFG/x',
  ]
  for (const x of denied) {
    // Independent of the checker: JS's own Unicode tables say both spellings fold alike.
    const fold = (s) => s.normalize('NFD').toUpperCase().toLowerCase()
    assert.ok(['/users/me/app/secrets', '/users/me/app/cafe\u0301', '/users/me/app/bfg'].some((d) => fold(x).startsWith(d)), x)
    assert.equal(p.checkFs(x, 'read').reason, 'explicitly_denied', x)
  }
  assert.equal(p.explainFs('/Users/me/app/CAFE\u0301/x', 'read').deniedBy.pointer, '/deny/fs/1')
  assert.equal(p.checkFs('/Users/me/app/secret/x', 'read').allowed, true)
  assert.equal(p.checkFs('/Users/me/app/dfg/x', 'read').allowed, true)
  // A grant is exact: a differently cased path is outside it.
  assert.equal(p.checkFs('/users/me/app/public', 'read').reason, 'not_allowlisted')
})

test('lint compares deny and grant directories under the deny fold', () => {
  const p = posix({ fs: ['/Users/me/app/**'], deny: { fs: ['/USERS/me/App/secrets/**', '/etc/**'] } })
  const unreachable = p.lint().filter((w) => w.code === 'deny-unreachable').map((w) => w.pointer)
  assert.deepEqual(unreachable, ['/deny/fs/1'])
  assert.equal(p.checkFs('/Users/me/app/secrets/x', 'read').reason, 'explicitly_denied')
})

test("a length-changing fold (ß → ss) still meets a deny's ? and classes: /Bß under /[a-c]? (found by the glob oracle, seed 900981184)", () => {
  const { createChecker } = require('../index.js')
  const c = createChecker({ fs: ['/**'], deny: { fs: ['/[a-c]?', '/e/stra?e'] } }, { plugin: 'fold', platform: 'posix' })
  for (const p of ['/bß', '/Bß', '/Bẞ', '/bẞ', '/e/Straße', '/e/STRAẞE']) assert.equal(c.checkFs(p, 'read').reason, 'explicitly_denied', p)
  assert.deepEqual(c.checkFs('/zz', 'read'), { allowed: true })
})

test("a deny whose literal text folds longer (ß, ﬁ, İ) still meets a ? or class beside it, and a ? or class meets a decomposed character (the fifth red team's cases)", () => {
  const { createChecker } = require('../index.js')
  const deny = ['/srv/straße/[a-c]?', '/srv/[a-c]?/straße', '/srv/ß/[ẞ]', '/srv/ßa?', '/srv/ﬁ/[a-c]?', '/d/a?', '/d/[!é][é-ж]']
  const c = createChecker({ fs: [{ path: '/**', mode: 'readwrite' }], deny: { fs: deny } }, { plugin: 'fold', platform: 'posix' })
  const denied = [
    '/srv/straße/Bß', '/srv/straße/bß', '/srv/STRASSE/Bß', '/srv/Bß/straße', '/srv/ẞ/ẞ', '/srv/ß/ß', '/srv/ẞAß', '/srv/ßaß', '/srv/ﬁ/Bß',
    // `/d/a?` matches the `a\u0301` a decomposing volume stores for `á`; `[!é][é-ж]` matches `a\u0311` (`ȃ`).
    '/d/á', '/d/a\u0301', '/d/Á', '/d/ȃ', '/d/a\u0311',
  ]
  for (const p of denied) {
    assert.equal(c.checkFs(p, 'write').reason, 'explicitly_denied', JSON.stringify(p))
    assert.notEqual(c.policy.explainFs(p, 'read').deniedBy, null, `explain names the deny of ${JSON.stringify(p)}`)
  }
  for (const p of ['/srv/straße/dß', '/srv/zz', '/d/bb', '/d/xyz']) assert.deepEqual(c.checkFs(p, 'read'), { allowed: true }, JSON.stringify(p))
})
