'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { Worker } = require('node:worker_threads')
const { metrics } = require('@opentelemetry/api')
const { MeterProvider, InMemoryMetricExporter, PeriodicExportingMetricReader, AggregationTemporality } = require('@opentelemetry/sdk-metrics')
const pkg = require('..')
const { createChecker, PermissionDeniedError, serializeError, reviveError, errorReviverSource } = pkg
const { meterHarness, assertSchema } = require('./helpers.js')

const manifest = {
  fs: ['/data/**'],
  fetch: ['api.example.com'],
  secrets: ['API_KEY'],
  events: { publishes: ['a.b'], subscribes: ['a.*'] },
  db: { database: 'db1' },
}

test('registry, reasons and instruments are frozen data from Rust', () => {
  assert.ok(Object.isFrozen(pkg.ERROR_REGISTRY) && pkg.ERROR_REGISTRY.every(Object.isFrozen))
  const codes = pkg.ERROR_REGISTRY.map((e) => e.code)
  for (const c of ['PERMISSION_DENIED', 'BUDGET_EXCEEDED', 'INVALID_MANIFEST', 'INVALID_SAMPLE']) assert.ok(codes.includes(c), c)
  assert.ok(pkg.ERROR_REGISTRY.every((e) => /^SAND_PERM_\d{3}$/.test(e.id)))
  assert.equal(new Set(pkg.ERROR_REGISTRY.map((e) => e.id)).size, pkg.ERROR_REGISTRY.length)
  assert.ok(Object.isFrozen(pkg.DenyReason) && Object.isFrozen(pkg.DENY_REASONS))
  assert.equal(pkg.DenyReason.PATH_TRAVERSAL, 'path_traversal')
  // Reasons are only ever appended (SPEC §10 added explicitly_denied and path_not_allowed after the 16 of Part I).
  assert.ok(pkg.DENY_REASONS.length >= 18)
  assert.deepEqual(pkg.DENY_REASONS.slice(15, 18), ['invalid_payload', 'explicitly_denied', 'path_not_allowed'])
  assert.deepEqual(
    pkg.INSTRUMENTS.map((i) => [i.name, i.kind, [...i.attributeKeys]]),
    [
      ['plugin.permission_denied_total', 'counter', ['plugin', 'capability', 'reason']],
      ['plugin.budget_exceeded_total', 'counter', ['plugin', 'capability', 'reason']],
      ['plugin.permission_shadow_denied_total', 'counter', ['plugin', 'capability', 'reason']],
      ['plugin.budget_shadow_exceeded_total', 'counter', ['plugin', 'capability', 'reason']],
    ],
  )
  // SPEC §13 appended two more reasons after those.
  assert.deepEqual(pkg.DENY_REASONS.slice(18, 20), ['secret_not_readable', 'secret_destination_not_allowed'])
  assert.ok(Object.isFrozen(pkg.PERMISSION_DENIED_TOTAL.attributeKeys))
})

test('a denial counts once with closed-set labels; allows count nothing; assert counts once', async () => {
  const h = meterHarness()
  const c = createChecker(manifest, { plugin: 'plug', platform: 'posix', meter: h.meter })
  c.checkFs('/data/x', 'read')
  c.checkFetch('https://api.example.com/')
  c.checkCapability('secrets.get', { name: 'API_KEY' })
  assert.deepEqual(await h.points(), [])
  c.checkFs('/etc/passwd', 'read')
  assert.throws(() => c.assertFetch('https://u:p@evil.com/path?q#f'), PermissionDeniedError)
  c.checkCapability('__proto__', {})
  c.checkCapability('secrets.get', { name: 'OTHER' })
  const points = await h.points()
  const rows = points.map((p) => [p.name, p.attributes.plugin, p.attributes.capability, p.attributes.reason, p.value]).sort()
  assert.deepEqual(rows, [
    ['plugin.permission_denied_total', 'plug', 'fetch', 'credentials_in_url', 1],
    ['plugin.permission_denied_total', 'plug', 'fs.read', 'not_allowlisted', 1],
    ['plugin.permission_denied_total', 'plug', 'secrets.get', 'secret_not_declared', 1],
    ['plugin.permission_denied_total', 'plug', 'unknown', 'unknown_capability', 1],
  ])
  for (const p of points) {
    assert.deepEqual(Object.keys(p.attributes).sort(), ['capability', 'plugin', 'reason'])
    assert.equal(p.unit, pkg.PERMISSION_DENIED_TOTAL.unit)
    assert.equal(p.description, pkg.PERMISSION_DENIED_TOTAL.description)
  }
  await h.shutdown()
})

test('the global meter provider registered after import is honoured', async () => {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 2 ** 30 })
  const provider = new MeterProvider({ readers: [reader] })
  assert.ok(metrics.setGlobalMeterProvider(provider))
  try {
    const c = createChecker(manifest, { plugin: 'global', platform: 'posix' })
    c.checkFs('/nope', 'write')
    // The policy's own checks count on the global provider too.
    const policy = pkg.PermissionPolicy.fromManifest(manifest, { plugin: 'global', platform: 'posix' })
    assert.equal(policy.checkFs('/data/x', 'read').allowed, true)
    assert.throws(() => policy.assertFetch('https://evil.example/'), PermissionDeniedError)
    await reader.forceFlush()
    const rm = exporter.getMetrics().at(-1)
    const m = rm.scopeMetrics.find((s) => s.scope.name === pkg.METER_NAME).metrics[0]
    assert.equal(m.descriptor.name, 'plugin.permission_denied_total')
    assert.deepEqual(
      m.dataPoints.map((d) => [d.attributes, d.value]),
      [
        [{ plugin: 'global', capability: 'fs.write', reason: 'not_allowlisted' }, 1],
        [{ plugin: 'global', capability: 'fetch', reason: 'host_not_allowlisted' }, 1],
      ],
    )
  } finally {
    metrics.disable()
    await provider.shutdown()
  }
})

test('error details are redaction-safe and match the schema', () => {
  const c = createChecker(manifest, { plugin: 'plug', platform: 'posix' })
  const secretUrl = 'https://alice:hunter2@evil.example:8443/private/path?token=abc#frag'
  const errors = []
  const capture = (fn) => {
    try {
      fn()
    } catch (e) {
      errors.push(assertSchema(e))
      return e
    }
    assert.fail('did not throw')
  }
  const e1 = capture(() => c.assertFetch(secretUrl))
  assert.equal(e1.details.target, 'https://evil.example:8443')
  const e2 = capture(() => c.assertCapability('fetch', { url: 'http://bob@api.example.com:81/x?y' }))
  assert.equal(e2.details.reason, 'credentials_in_url')
  assert.equal(e2.details.target, 'http://api.example.com:81')
  const e3 = capture(() => c.assertCapability('secrets.get', { name: 'SUPER_SECRET_NAME' }))
  const e4 = capture(() => c.assertFs('/home/alice/.ssh/id_rsa', 'read'))
  const e5 = capture(() => c.assertCapability('db.query', { database: 'prod_customers', sql: 'select secret' }))
  const e6 = capture(() => c.assertFetch('not a url at all /with/path?q'))
  assert.equal(e6.details.target, undefined)
  for (const e of errors) {
    const text = `${e.message} ${JSON.stringify(e.details)} ${JSON.stringify(serializeError(e))}`
    for (const leak of ['alice', 'hunter2', 'private', 'token', 'frag', 'bob', 'SUPER_SECRET_NAME', 'id_rsa', '.ssh', 'prod_customers', 'select']) {
      assert.ok(!text.includes(leak), `${leak} leaked in ${text}`)
    }
  }
  assert.equal(e3.code, 'PERMISSION_DENIED')
  assert.equal(e4.id, 'SAND_PERM_001')
  assert.ok(e5 instanceof PermissionDeniedError && e5 instanceof pkg.SandboxPermissionError && e5 instanceof Error)
  // Manifest and budget errors too.
  try {
    pkg.PermissionPolicy.fromManifest({ ['bad\nkey' + 'x'.repeat(400)]: 1 }, { plugin: 'p' })
  } catch (e) {
    assertSchema(e)
    assert.ok(!e.details.pointer.includes('\n'))
  }
})

test('guards work by code across realms and on plain objects', () => {
  const vm = require('node:vm')
  const foreign = vm.runInNewContext(`(() => { const e = new Error('x'); Object.defineProperty(e, 'code', { value: 'PERMISSION_DENIED', enumerable: true }); return e })()`)
  assert.equal(foreign instanceof Error, false)
  assert.equal(pkg.isPermissionDenied(foreign), true)
  assert.equal(pkg.isPermissionDenied({ code: 'PERMISSION_DENIED' }), true)
  assert.equal(pkg.isPermissionDenied({ get code() { throw new Error('x') } }), false)
  assert.equal(pkg.isPermissionDenied(new Proxy({}, { getOwnPropertyDescriptor() { throw new Error('trap') } })), false)
  assert.equal(pkg.isPermissionDenied(null), false)
  assert.equal(pkg.isPermissionDenied('PERMISSION_DENIED'), false)
  assert.equal(pkg.isBudgetExceeded({ code: 'BUDGET_EXCEEDED' }), true)
  assert.equal(pkg.isSandboxPermissionError({ code: 'NOPE' }), false)
})

test('serializeError / reviveError round trip', () => {
  const c = createChecker(manifest, { plugin: 'plug', platform: 'posix' })
  let err
  try {
    c.assertFs('/etc/shadow', 'read')
  } catch (e) {
    err = e
  }
  const s = serializeError(err)
  assert.deepEqual(structuredClone(s), s)
  const back = reviveError(JSON.parse(JSON.stringify(s)))
  assert.ok(back instanceof PermissionDeniedError)
  assert.equal(back.code, err.code)
  assert.equal(back.id, err.id)
  assert.equal(back.message, err.message)
  assert.deepEqual(back.details, err.details)
  assert.deepEqual(reviveError(JSON.stringify(s)).details, err.details)
  assert.throws(() => serializeError(new Error('x')), TypeError)
  assert.throws(() => reviveError({ code: 'PERMISSION_DENIED' }), TypeError)
})

test('a denial crosses postMessage into a Worker and is rethrown inside a vm.Context', async () => {
  const c = createChecker(manifest, { plugin: 'plug', platform: 'posix' })
  let err
  try {
    c.assertFetch('https://evil.example/steal?x=1')
  } catch (e) {
    err = e
  }
  const worker = new Worker(
    `const { parentPort } = require('node:worker_threads')
     const vm = require('node:vm')
     const pkg = require(${JSON.stringify(path.join(__dirname, '..'))})
     parentPort.once('message', (serialized) => {
       // A null-prototype global, as the guide builds it: vm.createContext({}) inherits the host's Object.
       const ctx = vm.createContext(Object.create(null))
       const globalEscape = vm.runInContext('this.constructor.constructor("return typeof process")()', ctx)
       const revive = vm.runInContext(${JSON.stringify(errorReviverSource)}, ctx)
       ctx.__pending = JSON.stringify(serialized)
       ctx.__revive = revive
       // Plugin code: calls a capability, catches the denial, inspects it.
       const seen = vm.runInContext(\`
         (() => {
           const revive = __revive; const pending = __pending
           delete globalThis.__revive; delete globalThis.__pending
           try { throw revive(pending) } catch (e) {
             let escape
             try { escape = typeof e.constructor.constructor('return process')() } catch (x) { escape = 'blocked: ' + x.name }
             return { code: e.code, id: e.id, name: e.name, message: e.message, details: JSON.parse(JSON.stringify(e.details)), isContextError: e instanceof Error, escape, thrown: e }
           }
         })()\`, ctx)
       const hostRealm = pkg.reviveError(serialized)
       let hostEscape
       try { hostEscape = typeof vm.runInContext('(e) => e.constructor.constructor("return process")()', ctx)(hostRealm) } catch (x) { hostEscape = 'blocked' }
       parentPort.postMessage({ ...seen, thrown: undefined, guard: pkg.isPermissionDenied(seen.thrown), hostEscape, globalEscape })
     })`,
    { eval: true },
  )
  worker.postMessage(serializeError(err))
  const msg = await new Promise((resolve, reject) => worker.once('message', resolve).once('error', reject))
  await worker.terminate()
  assert.equal(msg.code, 'PERMISSION_DENIED')
  assert.equal(msg.id, 'SAND_PERM_001')
  assert.equal(msg.name, 'PermissionDeniedError')
  assert.equal(msg.message, err.message)
  assert.deepEqual(msg.details, { ...err.details })
  assert.equal(msg.isContextError, true, 'the error belongs to the context realm')
  assert.match(msg.escape, /^blocked/, 'plugin code cannot reach process through the error')
  assert.equal(msg.guard, true, 'guards work on the context-realm error')
  // Why the reviver must run in the context: a host-realm error hands over the host's Function.
  assert.equal(msg.hostEscape, 'object')
  assert.equal(msg.globalEscape, 'undefined', "the context's global reaches nothing of the host")
})
