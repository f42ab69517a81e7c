'use strict'
// lockdown(): the process tier (SPEC, docs/process-tier.md). Its errors come
// from Rust with `code` and `details` set (wire.rs `WireError`), decoded by
// lib/native.js: no message is parsed. landlockCommand(): the argv of the
// asp-landlock launcher, which applies the manifest's Landlock ruleset before
// exec (Landlock ABI <= 7 cannot confine a Node process that already runs threads).

const fs = require('node:fs')
const path = require('node:path')
const native = require('./native.js')
const errors = require('./errors.js')
const { securityOptions, securityOption } = require('./options.js')

function linuxOrThrow(feature) {
  if (process.platform !== 'linux' || (process.arch !== 'x64' && process.arch !== 'arm64')) {
    throw new errors.UnsupportedPlatformError({ feature, platform: `${process.platform}-${process.arch}` })
  }
}

function oneOf(options, key, values, what) {
  const v = securityOption(options, key, what)
  if (v === undefined) return values[0]
  if (!values.includes(v)) throw new TypeError(`${what}.${key} must be one of ${values.map((x) => `'${x}'`).join(', ')}, got ${typeof v === 'string' ? `'${v}'` : typeof v}`)
  return v
}

/**
 * Process tier (Linux x64/arm64): installs a default-deny seccomp allow-list
 * (TSYNC, on every thread): only the calls a locked Node needs run, everything
 * else fails with EPERM (`onDenied: 'kill'`: kills the process). Irreversible.
 * Refuses (LOCKDOWN_REFUSED) unless the process was started with
 * UV_USE_IO_URING=0 and no io_uring is open, or, with `landlock: 'strict'`,
 * unless the asp-landlock launcher started it and the kernel enforced every
 * rule. `fs: 'landlock'` lets the process open files itself, inside the
 * launcher's ruleset (implies a strict Landlock requirement): the calls
 * Landlock mediates join the allow-list. Fails closed (LOCKDOWN_FAILED) when
 * seccomp or TSYNC is unavailable;
 * throws ERR_UNSUPPORTED_PLATFORM elsewhere. Returns what was installed and
 * what the launcher's Landlock ruleset enforced (`landlock`, or null).
 */
function lockdown(options) {
  options = securityOptions(options, 'options', ['onDenied', 'landlock', 'fs']) || {}
  const onDenied = oneOf(options, 'onDenied', ['eperm', 'kill'], 'options')
  const landlock = oneOf(options, 'landlock', ['report', 'strict'], 'options')
  const fsAccess = oneOf(options, 'fs', ['none', 'landlock'], 'options')
  linuxOrThrow('lockdown')
  return native.deepFreeze(JSON.parse(native.call(native.binding.lockdown, onDenied, landlock, fsAccess)))
}

/** The launcher the platform package ships (Linux), if that package is installed. */
function platformPackageLauncher(root) {
  try {
    const { currentPlatform } = require('./binary.js')
    const name = `${require('../package.json').name}-${currentPlatform()}`
    return path.join(path.dirname(require.resolve(`${name}/package.json`, { paths: [root] })), 'asp-landlock')
  } catch {
    return undefined
  }
}

/** Where the launcher is: ASP_LANDLOCK_LAUNCHER, next to the package, in the platform package, or cargo's target dir. */
function landlockLauncherPath() {
  const root = path.join(__dirname, '..')
  const candidates = [
    process.env.ASP_LANDLOCK_LAUNCHER,
    path.join(root, 'asp-landlock'),
    platformPackageLauncher(root),
    path.join(root, 'target', 'release', 'asp-landlock'),
    path.join(root, 'target', 'debug', 'asp-landlock'),
  ]
  for (const c of candidates) {
    if (c && fs.existsSync(c)) return c
  }
  return null
}

/**
 * The launcher's argv for a process tier child under the manifest's Landlock
 * ruleset: `{ command, args }` where `args` ends with `--` and the caller
 * appends the program (`process.execPath`) and its arguments, e.g. as
 * `fork(script, { execPath: command, execArgv: [...args, process.execPath] })`.
 * `read`/`exec` add the runtime paths the child needs beyond Node's own (the
 * package, the child script, data it reads before lockdown()). `strict`: the
 * launcher exits 126 without starting the child unless every rule was enforced.
 */
function landlockCommand(manifest, options) {
  options = securityOptions(options, 'options', ['strict', 'read', 'exec']) || {}
  linuxOrThrow('landlock')
  const command = landlockLauncherPath()
  if (command === null) throw new errors.UnsupportedPlatformError({ feature: 'landlock', platform: `${process.platform}-${process.arch}` })
  const list = (key) => {
    const v = securityOption(options, key, 'options')
    if (v === undefined) return []
    if (!Array.isArray(v) || !v.every((p) => typeof p === 'string' && path.isAbsolute(p) && !p.includes('\0'))) throw new TypeError(`options.${key} must be an array of absolute paths`)
    return v
  }
  const strict = securityOption(options, 'strict', 'options')
  if (strict !== undefined && typeof strict !== 'boolean') throw new TypeError('options.strict must be a boolean')
  const args = []
  if (strict) args.push('--strict')
  // Validated here (INVALID_MANIFEST now, not a launcher exiting 2 later),
  // then passed as the very JSON text the policy was compiled from, so the
  // launcher compiles what this process did (never a printed form read back).
  const { PermissionPolicy } = require('./policy.js')
  const { manifestJson } = require('./plain.js')
  const parsed = typeof manifest === 'string' ? JSON.parse(manifest) : manifest
  const text = manifestJson(parsed)
  PermissionPolicy.fromManifest(JSON.parse(text), { plugin: 'landlock', platform: 'posix' })
  args.push('--manifest', text)
  // What Node 20 reads to start (measured with strace -e %file): its binary,
  // the loader (which the kernel opens for execution) and libraries,
  // OpenSSL's config, /proc and cgroup limits, and this package (napi-rs
  // reads /usr/bin/ldd to tell glibc from musl).
  const node = fs.realpathSync(process.execPath)
  const runtime = [['--exec', node], ['--exec', '/lib'], ['--exec', '/lib64'], ['--read', '/usr/lib'], ['--read', '/etc/ld.so.cache'], ['--read', '/etc/ssl/openssl.cnf'], ['--read', '/etc/ssl/certs'], ['--read', '/proc/self'], ['--read', '/proc/meminfo'], ['--read', '/proc/sys/vm/overcommit_memory'], ['--read', '/sys/fs/cgroup'], ['--read', '/usr/bin/ldd'], ['--read', path.join(__dirname, '..')]]
  // Its one runtime dependency, wherever require finds it (a hoisted or linked node_modules).
  try {
    const main = require.resolve('@opentelemetry/api')
    const at = main.lastIndexOf(`${path.sep}node_modules${path.sep}`)
    if (at >= 0) runtime.push(['--read', path.join(main.slice(0, at), 'node_modules', '@opentelemetry', 'api')])
  } catch {}
  // The launcher resolves these host paths itself (`/lib` -> `/usr/lib`,
  // `/proc/self` -> its own pid, which exec keeps) before it opens them.
  for (const [flag, p] of runtime) if (fs.existsSync(p)) args.push(flag, p)
  for (const p of list('read')) args.push('--read', p)
  for (const p of list('exec')) args.push('--exec', p)
  args.push('--')
  return { command, args }
}

module.exports = { lockdown, landlockCommand, landlockLauncherPath }
