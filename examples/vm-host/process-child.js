'use strict'
// The process-tier child: loads everything it will ever need, builds the
// plugin's vm.Context, calls lockdown(), and only then runs plugin code.
// Capability calls go to the parent over the socket pair on fd 3 (open
// before lockdown, so it keeps working under the seccomp filter), one JSON
// message per line (process-protocol.js). There is no Node IPC channel.
// Loaded now, because after lockdown nothing can be read from disk; this
// also lets the escape demo show that reaching these modules is not enough.
require('node:fs')
const net = require('node:net')
require('node:child_process')
const { lockdown } = require('../..')
const { createPluginContext, runPluginCode } = require('./bootstrap.js')
const { hardenRealm } = require('../../lib/vm-host/harden.js')
const { CHANNEL_FD, MAX_CHILD_LINE_BYTES } = require('./process-protocol.js')

// Touch what would load lazily: time zone data, Intl.
void new Date().toString()
void new Intl.DateTimeFormat('en-US').format(0)

// Kept for the escape demo only (simulateEscape), before hardenRealm() cuts
// every function of this realm off from it.
const HostFunction = Function
hardenRealm()

// Plugin values that reach Node's own error paths are never read (Node
// would inspect them, calling the plugin's inspect hook with its own
// inspect): an unhandled rejection is the plugin's own; an uncaught
// exception ends the run.
process.on('unhandledRejection', () => {})
process.on('uncaughtException', () => {
  send({ done: true, ok: false, code: 'ERR_PLUGIN_UNCAUGHT', message: 'the plugin threw outside any call' })
  process.exit(1)
})

const channel = new net.Socket({ fd: CHANNEL_FD, readable: true, writable: true })
channel.on('error', () => process.exit(1))
channel.on('end', () => process.exit(0))

/**
 * One message per line, within the parent's bound: a result too large is
 * replaced, a call too large is refused (false: the plugin's call rejects).
 */
function send(m) {
  let line = JSON.stringify(m)
  if (Buffer.byteLength(line) > MAX_CHILD_LINE_BYTES) {
    if (!m.done) return false
    line = JSON.stringify({ done: true, ok: false, code: 'ERR_RESULT_TOO_LARGE', message: `the result is over ${MAX_CHILD_LINE_BYTES} bytes of JSON` })
  }
  channel.write(`${line}\n`)
  return true
}

// The parent is trusted, but a line is parsed only whole, and inside a try.
let buffered = ''
let onMessage = null
channel.setEncoding('utf8')
channel.on('data', (text) => {
  buffered += text
  let nl
  while ((nl = buffered.indexOf('\n')) >= 0) {
    const line = buffered.slice(0, nl)
    buffered = buffered.slice(nl + 1)
    let m
    try {
      m = JSON.parse(line)
    } catch {
      continue
    }
    if (onMessage !== null && m !== null && typeof m === 'object') onMessage(m)
  }
})

onMessage = (first) => {
  if (!first.start) return
  const start = first.start
  const { context, deliver } = createPluginContext(start.config, (json) => send({ call: json }))
  if (start.simulateEscape) {
    // Demo only: hand the plugin what a vm escape would reach, a host-realm
    // function whose constructor is this realm's Function.
    const leaked = function leaked() {}
    Object.defineProperty(leaked, 'constructor', { value: HostFunction })
    context.leakedHostFunction = leaked
  }
  onMessage = (m) => {
    if (Number.isSafeInteger(m.id)) deliver(m.id, m.ok, m.json)
  }
  let report
  try {
    report = lockdown()
  } catch (e) {
    send({ done: true, ok: false, code: typeof e.code === 'string' ? e.code : null, message: String(e.message) })
    return
  }
  send({ locked: { arch: report.arch, allowed: report.allowed.length + report.conditional.length, landlock: report.landlock && report.landlock.abi } })
  runPluginCode(context, start.code, `${start.name}.js`, (r) => send(r))
}
