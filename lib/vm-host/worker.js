'use strict'
// The worker side of the plugin runner. Plugin code runs in a vm.Context
// that holds nothing from this realm (bootstrap.js); this realm is hardened
// first (harden.js), once everything it needs is loaded. Started with
// bootstrap.EXEC_ARGV.
const { parentPort, workerData } = require('node:worker_threads')
const { createPluginContext, runPluginCode } = require('./bootstrap.js')
const { hardenRealm } = require('./harden.js')

hardenRealm()
const { context, deliver } = createPluginContext(workerData.config, (json) => parentPort.postMessage(json))
// m: { id, ok, json } from the host; strings and numbers only cross into the context.
parentPort.on('message', (m) => deliver(m.id, m.ok, m.json))
parentPort.postMessage({ ready: true })
runPluginCode(context, workerData.code, workerData.filename, (r) => parentPort.postMessage(r))
