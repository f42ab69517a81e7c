'use strict'
// The conformance harness under each test runner it supports: node:test,
// mocha, Jest and Vitest (real runners, dev dependencies), each in a child
// process against the real checker. One run registers three suites:
//   - the package's checker with a declared skip: every other case passes;
//   - an adapter without checkFetchAddress: those cases are skipped when
//     registering (the harness sees the synchronous adapter's methods), the
//     same count under every runner;
//   - an adapter that records no metric: the case fails, and the report names
//     the category, manifest, input, expected, actual and a hint.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { conformanceCases } = require('../testing.js')

const root = path.join(__dirname, '..')
const runners = path.join(__dirname, 'runners')
const bin = (p) => path.join(root, 'node_modules', p)

const cases = conformanceCases()
const declared = cases.filter((c) => c.name.startsWith('budget - ')).length
// The no-address suite: every case naming an address; the adapter has no
// checkFetchAddress, so the address checks among them are skipped when
// registering and the rest run (a run in which nothing runs fails).
const noAddress = cases.filter((c) => c.name.includes('address'))
const address = noAddress.filter((c) => c.op === 'fetchAddress').length
const SUITES = [
  { label: 'package', adapter: 'package', skip: { 'budget - ': 'enforced elsewhere' } },
  { label: 'no-address', adapter: 'no-address', filter: 'address' },
  { label: 'silent', adapter: 'silent-metrics', filter: 'fs - write to a read grant' },
]
const TOTAL = cases.length + noAddress.length + 1
const PASSED = cases.length - declared + noAddress.length - address

function run(args, t, suites = SUITES) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asp-runner-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const out = path.join(dir, 'report.json')
  const env = { ...process.env, ASP_SUITES: JSON.stringify(suites), FORCE_COLOR: '0', NO_COLOR: '1', CI: 'true' }
  delete env.NODE_TEST_CONTEXT
  const r = spawnSync(process.execPath, args(out), { cwd: runners, env, encoding: 'utf8', timeout: 300_000 })
  return { ...r, report: fs.existsSync(out) ? JSON.parse(fs.readFileSync(out, 'utf8')) : null }
}

function assertReport(message) {
  assert.match(message, /conformance case failed: fs - write to a read grant/)
  assert.match(message, /category: fs/)
  assert.match(message, /manifest: \{"fs":/)
  assert.match(message, /input: +checkFs\("\/data\/plugin\/config\.json", "write"\)/)
  assert.match(message, /expected: \{"allowed":false,"reason":"mode_not_granted"\}/)
  assert.match(message, /actual: +\{"allowed":false,"capability":"fs\.write","reason":"mode_not_granted"\}/)
  assert.match(message, /hint: .*did the adapter pass context\.meter/)
}

/** Jest-style JSON (Jest and Vitest): the failure messages. */
const jestFailures = (report) => report.testResults.flatMap((f) => f.assertionResults.filter((a) => a.status === 'failed').map((a) => a.failureMessages.join('\n')))

test('node:test (no globals): counts, run-time skips and the failure report', (t) => {
  const r = run(() => ['--test', '--test-reporter=tap', 'node-suite.cjs'], t)
  const count = (k) => Number(new RegExp(`^# ${k} (\\d+)$`, 'm').exec(r.stdout)[1])
  assert.equal(count('tests'), TOTAL, r.stdout.slice(-2000))
  assert.equal(count('pass'), PASSED)
  assert.equal(count('skipped'), declared + address)
  assert.equal(count('fail'), 1)
  assert.match(r.stdout, /# SKIP declared unsupported: enforced elsewhere/)
  assert.match(r.stdout, /# SKIP the adapter has no checkFetchAddress/)
  assertReport(r.stdout)
  assert.equal(r.status, 1)
})

test('mocha (global describe/it): counts, this.skip() and the failure report', (t) => {
  const r = run((out) => [bin('mocha/bin/mocha.js'), '--reporter', 'json', '--reporter-option', `output=${out}`, 'mocha-suite.cjs'], t)
  assert.ok(r.report, r.stderr)
  const s = r.report.stats
  assert.equal(s.tests, TOTAL)
  assert.equal(s.passes, PASSED, JSON.stringify(r.report.failures.slice(0, 3), null, 1))
  assert.equal(s.pending, declared + address)
  assert.equal(s.failures, 1)
  assert.match(r.stdout, new RegExp(`package: ${declared} cases skipped, declared unsupported: enforced elsewhere`))
  assertReport(r.report.failures[0].err.message)
})

const jestArgs = (out) => [bin('jest/bin/jest.js'), '--ci', '--runInBand', '--json', `--outputFile=${out}`, '--config', JSON.stringify({ rootDir: runners, testRegex: 'jest-suite\\.cjs$', testEnvironment: 'node' })]

test('Jest (global describe/it): counts, skips as skips, and the failure report', (t) => {
  const r = run(jestArgs, t)
  assert.ok(r.report, r.stderr.slice(-3000))
  const rep = r.report
  assert.equal(rep.numTotalTests, TOTAL)
  // The same counts as every other runner: a case the adapter cannot run is a skip, never a pass.
  assert.equal(rep.numPassedTests, PASSED, r.stderr.slice(-3000))
  assert.equal(rep.numPendingTests, declared + address)
  assert.equal(rep.numFailedTests, 1)
  assert.match(r.stdout + r.stderr, new RegExp(`no-address: ${address} cases skipped, the adapter has no checkFetchAddress`))
  const failures = jestFailures(rep)
  assert.equal(failures.length, 1)
  assertReport(failures[0])
})

test('Jest, a broken adapter: output bounded (full reports for the first 10, one line after); an async adapter\'s unsupported case fails saying how to skip it', (t) => {
  const r = run(jestArgs, t, [
    { label: 'broken', adapter: 'broken' },
    { label: 'async', adapter: 'no-address-async', filter: 'fetch address - ' },
  ])
  assert.ok(r.report, r.stderr.slice(-3000))
  const failures = jestFailures(r.report)
  // Every case that calls a check fails (manifest and budget cases never call one).
  const checking = cases.filter((c) => c.op !== 'manifest' && c.op !== 'budget').length
  const asyncAddress = cases.filter((c) => c.name.includes('fetch address - ')).length
  assert.equal(failures.length, checking + asyncAddress)
  const full = failures.filter((f) => f.includes('  category: '))
  assert.equal(full.length, 10)
  for (const f of full) assert.ok(f.split('\n').length <= 30, `a full report of ${f.split('\n').length} lines`)
  for (const f of failures.filter((x) => x.includes('reported in full above'))) assert.ok(f.split('\n').length <= 4, f)
  const cannot = failures.filter((f) => f.includes('cannot run: the adapter has no checkFetchAddress, and this runner (Jest) has no run-time skip'))
  assert.equal(cannot.length, asyncAddress)
  const lines = (r.stdout + r.stderr).split('\n').length
  const perCase = lines / failures.length
  console.log(`broken adapter under Jest: ${failures.length} failing cases, ${lines} lines of output (${perCase.toFixed(1)} per failing case)`)
  assert.ok(perCase < 12, `${lines} lines for ${failures.length} failing cases`)
})

test('Vitest (describe/it passed explicitly): counts, context.skip() and the failure report', (t) => {
  const r = run((out) => [bin('vitest/vitest.mjs'), 'run', '--root', runners, '--no-cache', '--reporter=json', `--outputFile=${out}`], t)
  assert.ok(r.report, r.stdout.slice(-3000) + r.stderr.slice(-3000))
  const rep = r.report
  assert.equal(rep.numTotalTests, TOTAL)
  assert.equal(rep.numPassedTests, PASSED, r.stderr.slice(-3000))
  assert.equal(rep.numPendingTests, declared + address)
  assert.equal(rep.numFailedTests, 1)
  const failures = jestFailures(rep)
  assert.equal(failures.length, 1)
  assertReport(failures[0])
})

test('without the optional peer @opentelemetry/sdk-metrics, ./testing says what to install in one line', () => {
  const script = "require('../../testing.js').runPermissionsConformance('x', () => ({}))"
  const r = spawnSync(process.execPath, ['-r', './without-sdk.cjs', '-e', script], { cwd: runners, encoding: 'utf8' })
  assert.notEqual(r.status, 0)
  const lines = r.stderr.split('\n').filter((l) => l.includes('sdk-metrics'))
  assert.deepEqual(lines.map((l) => l.replace(/^\[|\]$/g, '')), ['Error: @suaveplan/api-sandbox-permissions/testing needs the optional peer dependency @opentelemetry/sdk-metrics: npm install --save-dev @opentelemetry/sdk-metrics'], r.stderr)
  assert.doesNotMatch(r.stderr, /^\s+at |Require stack|code:/m, 'no stack trace, no resolver dump')
  // The case table itself needs no SDK.
  const ok = spawnSync(process.execPath, ['-r', './without-sdk.cjs', '-e', "console.log(require('../../testing.js').conformanceCases().length)"], { cwd: runners, encoding: 'utf8' })
  assert.equal(ok.status, 0, ok.stderr)
  assert.equal(Number(ok.stdout), cases.length)
})
