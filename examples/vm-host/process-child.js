'use strict'
// The process-tier child: loads everything it will ever need, builds the
// plugin's vm.Context, calls lockdown(), and only then runs plugin code.
// Capability calls go to the parent over the IPC channel (already open, so
// it keeps working under the seccomp filter).
// Loaded now, because after lockdown nothing can be read from disk; this
// also lets the escape demo show that reaching these modules is not enough.
require('node:fs')
require('node:net')
require('node:child_process')
const { lockdown } = require('../..')
const { createPluginContext, runPluginCode } = require('./bootstrap.js')

// Touch what would load lazily: time zone data, Intl.
void new Date().toString()
void new Intl.DateTimeFormat('en-US').format(0)

process.once('message', (start) => {
  const { context, deliver } = createPluginContext(start.config, (json) => process.send({ call: json }))
  if (start.simulateEscape) {
    // Demo only: hand the plugin a host-realm function, as a vm escape would.
    context.leakedHostFunction = function leaked() {}
  }
  process.on('message', (m) => {
    if (m && typeof m === 'object' && Number.isSafeInteger(m.id)) deliver(m.id, m.ok, m.json)
  })
  let report
  try {
    report = lockdown()
  } catch (e) {
    process.send({ done: true, ok: false, code: e.code, message: e.message })
    return
  }
  process.send({ locked: { arch: report.arch, denied: report.denied.length } })
  runPluginCode(context, start.code, `${start.name}.js`, (r) => process.send(r))
})
