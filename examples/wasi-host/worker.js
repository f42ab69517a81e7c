'use strict'
// The worker side of the WASI host: the guest runs here under node:wasi
// (preview1). Every path-taking WASI import is wrapped: the guest's path is
// read from its memory, joined to the host directory of its fd (preopens and
// directories it opened), and sent to the host's gate (gate.js) by a
// synchronous call; only an allowed call reaches the real node:wasi
// function. The host imports (`host.fetch`, `host.secret`, `host.publish`)
// go through the host's checkCapability the same way.
const { parentPort, workerData } = require('node:worker_threads')
const { WASI } = require('node:wasi')
const fs = require('node:fs')
const os = require('node:os')

const ERRNO = { SUCCESS: 0, ACCES: 2, BADF: 8, FAULT: 21, ILSEQ: 25, INVAL: 28, IO: 29 }
const { wasm, preopens, args, sab } = workerData

// Synchronous calls to the host: post the request, block on the shared
// buffer until the host has written the JSON answer.
const header = new Int32Array(sab, 0, 2)
const answer = new Uint8Array(sab, 8)
// ignoreBOM: a leading U+FEFF is part of the name (TextDecoder would drop it, and
// the gate would check another path than the runtime, which reads the bytes).
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
const encoder = new TextEncoder()
function call(req) {
  Atomics.store(header, 0, 0)
  parentPort.postMessage({ rpc: req })
  while (Atomics.wait(header, 0, 0, 1000) === 'timed-out');
  return JSON.parse(Buffer.from(answer.subarray(0, header[1])).toString('utf8'))
}

let memory = null
class Fault extends Error {
  constructor(errno) {
    super(`wasi errno ${errno}`)
    this.errno = errno
  }
}
function bytes(ptr, len) {
  ptr >>>= 0
  len >>>= 0
  if (ptr + len > memory.buffer.byteLength) throw new Fault(ERRNO.FAULT)
  return new Uint8Array(memory.buffer, ptr, len)
}
function str(ptr, len) {
  try {
    return decoder.decode(bytes(ptr, len))
  } catch (e) {
    throw e instanceof Fault ? e : new Fault(ERRNO.ILSEQ)
  }
}
function put(ptr, cap, data) {
  const n = Math.min(cap >>> 0, data.length)
  bytes(ptr, n).set(data.subarray(0, n))
  return n
}
const u32 = (ptr, v) => new DataView(memory.buffer).setUint32(bytes(ptr, 4).byteOffset, v >>> 0, true)

// What the host recorded for each fd the guest holds: stdio 0-2 (the null
// device, passed through), preopens from 3 in order (how node:wasi numbers
// them: their real directory, their mode the grant's, re-checked per call,
// every right), then what path_open returns (the real path that was checked,
// and the rights it was opened with). An fd not in this table is not open: EBADF.
const fds = new Map([0, 1, 2].map((fd) => [fd, { stdio: true }]))
preopens.forEach(([, host], i) => {
  let real = host
  try {
    real = fs.realpathSync.native(host)
  } catch {}
  // node:wasi keeps a preopen as this path string and reaches it again
  // through the string on every call: a directory inside another preopen can
  // be replaced by a symlink after the start, so fd-level calls on a preopen
  // are checked on the string, resolved, each time (as for directory fds).
  fds.set(3 + i, { path: real, base: real, dir: true, rights: null })
})
function hostPath(fd, guestPath) {
  const e = fds.get(fd >>> 0)
  if (e === undefined || e.stdio) throw new Fault(ERRNO.BADF)
  // An absolute guest path is checked as the host path it names (the runtime
  // refuses it anyway); a relative one is joined raw, `..` and all, so the
  // checker sees the traversal.
  return guestPath.startsWith('/') ? guestPath : `${e.base ?? e.path}/${guestPath}`
}

// The guest's stdio is the null device: node:wasi would otherwise hand it the
// process's own fds 0-2 (a host that wants its output passes a pipe instead).
const devNull = fs.openSync(os.devNull, 'r+')
const wasi = new WASI({ version: 'preview1', args, env: {}, preopens: Object.fromEntries(preopens), returnOnExit: true, stdin: devNull, stdout: devNull, stderr: devNull })
const real = wasi.wasiImport

/** Gate one path operation; returns the errno to give the guest, or null to go on. */
function gate(op, a, what) {
  const r = call({ kind: 'fs', op, args: a, what })
  return r.errno === ERRNO.SUCCESS ? r : r.errno
}

function guarded(fn) {
  return (...argv) => {
    try {
      return fn(...argv)
    } catch (e) {
      if (e instanceof Fault) return e.errno
      throw e
    }
  }
}

// Allowed fd-level checks, cached per fd entry and mode (the policy is
// immutable and the entry's path fixed); denials are asked again, so each counts.
const fdAllowed = new WeakMap()
/** Gate an fd-level call (wasi-calls.json gate "fd"): returns the errno to give, or null to go on. */
function gateFd(op, spec, fd) {
  const e = fds.get(fd >>> 0)
  if (e === undefined) return ERRNO.BADF
  if (e.stdio) return null
  const seen = fdAllowed.get(e) || new Set()
  if (seen.has(op)) return null
  const capable = e.rights === null || (e.rights & (1n << BigInt(spec.right))) !== 0n
  // A directory opened by path_open is re-read by node:wasi from its path
  // string: checked on that string, resolved, every time (never cached).
  const resolve = e.base !== undefined
  const r = call({ kind: 'fd', op, path: resolve ? e.base : e.path, resolve, mode: spec.mode, capable, what: `fd ${fd >>> 0}` })
  if (r.errno !== ERRNO.SUCCESS) return r.errno
  if (resolve) return null
  seen.add(op)
  fdAllowed.set(e, seen)
  return null
}

// The core's call table (data/wasi-calls.json), through the package.
const { WASI_CALLS: CALLS } = require('../../wasi.js')
const pathCalls = {
  path_open: guarded((fd, dirflags, p, l, oflags, rightsBase, rightsInheriting, fdflags, fdOut) => {
    const guest = str(p, l)
    const r = gate('path_open', { path: hostPath(fd, guest), dirflags: dirflags >>> 0, oflags: oflags >>> 0, rightsBase: BigInt.asUintN(64, BigInt(rightsBase)).toString(), fdflags: fdflags >>> 0 }, [guest])
    if (typeof r === 'number') return r
    const errno = real.path_open(fd, dirflags, p, l, oflags, rightsBase, rightsInheriting, fdflags, fdOut)
    // The new fd: the path that was checked (its real path), and, for a
    // directory, the path string node:wasi keeps for it (`base`): uvwasi
    // resolves later calls through the directory from that string again, so a
    // symlink swapped on it after the open changes what they reach. Later path
    // calls are joined to `base` and checked as the kernel will resolve them;
    // fd-level calls on a directory are checked on `base`, resolved, each time.
    if (errno === ERRNO.SUCCESS) {
      let dir = false
      try {
        dir = fs.statSync(r.paths[0]).isDirectory()
      } catch {}
      fds.set(new DataView(memory.buffer).getUint32(fdOut >>> 0, true), { path: r.paths[0], base: dir ? r.base : undefined, dir, rights: BigInt.asUintN(64, BigInt(rightsBase)) })
    }
    return errno
  }),
  fd_close: guarded((fd) => {
    const errno = real.fd_close(fd)
    if (errno === ERRNO.SUCCESS) fds.delete(fd >>> 0)
    return errno
  }),
  fd_renumber: guarded((from, to) => {
    const errno = real.fd_renumber(from, to)
    if (errno === ERRNO.SUCCESS && from >>> 0 !== to >>> 0) {
      if (fds.has(from >>> 0)) fds.set(to >>> 0, fds.get(from >>> 0))
      else fds.delete(to >>> 0)
      fds.delete(from >>> 0)
    }
    return errno
  }),
  path_filestat_get: guarded((fd, flags, p, l, buf) => {
    const guest = str(p, l)
    const r = gate('path_filestat_get', { path: hostPath(fd, guest), flags: flags >>> 0 }, [guest])
    return typeof r === 'number' ? r : real.path_filestat_get(fd, flags, p, l, buf)
  }),
  path_filestat_set_times: guarded((fd, flags, p, l, atim, mtim, fstFlags) => {
    const guest = str(p, l)
    const r = gate('path_filestat_set_times', { path: hostPath(fd, guest), flags: flags >>> 0 }, [guest])
    return typeof r === 'number' ? r : real.path_filestat_set_times(fd, flags, p, l, atim, mtim, fstFlags)
  }),
  path_create_directory: guarded((fd, p, l) => {
    const guest = str(p, l)
    const r = gate('path_create_directory', { path: hostPath(fd, guest) }, [guest])
    return typeof r === 'number' ? r : real.path_create_directory(fd, p, l)
  }),
  path_remove_directory: guarded((fd, p, l) => {
    const guest = str(p, l)
    const r = gate('path_remove_directory', { path: hostPath(fd, guest) }, [guest])
    return typeof r === 'number' ? r : real.path_remove_directory(fd, p, l)
  }),
  path_unlink_file: guarded((fd, p, l) => {
    const guest = str(p, l)
    const r = gate('path_unlink_file', { path: hostPath(fd, guest) }, [guest])
    return typeof r === 'number' ? r : real.path_unlink_file(fd, p, l)
  }),
  path_readlink: guarded((fd, p, l, buf, bufLen, used) => {
    const guest = str(p, l)
    const r = gate('path_readlink', { path: hostPath(fd, guest) }, [guest])
    return typeof r === 'number' ? r : real.path_readlink(fd, p, l, buf, bufLen, used)
  }),
  path_rename: guarded((fd, op, ol, newFd, np, nl) => {
    const from = str(op, ol)
    const to = str(np, nl)
    const r = gate('path_rename', { oldPath: hostPath(fd, from), newPath: hostPath(newFd, to) }, [from, to])
    return typeof r === 'number' ? r : real.path_rename(fd, op, ol, newFd, np, nl)
  }),
  path_link: guarded((fd, oldFlags, op, ol, newFd, np, nl) => {
    // (Lookup flags the table refuses, EINVAL, are the gate's answer too.)
    const from = str(op, ol)
    const to = str(np, nl)
    const r = gate('path_link', { oldPath: hostPath(fd, from), oldFlags: oldFlags >>> 0, newPath: hostPath(newFd, to) }, [from, to])
    return typeof r === 'number' ? r : real.path_link(fd, oldFlags, op, ol, newFd, np, nl)
  }),
  path_symlink: guarded((tp, tl, fd, np, nl) => {
    const target = str(tp, tl)
    const link = str(np, nl)
    const r = gate('path_symlink', { target, newPath: hostPath(fd, link) }, [link, target])
    return typeof r === 'number' ? r : real.path_symlink(tp, tl, fd, np, nl)
  }),
}

// poll_oneoff: node:wasi blocks natively for a clock subscription, and
// worker.terminate() waits for that sleep to end, so a guest asking for an
// hour (or 2^64 ns) would outlive its wall-clock budget. A poll made only of
// clock subscriptions (the only ones that can block here: stdio is the null
// device, files are always ready) is waited out in this thread instead, in
// slices the host's budget watchdog can end, and its events are written as
// the runtime writes them. Anything else goes to the runtime, which returns at once.
const SUBSCRIPTION = 48
const EVENT = 32
const SLICE_MS = 25
const sleeper = new Int32Array(new SharedArrayBuffer(4))
function pollOneoff(inPtr, outPtr, n, neventsPtr) {
  n >>>= 0
  if (n === 0) return real.poll_oneoff(inPtr, outPtr, n, neventsPtr)
  const subs = bytes(inPtr, n * SUBSCRIPTION)
  bytes(outPtr, n * EVENT)
  bytes(neventsPtr, 4)
  const view = new DataView(subs.buffer, subs.byteOffset, subs.byteLength)
  const now = { 0: () => BigInt(Date.now()) * 1_000_000n, 1: () => process.hrtime.bigint() }
  const clocks = []
  for (let i = 0; i < n; i++) {
    const at = i * SUBSCRIPTION
    const tag = view.getUint8(at + 8)
    const id = view.getUint32(at + 16, true)
    if (tag !== 0) return real.poll_oneoff(inPtr, outPtr, n, neventsPtr)
    // Clocks other than realtime and monotonic (the CPU-time clocks): EINVAL,
    // as wasmtime answers; node:wasi would sleep on them natively.
    if (!(id in now)) return ERRNO.INVAL
    const timeout = view.getBigUint64(at + 24, true)
    const absolute = (view.getUint16(at + 40, true) & 1) !== 0
    // Each deadline on the monotonic clock, in ns.
    const left = absolute ? timeout - now[id]() : timeout
    clocks.push({ userdata: view.getBigUint64(at, true), deadline: process.hrtime.bigint() + (left > 0n ? left : 0n) })
  }
  const first = clocks.reduce((a, c) => (c.deadline < a ? c.deadline : a), clocks[0].deadline)
  for (;;) {
    const leftNs = first - process.hrtime.bigint()
    if (leftNs <= 0n) break
    Atomics.wait(sleeper, 0, 0, Math.max(1, Math.min(SLICE_MS, Number(leftNs / 1_000_000n) + 1)))
  }
  const out = new DataView(memory.buffer)
  const t = process.hrtime.bigint()
  let k = 0
  for (const c of clocks) {
    if (c.deadline > t) continue
    const at = (outPtr >>> 0) + k * EVENT
    new Uint8Array(memory.buffer, at, EVENT).fill(0)
    out.setBigUint64(at, c.userdata, true) // userdata; error 0; type 0 (clock)
    k++
  }
  u32(neventsPtr, k)
  return ERRNO.SUCCESS
}
pathCalls.poll_oneoff = guarded(pollOneoff)

// Only what wasi-calls.json classifies is linked: an import the runtime has and
// the table does not name is left out, so a guest importing it fails to link.
const wrapped = {}
for (const [name, spec] of Object.entries(CALLS)) {
  if (typeof real[name] !== 'function') continue
  if (spec.gate === 'none') wrapped[name] = pathCalls[name] || real[name]
  else if (spec.gate === 'path') wrapped[name] = pathCalls[name]
  else if (spec.gate === 'fd') wrapped[name] = guarded((fd, ...rest) => gateFd(name, spec, fd) ?? real[name](fd, ...rest))
  else if (spec.gate === 'refuse') wrapped[name] = () => spec.errno
  if (typeof wrapped[name] !== 'function') throw new TypeError(`wasi-calls.json: no gate for ${name} (${spec.gate})`)
}

// The host imports: capability calls, checked by the host with checkCapability.
const host = {
  fetch: guarded((up, ul, out, cap, statusOut, lenOut) => {
    const r = call({ kind: 'capability', capability: 'fetch', payload: { url: str(up, ul) } })
    if (r.errno !== ERRNO.SUCCESS) return r.errno
    u32(statusOut, r.value.status)
    u32(lenOut, put(out, cap, encoder.encode(r.value.body)))
    return ERRNO.SUCCESS
  }),
  secret: guarded((np, nl, out, cap, lenOut) => {
    const r = call({ kind: 'capability', capability: 'secrets.get', payload: { name: str(np, nl) } })
    if (r.errno !== ERRNO.SUCCESS) return r.errno
    u32(lenOut, put(out, cap, encoder.encode(r.value)))
    return ERRNO.SUCCESS
  }),
  publish: guarded((tp, tl, dp, dl) => {
    const r = call({ kind: 'capability', capability: 'events.publish', payload: { topic: str(tp, tl), data: str(dp, dl) } })
    return r.errno
  }),
  report: guarded((tp, tl, value) => {
    parentPort.postMessage({ report: { tag: str(tp, tl), value } })
  }),
}

async function main() {
  const module = await WebAssembly.compile(wasm)
  // Budgets run from instantiation: a `start` function runs inside
  // WebAssembly.instantiate, so the host's tracker (and its watchdog, which can
  // terminate this worker) is running before it, acknowledged synchronously.
  if (call({ kind: 'start' }).errno !== ERRNO.SUCCESS) throw new Error('the host did not start the budget')
  const instance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: wrapped, host })
  memory = instance.exports.memory
  parentPort.postMessage({ ready: true })
  const exitCode = wasi.start(instance)
  parentPort.postMessage({ done: true, ok: exitCode === 0, value: exitCode })
}
main().catch((e) => parentPort.postMessage({ done: true, ok: false, code: 'ERR_WASI_GUEST', message: String(e && e.message) }))
