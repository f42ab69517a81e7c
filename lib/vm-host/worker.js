'use strict'
// The worker side of the plugin runner. Plugin code runs in a vm.Context
// that holds nothing from this realm (bootstrap.js); this realm is hardened
// first (harden.js), once everything it needs is loaded. Started with
// bootstrap.EXEC_ARGV.
const { parentPort, workerData } = require('node:worker_threads')
const { createPluginContext, runPluginCode } = require('./bootstrap.js')
const { hardenRealm } = require('./harden.js')

hardenRealm()
// Plugin values that reach Node's own error paths are never read: left to
// Node, an unhandled rejection or uncaught exception is inspected (its
// `Symbol.for('nodejs.util.inspect.custom')` method called with Node's
// inspect) and serialised for the parent. A plugin's unhandled rejection is
// its own; an uncaught exception ends the run.
process.on('unhandledRejection', () => {})
process.on('uncaughtException', () => {
  parentPort.postMessage({ done: true, ok: false, code: 'ERR_PLUGIN_UNCAUGHT', message: 'the plugin threw outside any call' })
  process.exit(1)
})
const { context, deliver } = createPluginContext(workerData.config, (json) => parentPort.postMessage(json))
// m: { id, ok, json } from the host; strings and numbers only cross into the context.
parentPort.on('message', (m) => deliver(m.id, m.ok, m.json))
parentPort.postMessage({ ready: true })
runPluginCode(context, workerData.code, workerData.filename, (r) => parentPort.postMessage(r))
