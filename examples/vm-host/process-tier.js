'use strict'
// The process tier of the example host: the plugin runs in a child process
// that calls lockdown() (seccomp) before running plugin code, so even code
// that escapes the vm.Context and reaches `process` cannot open files,
// connect or spawn. The parent checks every call, performs the I/O, and
// enforces the budgets from outside (wall clock, CPU from /proc/<pid>/stat,
// RSS from /proc/<pid>/status), killing the child on BUDGET_EXCEEDED.
//
// The child is untrusted in both directions (SPEC §16): it talks over one
// socket pair with the protocol of process-protocol.js, framed with a byte
// bound before any parsing (lib/ipc-frame.js). A malformed, oversized or
// unexpected message, too many calls in flight or unread answers piling up
// kill the child (SIGKILL), count one denial and end the run with
// ERR_CHILD_PROTOCOL; the host process never throws.
const fs = require('node:fs')
const path = require('node:path')
const { spawn } = require('node:child_process')
const { PermissionChecker, BudgetTracker, isBudgetExceeded, landlockCommand } = require('../..')
const { JsonLineDecoder } = require('../../lib/ipc-frame.js')
const { callHandler, performers, endOfCalls } = require('./host.js')
const { RunScope } = require('../../lib/vm-host/run-scope.js')
const { EXEC_ARGV } = require('./bootstrap.js')
const { CHANNEL_FD, MAX_CHILD_LINE_BYTES, CHILD_MESSAGE_SHAPE, MAX_CALLS_IN_FLIGHT, MAX_UNREAD_REPLY_BYTES, childMessageValidator } = require('./process-protocol.js')

const CLK_TCK = 100 // USER_HZ on Linux

function procCpuMs(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK
}

function procRssMb(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Number(m[1]) / 1024 : 0
}

/**
 * Like host.runPlugin, in a locked-down child process. Linux only.
 * Resolves (never rejects) to `{ ok: true, value }` or `{ ok: false, code, ... }`;
 * a protocol violation is `{ ok: false, code: 'ERR_CHILD_PROTOCOL', violation:
 * 'oversized' | 'malformed' | 'unexpected', message }`, counted once as a
 * denial of an unknown capability (`plugin.permission_denied_total{plugin,
 * capability: unknown, reason: unknown_capability}`), as the Deno broker counts
 * a malformed line.
 */
function runPluginProcess(options) {
  const { name, code, policy, meter } = options
  const log = options.log || (() => {})
  const checker = new PermissionChecker(policy, { meter })
  const calls = []
  // Every call the run performs is one of this scope's: bounded together, aborted when the run ends.
  const scope = new RunScope({ maxPendingCalls: options.maxPendingCalls, maxRunBytes: options.maxRunBytes })
  const perform = performers({ checker, secrets: options.secrets || new Map(), bus: options.bus || [], forwardHeaders: options.forwardHeaders, scope })
  const handle = callHandler({ name, checker, perform, calls, log })
  // A clean environment, no inherited handles but the channel, libuv without io_uring.
  const stdio = ['ignore', 'ignore', 'ignore']
  stdio[CHANNEL_FD] = 'pipe'
  // Two modes: the plain child (seccomp only), or `landlock: true`: the
  // asp-landlock launcher applies the manifest's Landlock ruleset before it
  // execs Node, so the kernel walls the child in on every thread it starts.
  const childScript = path.join(__dirname, 'process-child.js')
  let command = process.execPath
  let args = [...EXEC_ARGV, childScript]
  if (options.landlock) {
    const l = landlockCommand(policy.toJSON(), { strict: options.landlock === 'strict', read: [path.join(__dirname)] })
    command = l.command
    args = [...l.args, process.execPath, ...EXEC_ARGV, childScript]
  }
  const child = spawn(command, args, { env: { UV_USE_IO_URING: '0' }, stdio })
  const channel = child.stdio[CHANNEL_FD]
  return new Promise((resolve) => {
    let finished = false
    let state = 'starting'
    let tracker = null
    let timer = null
    let locked = null
    let inFlight = 0
    let startup = null
    const sampleEveryMs = options.sampleEveryMs || 20
    const finish = (result) => {
      if (finished) return
      finished = true
      state = 'done'
      clearInterval(timer)
      clearTimeout(startup)
      decoder.close()
      child.kill('SIGKILL')
      channel.destroy()
      scope.abort()
      endOfCalls(scope).then(() => resolve({ ...result, calls, locked, inFlight: scope.stats, elapsedMs: tracker ? tracker.elapsedMs : 0 }))
    }
    const violation = (kind, detail) => {
      if (finished) return
      // Killed first: nothing the child sent after this is read or performed.
      child.kill('SIGKILL')
      checker.checkCapability('process.ipc', {})
      log(`[${name}] child ${child.pid} killed: IPC ${kind} (${detail})`)
      finish({ ok: false, code: 'ERR_CHILD_PROTOCOL', violation: kind, message: `the plugin's process broke the IPC protocol: ${detail}` })
    }
    const reply = (m) => {
      if (finished) return
      if (channel.writableLength > MAX_UNREAD_REPLY_BYTES) return violation('unexpected', 'answers left unread')
      channel.write(`${JSON.stringify(m)}\n`)
    }
    const decoder = new JsonLineDecoder({ maxLineBytes: MAX_CHILD_LINE_BYTES, shape: CHILD_MESSAGE_SHAPE, validate: childMessageValidator(() => state) })
    const startBudget = () => {
      if (tracker !== null) return
      tracker = new BudgetTracker(policy, {
        meter,
        hooks: { now: () => performance.now(), cpuTimeMs: () => procCpuMs(child.pid), rssMb: () => procRssMb(child.pid) },
      })
      timer = setInterval(checkBudget, sampleEveryMs)
    }
    let lastSample = 0
    const checkBudget = () => {
      if (tracker === null || finished) return
      lastSample = performance.now()
      try {
        tracker.sample()
        tracker.assertWithin()
      } catch (e) {
        if (!isBudgetExceeded(e)) {
          finish({ ok: false, code: 'ERR_SAMPLING', message: String(e.message) })
          return
        }
        log(`[${name}] BUDGET_EXCEEDED ${e.details.budget}: observed ${e.details.observed.toFixed(1)} > limit ${e.details.limit}; child killed`)
        finish({ ok: false, code: e.code, budget: e.details.budget })
      }
    }
    const onMessage = (m) => {
      if (Object.hasOwn(m, 'locked')) {
        state = 'running'
        locked = m.locked
        log(`[${name}] child ${child.pid} locked down (${m.locked.allowed} syscalls allowed, the rest denied, ${m.locked.arch}; Landlock ${m.locked.landlock === null ? 'off' : `ABI ${m.locked.landlock}`})`)
        startBudget()
      } else if (Object.hasOwn(m, 'call')) {
        if (++inFlight > MAX_CALLS_IN_FLIGHT) return violation('unexpected', `more than ${MAX_CALLS_IN_FLIGHT} calls in flight`)
        handle(m.call).then(
          (r) => {
            inFlight--
            if (r) reply({ id: r.id, ok: r.ok, json: r.json })
          },
          (e) => {
            inFlight--
            log(`[${name}] call failed in the host: ${e && e.message}`)
          },
        )
      } else {
        state = 'done'
        finish(m.ok ? { ok: true, value: m.value } : { ok: false, code: m.code, message: m.message })
      }
    }
    channel.on('data', (chunk) => {
      if (finished) return
      // A budget due is judged before more of the child's bytes are.
      if (performance.now() - lastSample >= sampleEveryMs) checkBudget()
      if (finished) return
      // Each message is validated against the state the previous one left.
      const v = decoder.push(chunk, onMessage)
      if (v !== null) return violation(v.kind, v.detail)
      // A flood must not starve the budget: one chunk per turn of the event
      // loop (libuv would otherwise read many in one), and the budget checked
      // here too when its timer is due.
      channel.pause()
      setImmediate(() => finished || channel.resume())
      if (performance.now() - lastSample >= sampleEveryMs) checkBudget()
    })
    channel.on('error', () => {})
    child.on('error', (e) => finish({ ok: false, code: 'ERR_CHILD_START', message: String(e.message) }))
    child.on('exit', (c, signal) => finish({ ok: false, code: 'ERR_CHILD_EXIT', message: `exited ${c ?? signal}` }))
    // A child that never locks down is stopped by the wall-clock budget too.
    startup = setTimeout(() => finish({ ok: false, code: 'ERR_CHILD_START', message: 'the child did not lock down' }), (policy.budgets.wallClockMs || 10_000) + 5_000)
    reply({ start: { name, code, config: options.config || {}, simulateEscape: options.simulateEscape === true } })
  })
}

module.exports = { runPluginProcess }
