'use strict'
// Finds and loads the native binary, or throws ONE error that says why: the
// platform, where it looked (the file next to the package, the platform
// package), what it found there and the fix. Before `dlopen` it checks what
// a header can tell (size, format, architecture, every loaded segment inside
// the file), so a truncated or foreign file is an error, not a `Bus error`
// or "file too short" four `cause`s down. The napi-generated binding.js is
// not used: it falls back to a WASI package this project does not publish
// and buries the real cause.

const fs = require('node:fs')
const path = require('node:path')

const root = path.join(__dirname, '..')
const pkg = require('../package.json')
const INSTALL_DOC = 'https://github.com/suaveplan/api-sandbox-permissions/blob/main/docs/install.md'

/** napi target triple -> npm suffix (`linux-x64-gnu`), as in npm/<suffix>/. */
function suffixOf(triple) {
  const [arch, , sys, abi] = triple.split('-')
  const cpu = { x86_64: 'x64', aarch64: 'arm64' }[arch]
  if (sys === 'linux') return `linux-${cpu}-${abi}`
  if (sys === 'darwin') return `darwin-${cpu}`
  return `win32-${cpu}-${abi}`
}
/** Every platform a binary is published for. */
const SUPPORTED = Object.freeze(pkg.napi.targets.map(suffixOf))

/** `glibc` or `musl` on Linux: /usr/bin/ldd names musl, else the process report. */
function linuxLibc() {
  try {
    return fs.readFileSync('/usr/bin/ldd', 'latin1').includes('musl') ? 'musl' : 'gnu'
  } catch {
    const header = process.report?.getReport?.().header
    return header && Object.hasOwn(header, 'glibcVersionRuntime') && header.glibcVersionRuntime ? 'gnu' : 'musl'
  }
}

/** This process's platform suffix (`linux-x64-gnu`, `darwin-arm64`, `win32-x64-msvc`, `freebsd-x64`). */
function currentPlatform(options) {
  const { platform = process.platform, arch = process.arch, libc } = Object.assign(Object.create(null), options)
  if (platform === 'linux') return `linux-${arch}-${libc ?? linuxLibc()}`
  if (platform === 'win32') return `win32-${arch}-msvc`
  return `${platform}-${arch}`
}

// Machine ids per format: ELF e_machine, Mach-O cputype, PE Machine.
const MACHINES = {
  x64: { elf: 62, macho: 0x01000007, pe: 0x8664 },
  arm64: { elf: 183, macho: 0x0100000c, pe: 0xaa64 },
}
const ARCH_OF = { elf: {}, macho: {}, pe: {} }
for (const [arch, ids] of Object.entries(MACHINES)) for (const [f, id] of Object.entries(ids)) ARCH_OF[f][id] = arch

/** Reads `len` bytes at `pos` (fewer at the end of the file). */
function readAt(fd, pos, len) {
  const buf = Buffer.alloc(len)
  const n = fs.readSync(fd, buf, 0, len, pos)
  return buf.subarray(0, n)
}

/**
 * What a binary's header says, without loading it: `null` when it is a
 * shared library for `arch` whose every mapped part lies inside the file, else
 * the problem in a few words. `arch` is `x64` or `arm64`.
 */
function headerProblem(file, arch) {
  const fd = fs.openSync(file, 'r')
  try {
    const size = fs.fstatSync(fd).size
    const head = readAt(fd, 0, 64)
    if (head.length < 64) return `${size} bytes, too short to be a shared library (truncated or empty)`
    const outside = (offset, length) => offset + length > size
    const truncated = (need) => `truncated: ${size} bytes, its header describes ${need}`
    const wrongArch = (format, id) => `built for ${ARCH_OF[format][id] ?? `machine 0x${id.toString(16)}`}, this process is ${arch}`
    if (head.readUInt32BE(0) === 0x7f454c46) {
      if (head[4] !== 2 || head[5] !== 1) return 'a 32-bit or big-endian ELF file'
      const machine = head.readUInt16LE(18)
      if (machine !== MACHINES[arch]?.elf) return wrongArch('elf', machine)
      const phoff = Number(head.readBigUInt64LE(32))
      const shoff = Number(head.readBigUInt64LE(40))
      const [phentsize, phnum, shentsize, shnum] = [54, 56, 58, 60].map((o) => head.readUInt16LE(o))
      if (outside(phoff, phnum * phentsize) || phentsize < 56) return truncated(`program headers to byte ${phoff + phnum * phentsize}`)
      const ph = readAt(fd, phoff, phnum * phentsize)
      for (let i = 0; i < phnum; i++) {
        const at = i * phentsize
        if (ph.readUInt32LE(at) !== 1) continue // PT_LOAD
        const end = Number(ph.readBigUInt64LE(at + 8)) + Number(ph.readBigUInt64LE(at + 32))
        if (end > size) return truncated(`a segment to byte ${end}`)
      }
      if (shnum > 0 && outside(shoff, shnum * shentsize)) return truncated(`section headers to byte ${shoff + shnum * shentsize}`)
      return null
    }
    if (head.readUInt32LE(0) === 0xfeedfacf) {
      const cputype = head.readUInt32LE(4)
      if (cputype !== MACHINES[arch]?.macho) return wrongArch('macho', cputype)
      const [ncmds, sizeofcmds] = [head.readUInt32LE(16), head.readUInt32LE(20)]
      if (outside(32, sizeofcmds)) return truncated(`load commands to byte ${32 + sizeofcmds}`)
      const cmds = readAt(fd, 32, sizeofcmds)
      for (let i = 0, at = 0; i < ncmds; i++) {
        if (at + 8 > cmds.length) return 'corrupt: load commands overrun their size'
        const [cmd, cmdsize] = [cmds.readUInt32LE(at), cmds.readUInt32LE(at + 4)]
        if (cmdsize < 8) return 'corrupt: a load command of size < 8'
        if (cmd === 0x19 && at + 56 <= cmds.length) {
          // LC_SEGMENT_64: fileoff at +40, filesize at +48
          const end = Number(cmds.readBigUInt64LE(at + 40)) + Number(cmds.readBigUInt64LE(at + 48))
          if (end > size) return truncated(`a segment to byte ${end}`)
        }
        at += cmdsize
      }
      return null
    }
    if (head.readUInt16BE(0) === 0x4d5a) {
      const lfanew = head.readUInt32LE(0x3c)
      const pe = readAt(fd, lfanew, 24)
      if (pe.length < 24 || pe.readUInt32BE(0) !== 0x50450000) return outside(lfanew, 24) ? truncated(`a PE header at byte ${lfanew}`) : 'an MZ file without a PE header'
      const machine = pe.readUInt16LE(4)
      if (machine !== MACHINES[arch]?.pe) return wrongArch('pe', machine)
      const [nsections, optsize] = [pe.readUInt16LE(6), pe.readUInt16LE(20)]
      const table = lfanew + 24 + optsize
      if (outside(table, nsections * 40)) return truncated(`a section table to byte ${table + nsections * 40}`)
      const sections = readAt(fd, table, nsections * 40)
      for (let i = 0; i < nsections; i++) {
        const end = sections.readUInt32LE(i * 40 + 20) + sections.readUInt32LE(i * 40 + 16)
        if (end > size) return truncated(`a section to byte ${end}`)
      }
      return null
    }
    if (head.readUInt32BE(0) === 0xcafebabe) return 'a universal (fat) Mach-O file; the published binaries are single-architecture'
    return `not a shared library (starts with ${head.subarray(0, 8).toString('hex')})`
  } finally {
    fs.closeSync(fd)
  }
}

/** The error every failure to load ends in; `tried` lists where it looked and what it found. */
class BinaryLoadError extends Error {
  constructor(message, { platform, packageName, tried, cause }) {
    super(message, cause === undefined ? undefined : { cause })
    this.name = 'BinaryLoadError'
    this.code = 'ERR_SANDBOX_BINARY'
    this.platform = platform
    this.packageName = packageName
    this.tried = tried
  }
}

/**
 * Loads the binary for this process. `opts` (tests only) replace the
 * process's facts: `platform`, `arch`, `libc`, `root` (the package
 * directory), `env`, `resolve(request)` (returns a path or throws) and
 * `dlopen(file)`.
 */
function loadBinary(options) {
  // Own properties only: a key polluted onto `Object.prototype` (a JSON
  // merge bug elsewhere in the host) must never choose the file dlopen runs.
  const opts = Object.assign(Object.create(null), options)
  const { arch = process.arch, env = process.env, dir = root } = opts
  const resolve = opts.resolve ?? ((request) => require.resolve(request, { paths: [dir] }))
  const dlopen =
    opts.dlopen ??
    ((file) => {
      // process.dlopen, not require: an override path without `.node` must not be read as JavaScript.
      const m = { exports: {} }
      process.dlopen(m, file)
      return m.exports
    })
  const platform = currentPlatform(opts)
  const packageName = `${pkg.name}-${platform}`
  const fileName = `${pkg.napi.binaryName}.${platform}.node`
  const versionSpec = `${packageName}@${pkg.version}`
  const where = `${platform} (Node ${process.version})`
  const tried = []
  let loadCause

  // One candidate: checked, then loaded; its outcome goes in `tried`.
  const attempt = (label, file) => {
    let problem
    try {
      problem = headerProblem(file, arch)
    } catch (e) {
      problem = `unreadable: ${e.code ?? e.message}`
    }
    if (problem) {
      tried.push(`${label}: ${problem}`)
      return undefined
    }
    let binding
    try {
      binding = dlopen(file)
    } catch (e) {
      loadCause = e
      tried.push(`${label}: the system could not load it: ${String(e.message).split('\n')[0]}`)
      return undefined
    }
    if (binding === null || typeof binding !== 'object' || typeof binding.exportData !== 'function') {
      tried.push(`${label}: loaded, but it is not this package's binary (no exportData)`)
      return undefined
    }
    return binding
  }

  const override = Object.hasOwn(env, 'NAPI_RS_NATIVE_LIBRARY_PATH') ? env.NAPI_RS_NATIVE_LIBRARY_PATH : undefined
  if (override) {
    const binding = attempt(`NAPI_RS_NATIVE_LIBRARY_PATH=${override}`, path.resolve(override))
    if (binding) return binding
    throw new BinaryLoadError(
      `${pkg.name}: cannot load the native binary for ${where}.\n  ${tried[0]}\nFix: point NAPI_RS_NATIVE_LIBRARY_PATH at a ${fileName} built for this platform, or unset it.`,
      { platform, packageName, tried, cause: loadCause },
    )
  }

  if (!SUPPORTED.includes(platform)) {
    throw new BinaryLoadError(
      `${pkg.name}: no native binary is published for ${where}; binaries exist for ${SUPPORTED.join(', ')}.\n` +
        `Fix: build one from source (see ${INSTALL_DOC}#building-from-source) and set NAPI_RS_NATIVE_LIBRARY_PATH to it.`,
      { platform, packageName, tried },
    )
  }

  const local = path.join(dir, fileName)
  if (fs.existsSync(local)) {
    const binding = attempt(`${local}`, local)
    if (binding) return binding
  } else {
    tried.push(`${local}: not present (only a source build puts it there)`)
  }

  let manifest
  try {
    manifest = resolve(`${packageName}/package.json`)
  } catch {
    tried.push(`${packageName}: not installed`)
  }
  if (manifest) {
    let version
    try {
      const parsed = JSON.parse(fs.readFileSync(manifest, 'utf8'))
      version = parsed !== null && typeof parsed === 'object' && Object.hasOwn(parsed, 'version') ? parsed.version : undefined
    } catch (e) {
      tried.push(`${packageName}: unreadable package.json (${e.message})`)
    }
    if (version !== undefined && version !== pkg.version) {
      tried.push(`${packageName}@${version} at ${path.dirname(manifest)}: version ${version}, this package is ${pkg.version} (the binary must match the JavaScript)`)
    } else if (version !== undefined) {
      const file = path.join(path.dirname(manifest), fileName)
      if (fs.existsSync(file)) {
        const binding = attempt(`${packageName}@${version} at ${file}`, file)
        if (binding) return binding
      } else {
        tried.push(`${packageName}@${version} at ${path.dirname(manifest)}: installed without ${fileName}`)
      }
    }
  }

  throw new BinaryLoadError(
    `${pkg.name}: cannot load the native binary for ${where}.\n` +
      tried.map((t) => `  ${t}\n`).join('') +
      `Fix: install the platform package at this package's version (a tarball or git install does not bring it):\n` +
      `  npm install ${versionSpec}\n` +
      `or, from the packed tarballs, npm install <root .tgz> <platform .tgz>. See ${INSTALL_DOC}`,
    { platform, packageName, tried, cause: loadCause },
  )
}

module.exports = { loadBinary, headerProblem, currentPlatform, BinaryLoadError, SUPPORTED }
