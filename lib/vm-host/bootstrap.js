'use strict'
// The plugin's vm.Context, in both tiers. Nothing of the host realm is put
// into it and no host code ever touches one of its objects: the host lends it
// two functions that take and return primitives only (`bridge` for calls,
// `report` for the result), wrapped inside the context so that whatever they
// throw (a stack overflow at their entry is a HOST-realm RangeError) is
// dropped there; answers come back as JSON text parsed inside the context;
// the plugin's result and thrown value are read inside the context and cross
// as strings. Every script the context runs is compiled with an
// `importModuleDynamically` that rejects `import()` with an error of the
// context's realm (Node's default rejection is a host-realm error).
//
// The vm.Context is still not a security boundary (docs/security.md): Node
// runs some of its own JavaScript on the context's behalf, so the realm that
// hosts it is hardened too (harden.js), and the process tier's kernel
// sandbox is the boundary.

const vm = require('node:vm')
const { errorReviverSource } = require('../../index.js')
const { isRealmHardened } = require('./harden.js')

/** Node options a thread or process needs to host plugin contexts: `importModuleDynamically` callbacks are only honoured under this flag. */
const EXEC_ARGV = Object.freeze(['--experimental-vm-modules'])

/** The longest call text (UTF-16 code units) the bridge accepts. */
const MAX_CALL_CHARS = 1 << 20

/**
 * Calls the context may have sent and not yet had answered, and their text
 * (UTF-16 code units) together: the bridge refuses more. A Worker's messages
 * queue in the host without backpressure, so without this a plugin that
 * never awaits could queue gigabytes there faster than the host reads them.
 */
const MAX_UNANSWERED_CALLS = 1024
const MAX_UNANSWERED_CHARS = 1 << 24

/** The longest result (UTF-16 code units) a run reports; a longer one is ERR_RESULT_TOO_LARGE, an error's code and message are cut. */
const MAX_RESULT_CHARS = 1 << 20

// Runs first inside the context, before any plugin code: captures every
// intrinsic the bridge's side calls (the plugin can replace the globals and
// prototype methods afterwards; the bridge must not call what it put there),
// defines the capability API, and returns [deliver, run, importError].
const BOOTSTRAP = `
(function bootstrap(bridge, report, revive, configJson, maxCallChars, maxUnanswered, maxUnansweredChars) {
  'use strict'
  const apply = Reflect.apply
  const parse = JSON.parse
  const stringify = JSON.stringify
  const freeze = Object.freeze
  const defineProperty = Object.defineProperty
  const hasOwn = Object.hasOwn
  const objectKeys = Object.keys
  const create = Object.create
  const toStr = String
  const CtxError = Error
  const CtxTypeError = TypeError
  const CtxPromise = Promise
  const arrayMap = Array.prototype.map
  const arrayJoin = Array.prototype.join

  const pending = create(null)
  let next = 1
  let unanswered = 0
  let unansweredChars = 0
  const isObject = (v) => v !== null && (typeof v === 'object' || typeof v === 'function')
  const rejected = (e) => new CtxPromise((_, reject) => reject(e))
  const withCode = (e, code) => defineProperty(e, 'code', { value: code, writable: true, configurable: true, enumerable: true })

  // The host's bridge, called with a string only. Whatever it throws is
  // dropped unseen: the caller makes an error of this realm instead.
  const toHost = (text) => {
    let accepted = false
    try {
      accepted = bridge(text) === true
    } catch {}
    return accepted
  }

  const call = (capability, payload) => {
    if (typeof capability !== 'string' || capability.length === 0 || capability.length > 64) {
      return rejected(new CtxTypeError('a capability id is a string of 1 to 64 characters'))
    }
    const id = next++
    let text
    try {
      text = stringify({ id, capability, payload })
    } catch (e) {
      return rejected(e)
    }
    if (typeof text !== 'string' || text.length > maxCallChars) {
      return rejected(withCode(new CtxError('a capability call is at most ' + maxCallChars + ' characters of JSON'), 'ERR_CALL_TOO_LARGE'))
    }
    if (unanswered >= maxUnanswered || unansweredChars + text.length > maxUnansweredChars) {
      return rejected(withCode(new CtxError('too many calls are waiting for an answer: await some first'), 'ERR_CALLS_PENDING'))
    }
    let settle
    const p = new CtxPromise((resolve, reject) => {
      settle = { resolve, reject, chars: text.length }
    })
    // Pending before it is sent: a host may answer from inside its send.
    pending[id] = settle
    unanswered++
    unansweredChars += text.length
    let sent = false
    try {
      sent = toHost(text)
    } catch {}
    // Not sent (refused, or no stack left to call toHost): undone before
    // anything else can throw, so the count never keeps a call no one answers.
    if (!sent && pending[id] === settle) {
      delete pending[id]
      unanswered--
      unansweredChars -= text.length
      settle.reject(withCode(new CtxError('the host did not accept this call'), 'ERR_CALL_REFUSED'))
    }
    return p
  }

  // Called by the host with (number, boolean, string | undefined). Never
  // throws back into the host: a plugin hook it runs (a 'then' getter, say)
  // runs inside this try.
  const deliver = (id, ok, json) => {
    try {
      const s = pending[id]
      if (s === undefined) return
      delete pending[id]
      unanswered--
      unansweredChars -= s.chars
      if (ok) {
        s.resolve(json === undefined ? undefined : parse(json))
        return
      }
      const o = parse(json)
      if (isObject(o) && hasOwn(o, '$hostError')) {
        const e = new CtxError(hasOwn(o, 'message') ? toStr(o.message) : 'the host could not answer this call')
        if (hasOwn(o, 'code') && typeof o.code === 'string') withCode(e, o.code)
        s.reject(e)
        return
      }
      s.reject(revive(json))
    } catch {}
  }

  // Runs the plugin's compiled function and reports its outcome as
  // primitives. Reading the result (toString, getters, Proxies) runs plugin
  // code here, in the plugin's realm, never in the host's.
  const runAsync = async (fn) => {
    let ok = true
    let value
    try {
      value = await fn()
    } catch (e) {
      ok = false
      value = e
    }
    let a = null
    let b = null
    if (ok) {
      try {
        a = value === undefined ? null : toStr(value)
      } catch {}
    } else {
      try {
        const code = isObject(value) ? value.code : undefined
        a = typeof code === 'string' ? code : null
      } catch {}
      try {
        b = toStr(isObject(value) ? value.message : value)
      } catch {}
    }
    try {
      report(ok, typeof a === 'string' ? a : null, typeof b === 'string' ? b : null)
    } catch {}
  }
  const run = (fn) => {
    runAsync(fn)
  }

  // The rejection of every import(): an error of this realm.
  const importError = () => withCode(new CtxError('import() is not available to plugins'), 'ERR_IMPORT_REFUSED')

  const api = {
    fs: freeze({
      readFile: (path) => call('fs.read', { path }),
      writeFile: (path, data) => call('fs.write', { path, data: toStr(data) }),
    }),
    fetch: (url, init) => {
      const p = { url: toStr(url) }
      if (init !== undefined && init !== null) {
        if (init.method !== undefined) p.method = toStr(init.method)
        if (init.body !== undefined) p.body = toStr(init.body)
        if (init.headers !== undefined && init.headers !== null) {
          p.headers = {}
          const keys = objectKeys(init.headers)
          for (let i = 0; i < keys.length; i++) p.headers[toStr(keys[i])] = toStr(init.headers[keys[i]])
        }
      }
      return call('fetch', p)
    },
    secrets: freeze({ get: (name) => call('secrets.get', { name }) }),
    events: freeze({ publish: (topic, data) => call('events.publish', { topic, data }) }),
    capability: (id, payload) => call(id, payload),
    console: freeze({ log: (...args) => call('log', { line: apply(arrayJoin, apply(arrayMap, args, [(x) => toStr(x)]), [' ']) }) }),
    config: freeze(parse(configJson)),
  }
  const names = objectKeys(api)
  for (let i = 0; i < names.length; i++) defineProperty(globalThis, names[i], { value: api[names[i]], enumerable: true })
  // No module can be compiled here (codeGeneration.wasm is off): the rest of
  // the WebAssembly API is surface without use.
  delete globalThis.WebAssembly
  // A FinalizationRegistry's callback runs from a task of the host's event
  // loop, outside every guard of this bridge: what it throws is an uncaught
  // exception of the hosting thread (Node then hands the value its own
  // inspect; thrown while a Worker shuts down, it aborts the process).
  delete globalThis.FinalizationRegistry
  return [deliver, run, importError]
})`

// The host side of each context: its import refusal, runner and reporter.
const hosts = new WeakMap()

/**
 * Builds a plugin's vm.Context (in a realm hardened by `hardenRealm()`, in a
 * thread or process started with EXEC_ARGV; anything else throws). `send`
 * (a host function) receives each call's JSON text, and may return false to
 * refuse it (the plugin's call then rejects at once). Returns the context and
 * `deliver(id, ok, json)` for the host's answers: `ok` true with the value's
 * JSON text (or undefined), or false with a serialised error.
 */
function createPluginContext(config, send) {
  if (typeof vm.SourceTextModule !== 'function') {
    throw new Error(`a plugin context needs Node's ${EXEC_ARGV.join(' ')} (start the worker or child with execArgv EXEC_ARGV): without it import() rejects with a host-realm error`)
  }
  if (!isRealmHardened()) throw new Error('a plugin context needs a hardened realm: call hardenRealm() first, in the thread or process that hosts it')
  const host = { importError: null, run: null, onReport: null, reported: false }
  // Node calls this for every import() in the context; what it throws is the
  // import's rejection, so it is an error made in the context.
  const importModuleDynamically = () => {
    throw host.importError()
  }
  host.importModuleDynamically = importModuleDynamically
  const context = vm.createContext(vm.constants && vm.constants.DONT_CONTEXTIFY !== undefined ? vm.constants.DONT_CONTEXTIFY : Object.create(null), {
    codeGeneration: { strings: true, wasm: false },
    importModuleDynamically,
  })
  const compile = (source, filename) => new vm.Script(source, { filename, importModuleDynamically })
  const revive = compile(errorReviverSource, 'error-reviver.js').runInContext(context)
  const bridge = (json) => {
    try {
      if (typeof json === 'string' && json.length <= MAX_CALL_CHARS) return send(json) !== false
    } catch {}
    return false
  }
  const report = (ok, a, b) => {
    try {
      if (host.reported || host.onReport === null || typeof ok !== 'boolean') return
      host.reported = true
      const str = (v, max) => (typeof v === 'string' ? v.slice(0, max) : null)
      if (ok && typeof a === 'string' && a.length > MAX_RESULT_CHARS) {
        host.onReport({ done: true, ok: false, code: 'ERR_RESULT_TOO_LARGE', message: `the result is over ${MAX_RESULT_CHARS} characters` })
      } else host.onReport(ok ? { done: true, ok: true, value: str(a, MAX_RESULT_CHARS) } : { done: true, ok: false, code: str(a, 256), message: str(b, MAX_RESULT_CHARS) })
    } catch {}
  }
  const made = compile(BOOTSTRAP, 'plugin-bootstrap.js').runInContext(context)(bridge, report, revive, JSON.stringify(config || {}), MAX_CALL_CHARS, MAX_UNANSWERED_CALLS, MAX_UNANSWERED_CHARS)
  // Read before any plugin code runs: nothing can hook these reads yet.
  const deliver = made[0]
  host.run = made[1]
  host.importError = made[2]
  hosts.set(context, host)
  return {
    context,
    deliver: (id, ok, json) => deliver(Number(id), ok === true, typeof json === 'string' ? json : undefined),
  }
}

/**
 * Runs the plugin's code as an async function body and reports
 * `{ done, ok, value | code, message }` (strings or null) once.
 */
function runPluginCode(context, code, filename, report) {
  const host = hosts.get(context)
  if (host === undefined) throw new TypeError('runPluginCode: not a context from createPluginContext')
  host.onReport = report
  let script
  try {
    script = new vm.Script(`(async () => {\n${code}\n})`, { filename, importModuleDynamically: host.importModuleDynamically })
  } catch (e) {
    // A compile error: a SyntaxError of this realm, made before any plugin code ran.
    host.reported = true
    report({ done: true, ok: false, code: null, message: e instanceof SyntaxError ? e.message : 'the plugin did not compile' })
    return
  }
  let fn
  try {
    fn = script.runInContext(context)
  } catch {
    // Code that closed the wrapper and threw at load: its value is the
    // plugin's, and the host does not read it.
    host.reported = true
    report({ done: true, ok: false, code: null, message: 'the plugin threw while its code was loaded' })
    return
  }
  host.run(fn)
}

module.exports = { BOOTSTRAP, EXEC_ARGV, MAX_CALL_CHARS, MAX_UNANSWERED_CALLS, MAX_UNANSWERED_CHARS, MAX_RESULT_CHARS, createPluginContext, runPluginCode }
