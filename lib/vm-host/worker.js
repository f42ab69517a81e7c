'use strict'
// The worker side of the example host. Plugin code runs in a vm.Context
// that holds nothing from this realm: its capability functions are defined
// by a bootstrap script inside the context and reach the host only through
// a bridge that takes and returns strings. Errors are rebuilt inside the
// context from the package's `errorReviverSource`.
const { parentPort, workerData } = require('node:worker_threads')
const { createPluginContext, runPluginCode } = require('./bootstrap.js')

const { context, deliver } = createPluginContext(workerData.config, (json) => parentPort.postMessage(json))
// m: { id, ok, json } from the host; strings and numbers only cross into the context.
parentPort.on('message', (m) => deliver(m.id, m.ok, m.json))
parentPort.postMessage({ ready: true })
runPluginCode(context, workerData.code, workerData.filename, (r) => parentPort.postMessage(r))
