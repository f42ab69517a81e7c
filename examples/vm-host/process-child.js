'use strict'
// The process-tier child: loads everything it will ever need, builds the
// plugin's vm.Context, calls lockdown(), and only then runs plugin code.
// Capability calls go to the parent over the IPC channel (already open, so
// it keeps working under the seccomp filter).
const vm = require('node:vm')
// Loaded now, because after lockdown nothing can be read from disk; this
// also lets the escape demo show that reaching these modules is not enough.
require('node:fs')
require('node:net')
require('node:child_process')
const { lockdown, errorReviverSource } = require('../..')
const { BOOTSTRAP } = require('./bootstrap.js')

// Touch what would load lazily: time zone data, Intl.
void new Date().toString()
void new Intl.DateTimeFormat('en-US').format(0)

process.once('message', (start) => {
  const context = vm.createContext(Object.create(null), { codeGeneration: { strings: true, wasm: false } })
  const revive = vm.runInContext(errorReviverSource, context)
  const bridge = (json) => {
    try {
      if (typeof json === 'string' && json.length <= 1 << 20) process.send({ call: json })
    } catch {}
  }
  const deliver = vm.runInContext(BOOTSTRAP, context)(bridge, revive, JSON.stringify(start.config || {}))
  if (start.simulateEscape) {
    // Demo only: hand the plugin a host-realm function, as a vm escape would.
    context.leakedHostFunction = function leaked() {}
  }
  process.on('message', (m) => {
    if (m && typeof m === 'object' && Number.isSafeInteger(m.id)) deliver(m.id, m.ok === true, typeof m.json === 'string' ? m.json : undefined)
  })
  let report
  try {
    report = lockdown()
  } catch (e) {
    process.send({ done: true, ok: false, code: e.code, message: e.message })
    return
  }
  process.send({ locked: { arch: report.arch, denied: report.denied.length } })
  let done
  try {
    done = vm.runInContext(`(async () => {\n${start.code}\n})()`, context, { filename: `${start.name}.js` })
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
    (value) => process.send({ done: true, ok: true, value: value === undefined ? null : safe(() => String(value)) }),
    (e) => process.send({ done: true, ok: false, code: safe(() => (typeof e.code === 'string' ? e.code : null)), message: safe(() => String(e.message)) }),
  )
})
