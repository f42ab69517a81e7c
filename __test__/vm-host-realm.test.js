'use strict'
// The plugin runner's vm.Context holds nothing of the host realm (SPEC §16;
// docs/security.md "The vm.Context is not the boundary"). One test per route
// by which a host-realm object could reach plugin code: dynamic import in
// every spelling, errors of the host's bridge functions (the stack edge
// included), the bridge's promises and answers, data handed in, the global
// object's graph and `constructor` chains, stack-trace APIs, proxies and
// polluted intrinsics, timers, console, WebAssembly, SharedArrayBuffer and
// Atomics, the runner's reading of the plugin's result, and Node's own
// callbacks at the stack edge. Real plugin code, run by the package's runner
// in a real Worker (and by the process tier in a real locked-down child).
//
// The oracle is the plugin's own realm: an object whose prototype chain does
// not end at the context's Object.prototype came from elsewhere, and every
// object seen is also tried for `process` through `constructor` chains.
// Each route reports how many values it checked (so it cannot pass by
// checking nothing) and the ones that failed.
const test = require('node:test')
const assert = require('node:assert/strict')
const { PermissionPolicy } = require('..')
const { runPlugin } = require('../lib/vm-host/host.js')
const { runPluginProcess } = require('../examples/vm-host/process-tier.js')

const linux = process.platform === 'linux' && ['x64', 'arm64'].includes(process.arch)

// The plugin's side of the oracle. Its intrinsics are captured first, because
// routes below replace the context's own (Object.prototype.then, JSON, ...).
const PRELUDE = `
const DEBUG = ${process.env.REALM_DEBUG ? 'true' : 'false'}
const __gpo = Object.getPrototypeOf, __OP = Object.prototype, __F = Function, __isFrozen = Object.isFrozen
const __push = Array.prototype.push, __apply = Reflect.apply, __str = String, __stringify = JSON.stringify
let checked = 0
const bad = []
const inert = []
const __root = (x) => { let p = x, last = null; for (let i = 0; i < 100 && p !== null && p !== undefined; i++) { last = p; p = __gpo(p) } return last }
const isObj = (x) => x !== null && (typeof x === 'object' || typeof x === 'function')
// A null-prototype object carries no realm; its values are checked where a route walks them.
const isForeign = (x) => { if (!isObj(x)) return false; try { const r = __root(x); return r !== x && r !== __OP } catch { return false } }
// process through constructor chains (the context's own Function finds none).
const reachesProcess = (x) => {
  if (!isObj(x)) return false
  const paths = [['constructor', 'constructor'], ['constructor'], ['__proto__', 'constructor', 'constructor'], ['__proto__', '__proto__', 'constructor', 'constructor']]
  for (let i = 0; i < paths.length; i++) {
    try {
      let f = x
      for (let j = 0; j < paths[i].length; j++) f = f[paths[i][j]]
      if (typeof f === 'function' && f !== __F) {
        const p = f('return typeof process === "undefined" ? null : process')()
        if (isObj(p) && typeof p.pid === 'number') return true
      }
    } catch {}
  }
  return false
}
const __toString = Object.prototype.toString, __ownKeys = Reflect.ownKeys
const describe = (x) => { try { return typeof x === 'function' ? 'function' : __apply(__toString, x, []) + ' ' + __ownKeys(x).length + ' keys' } catch { return typeof x } }
const note = (label, x) => {
  checked++
  if (isForeign(x) || reachesProcess(x)) __apply(__push, bad, [label + ': ' + (reachesProcess(x) ? 'reaches process' : 'host-realm ' + describe(x)) + (DEBUG ? ' at ' + new Error().stack : '')])
}
// For values a route may legitimately produce from the host realm (Node's own
// callbacks at the stack edge): they must be inert, never a way in.
const noteInert = (label, x) => {
  checked++
  if (!isForeign(x)) return
  if (reachesProcess(x)) __apply(__push, bad, [label + ': reaches process'])
  for (let p = __gpo(x), i = 0; i < 10 && p !== null; i++, p = __gpo(p)) {
    if (!__isFrozen(p)) { __apply(__push, bad, [label + ': a host-realm prototype is not frozen (' + (p.constructor && p.constructor.name) + ', ' + x.message + ')']); break }
  }
  try { if (typeof x.constructor.constructor === 'function') __apply(__push, bad, [label + ': the host realm\\'s Function is reachable']) } catch {}
  __apply(__push, inert, [label])
}
const verdict = () => __stringify({ checked, bad: bad.slice(0, 20), inert: inert.length })
`

// Runs `body` (after PRELUDE) as the plugin in the worker tier and, on Linux,
// the process tier; resolves to [{ tier, verdict }].
async function runRoute(name, body, { tiers = linux ? ['worker', 'process'] : ['worker'], config = {}, manifest = {} } = {}) {
  const out = []
  for (const tier of tiers) {
    const policy = PermissionPolicy.fromManifest({ budgets: { wallClockMs: 90_000 }, ...manifest }, { plugin: name })
    const log = []
    const run = tier === 'worker' ? runPlugin : runPluginProcess
    const r = await run({ name, code: `${PRELUDE}\n${body}`, policy, config, log: (l) => log.push(l) })
    assert.equal(r.ok, true, `${name} (${tier}): the plugin ran to its end: ${JSON.stringify(r)}`)
    let v
    try {
      v = JSON.parse(r.value)
    } catch {
      assert.fail(`${name} (${tier}): the plugin's verdict: ${r.value}`)
    }
    assert.ok(v.checked > 0, `${name} (${tier}): the route checked something`)
    assert.deepEqual(v.bad, [], `${name} (${tier}): ${v.checked} values checked`)
    assert.ok(!log.some((l) => l.includes('ESCAPED')), `${name} (${tier}): ${log.filter((l) => l.includes('ESCAPED')).join('\n')}`)
    out.push({ tier, verdict: v, log })
  }
  return out
}

test('dynamic import, in every spelling, gives the plugin nothing of the host realm', async () => {
  await runRoute(
    'import',
    `
    const srcs = ["import('x')", "import('node:fs')", "import('data:text/javascript,export default 1')", "import('x', { with: { type: 'json' } })"]
    const ways = [
      (s) => eval(s),
      (s) => (0, eval)(s),
      (s) => new Function('return ' + s)(),
      (s) => Function('return ' + s)(),
      (s) => (async function () {}).constructor('return ' + s)(),
      (s) => (function* () {}).constructor('yield ' + s)().next().value,
      (s) => (async function* () {}).constructor('yield ' + s)().next().then((r) => r.value),
      (s) => Promise.resolve('return ' + s).then(Function).then((f) => f()),
      (s) => Promise.resolve(s).then(eval),
      (s) => [s].map(eval)[0],
      (s) => Reflect.apply(Function, null, ['return ' + s])(),
    ]
    const direct = [() => import('x'), () => import('node:fs'), () => import('./x.js'), () => import('x', { with: { type: 'json' } }), () => import({ toString() { return 'x' } })]
    const attempts = [...direct]
    for (const s of srcs) for (const w of ways) attempts.push(() => w(s))
    for (const a of attempts) {
      let p
      try { p = a(); note('import promise', p) } catch (e) { note('import throw', e); continue }
      try { note('import value', await p) } catch (e) { note('import rejection', e); try { note('import rejection.constructor', e.constructor) } catch {} }
    }
    return verdict()`,
  )
})

test("the bridge's errors stay in the plugin's realm: bad arguments, host errors, denials", async () => {
  await runRoute(
    'bridge',
    `
    const cyc = {}
    cyc.self = cyc
    const calls = [
      () => fs.readFile('x'.repeat(2 ** 21)),
      () => capability('x.y', { a: 1n }),
      () => capability('x.y', cyc),
      () => capability(Symbol('s')),
      () => fetch({ toString() { throw new Error('x') } }),
      () => fetch('http://127.0.0.1:1/', { headers: new Proxy({}, { ownKeys() { throw 1 } }) }),
      () => fetch('http://127.0.0.1:1/', { headers: { host: 'x' } }),
      () => console.log({ toString: null }),
      () => secrets.get('NOPE'),
      () => fs.readFile('/etc/passwd'),
      () => capability('no.such', {}),
      () => capability('db.query', { database: 'x' }),
      () => events.publish('t', { a: 1 }),
    ]
    for (const c of calls) {
      let p
      try { p = c(); note('call promise', p) } catch (e) { note('call throw', e); continue }
      try { note('call value', await p) } catch (e) { note('call rejection', e); try { note('details', e.details) } catch {} }
    }
    return verdict()`,
    { manifest: { secrets: ['NOPE'] } },
  )
})

test("the bridge at the stack edge: a call made with no stack left fails in the plugin's realm", async () => {
  await runRoute(
    'bridge-edge',
    `
    const fns = [() => fs.readFile('/x'), () => fetch('http://127.0.0.1:1/'), () => console.log('x'), () => secrets.get('x'), () => capability('x.y', {}), () => events.publish('t', 1)]
    for (const f of fns) {
      const promises = []
      const thrown = []
      let tries = 0
      // The deepest frame overflows; then each of the 600 frames above it
      // makes the call with a little more stack, so one of them runs out
      // exactly at the entry of whatever the host lent the context. What
      // comes back is noted once there is stack again.
      const rec = () => {
        try { rec() } catch {}
        if (tries >= 600) return
        tries++
        try { promises.push(f()) } catch (e) { thrown.push(e) }
        throw 0
      }
      try { rec() } catch {}
      if (tries < 600) bad.push('the sweep made ' + tries + ' calls')
      for (const e of thrown) note('edge throw', e)
      for (const p of promises) { note('edge promise', p); try { await p } catch (e) { note('edge rejection', e) } }
    }
    return verdict()`,
  )
})

test("what the bridge answers, and the plugin's own replacements of intrinsics, hand it nothing of the host", async () => {
  await runRoute(
    'thenables',
    `
    // Index loops and captured Reflect.apply only: the hooks below replace the iterator, call and apply.
    const seeThis = (label) => function (...args) { note(label + ' this', this); for (let i = 0; i < args.length; i++) note(label + ' arg', args[i]) }
    // The plugin's realm, rewired: every hook the bridge or the runner could call.
    Object.defineProperty(Object.prototype, 'then', { get() { note('Object.prototype.then this', this); return undefined }, configurable: true })
    for (const k of ['resolve', 'reject', 'id', 'ok', 'json', 'code', 'message', '$hostError', 'value']) {
      Object.defineProperty(Object.prototype, k, { get() { note('Object.prototype.' + k + ' this', this); return undefined }, set(v) { note('set ' + k, v) }, configurable: true })
    }
    const origThen = Promise.prototype.then
    // Called after the plugin's code returns too (a host that settles its own promise with the plugin's
    // result calls this with host functions): a host function it receives carries the verdict out.
    Promise.prototype.then = function (a, b) {
      note('then this', this); note('then a', a); note('then b', b)
      if (isForeign(a) && typeof a === 'function') return a(verdict())
      return __apply(origThen, this, [a, b])
    }
    const origParse = JSON.parse, origStringify = JSON.stringify
    JSON.parse = function (...a) { __apply(seeThis('JSON.parse'), this, a); return __apply(origParse, JSON, a) }
    JSON.stringify = function (...a) { __apply(seeThis('JSON.stringify'), this, a); return __apply(origStringify, JSON, a) }
    for (const [o, k] of [[Map.prototype, 'get'], [Map.prototype, 'set'], [Map.prototype, 'delete'], [Function.prototype, 'call'], [Function.prototype, 'apply'], [Function.prototype, 'bind'], [Array.prototype, Symbol.iterator], [Object, 'freeze'], [Object, 'defineProperty'], [Object, 'keys'], [Object, 'entries'], [Number, 'isSafeInteger']]) {
      const orig = o[k]
      o[k] = function (...a) { __apply(seeThis('hook ' + __str(k)), this, a); return __apply(orig, this, a) }
    }
    globalThis.Promise = class P extends Promise { constructor(ex) { note('Promise executor', ex); super(ex) } }
    globalThis.Error = function E(m) { note('Error arg', m); return new TypeError(m) }
    globalThis.String = function S(v) { note('String arg', v); return '' + v }
    const results = []
    for (const f of [() => fs.readFile('/etc/passwd'), () => secrets.get('S'), () => events.publish('t', { x: 1 }), () => capability('db.query', { database: 'd' }), () => console.log('line')]) {
      try { results.push(await f()) } catch (e) { results.push(e) }
    }
    for (const r of results) note('answer', r)
    delete Object.prototype.then
    for (const k of ['resolve', 'reject', 'id', 'ok', 'json', 'code', 'message', '$hostError', 'value']) delete Object.prototype[k]
    return verdict()`,
    { manifest: { secrets: ['S'], events: { publishes: ['t'] } } },
  )
})

test('the config handed in, the global object graph and every constructor chain are of the plugin realm; no Node globals', async () => {
  await runRoute(
    'graph',
    `
    note('config', config)
    const present = ['process', 'require', 'module', 'exports', 'Buffer', 'global', 'setTimeout', 'setInterval', 'setImmediate', 'queueMicrotask', 'structuredClone', 'MessageChannel', 'BroadcastChannel', 'performance', 'navigator', '__filename', 'leakedHostFunction', 'WebAssembly', 'FinalizationRegistry'].filter((n) => { try { return eval('typeof ' + n) !== 'undefined' } catch { return false } })
    if (present.length > 0) bad.push('globals present: ' + present.join(' '))
    const seen = new Set()
    const queue = [globalThis, config]
    while (queue.length > 0 && seen.size < 50000) {
      const o = queue.shift()
      if (!isObj(o) || seen.has(o)) continue
      seen.add(o)
      note('graph', o)
      let keys = []
      try { keys = Reflect.ownKeys(o) } catch {}
      for (const k of keys) {
        let d
        try { d = Reflect.getOwnPropertyDescriptor(o, k) } catch { continue }
        if (!d) continue
        for (const v of [d.value, d.get, d.set]) if (isObj(v)) queue.push(v)
      }
      try { queue.push(Object.getPrototypeOf(o)) } catch {}
    }
    for (const f of [fs.readFile, fs.writeFile, fetch, secrets.get, events.publish, capability, console.log, () => {}, async () => {}, function* () {}, async function* () {}]) {
      note('fn', f)
      note('fn.constructor', f.constructor)
      note('fn proto', Object.getPrototypeOf(f))
    }
    return verdict()`,
    { config: { nested: { list: [1, { deep: true }] }, text: 'x' } },
  )
})

test('stack-trace APIs (prepareStackTrace, CallSites, caller) show no host frame object, wherever plugin code runs', async () => {
  await runRoute(
    'stack',
    `
    const sites = (label) => {
      const prev = Error.prepareStackTrace
      Error.prepareStackTrace = (e, s) => s
      let s
      try { s = new Error('probe').stack } finally { Error.prepareStackTrace = prev }
      note(label + ' sites', s)
      for (const c of Array.isArray(s) ? s : []) {
        note(label + ' site', c)
        for (const m of ['getThis', 'getFunction', 'getTypeName', 'getEvalOrigin', 'getFileName', 'getScriptNameOrSourceURL']) {
          try { note(label + ' ' + m, c[m]()) } catch (e) { note(label + ' ' + m + ' error', e) }
        }
      }
      const o = {}
      Error.captureStackTrace(o)
      note(label + ' captured', o)
      // Sloppy-mode callers up the stack.
      const callers = Function('let f = arguments.callee, out = []; for (let i = 0; i < 50 && f; i++) { try { f = f.caller; out.push(f) } catch (e) { out.push(e); break } } return out')()
      for (const c of callers) note(label + ' caller', c)
    }
    sites('top')
    await null
    sites('after await')
    // Inside code the bridge's answer triggers.
    Object.defineProperty(Object.prototype, 'then', { get() { delete Object.prototype.then; sites('answer then-getter'); return undefined }, configurable: true })
    await fs.readFile('/etc/passwd').catch((e) => e)
    delete Object.prototype.then
    // Inside the runner's reading of the result.
    return { [Symbol.toPrimitive](hint) { note('hint', hint); sites('result toPrimitive'); return verdict() }, toString() { sites('result toString'); return verdict() } }`,
  )
})

test("the plugin's result and thrown value are read in its own realm: no host argument, receiver or caller", async () => {
  const resultProbe = `
    const watch = (label) => ({
      [Symbol.for('nodejs.util.inspect.custom')](...a) { for (const x of a) note(label + ' inspect arg', x); console.log('ESCAPED inspect called') },
      [Symbol.toPrimitive](...a) { note(label + ' toPrimitive this', this); for (const x of a) note(label + ' toPrimitive arg', x); const c = Function('return arguments.callee.caller')(); note(label + ' caller', c); return verdict() },
      toJSON(...a) { for (const x of a) note(label + ' toJSON arg', x); return verdict() },
      get code() { note(label + ' code this', this); return 'E_PLUGIN' },
      get message() { note(label + ' message this', this); return verdict() },
    })`
  await runRoute('result', `${resultProbe}\nreturn watch('result')`)
  // A thrown value: its message is the verdict.
  const tiers = linux ? ['worker', 'process'] : ['worker']
  for (const tier of tiers) {
    const policy = PermissionPolicy.fromManifest({ budgets: { wallClockMs: 90_000 } }, { plugin: 'thrown' })
    const run = tier === 'worker' ? runPlugin : runPluginProcess
    const log = []
    const r = await run({ name: 'thrown', code: `${PRELUDE}\n${resultProbe}\nthrow watch('thrown')`, policy, log: (l) => log.push(l) })
    assert.equal(r.ok, false, tier)
    assert.equal(r.code, 'E_PLUGIN', tier)
    const v = JSON.parse(r.message)
    assert.ok(v.checked > 0, tier)
    assert.deepEqual(v.bad, [], tier)
    assert.ok(!log.some((l) => l.includes('ESCAPED')), tier)
  }
})

test('proxies the plugin hands to the bridge and the runner see only the plugin realm', async () => {
  await runRoute(
    'proxies',
    `
    // The traps note their arguments; noting a proxy runs its traps again, so not from inside one.
    let inTrap = false
    const traps = (label) => Object.fromEntries(['get', 'set', 'has', 'ownKeys', 'getOwnPropertyDescriptor', 'defineProperty', 'deleteProperty', 'getPrototypeOf', 'setPrototypeOf', 'isExtensible', 'preventExtensions', 'apply', 'construct'].map((t) => [t, (...a) => {
      if (!inTrap) { inTrap = true; try { for (const x of a) note(label + ' ' + t, x) } finally { inTrap = false } }
      return Reflect[t](...a)
    }]))
    const p = () => new Proxy({}, traps('payload'))
    for (const f of [() => capability('db.query', p()), () => fetch(p(), p()), () => fs.writeFile(p(), p()), () => events.publish(p(), p()), () => console.log(p(), p())]) {
      try { await f() } catch (e) { note('proxy call', e) }
    }
    return new Proxy({ [Symbol.toPrimitive]: () => verdict() }, traps('result'))`,
  )
})

test('timers, console, WebAssembly, SharedArrayBuffer and Atomics are absent or of the plugin realm', async () => {
  await runRoute(
    'builtins',
    `
    note('console', console)
    note('console.log', console.log)
    const bytes = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])
    const W = globalThis.WebAssembly
    if (W !== undefined) {
      for (const f of [() => W.compile(bytes), () => W.instantiate(bytes), () => new W.Module(bytes), () => W.validate(bytes), () => new W.Memory({ initial: 1, maximum: 1, shared: true }), () => W.compileStreaming(bytes), () => W.instantiateStreaming(bytes), () => W.compileStreaming(Promise.resolve({}))]) {
        try { const v = f(); note('wasm value', v); note('wasm awaited', await v) } catch (e) { note('wasm error', e) }
      }
    }
    const sab = new SharedArrayBuffer(16)
    const ia = new Int32Array(sab)
    note('sab', sab)
    const w = Atomics.waitAsync(ia, 0, 0, 5)
    note('waitAsync', w)
    note('waitAsync value', w.value)
    note('waitAsync result', await w.value)
    try { Atomics.wait(ia, 0, 0, 1) } catch (e) { note('Atomics.wait', e) }
    // Absent: its callbacks would run outside every guard of the bridge.
    if (typeof FinalizationRegistry !== 'undefined') bad.push('FinalizationRegistry is present')
    note('weakref', new WeakRef({}))
    return verdict()`,
  )
})

test("Node's error paths never read a plugin value: unhandled rejections neither inspect nor end the run", async () => {
  await runRoute(
    'rejections',
    `
    const evil = (label) => ({
      [Symbol.for('nodejs.util.inspect.custom')](...a) { for (const x of a) note(label + ' inspect arg', x); console.log('ESCAPED ' + label + ': inspect called') ; return 'x' },
      get stack() { note(label + ' stack this', this); console.log('ESCAPED ' + label + ': stack read'); return 'x' },
      get message() { console.log('ESCAPED ' + label + ': message read'); return 'm' },
      get name() { console.log('ESCAPED ' + label + ': name read'); return 'n' },
      toString() { console.log('ESCAPED ' + label + ': toString called'); return 'x' },
    })
    Promise.reject(evil('object'))
    Promise.reject(Object.setPrototypeOf(evil('error-like'), Error.prototype))
    ;(async () => { throw evil('async') })()
    new Promise((_, reject) => reject(evil('executor')))
    // Give Node's rejection tracking its turns (it runs after microtasks drain).
    for (let i = 0; i < 5; i++) await console.log('tick')
    note('still running', {})
    return verdict()`,
  )
})

test("Node's own callbacks at the stack edge (dynamic import, stack formatting) give at most an inert host error: no Function, no process, no pollution", async (t) => {
  const [first] = await runRoute(
    'node-edge',
    `
    const acts = [() => import('x'), () => new Error('x').stack, () => { try { null.x } catch (e) { return e.stack } }, () => eval('1'), () => Function('return 1')()]
    for (const act of acts) {
      const promises = []
      const thrown = []
      let tries = 0
      // Every frame of the stack tries once (Node's callbacks need more
      // stack than the bridge: where they run out is far from the edge).
      const rec = () => {
        try { rec() } catch {}
        tries++
        try { const v = act(); if (v && typeof v.then === 'function') promises.push(v) } catch (e) { thrown.push(e) }
        throw 0
      }
      try { rec() } catch {}
      for (const e of thrown) noteInert('edge throw', e)
      for (const p of promises) { try { await p } catch (e) { noteInert('edge rejection', e) } }
    }
    return verdict()`,
  )
  // Informational: how many inert host errors the sweep met.
  t.diagnostic(`host-realm errors met at the stack edge (inert): ${first.verdict.inert}`)
})
