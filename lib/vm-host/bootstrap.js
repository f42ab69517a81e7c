'use strict'
// The code that runs first inside a plugin's vm.Context, in both tiers: it
// defines the capability proxies from context-realm functions over a bridge
// that takes and returns strings only.
const BOOTSTRAP = `
(function bootstrap(bridge, revive, configJson) {
  'use strict'
  const pending = new Map()
  let next = 1
  const call = (capability, payload) =>
    new Promise((resolve, reject) => {
      const id = next++
      pending.set(id, { resolve, reject })
      bridge(JSON.stringify({ id, capability, payload }))
    })
  const deliver = (id, ok, json) => {
    const p = pending.get(id)
    if (!p) return
    pending.delete(id)
    if (ok) return p.resolve(json === undefined ? undefined : JSON.parse(json))
    const o = JSON.parse(json)
    if (o && o.$hostError) {
      const e = new Error(String(o.message))
      if (typeof o.code === 'string') e.code = o.code
      return p.reject(e)
    }
    p.reject(revive(json))
  }
  const api = {
    fs: Object.freeze({
      readFile: (path) => call('fs.read', { path }),
      writeFile: (path, data) => call('fs.write', { path, data: String(data) }),
    }),
    fetch: (url, init) => {
      const p = { url: String(url) }
      if (init !== undefined && init !== null) {
        if (init.method !== undefined) p.method = String(init.method)
        if (init.body !== undefined) p.body = String(init.body)
        if (init.headers !== undefined && init.headers !== null) {
          p.headers = {}
          for (const k of Object.keys(init.headers)) p.headers[String(k)] = String(init.headers[k])
        }
      }
      return call('fetch', p)
    },
    secrets: Object.freeze({ get: (name) => call('secrets.get', { name }) }),
    events: Object.freeze({ publish: (topic, data) => call('events.publish', { topic, data }) }),
    capability: (id, payload) => call(id, payload),
    console: Object.freeze({ log: (...args) => call('log', { line: args.map(String).join(' ') }) }),
    config: Object.freeze(JSON.parse(configJson)),
  }
  for (const [k, v] of Object.entries(api)) Object.defineProperty(globalThis, k, { value: v, enumerable: true })
  return deliver
})`

const vm = require('node:vm')
const { errorReviverSource } = require('../../index.js')

/**
 * Builds a plugin's vm.Context with nothing from this realm in it. `send`
 * (a host function) is reached only through the bridge, which takes and
 * returns strings and never throws into the context. Returns the context
 * and `deliver(id, ok, json)` for the host's answers.
 */
function createPluginContext(config, send) {
  const context = vm.createContext(Object.create(null), { codeGeneration: { strings: true, wasm: false } })
  const revive = vm.runInContext(errorReviverSource, context)
  const bridge = (json) => {
    try {
      if (typeof json === 'string' && json.length <= 1 << 20) send(json)
    } catch {}
  }
  const deliver = vm.runInContext(BOOTSTRAP, context)(bridge, revive, JSON.stringify(config || {}))
  return { context, deliver: (id, ok, json) => deliver(Number(id), ok === true, typeof json === 'string' ? json : undefined) }
}

/** Runs the plugin's code as an async function body and reports `{ done, ok, value | code, message }`. */
function runPluginCode(context, code, filename, report) {
  let done
  try {
    done = vm.runInContext(`(async () => {\n${code}\n})()`, context, { filename })
  } catch (e) {
    done = Promise.reject(e)
  }
  // Reading a plugin value can throw (getters, toString): never let it escape.
  const safe = (f) => {
    try {
      return f()
    } catch {
      return null
    }
  }
  Promise.resolve(done).then(
    (value) => report({ done: true, ok: true, value: value === undefined ? null : safe(() => String(value)) }),
    (e) => report({ done: true, ok: false, code: safe(() => (typeof e.code === 'string' ? e.code : null)), message: safe(() => String(e.message)) }),
  )
}

module.exports = { BOOTSTRAP, createPluginContext, runPluginCode }
