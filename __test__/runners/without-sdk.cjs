'use strict'
// Preloaded (`node -r`) to simulate a project without the optional peer
// @opentelemetry/sdk-metrics: resolving it fails as it would when it is not installed.
const Module = require('node:module')
const resolve = Module._resolveFilename
Module._resolveFilename = function (request, ...rest) {
  if (request === '@opentelemetry/sdk-metrics') {
    const e = new Error(`Cannot find module '${request}'`)
    e.code = 'MODULE_NOT_FOUND'
    throw e
  }
  return resolve.call(this, request, ...rest)
}
