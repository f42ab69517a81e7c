'use strict'
// The optional options of the package's declarations (index.d.ts,
// testing.d.ts: every entry point's .d.ts in package.json `exports`) given
// an explicit `undefined`, each as one expression that is both TypeScript
// and JavaScript: __test__/types.test.js compiles every expression under
// `exactOptionalPropertyTypes` (TypeScript 5.9 and 7) and evaluates the
// same text against the runtime, and the two must agree (the runtime
// accepts `undefined` exactly where the type says `?: T | undefined`). A new
// entry point's options go here too (its names in PRELUDE_TS and scope()).
// `node agreement.js <index>...` evaluates the entries that must run in a
// child process (lockdown, the launcher command, the harness's own runner)
// and prints one `agreement <index> <outcome>` line each.

/**
 * `options`: the optional properties the expression passes `undefined` to,
 * named as types.test.js names them (`Interface.property`,
 * `function.parameter.property`). `isolate`: evaluated in a child process.
 */
const ENTRIES = [
  // The manifest (read by the core) and the policy options.
  { options: ['FsGrant.mode'], expr: "PermissionPolicy.fromManifest({ fs: [{ path: '/a/**', mode: undefined }] }, { plugin: 'p' })" },
  { options: ['Budgets.cpuPercent'], expr: "PermissionPolicy.fromManifest({ budgets: { cpuPercent: undefined } }, { plugin: 'p' })" },
  { options: ['Budgets.memoryMb'], expr: "PermissionPolicy.fromManifest({ budgets: { memoryMb: undefined } }, { plugin: 'p' })" },
  { options: ['Budgets.wallClockMs'], expr: "PermissionPolicy.fromManifest({ budgets: { wallClockMs: undefined } }, { plugin: 'p' })" },
  { options: ['PermissionsManifest.fs'], expr: "PermissionPolicy.fromManifest({ fs: undefined }, { plugin: 'p' })" },
  { options: ['PermissionsManifest.fetch'], expr: "PermissionPolicy.fromManifest({ fetch: undefined }, { plugin: 'p' })" },
  { options: ['PermissionsManifest.budgets'], expr: "PermissionPolicy.fromManifest({ budgets: undefined }, { plugin: 'p' })" },
  { options: ['PermissionsManifest.secrets'], expr: "PermissionPolicy.fromManifest({ secrets: undefined }, { plugin: 'p' })" },
  { options: ['PermissionsManifest.events'], expr: "PermissionPolicy.fromManifest({ events: undefined }, { plugin: 'p' })" },
  { options: ['PermissionsManifest.events.publishes'], expr: "PermissionPolicy.fromManifest({ events: { publishes: undefined } }, { plugin: 'p' })" },
  { options: ['PermissionsManifest.events.subscribes'], expr: "PermissionPolicy.fromManifest({ events: { subscribes: undefined } }, { plugin: 'p' })" },
  { options: ['PermissionsManifest.db'], expr: "PermissionPolicy.fromManifest({ db: undefined }, { plugin: 'p' })" },
  { options: ['PermissionsManifest.deny'], expr: "PermissionPolicy.fromManifest({ deny: undefined }, { plugin: 'p' })" },
  { options: ['PermissionsManifest.deny.fs'], expr: "PermissionPolicy.fromManifest({ deny: { fs: undefined } }, { plugin: 'p' })" },
  { options: ['PermissionsManifest.deny.fetch'], expr: "PermissionPolicy.fromManifest({ deny: { fetch: undefined } }, { plugin: 'p' })" },
  { options: ['PolicyOptions.platform'], expr: "PermissionPolicy.fromManifest({}, { plugin: 'p', platform: undefined })" },
  { options: ['learnManifest.options.platform'], expr: "learnManifest([{ capability: 'fs.read', payload: { path: '/a' } }], { platform: undefined })" },
  { options: ['learnManifest.options.secretValues'], expr: "learnManifest([{ capability: 'fs.read', payload: { path: '/a' } }], { secretValues: undefined })" },
  { options: ['PermissionDeniedDetails.target'], expr: "new PermissionDeniedError({ plugin: 'p', capability: 'fetch', reason: 'invalid_url', target: undefined })" },
  // The checker.
  { options: ['CheckerOptions.meter'], expr: 'new PermissionChecker(policy, { meter: undefined })' },
  { options: ['CheckerOptions.shadow'], expr: 'new PermissionChecker(policy, { shadow: undefined })' },
  { options: ['CheckerOptions.onShadow'], expr: 'new PermissionChecker(policy, { onShadow: undefined })' },
  { options: ['PolicyOptions.platform', 'CheckerOptions.meter', 'CheckerOptions.shadow', 'CheckerOptions.onShadow'], expr: "createChecker({}, { plugin: 'p', platform: undefined, meter: undefined, shadow: undefined, onShadow: undefined })" },
  { options: ['FsCheckOptions.resolveSymlinks'], expr: "checker.checkFs('/a', 'read', { resolveSymlinks: undefined })" },
  { options: ['FsCheckOptions.resolveSymlinks'], expr: "policy.authorizeFs('/a', 'read', { resolveSymlinks: undefined })" },
  // The budget tracker.
  { options: ['BudgetHooks.now'], expr: 'new BudgetTracker(policy, { hooks: { now: undefined } })' },
  { options: ['BudgetHooks.cpuTimeMs'], expr: 'new BudgetTracker(policy, { hooks: { cpuTimeMs: undefined } })' },
  { options: ['BudgetHooks.rssMb'], expr: 'new BudgetTracker(policy, { hooks: { rssMb: undefined } })' },
  { options: ['BudgetTrackerOptions.hooks'], expr: 'new BudgetTracker(policy, { hooks: undefined })' },
  { options: ['BudgetTrackerOptions.capability'], expr: 'new BudgetTracker(policy, { capability: undefined })' },
  { options: ['BudgetTrackerOptions.meter'], expr: 'new BudgetTracker(policy, { meter: undefined })' },
  { options: ['BudgetTrackerOptions.shadow'], expr: 'new BudgetTracker(policy, { shadow: undefined })' },
  { options: ['BudgetTrackerOptions.cpuGraceMs'], expr: 'new BudgetTracker(policy, { cpuGraceMs: undefined })' },
  { options: ['BudgetTrackerOptions.unmeasured'], expr: 'new BudgetTracker(policy, { unmeasured: undefined })' },
  { options: ['BudgetSample.now'], expr: 'tracker.record({ now: undefined })' },
  { options: ['BudgetSample.cpuTimeMs'], expr: 'tracker.record({ cpuTimeMs: undefined })' },
  { options: ['BudgetSample.rssMb'], expr: 'tracker.record({ rssMb: undefined })' },
  // The process tier and the Deno broker.
  { options: ['LockdownOptions.onDenied'], expr: 'lockdown({ onDenied: undefined })', isolate: true },
  { options: ['LockdownOptions.landlock'], expr: 'lockdown({ landlock: undefined })', isolate: true },
  { options: ['LockdownOptions.fs'], expr: 'lockdown({ fs: undefined })', isolate: true },
  { options: ['LandlockCommandOptions.strict'], expr: 'landlockCommand({}, { strict: undefined })', isolate: true },
  { options: ['LandlockCommandOptions.read'], expr: 'landlockCommand({}, { read: undefined })', isolate: true },
  { options: ['LandlockCommandOptions.exec'], expr: 'landlockCommand({}, { exec: undefined })', isolate: true },
  { options: ['DenoBrokerOptions.meter'], expr: 'serveDenoBroker(policy, { meter: undefined })' },
  { options: ['DenoBrokerOptions.shadow'], expr: 'serveDenoBroker(policy, { shadow: undefined })' },
  { options: ['DenoBrokerOptions.onDecision'], expr: 'serveDenoBroker(policy, { onDecision: undefined })' },
  { options: ['DenoBrokerOptions.maxLineBytes'], expr: 'serveDenoBroker(policy, { maxLineBytes: undefined })' },
  { options: ['DenoBrokerOptions.maxQueueBytes'], expr: 'serveDenoBroker(policy, { maxQueueBytes: undefined })' },
  { options: ['DenoBrokerOptions.tmpDir'], expr: 'serveDenoBroker(policy, { tmpDir: undefined })' },
  // The WASI gate (./wasi).
  { options: ['WasiPathCallArgs.path_open.dirflags', 'WasiPathCallArgs.path_open.oflags', 'WasiPathCallArgs.path_open.rightsBase', 'WasiPathCallArgs.path_open.fdflags'], expr: "gate.pathCall('path_open', { path: '/a', dirflags: undefined, oflags: undefined, rightsBase: undefined, fdflags: undefined })" },
  { options: ['WasiPathCallArgs.path_filestat_get.flags'], expr: "gate.pathCall('path_filestat_get', { path: '/a', flags: undefined })" },
  { options: ['WasiPathCallArgs.path_filestat_set_times.flags'], expr: "gate.pathCall('path_filestat_set_times', { path: '/a', flags: undefined })" },
  { options: ['WasiPathCallArgs.path_link.oldFlags'], expr: "gate.pathCall('path_link', { oldPath: '/a', oldFlags: undefined, newPath: '/b' })" },
  { options: ['WasiCallOptions.timeLeftMs'], expr: "gate.pathCall('path_readlink', { path: '/a' }, { timeLeftMs: undefined })" },
  { options: ['WasiFdOptions.capable', 'WasiFdOptions.reread'], expr: "gate.fdCall('/a', 'read', { capable: undefined, reread: undefined })" },
  { options: ['WasiCheckOptions.follow'], expr: "gate.checkPath('/a', 'read', { follow: undefined })" },
  // The checked open (./fs): a denied path, so the options are read and nothing opens.
  { options: ['OpenCheckedOptions.mode', 'OpenCheckedOptions.create', 'OpenCheckedOptions.truncate', 'OpenCheckedOptions.append', 'OpenCheckedOptions.exclusive', 'OpenCheckedOptions.directory', 'OpenCheckedOptions.permissions'], expr: "openChecked(checker, '/b/denied', { mode: undefined, create: undefined, truncate: undefined, append: undefined, exclusive: undefined, directory: undefined, permissions: undefined })" },
  { options: ['CheckedFile.readFile.options.encoding'], expr: "openChecked(fileChecker, tmpFile).then(async (f) => { try { return await f.readFile({ encoding: undefined }) } finally { await f.close() } })" },
  { options: ['CheckedFile.writeFile.options.encoding'], expr: "openChecked(fileChecker, tmpFile, { mode: 'write' }).then(async (f) => { try { return await f.writeFile('x', { encoding: undefined }) } finally { await f.close() } })" },
  // The conformance harness: adapters and options.
  { options: ['ConformanceChecks.checkFetchAddress'], expr: "runCase(deniedCase('fetchAddress'), (m, c) => ({ ...adapter(m, c), checkFetchAddress: undefined }))" },
  { options: ['ConformanceChecks.assertFs'], expr: "runCase(deniedCase('fs'), (m, c) => ({ ...adapter(m, c), assertFs: undefined }))" },
  { options: ['ConformanceChecks.assertFetch'], expr: "runCase(deniedCase('fetch'), (m, c) => ({ ...adapter(m, c), assertFetch: undefined }))" },
  { options: ['ConformanceChecks.assertFetchAddress'], expr: "runCase(deniedCase('fetchAddress'), (m, c) => ({ ...adapter(m, c), assertFetchAddress: undefined }))" },
  { options: ['ConformanceChecks.assertCapability'], expr: "runCase(deniedCase('capability'), (m, c) => ({ ...adapter(m, c), assertCapability: undefined }))" },
  { options: ['ConformanceChecker.createBudgetTracker'], expr: "runCase(deniedCase('budget'), (m, c) => ({ ...adapter(m, c), createBudgetTracker: undefined }))" },
  { options: ['ConformanceChecker.withShadow'], expr: "runCase(deniedCase('fs'), (m, c) => ({ ...adapter(m, c), withShadow: undefined }))" },
  { options: ['ConformanceTracker.assertWithin'], expr: "runCase(deniedCase('budget'), withTracker((t) => ({ sample: () => t.sample(), assertWithin: undefined })))" },
  { options: ['runCase.trace.actual', 'runCase.trace.metricStill'], expr: "runCase(deniedCase('fs'), adapter, undefined, { actual: undefined, metricStill: undefined })" },
  { options: ['ConformanceOptions.filter'], expr: "runPermissionsConformance('agreement', adapter, { describe: fakeDescribe, it: fakeIt, filter: undefined })" },
  { options: ['ConformanceOptions.skip'], expr: "runPermissionsConformance('agreement', adapter, { describe: fakeDescribe, it: fakeIt, skip: undefined })" },
  { options: ['ConformanceOptions.expectedFailures'], expr: "runPermissionsConformance('agreement', adapter, { describe: fakeDescribe, it: fakeIt, expectedFailures: undefined })" },
  { options: ['RunnerIt.skip'], expr: "runPermissionsConformance('agreement', adapter, { describe: fakeDescribe, it: Object.assign(() => undefined, { skip: undefined }), skip: { 'fs - ': 'skipped' } })" },
  // Both or neither (one alone is a TypeError); neither: node:test's, so in a child of its own.
  { options: ['ConformanceOptions.describe', 'ConformanceOptions.it'], expr: "runPermissionsConformance('agreement', adapter, { describe: undefined, it: undefined, filter: 'no case has this name' })", isolate: true },
]

/**
 * Optional properties of what the package returns (never an option it
 * reads), and where each comes from: the package leaves such a property out
 * rather than setting it to `undefined` (types.test.js checks the outputs it
 * can produce), so `?: T` is exact.
 */
const OUTPUTS = {
  'FsExplanation.incomplete': 'explainFs',
  'WasiCallSpec.refuseFlags': 'WASI_CALLS',
  'WasiFdAnswer.capability': 'WasiGate#fdCall',
  'WasiGate.checkPath.outOfBudget': 'WasiGate#checkPath',
  'WasiFdAnswer.outOfBudget': 'WasiGate#fdCall',
  'WasiAllowed.base': 'WasiGate#pathCall',
  'WasiAllowed.capability': 'WasiGate#pathCall',
  'WasiAllowed.outOfBudget': 'WasiGate#pathCall',
  'WasiDenied.outOfBudget': 'WasiGate#pathCall',
  'WasiNotPerformed.capability': 'WasiGate#pathCall',
  'WasiNotPerformed.outOfBudget': 'WasiGate#pathCall',
  'FetchExplanation.parity': 'explainFetch',
  'CapabilityExplanation.matched': 'explainCapability',
  'CapabilityExplanation.matched.pattern': 'explainCapability',
  'CapabilityExplanation.why': 'explainCapability',
  'CapabilityExplanation.fs': 'explainCapability',
  'CapabilityExplanation.fetch': 'explainCapability',
  'DiffWitness.resolvedIp': 'diffPolicies',
  'ShadowEvent.target': 'onShadow',
  'BudgetStatus.cpuPercent': 'BudgetTracker.sample',
  'BudgetStatus.memoryMb': 'BudgetTracker.sample',
  // serveDenoBroker's onDecision entries: built field by field in
  // lib/deno-broker.js from validated request fields (exercised by
  // __test__/deno-broker.test.js against a real client).
  'DenoBrokerDecision.permission': 'serveDenoBroker onDecision',
  'DenoBrokerDecision.value': 'serveDenoBroker onDecision',
  'DenoBrokerDecision.id': 'serveDenoBroker onDecision',
  'DenoBrokerDecision.pid': 'serveDenoBroker onDecision',
  'DenoBrokerDecision.reason': 'serveDenoBroker onDecision',
  'DenoBrokerDecision.malformed': 'serveDenoBroker onDecision',
  'DenoBrokerDecision.shadow': 'serveDenoBroker onDecision',
}

/** The TypeScript side of the shared names the expressions use. */
const PRELUDE_TS = `import { PermissionPolicy, PermissionChecker, BudgetTracker, PermissionDeniedError, createChecker, learnManifest, lockdown, landlockCommand, serveDenoBroker, type PermissionsManifest } from '@suaveplan/api-sandbox-permissions'
import { WasiGate } from '@suaveplan/api-sandbox-permissions/wasi'
import { openChecked } from '@suaveplan/api-sandbox-permissions/fs'
import { runPermissionsConformance, runCase, type ConformanceCase, type ConformanceChecker, type ConformanceContext, type ConformanceTracker, type MakeChecker, type RunnerIt } from '@suaveplan/api-sandbox-permissions/testing'
declare const policy: PermissionPolicy
declare const checker: PermissionChecker
declare const tracker: BudgetTracker
declare const gate: WasiGate
declare const fileChecker: PermissionChecker
declare const tmpFile: string
declare const adapter: (manifest: PermissionsManifest, context: ConformanceContext) => ConformanceChecker
declare const withTracker: (wrap: (t: ConformanceTracker) => ConformanceTracker) => MakeChecker
declare const deniedCase: (op: ConformanceCase['op']) => ConformanceCase
declare const fakeDescribe: (name: string, fn: () => void) => unknown
declare const fakeIt: RunnerIt
void [WasiGate, openChecked, PermissionPolicy, PermissionChecker, BudgetTracker, PermissionDeniedError, createChecker, learnManifest, lockdown, landlockCommand, serveDenoBroker, runPermissionsConformance, runCase]
`

/** The JavaScript side: the same names, bound to the package. */
function scope(root = require('node:path').join(__dirname, '..', '..')) {
  const pkg = require(root)
  const testing = require(`${root}/testing.js`)
  const policy = pkg.PermissionPolicy.fromManifest({ fs: ['/a/**'], budgets: { wallClockMs: 600000 } }, { plugin: 'p', platform: 'posix' })
  const adapter = testing.packageChecker(pkg)
  const cases = testing.conformanceCases()
  const values = {
    ...pkg,
    runPermissionsConformance: testing.runPermissionsConformance,
    runCase: testing.runCase,
    policy,
    checker: new pkg.PermissionChecker(policy),
    tracker: new pkg.BudgetTracker(policy),
    gate: new (require(`${root}/wasi.js`).WasiGate)(new pkg.PermissionChecker(policy)),
    openChecked: require(`${root}/fs.js`).openChecked,
    ...(() => {
      const nodeFs = require('node:fs')
      const dir = nodeFs.realpathSync(nodeFs.mkdtempSync(require('node:path').join(require('node:os').tmpdir(), 'agreement-')))
      process.once('exit', () => nodeFs.rmSync(dir, { recursive: true, force: true }))
      const tmpFile = `${dir}/file.txt`
      nodeFs.writeFileSync(tmpFile, 'agreement')
      const granted = pkg.PermissionPolicy.fromManifest({ fs: [{ path: `${dir}/**`, mode: 'readwrite' }] }, { plugin: 'p', platform: 'posix' })
      return { tmpFile, fileChecker: new pkg.PermissionChecker(granted) }
    })(),
    adapter,
    withTracker: (wrap) => (m, c) => {
      const base = adapter(m, c)
      return { ...base, createBudgetTracker: async (h, o) => wrap(await base.createBudgetTracker(h, o)) }
    },
    // A denial (or a breach) exercises the most of the harness: errors, metrics, assertWithin.
    deniedCase: (op) => cases.find((c) => c.op === op && (op === 'budget' ? c.expect.ok === false && c.expect.error === undefined : c.expect.allowed === false)),
    fakeDescribe: (name, fn) => fn(),
    fakeIt: () => {},
  }
  return { values, Skip: testing.Skip }
}

/** Codes of errors thrown after the options were read and accepted (the call failed for another reason). */
const AFTER_OPTIONS = new Set(['ERR_UNSUPPORTED_PLATFORM', 'LOCKDOWN_REFUSED', 'LOCKDOWN_FAILED', 'PERMISSION_DENIED'])

/**
 * Evaluates `expr` in `sc`: `'accepted'` when it returns (or resolves), or
 * fails only after reading its options (a skip, an unsupported platform, a
 * refused lockdown, a denial); `'refused'` for a TypeError or
 * `INVALID_MANIFEST`. Anything else is rethrown: the expression is wrong.
 */
async function outcome(expr, sc) {
  const names = Object.keys(sc.values)
  try {
    // eslint-disable-next-line no-new-func
    const r = await new Function(...names, `return (${expr})`)(...names.map((n) => sc.values[n]))
    if (r !== null && typeof r === 'object' && typeof r.close === 'function' && typeof r.expectPid === 'function') await r.close()
    return 'accepted'
  } catch (e) {
    if (e instanceof TypeError || (e && e.code === 'INVALID_MANIFEST')) return 'refused'
    if (e instanceof sc.Skip || (e && AFTER_OPTIONS.has(e.code))) return 'accepted'
    throw e
  }
}

if (require.main === module) {
  ;(async () => {
    const sc = scope()
    for (const i of process.argv.slice(2).map(Number)) console.log(`agreement ${i} ${await outcome(ENTRIES[i].expr, sc)}`)
  })()
}

module.exports = { ENTRIES, OUTPUTS, PRELUDE_TS, scope, outcome }
