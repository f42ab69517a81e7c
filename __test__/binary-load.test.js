'use strict'
// Loading the native binary (lib/binary.js): every way it goes wrong gives one
// message naming the platform, the package looked for, what was found and the
// fix, and a truncated or foreign file is refused before dlopen (a truncated
// ELF file mapped by dlopen dies with SIGBUS). Simulated with real files: the
// built binary, copies of it cut short, hand-built Mach-O and PE headers, a
// copy of the package without a binary, a fake platform package.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { loadBinary, headerProblem, currentPlatform, BinaryLoadError, SUPPORTED } = require('../lib/binary.js')
const pkg = require('../package.json')

const root = path.join(__dirname, '..')
const here = currentPlatform()
const builtName = fs.readdirSync(root).find((f) => f.endsWith('.node'))
const built = path.join(root, builtName)
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'asp-binary-'))
test.after(() => fs.rmSync(tmp, { recursive: true, force: true }))
let n = 0
const scratch = () => fs.mkdtempSync(path.join(tmp, `${n++}-`))
const notInstalled = (request) => {
  throw Object.assign(new Error(`Cannot find module '${request}'`), { code: 'MODULE_NOT_FOUND' })
}
/** The error `loadBinary(opts)` throws, asserted to be the one kind with the common parts. */
function failure(opts, platform = here) {
  let err
  const dlopened = []
  try {
    loadBinary({ resolve: notInstalled, ...opts, dlopen: opts.dlopen ?? ((f) => (dlopened.push(f), require(f))) })
  } catch (e) {
    err = e
  }
  assert.ok(err instanceof BinaryLoadError, `expected a BinaryLoadError, got ${err}`)
  assert.equal(err.code, 'ERR_SANDBOX_BINARY')
  assert.equal(err.platform, platform)
  assert.equal(err.packageName, `${pkg.name}-${platform}`)
  assert.ok(err.message.includes(platform), err.message)
  assert.doesNotMatch(err.message, /wasm32-wasi|npm has a bug/)
  return { err, dlopened }
}
const cut = (dir, name, bytes) => {
  const file = path.join(dir, name)
  const fd = fs.openSync(file, 'w')
  const whole = fs.readFileSync(built)
  fs.writeSync(fd, whole, 0, Math.min(bytes, whole.length))
  fs.closeSync(fd)
  return file
}

test('the built binary passes the header check and loads through loadBinary', () => {
  assert.equal(headerProblem(built, process.arch), null)
  assert.equal(typeof loadBinary().exportData, 'function')
  assert.ok(SUPPORTED.includes(here), `${here} is a published platform`)
})

test('no binary anywhere: names the file, the package, and the npm install that fixes it', () => {
  const dir = scratch()
  const { err } = failure({ dir })
  assert.match(err.message, new RegExp(`cannot load the native binary for ${here} \\(Node ${process.version.replace(/\./g, '\\.')}\\)`))
  assert.ok(err.message.includes(`${path.join(dir, `${pkg.napi.binaryName}.${here}.node`)}: not present`), err.message)
  assert.ok(err.message.includes(`${pkg.name}-${here}: not installed`), err.message)
  assert.ok(err.message.includes(`npm install ${pkg.name}-${here}@${pkg.version}`), err.message)
  assert.ok(err.message.includes('docs/install.md'), err.message)
  assert.equal(err.tried.length, 2)
  assert.equal(err.cause, undefined)
})

test('an unsupported platform says so and lists the published ones', () => {
  const { err } = failure({ platform: 'freebsd', arch: 'x64', dir: scratch() }, 'freebsd-x64')
  assert.match(err.message, /no native binary is published for freebsd-x64/)
  for (const p of SUPPORTED) assert.ok(err.message.includes(p), p)
  assert.match(err.message, /NAPI_RS_NATIVE_LIBRARY_PATH/)
  assert.equal(currentPlatform({ platform: 'linux', arch: 'arm64', libc: 'musl' }), 'linux-arm64-musl')
  assert.equal(currentPlatform({ platform: 'win32', arch: 'ia32' }), 'win32-ia32-msvc')
  failure({ platform: 'win32', arch: 'ia32', dir: scratch() }, 'win32-ia32-msvc')
})

test('a truncated binary is refused before dlopen (it would die with SIGBUS), at every cut', () => {
  const size = fs.statSync(built).size
  // Cuts relative to the size: a release binary is ~2 MB, a debug one ~36 MB.
  for (const bytes of [0, 30, 63, 64, 100, 5000, Math.floor(size / 4), Math.floor(size / 2), size - 1]) {
    const dir = scratch()
    cut(dir, `${pkg.napi.binaryName}.${here}.node`, bytes)
    const { err, dlopened } = failure({ dir })
    assert.deepEqual(dlopened, [], `${bytes} bytes: dlopen must not run`)
    assert.match(err.message, bytes < 64 ? /too short to be a shared library/ : /truncated: \d+ bytes, its header describes/, `${bytes}: ${err.message}`)
  }
})

test('a binary for another architecture names both', () => {
  const other = process.arch === 'arm64' ? 'x64' : 'arm64'
  const platform = currentPlatform({ arch: other })
  const dir = scratch()
  fs.copyFileSync(built, path.join(dir, `${pkg.napi.binaryName}.${platform}.node`))
  const { err, dlopened } = failure({ dir, arch: other }, platform)
  assert.deepEqual(dlopened, [])
  assert.ok(err.message.includes(`built for ${process.arch}, this process is ${other}`), err.message)
})

test('a file that is no shared library at all', () => {
  const dir = scratch()
  fs.writeFileSync(path.join(dir, `${pkg.napi.binaryName}.${here}.node`), '<!DOCTYPE html><html>404 Not Found</html>'.padEnd(200, ' '))
  const { err } = failure({ dir })
  assert.match(err.message, /not a shared library \(starts with 3c21444f43545950\)/)
})

/** A fake installed platform package holding `binary` (or nothing) at `version`. */
function platformPackage(version, binary) {
  const dir = scratch()
  const pdir = path.join(dir, 'node_modules', `${pkg.name}-${here}`)
  fs.mkdirSync(pdir, { recursive: true })
  fs.writeFileSync(path.join(pdir, 'package.json'), JSON.stringify({ name: `${pkg.name}-${here}`, version }))
  if (binary) fs.copyFileSync(binary, path.join(pdir, `${pkg.napi.binaryName}.${here}.node`))
  return { dir, resolve: (request) => require.resolve(request, { paths: [dir] }) }
}

test('the platform package: loaded when it matches, refused at another version or without its file', () => {
  const good = platformPackage(pkg.version, built)
  assert.equal(typeof loadBinary({ dir: scratch(), resolve: good.resolve }).exportData, 'function')

  const old = platformPackage('0.0.1-old', built)
  const { err, dlopened } = failure({ dir: scratch(), resolve: old.resolve })
  assert.deepEqual(dlopened, [])
  assert.ok(err.message.includes(`${pkg.name}-${here}@0.0.1-old`) && err.message.includes(`this package is ${pkg.version}`), err.message)

  const empty = platformPackage(pkg.version, null)
  assert.match(failure({ dir: scratch(), resolve: empty.resolve }).err.message, /installed without api-sandbox-permissions\./)
})

test('dlopen failing (a missing glibc symbol, say) is reported with its first line, and kept as the cause', () => {
  const cause = new Error('/x.node: /lib/libc.so.6: version `GLIBC_2.99\' not found (required by /x.node)\nmore')
  const { err } = failure({
    dlopen: () => {
      throw cause
    },
  })
  assert.ok(err.message.includes('the system could not load it: /x.node: /lib/libc.so.6: version `GLIBC_2.99\' not found'), err.message)
  assert.ok(!err.message.includes('more'))
  assert.equal(err.cause, cause)
  assert.match(failure({ dlopen: () => ({}) }).err.message, /not this package's binary/)
})

test('NAPI_RS_NATIVE_LIBRARY_PATH: used when set, and its failure is its own message', () => {
  assert.equal(typeof loadBinary({ dir: scratch(), env: { NAPI_RS_NATIVE_LIBRARY_PATH: built } }).exportData, 'function')
  // A name without `.node` is still loaded as a binary, never read as JavaScript.
  const so = path.join(scratch(), 'libasp.so')
  fs.copyFileSync(built, so)
  assert.equal(typeof loadBinary({ dir: scratch(), env: { NAPI_RS_NATIVE_LIBRARY_PATH: so } }).exportData, 'function')
  const missing = path.join(tmp, 'nowhere.node')
  const { err } = failure({ env: { NAPI_RS_NATIVE_LIBRARY_PATH: missing } })
  assert.ok(err.message.includes(`NAPI_RS_NATIVE_LIBRARY_PATH=${missing}: unreadable: ENOENT`), err.message)
  const short = cut(scratch(), 'short.node', 40)
  assert.match(failure({ env: { NAPI_RS_NATIVE_LIBRARY_PATH: short } }).err.message, /too short/)
})

// Hand-built headers for the formats this host cannot load: what the check reads, nothing more.
function macho(cputype, segments) {
  const cmds = segments.map(([fileoff, filesize]) => {
    const c = Buffer.alloc(72)
    c.writeUInt32LE(0x19, 0)
    c.writeUInt32LE(72, 4)
    c.writeBigUInt64LE(BigInt(fileoff), 40)
    c.writeBigUInt64LE(BigInt(filesize), 48)
    return c
  })
  const head = Buffer.alloc(32)
  head.writeUInt32LE(0xfeedfacf, 0)
  head.writeUInt32LE(cputype, 4)
  head.writeUInt32LE(cmds.length, 16)
  head.writeUInt32LE(cmds.length * 72, 20)
  return Buffer.concat([head, ...cmds, Buffer.alloc(4096 - 32 - cmds.length * 72)])
}
function pe(machine, sections) {
  const buf = Buffer.alloc(4096)
  buf.write('MZ', 0, 'latin1')
  buf.writeUInt32LE(0x80, 0x3c)
  buf.writeUInt32BE(0x50450000, 0x80)
  buf.writeUInt16LE(machine, 0x84)
  buf.writeUInt16LE(sections.length, 0x86)
  buf.writeUInt16LE(240, 0x80 + 20)
  sections.forEach(([ptr, size], i) => {
    const at = 0x80 + 24 + 240 + i * 40
    buf.writeUInt32LE(size, at + 16)
    buf.writeUInt32LE(ptr, at + 20)
  })
  return buf
}

test('Mach-O and PE headers: architecture and truncation', () => {
  const write = (buf) => {
    const f = path.join(scratch(), 'x.node')
    fs.writeFileSync(f, buf)
    return f
  }
  assert.equal(headerProblem(write(macho(0x0100000c, [[0, 4096]])), 'arm64'), null)
  assert.equal(headerProblem(write(macho(0x01000007, [[0, 4096]])), 'arm64'), 'built for x64, this process is arm64')
  assert.equal(headerProblem(write(macho(0x0100000c, [[0, 4096], [4096, 100]])), 'arm64'), 'truncated: 4096 bytes, its header describes a segment to byte 4196')
  assert.equal(headerProblem(write(macho(0x0100000c, [[0, 4096]]).subarray(0, 100)), 'arm64'), 'truncated: 100 bytes, its header describes load commands to byte 104')
  assert.equal(headerProblem(write(pe(0x8664, [[1024, 1024]])), 'x64'), null)
  assert.equal(headerProblem(write(pe(0xaa64, [[1024, 1024]])), 'x64'), 'built for arm64, this process is x64')
  assert.equal(headerProblem(write(pe(0x8664, [[1024, 4000]])), 'x64'), 'truncated: 4096 bytes, its header describes a section to byte 5024')
  assert.equal(headerProblem(write(pe(0x8664, [[1024, 1024]]).subarray(0, 0x90)), 'x64'), 'truncated: 144 bytes, its header describes a PE header at byte 128')
  assert.match(headerProblem(write(Buffer.concat([Buffer.from('cafebabe', 'hex'), Buffer.alloc(100)])), 'arm64'), /universal/)
})

/** A copy of the package's JavaScript (no binary) as a user's install would hold it. */
function packageCopy() {
  const dir = path.join(scratch(), 'node_modules', ...pkg.name.split('/'))
  fs.mkdirSync(dir, { recursive: true })
  for (const f of ['index.js', 'package.json', 'lib', 'schema']) fs.cpSync(path.join(root, f), path.join(dir, f), { recursive: true })
  fs.symlinkSync(path.join(root, 'node_modules', '@opentelemetry'), path.join(dir, '..', '..', '@opentelemetry'), 'dir')
  return dir
}

test('through require(): a missing and a truncated binary are one error, and no crash', () => {
  const dir = packageCopy()
  const env = { ...process.env }
  delete env.NAPI_RS_NATIVE_LIBRARY_PATH
  const run = () => spawnSync(process.execPath, ['-e', `require(${JSON.stringify(dir)})`], { encoding: 'utf8', env })
  const missing = run()
  assert.equal(missing.signal, null)
  assert.equal(missing.status, 1)
  assert.match(missing.stderr, /BinaryLoadError: @suaveplan\/api-sandbox-permissions: cannot load the native binary for/)
  assert.ok(missing.stderr.includes(`npm install ${pkg.name}-${here}@${pkg.version}`), missing.stderr)
  assert.doesNotMatch(missing.stderr, /wasm32-wasi|npm has a bug|\[cause\]/)

  const at = Math.floor(fs.statSync(built).size / 2)
  cut(dir, `${pkg.napi.binaryName}.${here}.node`, at)
  const truncated = run()
  assert.equal(truncated.signal, null, 'no SIGBUS')
  assert.equal(truncated.status, 1)
  assert.match(truncated.stderr, new RegExp(`truncated: ${at} bytes, its header describes`))
})
