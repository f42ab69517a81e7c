'use strict'
// lint reads fs grants through the glob parser's own output (issue 15): an
// escaped star is a name, a brace alternative is a variant, a class is a
// wildcard. Before, lint re-derived structure from the text and warned that
// posix `/\*` (the one file named `*`) "grants names at the filesystem root".
const test = require('node:test')
const assert = require('node:assert/strict')
const { PermissionPolicy } = require('../index.js')

const budgets = { wallClockMs: 1000, memoryMb: 64 }
function warnings(fs, platform = 'posix', deny) {
  const m = { fs, budgets, ...(deny ? { deny: { fs: deny } } : {}) }
  return PermissionPolicy.fromManifest(m, { plugin: 'lint-glob', platform }).lint().map((w) => `${w.code}@${w.pointer}`)
}

test('an escaped star is a name: no root-wildcard warning for posix /\\*', () => {
  assert.deepEqual(warnings(['/\\*']), [])
  assert.deepEqual(warnings(['/\\*\\*/x']), [])
  assert.deepEqual(warnings(['/*']), ['fs-root-wildcard@/fs/0'])
  assert.deepEqual(warnings(['/a/\\*/**']), [])
  assert.deepEqual(warnings(['/a/*/**']), ['fs-top-level-recursive@/fs/0'])
  assert.deepEqual(warnings([{ path: '/\\*', mode: 'write' }]), [])
  assert.deepEqual(warnings([{ path: '/*', mode: 'write' }]), ['fs-root-wildcard@/fs/0', 'fs-write-near-root@/fs/0/mode'])
})

test('braces are variants, classes and ? are wildcards', () => {
  assert.deepEqual(warnings(['/{srv,opt}/app']), [])
  assert.deepEqual(warnings(['/{srv,opt}/**']), ['fs-top-level-recursive@/fs/0'])
  assert.deepEqual(warnings(['/{srv,*}/app']), ['fs-root-wildcard@/fs/0'])
  assert.deepEqual(warnings(['/[ab]', '/?/x']), ['fs-root-wildcard@/fs/0', 'fs-root-wildcard@/fs/1'])
  assert.deepEqual(warnings(['C:\\Users\\**'], 'win32'), ['fs-top-level-recursive@/fs/0'])
})

test('deny reach compares the literal directories of each variant', () => {
  const w = warnings(['/srv/a/**'], 'posix', ['/srv/\\*', '/{srv,etc}/a/x', '/{etc,opt}/x'])
  assert.deepEqual(w, ['deny-unreachable@/deny/fs/0', 'deny-unreachable@/deny/fs/2'])
})
