'use strict'
// lockdown(): the process tier (SPEC, README "Process tier"). Its errors come
// from Rust with `code` and `details` set (wire.rs `WireError`), decoded by
// lib/native.js: no message is parsed.

const native = require('./native.js')
const errors = require('./errors.js')
const { optionsObject } = require('./options.js')

/**
 * Process tier (Linux x64/arm64): installs a TSYNC seccomp filter on every
 * thread so this process can no longer open files, create sockets, start
 * processes, trace, mount, load BPF, use io_uring or enter namespaces; open
 * descriptors keep working. Irreversible. Refuses (LOCKDOWN_REFUSED) unless
 * the process was started with UV_USE_IO_URING=0 and no io_uring is open;
 * fails closed (LOCKDOWN_FAILED) when seccomp or TSYNC is unavailable; throws
 * ERR_UNSUPPORTED_PLATFORM elsewhere. Returns what was installed.
 */
function lockdown(options) {
  optionsObject(options, 'options')
  if (process.platform !== 'linux' || (process.arch !== 'x64' && process.arch !== 'arm64')) {
    throw new errors.UnsupportedPlatformError({ feature: 'lockdown', platform: `${process.platform}-${process.arch}` })
  }
  return native.deepFreeze(JSON.parse(native.call(native.binding.lockdown)))
}

module.exports = { lockdown }
