'use strict'
// The WASI host's gate, on the host side of the worker boundary: every WASI
// path operation of a guest arrives here as absolute host paths (the worker's
// wrapper joined the guest path to the host directory of its fd) and is
// decided by the package's WASI gate before the real node:wasi call runs.
// Every rule (open flags to mode, which calls follow a final symlink, the
// readings of a path, what a rename or link moves, whether a deny reaches
// below a directory) is the core's, through `WasiGate` of lib/wasi.js; this
// file keeps the host's trace and log. A denial is answered with the WASI
// errno EACCES and counted once in plugin.permission_denied_total.
const { WasiGate: Gate, WASI_CALLS, ERRNO, openMode } = require('../../wasi.js')

class WasiGate {
  /** `checker`: a PermissionChecker built with the host's meter. */
  constructor(checker, { log } = {}) {
    this.checker = checker
    this.gate = new Gate(checker)
    this.log = log || (() => {})
    this.calls = []
    /** Trace entries dropped past `MAX_TRACE` (the oldest first). */
    this.droppedCalls = 0
  }

  /** Appends one trace entry; the trace keeps the newest `MAX_TRACE` (its `what` is already cut by `show`). */
  record(entry) {
    if (this.calls.length >= MAX_TRACE) {
      this.calls.shift()
      this.droppedCalls++
    }
    this.calls.push({ ...entry, what: clip(entry.what) })
  }

  /**
   * A WASI path operation (`op`, its `args` as lib/wasi.js reads them,
   * `what`: the guest's names for the trace), decided by the core; the
   * first denial stops it, counted once. `options.timeLeftMs`: what is left
   * of the wall-clock budget for the host's work. Returns the gate's
   * answer: `{ errno: 0, paths, base? }`, `{ errno: EACCES, capability,
   * reason }`, `{ errno }` (what the runtime itself answers) or
   * `{ errno: EIO, outOfBudget: true }`.
   */
  op(op, args, what, options) {
    const r = this.gate.pathCall(op, args, options)
    const line = `${op} ${show(what.join(' -> '))}`
    if (r.outOfBudget) {
      this.log(`${line} -> stopped: the budget ran out during the host's work`)
      return r
    }
    if (r.capability !== undefined) {
      this.record({ op, capability: r.capability, what: line, allowed: false, reason: r.reason })
      this.log(`${line} -> EACCES (${r.capability} ${r.reason})`)
      return r
    }
    const capability = `fs.${op === 'path_open' ? openMode(args.oflags ?? 0, args.rightsBase ?? 0, args.fdflags ?? 0) : ['path_filestat_get', 'path_readlink'].includes(op) ? 'read' : 'write'}`
    if (r.errno !== ERRNO.SUCCESS) {
      this.record({ op, capability, what: line, allowed: true, errno: r.errno })
      this.log(`${line} -> errno ${r.errno} (not performed)`)
      return r
    }
    this.record({ op, capability, what: line, allowed: true })
    this.log(`${line} -> allowed`)
    return r
  }

  /**
   * An fd-level call (`fd_write`, `fd_readdir`, `fd_filestat_set_times`, ...):
   * `mode` on the path the host recorded for the fd; `resolve`: a directory
   * node:wasi reaches again through its path string (checked as followed,
   * every reading). `capable`: the fd was opened with the call's right
   * (wasi-calls.json `right`); without it the answer is ENOTCAPABLE.
   */
  fd(op, fdPath, mode, capable, what, resolve = false, options = {}) {
    const r = this.gate.fdCall(fdPath, mode, { capable, reread: resolve, ...options })
    const line = `${op} ${JSON.stringify(what)}`
    if (r.capability !== undefined) {
      this.record({ op, capability: r.capability, what: line, allowed: false, reason: r.reason })
      this.log(`${line} -> EACCES (${r.capability} ${r.reason})`)
    }
    return r
  }

  /** The lexical check alone (what the conformance cases specify; path calls add the core's readings and symlink rules). */
  checkLexical(hostPath, mode) {
    return this.checker.checkFs(hostPath, mode)
  }

  /**
   * A host import (`host.fetch`, `host.secret`, `host.publish`): `checkCapability`.
   * Returns the decision; the host answers a denial with EACCES.
   */
  capability(id, payload, what = '') {
    const d = this.checker.checkCapability(id, payload)
    this.record({ op: id, capability: id, what: `${id} ${show(what)}`, allowed: d.allowed, ...(d.allowed ? {} : { reason: d.reason }) })
    this.log(`${id} ${show(what)} -> ${d.allowed ? 'allowed' : `EACCES (${d.reason})`}`)
    return d
  }

  /** The re-check of a fetch's resolved address (DNS rebinding) before connecting. */
  fetchAddress(url, ip) {
    return this.checker.checkFetchAddress(url, ip)
  }
}

/** The trace's bound: entries kept, and bytes of one entry's `what`. */
const MAX_TRACE = 10_000
const MAX_WHAT = 256

/** A trace/log text cut to `MAX_WHAT` UTF-8 bytes (at a character boundary), marked when cut. */
function clip(text) {
  const s = String(text)
  if (s.length <= MAX_WHAT / 4 || Buffer.byteLength(s) <= MAX_WHAT) return s
  let out = ''
  let bytes = 0
  for (const ch of s) {
    const n = Buffer.byteLength(ch)
    if (bytes + n > MAX_WHAT - 3) break
    out += ch
    bytes += n
  }
  return `${out}…`
}

/** A guest value as shown in the trace and the log: JSON, cut (a guest path may be megabytes). */
const show = (w) => clip(JSON.stringify(String(w).slice(0, MAX_WHAT * 2)))

module.exports = { WasiGate, ERRNO, WASI_CALLS }
