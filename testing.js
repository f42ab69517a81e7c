'use strict'
// `runPermissionsConformance(label, makeChecker, options?)`: the shared case
// table (defined once, in Rust) run against a host's checker, with decisions,
// error shapes and metric increments verified together through a real
// OpenTelemetry SDK MeterProvider and in-memory exporter.
//
// Needs `@opentelemetry/sdk-metrics` (an optional peer dependency).

const assert = require('node:assert/strict')
const { binding, Capability, CAPABILITY_FIELDS, BUDGET_KINDS, ERROR_REGISTRY, ErrorCode, PERMISSION_DENIED_TOTAL, BUDGET_EXCEEDED_TOTAL, PERMISSION_SHADOW_DENIED_TOTAL } = require('./lib/native.js')

/** The registry id of an error code (`PERMISSION_DENIED` -> `SAND_PERM_001`), from the table Rust exports. */
const ID_OF = new Map(ERROR_REGISTRY.map((e) => [e.code, e.id]))
const { isInvalidManifest, isPermissionDenied, isBudgetExceeded, isInvalidSample } = require('./lib/errors.js')

const CONFORMANCE_PLUGIN = 'conformance-plugin'
const BUDGET_CAPABILITY = 'request'
const DENIED = PERMISSION_DENIED_TOTAL.name
const BUDGET = BUDGET_EXCEEDED_TOTAL.name
const SHADOW = PERMISSION_SHADOW_DENIED_TOTAL.name
/** The shadow the harness puts beside an adapter's checker (SPEC §12): it denies every call. */
const DENY_ALL_SHADOW = Object.freeze({})

const special = (v) => (v === 'NaN' ? NaN : v === 'Infinity' ? Infinity : v === '-Infinity' ? -Infinity : v)

let cached
/** Every case: `{ name, category, manifest, platform, op, args, expect }`, deep-frozen. */
function conformanceCases() {
  if (cached === undefined) {
    const list = JSON.parse(binding.conformanceCases())
    for (const c of list) {
      if (c.op === 'budget') c.args.steps = c.args.steps.map((s) => s.map(special))
    }
    cached = require('./lib/native.js').deepFreeze(list)
  }
  return cached
}

/** Rebuilds a case's manifest or payload as fresh, mutable plain data. */
const fresh = (v) => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)))

class MetricsProbe {
  constructor(sdk) {
    this.exporter = new sdk.InMemoryMetricExporter(sdk.AggregationTemporality.CUMULATIVE)
    this.reader = new sdk.PeriodicExportingMetricReader({ exporter: this.exporter, exportIntervalMillis: 2 ** 30 })
    this.provider = new sdk.MeterProvider({ readers: [this.reader] })
    this.meter = this.provider.getMeter('@suaveplan/api-sandbox-permissions/conformance')
    this.last = new Map()
  }

  /** Increments since the previous call: `name|plugin|capability|reason` -> count. */
  async delta() {
    await this.reader.forceFlush()
    const all = this.exporter.getMetrics()
    const now = new Map()
    const rm = all[all.length - 1]
    for (const sm of rm ? rm.scopeMetrics : []) {
      for (const m of sm.metrics) {
        for (const dp of m.dataPoints) {
          const a = dp.attributes
          const key = `${m.descriptor.name}|${a.plugin}|${a.capability}|${a.reason}`
          now.set(key, (now.get(key) || 0) + dp.value)
        }
      }
    }
    this.exporter.reset()
    const out = {}
    for (const [k, v] of now) {
      const d = v - (this.last.get(k) || 0)
      if (d > 0) out[k] = d
    }
    this.last = now
    return out
  }

  shutdown() {
    return this.provider.shutdown()
  }
}

function expectedCapability(c) {
  switch (c.op) {
    case 'fs':
      return c.args.mode === 'read' ? Capability.FS_READ : Capability.FS_WRITE
    case 'fetch':
    case 'fetchAddress':
      return Capability.FETCH
    default:
      return CAPABILITY_FIELDS.has(c.args.id) ? c.args.id : Capability.UNKNOWN
  }
}

/** Compares metric increments; notes when an expected increment did not happen at all. */
function assertMetric(delta, expected, what, trace) {
  if (Object.keys(expected).length > 0 && Object.keys(delta).length === 0) trace.metricStill = true
  assert.deepEqual(delta, expected, what)
}

const close = (a, b) => Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b), 1)

class Skip {
  constructor(reason) {
    this.reason = reason
  }
}

function checkDenialError(e, capability, reason, where) {
  assert.ok(isPermissionDenied(e), `${where}: expected a PERMISSION_DENIED error, got ${e && e.code}`)
  assert.equal(e.id, ID_OF.get(ErrorCode.PERMISSION_DENIED), `${where}: registry id`)
  assert.equal(typeof e.message, 'string')
  const d = e.details
  assert.ok(d && typeof d === 'object', `${where}: details`)
  assert.equal(d.plugin, CONFORMANCE_PLUGIN, `${where}: details.plugin`)
  assert.equal(d.capability, capability, `${where}: details.capability`)
  assert.equal(d.reason, reason, `${where}: details.reason`)
  for (const k of Object.keys(d)) assert.ok(['plugin', 'capability', 'reason', 'target'].includes(k), `${where}: unexpected detail ${k}`)
  if (d.target !== undefined) assert.match(d.target, /^[a-z][a-z0-9+.-]*:\/\/[^/?#@\s]+:\d+$/, `${where}: details.target must be scheme://host:port only`)
}

/** Calls a case's operation on `target` as `${kind}Fs` / `Fetch` / `FetchAddress` / `Capability` (kind: check or assert). */
function callCase(target, c, kind) {
  switch (c.op) {
    case 'fs':
      return target[`${kind}Fs`](c.args.path, c.args.mode)
    case 'fetch':
      return target[`${kind}Fetch`](c.args.url)
    case 'fetchAddress':
      return target[`${kind}FetchAddress`](c.args.url, c.args.ip)
    default:
      return target[`${kind}Capability`](c.args.id, fresh(c.args.payload))
  }
}

async function runDecisionCase(c, checker, probe, trace = {}) {
  const want = c.expect
  const capability = expectedCapability(c)
  const call = (kind) => callCase(checker, c, kind)
  const name = { fs: 'Fs', fetch: 'Fetch', fetchAddress: 'FetchAddress', capability: 'Capability' }[c.op]
  if (typeof checker[`check${name}`] !== 'function') {
    if (c.op === 'fetchAddress') throw new Skip('the adapter has no checkFetchAddress')
    throw new Error(`the adapter has no check${name}`)
  }
  await probe.delta()
  const got = await call('check')
  trace.actual = got
  assert.equal(got && got.allowed, want.allowed, `decision ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`)
  if (!want.allowed) {
    assert.equal(got.reason, want.reason, `reason ${got.reason}, expected ${want.reason}`)
    assert.equal(got.capability, capability, `capability ${got.capability}, expected ${capability}`)
  }
  const key = `${DENIED}|${CONFORMANCE_PLUGIN}|${capability}|${want.reason}`
  const expected = want.allowed ? {} : { [key]: 1 }
  assertMetric(await probe.delta(), expected, 'metric increments after check', trace)
  if (typeof checker[`assert${name}`] === 'function') {
    let thrown
    try {
      await call('assert')
    } catch (e) {
      thrown = e
    }
    trace.actual = { check: got, [`assert${name}`]: thrown === undefined ? 'returned' : thrown && thrown.code !== undefined ? { code: thrown.code, id: thrown.id, details: thrown.details } : `threw ${String(thrown)}` }
    if (want.allowed) assert.equal(thrown, undefined, `assert${name} threw on an allowed call`)
    else checkDenialError(thrown, capability, want.reason, `assert${name}`)
    assertMetric(await probe.delta(), expected, `metric increments after assert${name} (exactly once)`, trace)
  }
}

/** `{ key: n }` of the shadow counter only, and the rest. */
function splitShadow(delta) {
  const shadow = {}
  const rest = {}
  for (const [k, v] of Object.entries(delta)) (k.startsWith(`${SHADOW}|`) ? shadow : rest)[k] = v
  return { shadow, rest }
}

/**
 * SPEC §12, for an adapter with `withShadow(manifest)`: the same case with a
 * shadow that denies everything beside it. The decision, the error and the
 * enforced counter must be exactly as without it; the shadow counter moves
 * once per call, with the call's capability label.
 */
async function runShadowPass(c, checker, probe, trace) {
  const shadowed = await checker.withShadow(fresh(DENY_ALL_SHADOW))
  const want = c.expect
  const capability = expectedCapability(c)
  const name = { fs: 'Fs', fetch: 'Fetch', fetchAddress: 'FetchAddress', capability: 'Capability' }[c.op]
  const call = (kind) => callCase(shadowed, c, kind)
  if (typeof shadowed[`check${name}`] !== 'function') return
  await probe.delta()
  const expected = want.allowed ? {} : { [`${DENIED}|${CONFORMANCE_PLUGIN}|${capability}|${want.reason}`]: 1 }
  const shadowOnce = (delta, what) => {
    const keys = Object.keys(delta)
    trace.actual = { shadowIncrements: delta }
    assert.equal(keys.length, 1, `${what}: the deny-all shadow must count exactly once, got ${JSON.stringify(delta)}`)
    assert.ok(keys[0].startsWith(`${SHADOW}|${CONFORMANCE_PLUGIN}|${capability}|`) && delta[keys[0]] === 1, `${what}: shadow increment ${keys[0]}, expected capability ${capability}`)
  }
  const got = await call('check')
  trace.actual = { withShadow: got }
  assert.equal(got && got.allowed, want.allowed, `with a shadow: decision ${JSON.stringify(got)}, expected ${JSON.stringify(want)} (a shadow must never change a decision)`)
  if (!want.allowed) assert.equal(got.reason, want.reason, `with a shadow: reason ${got.reason}, expected ${want.reason}`)
  let d = splitShadow(await probe.delta())
  assertMetric(d.rest, expected, 'with a shadow: enforced metric increments after check', trace)
  shadowOnce(d.shadow, `check${name}`)
  if (typeof shadowed[`assert${name}`] === 'function') {
    let thrown
    try {
      await call('assert')
    } catch (e) {
      thrown = e
    }
    if (want.allowed) assert.equal(thrown, undefined, `with a shadow: assert${name} threw on an allowed call`)
    else checkDenialError(thrown, capability, want.reason, `assert${name} with a shadow`)
    d = splitShadow(await probe.delta())
    assertMetric(d.rest, expected, `with a shadow: enforced metric increments after assert${name}`, trace)
    shadowOnce(d.shadow, `assert${name}`)
  }
}

/** The adapter's budget-tracker factory, under the names adapters use for it. */
const TRACKER_FACTORIES = ['createBudgetTracker', 'budgetTracker', 'makeBudgetTracker', 'createTracker']

async function runBudgetCase(c, checker, probe, trace = {}) {
  const factory = TRACKER_FACTORIES.find((n) => typeof checker[n] === 'function')
  if (factory === undefined) throw new Skip('the adapter has no createBudgetTracker')
  const steps = c.args.steps
  const state = { now: steps[0][0], cpu: steps[0][1], rss: steps[0][2] }
  const hooks = { now: () => state.now }
  if (state.cpu !== null) hooks.cpuTimeMs = () => state.cpu
  if (state.rss !== null) hooks.rssMb = () => state.rss
  const want = c.expect
  let tracker
  try {
    tracker = await checker[factory](hooks, { cpuGraceMs: c.args.graceMs, unmeasured: [...c.args.unmeasured] })
  } catch (e) {
    if (want.error === ErrorCode.INVALID_SAMPLE && isInvalidSample(e)) return
    if (want.error === 'UNMEASURED_BUDGET') {
      // A budget with no sampler, not declared measured elsewhere: refused when the tracker is built.
      assert.equal(e && e.name, 'TypeError', `expected a TypeError for the unmeasured ${want.budget} budget, got ${e && (e.code || e.name)}`)
      assert.match(String(e.message), new RegExp(want.budget), 'the TypeError names the budget')
      return
    }
    throw e
  }
  assert.notEqual(want.error, 'UNMEASURED_BUDGET', `a ${want.budget} budget with no sampler was accepted: a silently unenforced budget`)
  await probe.delta()
  let last
  for (const [now, cpu, rss] of steps.slice(1)) {
    Object.assign(state, { now, cpu, rss })
    try {
      last = await tracker.sample()
      trace.actual = last
    } catch (e) {
      trace.actual = `sample() threw ${e && e.code !== undefined ? e.code : String(e)}`
      if (want.error === ErrorCode.INVALID_SAMPLE) {
        assert.ok(isInvalidSample(e), `expected INVALID_SAMPLE, got ${e && e.code}`)
        assert.equal(e.id, ID_OF.get(ErrorCode.INVALID_SAMPLE))
        assert.deepEqual(await probe.delta(), {}, 'an invalid sample must not count')
        return
      }
      throw e
    }
  }
  assert.notEqual(want.error, ErrorCode.INVALID_SAMPLE, `expected INVALID_SAMPLE, got status ${JSON.stringify(last)}`)
  const delta = await probe.delta()
  if (want.ok) {
    assert.equal(last.ok, true, `status ${JSON.stringify(last)}, expected within budget`)
    if (want.elapsedMs !== null) assert.ok(close(last.elapsedMs, want.elapsedMs), `elapsedMs ${last.elapsedMs}, expected ${want.elapsedMs}`)
    assert.deepEqual(delta, {}, 'within budget must not count')
    return
  }
  assert.equal(last.ok, false, `status ${JSON.stringify(last)}, expected a breach`)
  assert.equal(last.budget, want.budget)
  assert.equal(last.reason, want.reason)
  assert.ok(close(last.limit, want.limit), `limit ${last.limit}`)
  assert.ok(close(last.observed, want.observed), `observed ${last.observed}, expected ${want.observed}`)
  const reasonOf = Object.fromEntries(BUDGET_KINDS)
  const expected = {}
  for (const b of [want.budget, ...want.also]) expected[`${BUDGET}|${CONFORMANCE_PLUGIN}|${BUDGET_CAPABILITY}|${reasonOf[b]}`] = 1
  assertMetric(delta, expected, 'each breach counts exactly once', trace)
  if (typeof tracker.assertWithin === 'function') {
    let thrown
    try {
      await tracker.assertWithin()
    } catch (e) {
      thrown = e
    }
    assert.ok(isBudgetExceeded(thrown), 'assertWithin throws BUDGET_EXCEEDED after a breach')
    assert.equal(thrown.details.budget, want.budget)
    assert.deepEqual(await probe.delta(), {}, 'checking a breached tracker again must not count again')
  }
}

/** Runs one case against `makeChecker`; resolves, rejects with the failure, or rejects with a `Skip`. */
async function runCase(c, makeChecker, sdk = loadSdk(), trace = {}) {
  const probe = new MetricsProbe(sdk)
  try {
    const context = Object.freeze({ plugin: CONFORMANCE_PLUGIN, platform: c.platform, meter: probe.meter, meterProvider: probe.provider })
    let checker
    try {
      checker = await makeChecker(fresh(c.manifest), context)
    } catch (e) {
      trace.actual = `makeChecker threw ${e && e.code !== undefined ? `${e.code} ${show(e.details)}` : String(e)}`
      if (c.op === 'manifest' && c.expect.error === ErrorCode.INVALID_MANIFEST) {
        assert.ok(isInvalidManifest(e), `expected INVALID_MANIFEST, got ${e && (e.code || e.name)}: ${e && e.message}`)
        assert.equal(e.id, ID_OF.get(ErrorCode.INVALID_MANIFEST))
        assert.equal(e.details.pointer, c.args.pointer, `pointer ${e.details.pointer}, expected ${c.args.pointer}`)
        assert.equal(typeof e.details.expected, 'string')
        return
      }
      throw e
    }
    if (c.op === 'manifest') {
      trace.actual = 'makeChecker returned a checker'
      assert.ok(c.expect.allowed, `manifest accepted, expected INVALID_MANIFEST at ${c.args.pointer}`)
      return
    }
    if (c.op === 'budget') await runBudgetCase(c, checker, probe, trace)
    else {
      await runDecisionCase(c, checker, probe, trace)
      if (typeof checker.withShadow === 'function') await runShadowPass(c, checker, probe, trace)
    }
  } finally {
    await probe.shutdown()
  }
}

const SDK_MODULE = '@opentelemetry/sdk-metrics'
let sdkCached
/**
 * The OpenTelemetry SDK (an optional peer dependency), loaded on first use.
 * Without it: one line saying what to install, not a resolver stack.
 */
function loadSdk() {
  if (sdkCached === undefined) {
    try {
      sdkCached = require(SDK_MODULE)
    } catch (e) {
      if (!(e && e.code === 'MODULE_NOT_FOUND' && String(e.message).includes(`'${SDK_MODULE}'`))) throw e
      const err = new Error(`@suaveplan/api-sandbox-permissions/testing needs the optional peer dependency ${SDK_MODULE}: npm install --save-dev ${SDK_MODULE}`)
      // Non-enumerable code and a frame-less stack: Node prints the one line.
      Object.defineProperty(err, 'code', { value: 'ERR_MISSING_PEER_DEPENDENCY', enumerable: false, configurable: true, writable: true })
      err.stack = `Error: ${err.message}`
      throw err
    }
  }
  return sdkCached
}

/** Longest value, and longest failure text, a case report prints. */
const SHOW_MAX = 400
const FAILURE_MAX_LINES = 12
const cut = (s, max) => (s.length > max ? `${s.slice(0, max)}… (${s.length - max} more characters)` : s)
const show = (v) => {
  if (v === undefined) return 'undefined'
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v)
  let s
  try {
    s = JSON.stringify(v)
  } catch {
    s = String(v)
  }
  return cut(String(s), SHOW_MAX)
}
/** An error's message, at most FAILURE_MAX_LINES lines of at most SHOW_MAX characters. */
function failureText(e) {
  const lines = (e && e.message !== undefined ? String(e.message) : show(e)).split('\n')
  const kept = lines.slice(0, FAILURE_MAX_LINES).map((l) => cut(l, SHOW_MAX))
  if (lines.length > FAILURE_MAX_LINES) kept.push(`… (${lines.length - FAILURE_MAX_LINES} more lines)`)
  return kept.join('\n            ')
}

/** The call a case makes, as the adapter sees it: `checkFs("/a", "read")`. */
function describeInput(c) {
  switch (c.op) {
    case 'manifest':
      return `makeChecker(manifest) (expects ${c.expect.allowed ? 'a valid manifest' : `INVALID_MANIFEST at ${show(c.args.pointer)}`})`
    case 'fs':
      return `checkFs(${show(c.args.path)}, ${show(c.args.mode)})`
    case 'fetch':
      return `checkFetch(${show(c.args.url)})`
    case 'fetchAddress':
      return `checkFetchAddress(${show(c.args.url)}, ${show(c.args.ip)})`
    case 'capability':
      return `checkCapability(${show(c.args.id)}, ${show(c.args.payload)})`
    case 'budget':
      return `createBudgetTracker then sample() over [now, cpuTimeMs, rssMb] steps ${show(c.args.steps)} (cpuGraceMs ${show(c.args.graceMs)})`
    default:
      return show(c.args)
  }
}

/**
 * Rewrites a failure so a runner's report says what the case was: its
 * category, manifest, input, expected and actual result, and a hint when the
 * metric did not move.
 */
function caseFailure(c, e, trace) {
  const lines = [
    `conformance case failed: ${c.name}`,
    `  category: ${c.category}`,
    `  manifest: ${show(c.manifest)} (platform ${c.platform})`,
    `  input:    ${describeInput(c)}`,
    `  expected: ${show(c.expect)}`,
    `  actual:   ${'actual' in trace ? show(trace.actual) : '(no result: it failed before the call returned)'}`,
    `  failure:  ${failureText(e)}`,
  ]
  if (trace.metricStill) lines.push('  hint:     the metric did not move: did the adapter pass context.meter to the checker (new PermissionChecker(policy, { meter: context.meter }))?')
  // No `cause`: runners print its whole chain and stack, unbounded.
  const err = new Error(lines.join('\n'))
  err.name = 'ConformanceFailure'
  err.case = c.name
  err.stack = `${err.name}: ${err.message}`
  return err
}

/** Runs one case, rewriting a failure with the case's details (a `Skip` passes through). */
async function runCaseReported(c, makeChecker, sdk) {
  const trace = {}
  try {
    await runCase(c, makeChecker, sdk, trace)
  } catch (e) {
    if (e instanceof Skip) throw e
    throw caseFailure(c, e, trace)
  }
}

let nodeTestModule
const nodeTest = () => (nodeTestModule === undefined ? (nodeTestModule = require('node:test')) : nodeTestModule)
const globalRunner = () => (typeof globalThis.describe === 'function' && typeof globalThis.it === 'function' ? { describe: globalThis.describe, it: globalThis.it } : null)

/** Full reports per suite; later failures get one line each, so a broken adapter's run stays short. */
const FULL_REPORTS = 10

/**
 * The test body: a zero-parameter function (a one-parameter function is a
 * `done`-callback test to mocha and Jest). A case the adapter cannot run
 * (seen only at run time: an async adapter) is skipped the runner's own way:
 * mocha's `this.skip()`, node:test's and Vitest's `context.skip()`; Jest has
 * no run-time skip, so there the case fails saying how to skip it (never a
 * pass). A case listed as an expected failure passes when it fails (marked
 * TODO by node:test, printed elsewhere) and fails when it passes. After
 * FULL_REPORTS failures in a suite, a failure is one line.
 */
function caseBody(c, makeChecker, sdk, expectFailure = false, suite = { failures: 0 }) {
  return async function conformanceCase() {
    const ctx = arguments[0]
    try {
      await runCaseReported(c, makeChecker, sdk)
    } catch (e) {
      if (e instanceof Skip) {
        if (this && typeof this.skip === 'function' && typeof this.timeout === 'function') return this.skip() // mocha
        if (ctx && typeof ctx.skip === 'function') return ctx.skip(e.reason) // node:test, Vitest
        const err = new Error(
          `${c.name} cannot run: ${e.reason}, and this runner (Jest) has no run-time skip. Return the checker from makeChecker synchronously (the harness then sees what it lacks and skips those cases when registering), or list the case in options.skip.`,
        )
        err.name = 'ConformanceCannotRun'
        err.stack = `${err.name}: ${err.message}`
        throw err
      }
      if (!expectFailure) {
        suite.failures++
        if (suite.failures <= FULL_REPORTS) throw e
        const short = new Error(`conformance case failed: ${c.name}: ${failureText(e).split('\n').find((l) => l.startsWith('  failure:'))?.trim() ?? ''} (${FULL_REPORTS} failures of this suite are reported in full above)`)
        short.name = 'ConformanceFailure'
        short.stack = `${short.name}: ${short.message}`
        throw short
      }
      const why = /^ {2}failure: {2}(.*)$/m.exec(String(e.message))
      const note = `expected failure (options.expectedFailures): ${why ? why[1] : String(e.message).split('\n')[0]}`
      if (ctx && typeof ctx.todo === 'function') ctx.todo(note) // node:test
      else console.log(`# ${c.name}: ${note}`)
      return
    }
    if (expectFailure) {
      const err = new Error(`unexpected pass: ${c.name} is listed in options.expectedFailures and passed; remove it from the list`)
      err.name = 'ConformanceUnexpectedPass'
      err.case = c.name
      err.stack = `${err.name}: ${err.message}`
      throw err
    }
  }
}

/**
 * What the adapter lacks for a case (`'the adapter has no checkFetchAddress'`),
 * seen when registering: `makeChecker({}, context)` is called once, and when
 * it returns a checker synchronously, cases needing a method it does not
 * have are skipped statically, under every runner alike. An async adapter
 * (or one that throws here) is seen at run time instead.
 */
function adapterLacks(makeChecker, sdk) {
  let shape = null
  const provider = new sdk.MeterProvider()
  try {
    const r = makeChecker({}, Object.freeze({ plugin: CONFORMANCE_PLUGIN, platform: process.platform === 'win32' ? 'win32' : 'posix', meter: provider.getMeter('conformance-probe'), meterProvider: provider }))
    if (r !== null && typeof r === 'object' && typeof r.then !== 'function') shape = r
    else if (r !== null && typeof r === 'object') Promise.resolve(r).catch(() => {})
  } catch {
    shape = null
  }
  return (c) => {
    if (shape === null) return undefined
    if (c.op === 'fetchAddress' && typeof shape.checkFetchAddress !== 'function') return 'the adapter has no checkFetchAddress'
    if (c.op === 'budget' && !TRACKER_FACTORIES.some((n) => typeof shape[n] === 'function')) return 'the adapter has no createBudgetTracker'
    return undefined
  }
}

/** `options.expectedFailures` checked: a set of exact case names; throws a TypeError on a wrong shape. */
function expectedFailureSet(list) {
  if (list === undefined) return new Set()
  if (!Array.isArray(list) || !list.every((n) => typeof n === 'string')) throw new TypeError('options.expectedFailures must be an array of case names')
  return new Set(list)
}

/**
 * `options.skip` checked against the cases: `{ entries, bad }`. A key skips
 * exactly one case (its whole name) or one category (the category's name
 * and ' - ', as case names begin); anything else (an empty key, a prefix of
 * a name, a category without its ' - ', a name that is no case) is `bad`:
 * it skips nothing and fails the run, since a loose key could silently skip
 * cases (`''` would skip them all). A non-object or a reason that is not a
 * non-empty string is a TypeError.
 */
function skipEntries(skip, cases) {
  if (skip === undefined || skip === null) return { entries: [], bad: [] }
  if (typeof skip !== 'object' || Array.isArray(skip)) throw new TypeError("options.skip must be an object { [case name or 'category - ']: reason }")
  const names = new Set(cases.map((c) => c.name))
  const categories = new Set(cases.map((c) => c.category))
  const entries = []
  const bad = []
  for (const [key, reason] of Object.entries(skip)) {
    if (typeof reason !== 'string' || reason === '') throw new TypeError(`options.skip[${JSON.stringify(key)}] must be a reason (a non-empty string)`)
    if (names.has(key)) entries.push({ matches: (c) => c.name === key, reason })
    else if (key.endsWith(' - ') && categories.has(key.slice(0, -3))) entries.push({ matches: (c) => c.category === key.slice(0, -3), reason })
    else bad.push(key)
  }
  return { entries, bad }
}

/**
 * Registers one test per case. `makeChecker(manifest, context)` (may be
 * async) returns `{ checkFs, checkFetch, checkCapability }` and optionally
 * `checkFetchAddress`, `assertFs`/`assertFetch`/`assertFetchAddress`/`assertCapability`
 * (then error shapes are checked too) and `createBudgetTracker(hooks, { cpuGraceMs, unmeasured })`
 * (a budget with no sampler in `hooks` and not in `unmeasured` must be a TypeError)
 * (also found as `budgetTracker`, `makeBudgetTracker` or `createTracker`),
 * and `withShadow(shadowManifest)`: the same checks beside a shadow policy
 * (every decision case then runs again beside a deny-all shadow).
 * `context` is `{ plugin, platform, meter, meterProvider }`: build the policy
 * with `plugin` and `platform`, and record metrics on `meter`.
 *
 * options: `describe`/`it` of the runner. Default: the global `describe`/`it`
 * when the runner defines them (mocha, Jest, Vitest with `globals: true`),
 * else `node:test`'s. Pass Vitest's explicitly without globals. `filter`
 * (substring of case names), `skip` (`{ [case name or 'category - ']: reason }`:
 * declared unsupported cases, skipped with the reason printed; a key that is
 * neither a whole case name nor a category and ' - ' fails the run),
 * `expectedFailures` (exact case names the adapter is known to fail: a listed
 * case that fails passes as an expected failure, one that passes fails as an
 * unexpected pass, so the list only shrinks; a name that is no case fails the
 * run). A run in which no case would run (a `filter` that matches none, or
 * every match skipped) fails: it would pass any adapter.
 */
function runPermissionsConformance(label, makeChecker, rawOptions = {}) {
  if (typeof label !== 'string') throw new TypeError('label must be a string')
  if (typeof makeChecker !== 'function') throw new TypeError('makeChecker must be a function')
  if (rawOptions === null || typeof rawOptions !== 'object') throw new TypeError('options must be an object')
  // Own properties only: a `filter` or `skip` polluted onto Object.prototype
  // must never empty the suite (an allow-all adapter would then pass).
  const options = Object.create(null)
  for (const k of ['describe', 'it', 'skip', 'expectedFailures', 'filter']) if (Object.hasOwn(rawOptions, k)) options[k] = rawOptions[k]
  if ((options.describe === undefined) !== (options.it === undefined)) throw new TypeError('pass both options.describe and options.it, or neither')
  const runner = options.describe !== undefined ? { describe: options.describe, it: options.it } : globalRunner() || { describe: nodeTest().describe, it: nodeTest().it }
  const { describe, it } = runner
  if (typeof describe !== 'function' || typeof it !== 'function') throw new TypeError('options.describe and options.it must be functions')
  const sdk = loadSdk()
  // node:test takes the skip reason as an option; mocha, Jest and Vitest have `it.skip`.
  const isNodeTest = it === nodeTest().it || it === nodeTest().test
  if (options.filter !== undefined && typeof options.filter !== 'string') throw new TypeError('options.filter must be a string')
  const expectedFailures = expectedFailureSet(options.expectedFailures)
  const all = conformanceCases()
  const { entries: skips, bad: badSkips } = skipEntries(options.skip, all)
  const known = new Set(all.map((c) => c.name))
  const unknown = [...expectedFailures].filter((n) => !known.has(n))
  const cases = all.filter((c) => !options.filter || c.name.includes(options.filter))
  const lacks = adapterLacks(makeChecker, sdk)
  const suite = { failures: 0 }
  describe(`permissions conformance: ${label}`, () => {
    if (unknown.length > 0) {
      it('options.expectedFailures names only conformance cases', async function expectedFailuresAreCases() {
        throw new Error(`options.expectedFailures lists ${unknown.length === 1 ? 'a name that is' : 'names that are'} no conformance case: ${unknown.map((n) => JSON.stringify(n)).join(', ')} (a case name is 'category - case', as conformanceCases() lists them)`)
      })
    }
    if (badSkips.length > 0) {
      it('options.skip names only conformance cases and categories', async function skipKeysAreCases() {
        throw new Error(`options.skip has ${badSkips.length === 1 ? 'a key that names' : 'keys that name'} no case and no category: ${badSkips.map((n) => JSON.stringify(n)).join(', ')} (a key is a whole case name, or a category followed by ' - ', as conformanceCases() lists them; it skipped nothing)`)
      })
    }
    const skipped = new Map()
    let runs = 0
    for (const c of cases) {
      const declared = skips.find((s) => s.matches(c))
      const missing = lacks(c)
      if (declared || missing) {
        const reason = declared ? `declared unsupported: ${declared.reason}` : missing
        if (isNodeTest) it(c.name, { skip: reason }, () => {})
        else {
          skipped.set(reason, (skipped.get(reason) || 0) + 1)
          if (typeof it.skip === 'function') it.skip(c.name, () => {})
        }
        continue
      }
      it(c.name, caseBody(c, makeChecker, sdk, expectedFailures.has(c.name), suite))
      runs++
    }
    if (runs === 0) {
      // Nothing checked is not a pass: an allow-all adapter would pass it.
      it('the run checks at least one case', async function someCaseRuns() {
        throw new Error(`no conformance case runs: ${options.filter ? `filter ${JSON.stringify(options.filter)} matches ${cases.length} of ${all.length} cases` : `${all.length} cases`}, ${cases.length - runs} of them skipped`)
      })
    }
    for (const [reason, n] of skipped) console.log(`# permissions conformance: ${label}: ${n} case${n === 1 ? '' : 's'} skipped, ${reason}`)
  })
}

/** The adapter for this package's own PermissionChecker and BudgetTracker. */
function packageChecker(pkg = require('./index.js')) {
  return (manifest, context) => {
    const policy = pkg.PermissionPolicy.fromManifest(manifest, { plugin: context.plugin, platform: context.platform })
    const checker = new pkg.PermissionChecker(policy, { meter: context.meter })
    return {
      checkFs: (p, m) => checker.checkFs(p, m),
      checkFetch: (u) => checker.checkFetch(u),
      checkFetchAddress: (u, ip) => checker.checkFetchAddress(u, ip),
      checkCapability: (id, payload) => checker.checkCapability(id, payload),
      assertFs: (p, m) => checker.assertFs(p, m),
      assertFetch: (u) => checker.assertFetch(u),
      assertFetchAddress: (u, ip) => checker.assertFetchAddress(u, ip),
      assertCapability: (id, payload) => checker.assertCapability(id, payload),
      createBudgetTracker: (hooks, opts) => new pkg.BudgetTracker(policy, { hooks, cpuGraceMs: opts.cpuGraceMs, unmeasured: opts.unmeasured, meter: context.meter }),
      // SPEC §12: the same checks with a shadow policy beside them (the harness checks it never decides).
      withShadow: (shadowManifest) => {
        const shadow = pkg.PermissionPolicy.fromManifest(shadowManifest, { plugin: context.plugin, platform: context.platform })
        const c = new pkg.PermissionChecker(policy, { meter: context.meter, shadow })
        return {
          checkFs: (p, m) => c.checkFs(p, m),
          checkFetch: (u) => c.checkFetch(u),
          checkFetchAddress: (u, ip) => c.checkFetchAddress(u, ip),
          checkCapability: (id, payload) => c.checkCapability(id, payload),
          assertFs: (p, m) => c.assertFs(p, m),
          assertFetch: (u) => c.assertFetch(u),
          assertFetchAddress: (u, ip) => c.assertFetchAddress(u, ip),
          assertCapability: (id, payload) => c.assertCapability(id, payload),
        }
      },
    }
  }
}

module.exports = { runPermissionsConformance, conformanceCases, runCase, packageChecker, Skip, CONFORMANCE_PLUGIN }
