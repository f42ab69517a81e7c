'use strict'
// The process tier of the example host: the plugin runs in a forked child
// that calls lockdown() (seccomp) before running plugin code, so even code
// that escapes the vm.Context and reaches `process` cannot open files,
// connect or spawn. The parent validates every message, checks every call,
// performs the I/O, and enforces the budgets from outside (wall clock, CPU
// from /proc/<pid>/stat, RSS from /proc/<pid>/status), killing the child on
// BUDGET_EXCEEDED.
const fs = require('node:fs')
const path = require('node:path')
const { fork } = require('node:child_process')
const { PermissionChecker, BudgetTracker, isBudgetExceeded } = require('../..')
const { callHandler, performers } = require('./host.js')

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

/** Like host.runPlugin, in a locked-down child process. Linux only. */
function runPluginProcess(options) {
  const { name, code, policy, meter } = options
  const log = options.log || (() => {})
  const checker = new PermissionChecker(policy, { meter })
  const calls = []
  const perform = performers({ checker, secrets: options.secrets || new Map(), bus: options.bus || [], forwardHeaders: options.forwardHeaders })
  const handle = callHandler({ name, checker, perform, calls, log })
  // A clean environment, no inherited handles, libuv without io_uring.
  const child = fork(path.join(__dirname, 'process-child.js'), [], {
    env: { UV_USE_IO_URING: '0' },
    execArgv: [],
    stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    serialization: 'json',
  })
  return new Promise((resolve) => {
    let finished = false
    let tracker = null
    let timer = null
    let locked = null
    const finish = (result) => {
      if (finished) return
      finished = true
      clearInterval(timer)
      child.kill('SIGKILL')
      resolve({ ...result, calls, locked, elapsedMs: tracker ? tracker.elapsedMs : 0 })
    }
    child.on('message', async (m) => {
      // Validate every message: an object of a known shape, bounded in size.
      if (m === null || typeof m !== 'object' || JSON.stringify(m).length > 1 << 20) return
      if (typeof m.call === 'string') {
        const r = await handle(m.call)
        if (r && !finished) child.send({ id: r.id, ok: r.ok, json: r.json })
      } else if (m.locked && tracker === null) {
        locked = m.locked
        log(`[${name}] child ${child.pid} locked down (${m.locked.denied} syscalls denied, ${m.locked.arch})`)
        tracker = new BudgetTracker(policy, {
          meter,
          hooks: { now: () => performance.now(), cpuTimeMs: () => procCpuMs(child.pid), rssMb: () => procRssMb(child.pid) },
        })
        timer = setInterval(() => {
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
        }, options.sampleEveryMs || 20)
      } else if (m.done === true) {
        finish(m.ok ? { ok: true, value: m.value } : { ok: false, code: m.code, message: m.message })
      }
    })
    child.on('exit', (code, signal) => finish({ ok: false, code: 'ERR_CHILD_EXIT', message: `exited ${code ?? signal}` }))
    child.send({ name, code, config: options.config || {}, simulateEscape: options.simulateEscape === true })
  })
}

module.exports = { runPluginProcess }
