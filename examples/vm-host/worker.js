'use strict'
// The worker side of the example host. Plugin code runs in a vm.Context
// that holds nothing from this realm: its capability functions are defined
// by a bootstrap script inside the context and reach the host only through
// a bridge that takes and returns strings. Errors are rebuilt inside the
// context from the package's `errorReviverSource`.
const vm = require('node:vm')
const { parentPort, workerData } = require('node:worker_threads')
const { errorReviverSource } = require('../..')

const { BOOTSTRAP } = require('./bootstrap.js')

const context = vm.createContext(Object.create(null), { codeGeneration: { strings: true, wasm: false } })
const revive = vm.runInContext(errorReviverSource, context)
// The bridge is a host function, so it is passed as an argument (never put on
// the context's global) and only ever handles strings.
const bridge = (json) => {
  // Never throws into the context (a host-realm error would leak this realm).
  try {
    if (typeof json === 'string' && json.length <= 1 << 20) parentPort.postMessage(json)
  } catch {}
}
const deliver = vm.runInContext(BOOTSTRAP, context)(bridge, revive, JSON.stringify(workerData.config || {}))

parentPort.on('message', (m) => {
  // m: { id, ok, json } from the host; strings and numbers only cross into the context.
  deliver(Number(m.id), m.ok === true, typeof m.json === 'string' ? m.json : undefined)
})

parentPort.postMessage({ ready: true })
const wrapped = `(async () => {\n${workerData.code}\n})()`
let done
try {
  done = vm.runInContext(wrapped, context, { filename: workerData.filename })
} catch (e) {
  done = Promise.reject(e)
}
const safe = (f) => {
  try {
    return f()
  } catch {
    return null
  }
}
Promise.resolve(done).then(
  (value) => parentPort.postMessage({ done: true, ok: true, value: value === undefined ? null : safe(() => String(value)) }),
  (e) => parentPort.postMessage({ done: true, ok: false, code: safe(() => (typeof e.code === 'string' ? e.code : null)), message: safe(() => String(e.message)) }),
)
