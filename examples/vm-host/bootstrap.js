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
    p.reject(o && o.$hostError ? new Error(String(o.message)) : revive(json))
  }
  const api = {
    fs: Object.freeze({
      readFile: (path) => call('fs.read', { path }),
      writeFile: (path, data) => call('fs.write', { path, data: String(data) }),
    }),
    fetch: (url) => call('fetch', { url: String(url) }),
    secrets: Object.freeze({ get: (name) => call('secrets.get', { name }) }),
    events: Object.freeze({ publish: (topic, data) => call('events.publish', { topic, data }) }),
    capability: (id, payload) => call(id, payload),
    console: Object.freeze({ log: (...args) => call('log', { line: args.map(String).join(' ') }) }),
    config: Object.freeze(JSON.parse(configJson)),
  }
  for (const [k, v] of Object.entries(api)) Object.defineProperty(globalThis, k, { value: v, enumerable: true })
  return deliver
})`

module.exports = { BOOTSTRAP }
