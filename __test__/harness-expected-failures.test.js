'use strict'
// `runPermissionsConformance(label, makeChecker, { expectedFailures })` under
// the real node:test runner (a child `node --test` per run, on
// __test__/runners/node-suite.cjs): a listed case that fails is an expected
// failure and the run passes; a listed case that passes fails the run
// (unexpected pass, so the list only shrinks); a listed name that is no case
// fails the run. The broken adapter is the one that records no metric, which
// fails 'fs - write to a read grant' (the run without a list shows it does).
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { runPermissionsConformance, packageChecker } = require('../testing.js')

const CASE = 'fs - write to a read grant'

/** One `node --test` run of one suite over CASE: `{ status, stdout, count(k) }`. */
function run(adapter, expectedFailures) {
  const env = { ...process.env, ASP_SUITES: JSON.stringify([{ label: 'expected', adapter, filter: CASE, expectedFailures }]), NO_COLOR: '1' }
  delete env.NODE_TEST_CONTEXT
  const r = spawnSync(process.execPath, ['--test', '--test-reporter=tap', 'node-suite.cjs'], { cwd: path.join(__dirname, 'runners'), env, encoding: 'utf8', timeout: 120_000 })
  const count = (k) => Number((new RegExp(`^# ${k} (\\d+)$`, 'm').exec(r.stdout) || [])[1])
  return { status: r.status, stdout: `${r.stdout}\n${r.stderr}`, count }
}

test('without a list, the broken adapter fails the case (the baseline the others rely on)', () => {
  const r = run('silent-metrics', undefined)
  assert.equal(r.status, 1, r.stdout)
  assert.equal(r.count('fail'), 1, r.stdout)
  assert.match(r.stdout, /conformance case failed: fs - write to a read grant/)
})

test('a listed case that fails is an expected failure: reported, and the run passes', () => {
  const r = run('silent-metrics', [CASE])
  assert.equal(r.status, 0, r.stdout)
  assert.equal(r.count('fail'), 0, r.stdout)
  assert.equal(r.count('todo'), 1, r.stdout)
  assert.match(r.stdout, /# TODO expected failure \(options\.expectedFailures\): .*metric/)
})

test('a listed case that passes fails the run as an unexpected pass', () => {
  const r = run('package', [CASE])
  assert.equal(r.status, 1, r.stdout)
  assert.equal(r.count('fail'), 1, r.stdout)
  assert.match(r.stdout, /unexpected pass: fs - write to a read grant is listed in options\.expectedFailures and passed; remove it from the list/)
})

test('a listed name that is no case fails the run, even when every case passes', () => {
  const r = run('package', ['fs - no such case', CASE.toUpperCase()])
  assert.equal(r.status, 1, r.stdout)
  assert.equal(r.count('fail'), 1, r.stdout)
  assert.equal(r.count('pass'), 1, r.stdout)
  assert.match(r.stdout, /options\.expectedFailures lists names that are no conformance case: "fs - no such case", "FS - WRITE TO A READ GRANT"/)
})

test('expectedFailures must be an array of strings', () => {
  const runner = { describe: () => {}, it: () => {} }
  for (const bad of ['fs - x', [1], { [CASE]: true }, null]) {
    assert.throws(() => runPermissionsConformance('bad', packageChecker(), { ...runner, expectedFailures: bad }), { name: 'TypeError', message: /expectedFailures must be an array of case names/ }, JSON.stringify(bad))
  }
})
