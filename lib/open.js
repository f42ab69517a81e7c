'use strict'
// Checked open (`@suaveplan/api-sandbox-permissions/fs`): the fs check and
// the open as one step in the core (src/open.rs `PermissionPolicy::
// open_checked`), run on the libuv thread pool. What comes back is the
// descriptor of exactly the checked real path, owned here by a
// `CheckedFile` (Node 20 cannot wrap a descriptor in an `fs.promises`
// FileHandle, and reopening `/proc/self/fd/N` would open by path again).
// Denials are counted once on the checker's meter, as `assertFs` counts them.

const fs = require('node:fs')
const util = require('node:util')
const native = require('./native.js')
const { checkedOpenGate: gate } = require('./checker.js')
const { describe, securityOptions, acceptedOption } = require('./options.js')
const { redact } = require('./errors.js')

const { binding, OPEN_BITS, FS_BITS, LIMITS, codeOf, Capability, DenyReason } = native
const { policyOpenChecked, rawCheckFs } = binding

/** Every option `openChecked` knows; any other key is a TypeError. */
const OPEN_OPTION_KEYS = Object.freeze(['mode', 'create', 'truncate', 'append', 'exclusive', 'directory', 'permissions'])
/** mode -> [the fs modes it is checked in, in order; its access bits]. */
const MODES = new Map([
  ['read', [Object.freeze(['read']), OPEN_BITS.read]],
  ['write', [Object.freeze(['write']), OPEN_BITS.write]],
  ['readwrite', [Object.freeze(['read', 'write']), OPEN_BITS.read | OPEN_BITS.write]],
])
const FLAG_KEYS = Object.freeze(['create', 'truncate', 'append', 'exclusive', 'directory'])
const INVALID_PATH = { read: codeOf(Capability.FS_READ, DenyReason.INVALID_PATH), write: codeOf(Capability.FS_WRITE, DenyReason.INVALID_PATH) }
const DEFAULT_PERMISSIONS = 0o666
/** The options `undefined` stands for. */
const READ_ONLY = Object.freeze({ modes: MODES.get('read')[0], flags: OPEN_BITS.read, permissions: DEFAULT_PERMISSIONS })

/** The options as `{ modes, flags, permissions }`: JS types only (the core refuses combinations no open can mean). */
function readOptions(options) {
  const opts = securityOptions(options, 'options', OPEN_OPTION_KEYS)
  if (opts === undefined) return READ_ONLY
  const mode = acceptedOption(opts, 'mode', 'options')
  const entry = mode === undefined ? MODES.get('read') : typeof mode === 'string' ? MODES.get(mode) : undefined
  if (entry === undefined) throw new TypeError(`options.mode must be 'read', 'write' or 'readwrite', got ${typeof mode === 'string' ? JSON.stringify(redact(mode)) : describe(mode)}`)
  let flags = entry[1]
  for (const k of FLAG_KEYS) {
    const v = acceptedOption(opts, k, 'options')
    if (v !== undefined && typeof v !== 'boolean') throw new TypeError(`options.${k} must be a boolean, got ${describe(v)}`)
    if (v) flags |= OPEN_BITS[k]
  }
  const permissions = acceptedOption(opts, 'permissions', 'options')
  if (permissions !== undefined && !(Number.isInteger(permissions) && permissions >= 0 && permissions <= 0xffffffff)) {
    throw new TypeError(`options.permissions must be an integer (permission bits such as 0o600), got ${describe(permissions)}`)
  }
  return { modes: entry[0], flags, permissions: permissions === undefined ? DEFAULT_PERMISSIONS : permissions }
}

/** A Node-style system error (`code`, `errno`, `syscall`, `path`) for a positive errno. */
function systemError(errno, syscall, path) {
  const [code, message] = util.getSystemErrorMap().get(-errno) ?? ['UNKNOWN', 'unknown error']
  const shown = redact(path)
  const e = new Error(`${code}: ${message}, ${syscall} '${shown}'`)
  return Object.assign(e, { errno: -errno, code, syscall, path: shown })
}

/** A `CheckedFile` is made here only. */
const KEY = Symbol('CheckedFile')

/** Descriptors of `CheckedFile`s collected without `close()`: closed then, with one warning per process. */
let gcWarned = false
const leaked = new FinalizationRegistry((fd) => {
  fs.close(fd, () => {})
  if (gcWarned) return
  gcWarned = true
  try {
    process.emitWarning('api-sandbox-permissions: a CheckedFile was garbage-collected without close(); its descriptor was closed', { code: 'SAND_PERM_CHECKED_FILE_GC' })
  } catch {}
})

/**
 * An open descriptor of the file a checked open checked, and its checked
 * real path. Methods mirror `fs.promises.FileHandle`; an operation in flight
 * holds the descriptor open, so `close()` waits for it and no operation ever
 * reaches a reused descriptor number. A `CheckedFile` collected without
 * `close()` has its descriptor closed (with a process warning).
 */
class CheckedFile {
  #fd
  #path
  #pending = 0
  /** The close promise, once `close()` was called. */
  #closing = null
  #settleClose = null

  constructor(key, fd, path) {
    if (key !== KEY) throw new TypeError('a CheckedFile comes from openChecked()')
    this.#fd = fd
    this.#path = path
    leaked.register(this, fd, this)
  }

  /** The descriptor number while open; -1 once `close()` was called. Do not close it yourself: call `close()`. */
  get fd() {
    return this.#closing === null ? this.#fd : -1
  }

  /** The real path that was checked and opened. */
  get path() {
    return this.#path
  }

  /**
   * Calls `fs[name](fd, ...args, callback)` holding the descriptor open
   * (EBADF once closing); resolves to `shape(...results)`.
   */
  #call(syscall, name, args, shape) {
    if (this.#closing !== null) return Promise.reject(systemError(9, syscall, this.#path))
    this.#pending++
    return new Promise((resolve, reject) => {
      const done = (err, a, b) => {
        if (--this.#pending === 0 && this.#settleClose !== null) this.#settleClose()
        if (err) reject(err)
        else resolve(shape(a, b))
      }
      try {
        fs[name](this.#fd, ...args, done)
      } catch (e) {
        done(e)
      }
    })
  }

  /** Reads into `buffer` (one read(2)): `{ bytesRead, buffer }`. `position` null or omitted: the current position. */
  read(buffer, offset = 0, length, position = null) {
    const len = length === undefined && ArrayBuffer.isView(buffer) ? buffer.byteLength - offset : length
    return this.#call('read', 'read', [buffer, offset, len, position], (bytesRead) => ({ bytesRead, buffer }))
  }

  /**
   * Writes (one write(2)): `write(buffer, offset?, length?, position?)` or
   * `write(string, position?, encoding?)`, as `fs.write`. `{ bytesWritten, buffer }`.
   */
  write(data, ...args) {
    return this.#call('write', 'write', [data, ...args], (bytesWritten, buffer) => ({ bytesWritten, buffer }))
  }

  /** Reads from the current position to the end: a Buffer, or a string with `{ encoding }`. */
  readFile(options) {
    return this.#call('read', 'readFile', [options], (data) => data)
  }

  /** Writes all of `data` from the current position (`fs.writeFile` on the descriptor). */
  writeFile(data, options) {
    return this.#call('write', 'writeFile', [data, options], () => undefined)
  }

  /** `fs.Stats` of the open file. */
  stat(options) {
    return this.#call('fstat', 'fstat', [options], (st) => st)
  }

  /** Truncates (or extends) to `len` bytes (default 0); needs the file open for writing. */
  truncate(len = 0) {
    return this.#call('ftruncate', 'ftruncate', [len], () => undefined)
  }

  /** Flushes the file to storage (fsync). */
  sync() {
    return this.#call('fsync', 'fsync', [], () => undefined)
  }

  /** Closes the descriptor once the operations in flight end; later calls return the same promise. */
  close() {
    if (this.#closing === null) {
      leaked.unregister(this)
      const fd = this.#fd
      this.#closing = new Promise((resolve, reject) => {
        this.#settleClose = () => fs.close(fd, (err) => (err ? reject(err) : resolve()))
      })
      if (this.#pending === 0) this.#settleClose()
    }
    return this.#closing
  }
}

/**
 * Checks `path` with `checker` (symlinks resolved, deny rules included, every
 * mode the open needs) and opens exactly the checked real path, in one step
 * in the core: beneath the grant's literal root, never through a symlink, a
 * `..` or a magic link (Linux `openat2`; a component walk with `O_NOFOLLOW`
 * elsewhere), verified after the open. Resolves to a `CheckedFile`; a
 * denial rejects with `PERMISSION_DENIED`, counted once on the checker's
 * meter; a failed open rejects with a Node-style system error (`ENOENT`, ...).
 *
 * @param {import('./checker.js').PermissionChecker} checker
 * @param {string} path
 * @param {{ mode?: 'read' | 'write' | 'readwrite', create?: boolean, truncate?: boolean, append?: boolean, exclusive?: boolean, directory?: boolean, permissions?: number }} [options]
 */
async function openChecked(checker, path, options) {
  const handle = gate.handle(checker)
  if (typeof path !== 'string') throw new TypeError(`path must be a string, got ${describe(path)}`)
  const { modes, flags, permissions } = readOptions(options)
  // A path the copy to the core cannot carry whole: the core's own refusal
  // from the raw copy helper (over the limit), or invalid (lone surrogates).
  if (path.length > LIMITS.maxPathBytes || !path.isWellFormed()) {
    const raw = path.length > LIMITS.maxPathBytes ? rawCheckFs(handle, path, modes[0] === 'write' ? FS_BITS.write : 0) : 0
    throw gate.settle(checker, path, modes, raw !== 0 ? raw : INVALID_PATH[modes[0]])
  }
  const v = await native.call(policyOpenChecked, handle, path, flags, permissions)
  // The descriptor is owned from here: wrapped before anything else can throw.
  const file = typeof v.fd === 'number' ? new CheckedFile(KEY, v.fd, v.path) : undefined
  const denied = gate.settle(checker, path, modes, v.code)
  if (denied !== undefined) throw denied
  if (file === undefined) throw systemError(typeof v.errno === 'number' ? v.errno : 5, 'open', path)
  return file
}

module.exports = { openChecked, CheckedFile, OPEN_OPTION_KEYS }
