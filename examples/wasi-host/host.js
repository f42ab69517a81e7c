'use strict'
// The WASI host: a guest (a WASI preview1 module) runs in a worker_threads
// Worker under node:wasi (worker.js); every path operation and every host
// import it makes comes here by a synchronous call and is checked with the
// package before it runs; its wall-clock and CPU budgets are enforced from
// here with a BudgetTracker and worker.terminate().
const path = require('node:path')
const { Worker } = require('node:worker_threads')
const { PermissionChecker, BudgetTracker, isBudgetExceeded, isPermissionDenied } = require('../..')
const { performers } = require('../vm-host/host.js')
const { WasiGate, ERRNO } = require('./gate.js')

const ANSWER_BYTES = 256 * 1024
/** The host imports a guest may call, by capability id. */
const HOST_IMPORTS = new Set(['fetch', 'secrets.get', 'events.publish'])

let wabt = null
/**
 * WebAssembly text to a binary module, with the `wabt` toolkit (wabt compiled
 * to JS). `features`: wabt feature flags (e.g. `{ multi_memory: true }`).
 */
async function assembleWat(text, filename = 'guest.wat', features = {}) {
  if (wabt === null) wabt = await require('wabt')()
  const m = wabt.parseWat(filename, text, features)
  try {
    m.resolveNames()
    m.validate(features)
    return Buffer.from(m.toBinary({}).buffer)
  } finally {
    m.destroy()
  }
}

/**
 * The host's budget tracker: the package's BudgetTracker over the given hooks
 * (the host passes the worker's clock and CPU hooks; the conformance adapter the harness's).
 */
function wasiBudgetTracker(policy, { meter, hooks, cpuGraceMs, unmeasured } = {}) {
  const options = { meter, hooks }
  if (cpuGraceMs !== undefined) options.cpuGraceMs = cpuGraceMs
  if (unmeasured !== undefined) options.unmeasured = unmeasured
  return new BudgetTracker(policy, options)
}

/**
 * Runs one WASI guest as one request.
 * options: { name, wasm (bytes), policy, preopens: { [guestDir]: hostDir }, args?: string[],
 *            secrets?: Map, bus?: [], meter?, log?(line), sampleEveryMs? }
 * Resolves to { ok, code?, budget?, value?, calls, reports, elapsedMs }.
 */
function runWasiPlugin(options) {
  const { name, wasm, policy, meter } = options
  if (policy.budgets.memoryMb !== undefined) {
    // worker resourceLimits bound the JS heap, not a guest's linear memory, and
    // this host has no sampler for it: refuse rather than leave it unenforced.
    throw new TypeError('the Node WASI host cannot enforce a memoryMb budget on a guest\'s linear memory; run the guest under the Rust host (StoreLimits) or drop memoryMb')
  }
  const log = options.log || (() => {})
  const checker = new PermissionChecker(policy, { meter })
  const gate = new WasiGate(checker, { log: (line) => log(`[${name}] ${line}`) })
  const perform = performers({ checker, secrets: options.secrets || new Map(), bus: options.bus || [] })
  const reports = []
  const sab = new SharedArrayBuffer(8 + ANSWER_BYTES)
  const header = new Int32Array(sab, 0, 2)
  const answerBytes = new Uint8Array(sab, 8)
  const preopens = Object.entries(options.preopens || {})
  const worker = new Worker(path.join(__dirname, 'worker.js'), {
    workerData: { wasm, preopens, args: options.args || [name], sab },
    env: {},
    stdout: true,
    stderr: true,
  })
  const answer = (value) => {
    const b = Buffer.from(JSON.stringify(value), 'utf8')
    const fits = b.length <= ANSWER_BYTES ? b : Buffer.from(JSON.stringify({ errno: ERRNO.IO }), 'utf8')
    answerBytes.set(fits)
    Atomics.store(header, 1, fits.length)
    Atomics.store(header, 0, 1)
    Atomics.notify(header, 0)
  }

  /** Starts the budget (set below, where the tracker lives); false when the run is over. */
  let onStart = () => false
  /**
   * What the host's work on one call may take: what is left of the
   * wall-clock budget (a hair past it, so the tracker sees the breach when
   * the gate stops), so no call holds the guest past its budget (set below).
   */
  let budgetOptions = () => ({})
  /** The gate stopped a call at the budget: the run ends with the breach (set below). */
  let onOutOfBudget = () => {}
  async function serve(req) {
    if (req.kind === 'start') {
      // The worker is about to instantiate the guest (a `start` function runs
      // there): the budget runs from now, before the worker goes on.
      return { errno: onStart() ? ERRNO.SUCCESS : ERRNO.IO }
    }
    if (req.kind === 'fd' || req.kind === 'fs') {
      const r = req.kind === 'fd' ? gate.fd(req.op, req.path, req.mode, req.capable === true, req.what, req.resolve === true, budgetOptions()) : gate.op(req.op, req.args, req.what, budgetOptions())
      if (r.outOfBudget) onOutOfBudget()
      return r
    }
    if (req.kind === 'capability' && HOST_IMPORTS.has(req.capability)) {
      const p = req.payload
      const d = gate.capability(req.capability, p, p.url ?? p.name ?? p.topic)
      if (!d.allowed) return { errno: ERRNO.ACCES, reason: d.reason }
      try {
        // The performers open/fetch exactly what was checked (authorizeFetch, the
        // resolved address and every redirect hop re-checked).
        return { errno: ERRNO.SUCCESS, value: await perform[req.capability](p) }
      } catch (e) {
        if (isPermissionDenied(e)) return { errno: ERRNO.ACCES, reason: e.details.reason }
        log(`[${name}] ${req.capability} failed: ${e && e.message}`)
        return { errno: ERRNO.IO }
      }
    }
    return { errno: ERRNO.INVAL }
  }

  return new Promise((resolve) => {
    let finished = false
    let tracker = null
    let timer = null
    let startup = null
    const finish = (result) => {
      if (finished) return
      finished = true
      clearInterval(timer)
      clearTimeout(startup)
      worker.terminate().then(() => resolve({ ...result, calls: gate.calls, reports, elapsedMs: tracker ? tracker.elapsedMs : 0 }))
    }
    // The budget starts when the guest is instantiated (after compilation,
    // before a `start` function can run: the worker's `start` rpc). CPU: the
    // worker's event-loop active time, which a guest that never yields keeps
    // at 100% (an upper bound of its thread's CPU time), less the time the
    // guest spent waiting in host calls (Atomics.wait is "active" too) that
    // the host spent idle: the CPU the host spends serving a call (a gate
    // check, a symlink chain) is the guest's, as in the Rust host, where it
    // runs on the guest's thread. The process CPU during a call is the host's
    // upper bound (the worker is blocked), so less is subtracted, never more.
    let hostCallMs = 0
    let callStart = null
    let callCpu = null
    const cpuMsSince = (c) => {
      const d = process.cpuUsage(c)
      return (d.user + d.system) / 1000
    }
    const idleIn = (start, cpu) => Math.max(0, performance.now() - start - cpuMsSince(cpu))
    let lastCpu = 0
    const guestActiveMs = () => {
      const v = worker.performance.eventLoopUtilization().active - hostCallMs - (callStart === null ? 0 : idleIn(callStart, callCpu))
      lastCpu = Math.max(lastCpu, v) // cumulative: never decreases
      return lastCpu
    }
    let budgetStart = 0
    const startBudget = () => {
      try {
        budgetStart = performance.now()
        tracker = wasiBudgetTracker(policy, { meter, hooks: { now: () => performance.now(), cpuTimeMs: guestActiveMs } })
      } catch (e) {
        return finish({ ok: false, code: e.code || 'ERR_BUDGET_TRACKER', message: String(e.message) })
      }
      timer = setInterval(() => {
        try {
          tracker.sample()
          tracker.assertWithin()
        } catch (e) {
          // Fail closed: a breach, or a sample the tracker refuses, ends the guest.
          if (isBudgetExceeded(e)) log(`[${name}] BUDGET_EXCEEDED ${e.details.budget}: observed ${e.details.observed.toFixed(1)} > limit ${e.details.limit}; worker terminated`)
          finish(isBudgetExceeded(e) ? { ok: false, code: e.code, budget: e.details.budget } : { ok: false, code: e.code || 'ERR_BUDGET_TRACKER', message: String(e.message) })
        }
      }, options.sampleEveryMs || 10)
    }
    const wall = policy.budgets.wallClockMs
    if (wall !== undefined) budgetOptions = () => ({ timeLeftMs: wall + 1 - (performance.now() - budgetStart) })
    onOutOfBudget = () => {
      // The tracker's clock started a hair after `budgetStart`: give it a few ms to see the breach.
      const nap = new Int32Array(new SharedArrayBuffer(4))
      for (let i = 0; i < 1000 && !finished && tracker !== null; i++) {
        try {
          tracker.sample()
          tracker.assertWithin()
        } catch (e) {
          if (isBudgetExceeded(e)) log(`[${name}] BUDGET_EXCEEDED ${e.details.budget} during a host call; worker terminated`)
          return finish(isBudgetExceeded(e) ? { ok: false, code: e.code, budget: e.details.budget } : { ok: false, code: e.code || 'ERR_BUDGET_TRACKER', message: String(e.message) })
        }
        Atomics.wait(nap, 0, 0, 1)
      }
      finish({ ok: false, code: 'ERR_BUDGET_TRACKER', message: 'the gate ran out of budget but the tracker saw no breach' })
    }
    onStart = () => {
      if (tracker === null && !finished) startBudget()
      return tracker !== null && !finished
    }
    startup = setTimeout(() => finish({ ok: false, code: 'ERR_WORKER_START', message: 'worker did not start' }), (policy.budgets.wallClockMs || 10_000) + 10_000)
    worker.on('message', (m) => {
      if (m && m.rpc) {
        callStart = performance.now()
        callCpu = process.cpuUsage()
        const done = () => {
          hostCallMs += idleIn(callStart, callCpu)
          callStart = null
        }
        serve(m.rpc).then(
          (v) => {
            done()
            answer(v)
          },
          (e) => {
            done()
            answer({ errno: ERRNO.IO })
            log(`[${name}] host error: ${e && e.message}`)
          },
        )
      } else if (m && m.report) {
        reports.push(m.report)
      } else if (m && m.ready) {
        // The budget started before instantiation (the `start` rpc).
      } else if (m && m.done) finish(m.ok ? { ok: true, value: m.value } : { ok: false, code: m.code || 'ERR_WASI_EXIT', message: m.message || `exit code ${m.value}` })
    })
    worker.on('error', (e) => finish({ ok: false, code: e.code || 'ERR_WORKER', message: String(e.message) }))
    worker.on('exit', () => finish({ ok: false, code: 'ERR_WORKER_EXIT', message: 'worker exited' }))
  })
}

module.exports = { runWasiPlugin, assembleWat, wasiBudgetTracker, WasiGate }
