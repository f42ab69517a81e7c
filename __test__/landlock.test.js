'use strict'
// Landlock from the manifest, end to end: the asp-landlock launcher applies
// the manifest's ruleset before it execs Node, so every thread of the child
// (main, libuv pool, Workers) is confined by the kernel, and lockdown()
// reports what the kernel enforced. Skips, saying why, without Landlock.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { fork, spawnSync } = require('node:child_process')
const { landlockCommand, lockdown, PermissionPolicy } = require('..')

const linux = process.platform === 'linux' && ['x64', 'arm64'].includes(process.arch)

// The kernel's ABI as the launcher sees it (0: no Landlock). Builds the launcher first.
function kernelAbi() {
  const launcher = require('../scripts/landlock-launcher.js').landlockLauncher()
  process.env.ASP_LANDLOCK_LAUNCHER = launcher
  const l = landlockCommand({}, {})
  const r = spawnSync(l.command, [...l.args, process.execPath, '-e', 'console.log(process.env.ASP_LANDLOCK_REPORT)'], { encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  return JSON.parse(r.stdout).abi
}
const abi = linux ? kernelAbi() : 0
const skip = !linux ? 'Linux only' : abi < 6 ? `this kernel's Landlock ABI is ${abi} (< 6: no scopes)` : false

function tree(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asp-landlock-js-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  fs.mkdirSync(path.join(dir, 'granted'))
  fs.mkdirSync(path.join(dir, 'beside'))
  fs.writeFileSync(path.join(dir, 'granted', 'a.txt'), 'a')
  fs.writeFileSync(path.join(dir, 'beside', 'b.txt'), 'b')
  return dir
}

for (const fsMode of ['none', 'landlock']) {
  const after = fsMode === 'landlock'
    ? { 'after lockdown: granted': 'ok', 'after lockdown: beside': 'EACCES', 'after lockdown: list granted dir': 'ok', 'after lockdown: write granted': 'EACCES', 'after lockdown: out mkdir, copy, list, rename, remove': 'ok', 'after lockdown: copy beside into out': 'EACCES', 'after lockdown: fs.copyFile (fchmod)': 'EPERM', 'after lockdown: fchmod a read grant': 'EPERM', 'after lockdown: create setuid': 'EPERM', 'after lockdown: mkdir setgid': 'EPERM', 'after lockdown: create plain': 'ok', 'after lockdown: socket': 'EPERM' }
    : { 'after lockdown: granted': 'EPERM', 'after lockdown: beside': 'EPERM', 'after lockdown: list granted dir': 'EPERM', 'after lockdown: write granted': 'EPERM', 'after lockdown: socket': 'EPERM' }
  test(`under the launcher, every grant opens and the path beside it is EACCES on every thread, checker bypassed (lockdown fs: ${fsMode})`, { skip, timeout: 60_000 }, async (t) => {
    const dir = tree(t)
    fs.mkdirSync(path.join(dir, 'out'))
    const grants = [`${dir}/granted/**`]
    if (fsMode === 'landlock') grants.push({ path: `${dir}/out/**`, mode: 'readwrite' })
    const l = landlockCommand({ fs: grants }, { strict: true })
    const child = fork(path.join(__dirname, 'fixtures', 'landlock-child.js'), [], {
      execPath: l.command,
      execArgv: [...l.args, process.execPath],
      env: { UV_USE_IO_URING: '0', FS_MODE: fsMode, GRANTED: path.join(dir, 'granted', 'a.txt'), BESIDE: path.join(dir, 'beside', 'b.txt'), ...(fsMode === 'landlock' && { OUT: path.join(dir, 'out') }) },
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    })
    let stderr = ''
    child.stderr.on('data', (d) => (stderr += d))
    const m = await new Promise((resolve, reject) => child.once('message', resolve).once('exit', (c) => reject(new Error(`exited ${c}: ${stderr}`))))
    assert.equal(m.error, undefined, m.message)
    assert.deepEqual(m.results, {
      'granted readFileSync': 'ok',
      'beside readFileSync': 'EACCES',
      'granted writeFileSync': 'EACCES',
      '/etc/hostname': 'EACCES',
      'kill parent': 'EPERM',
      'beside fs.promises': 'EACCES',
      'granted fs.promises': 'ok',
      'beside from a Worker': 'EACCES',
      ...after,
    })
    assert.equal(m.landlock.abi, abi)
    assert.equal(m.landlock.fullyEnforced, true)
    assert.deepEqual(m.landlock.scoped, ['signal', 'abstract_unix_socket'])
    assert.equal(m.landlock.bindDenied, true)
    assert.ok(m.landlock.rules.some((r) => r.path === fs.realpathSync(`${dir}/granted`) && r.rights === 'read' && r.skipped === null))
    child.send('bye')
    assert.equal(await new Promise((resolve) => child.once('exit', resolve)), 0)
  })
}

test("lockdown({ fs: 'landlock' }) refuses without the launcher's ruleset", { skip: !linux && 'Linux only' }, () => {
  const r = spawnSync(process.execPath, ['-e', `try { require(${JSON.stringify(path.join(__dirname, '..'))}).lockdown({ fs: 'landlock' }); console.log('locked') } catch (e) { console.log(e.code) }`], {
    encoding: 'utf8',
    env: { UV_USE_IO_URING: '0' },
  })
  assert.equal(r.stdout.trim(), 'LOCKDOWN_REFUSED')
})

test("lockdown({ landlock: 'strict' }) refuses in a process the launcher did not start", { skip: !linux && 'Linux only' }, () => {
  const r = spawnSync(process.execPath, ['-e', `try { require(${JSON.stringify(path.join(__dirname, '..'))}).lockdown({ landlock: 'strict' }); console.log('locked') } catch (e) { console.log(e.code) }`], {
    encoding: 'utf8',
    env: { UV_USE_IO_URING: '0' },
  })
  assert.equal(r.stdout.trim(), 'LOCKDOWN_REFUSED')
})

test("lockdown({ landlock: 'strict' }) checks the kernel, not only the report: a forged ASP_LANDLOCK_REPORT is refused", { skip: !linux && 'Linux only' }, () => {
  const forged = JSON.stringify({ abi: 7, fullyEnforced: true, rules: [], scoped: ['signal', 'abstract_unix_socket'] })
  const r = spawnSync(process.execPath, ['-e', `try { require(${JSON.stringify(path.join(__dirname, '..'))}).lockdown({ landlock: 'strict' }); console.log('locked') } catch (e) { console.log(e.code, e.message) }`], {
    encoding: 'utf8',
    env: { UV_USE_IO_URING: '0', ASP_LANDLOCK_REPORT: forged },
  })
  assert.match(r.stdout.trim(), /^LOCKDOWN_REFUSED .*not in that Landlock domain/)
})

test('the strict launcher exits 126 without starting the child when a rule cannot be enforced', { skip, timeout: 30_000 }, () => {
  const l = landlockCommand({ fs: ['/nonexistent-asp-landlock/**'] }, { strict: true })
  const r = spawnSync(l.command, [...l.args, process.execPath, '-e', 'console.log("ran")'], { encoding: 'utf8' })
  assert.equal(r.status, 126)
  assert.equal(r.stdout, '')
  assert.match(r.stderr, /not fully enforced/)
})

test('a grant whose directory is (or passes through) a symlink gets no rule: skipped with the reason, refused under strict (red team: a run swapped a grant for a link to /)', { skip, timeout: 30_000 }, (t) => {
  const dir = tree(t)
  fs.symlinkSync('/', path.join(dir, 'config'))
  fs.symlinkSync(path.join(dir, 'granted'), path.join(dir, 'via'))
  for (const grant of [`${dir}/config/**`, `${dir}/via/**`]) {
    const strict = landlockCommand({ fs: [grant] }, { strict: true })
    const r = spawnSync(strict.command, [...strict.args, process.execPath, '-e', 'console.log("ran")'], { encoding: 'utf8' })
    assert.equal(r.status, 126, grant)
    assert.equal(r.stdout, '')
    const l = landlockCommand({ fs: [grant] }, {})
    const ok = spawnSync(l.command, [...l.args, process.execPath, '-e', 'console.log(process.env.ASP_LANDLOCK_REPORT); try { require("fs").readFileSync("/etc/hostname"); console.log("read") } catch (e) { console.log(e.code) }'], { encoding: 'utf8' })
    assert.equal(ok.status, 0, ok.stderr)
    const [json, read] = ok.stdout.trim().split('\n')
    const rule = JSON.parse(json).rules.find((x) => x.path === grant.slice(0, -3))
    assert.match(rule.skipped, /symlink/, json)
    assert.equal(read, 'EACCES', 'nothing through the link')
  }
})

test("a report the kernel does not bear out is refused (strict, fs: 'landlock') and is no report: a child of another uid, not in any domain", { skip: !linux || process.getuid() !== 0 ? 'Linux, as root (to start a child as another uid)' : false }, () => {
  const forged = JSON.stringify({ abi: 7, fullyEnforced: true, rules: [{ path: '/srv', rights: 'read', skipped: null }], scoped: ['signal', 'abstract_unix_socket'] })
  const pkgDir = path.join(__dirname, '..')
  for (const [opts, want] of [
    ["{ landlock: 'strict' }", /^LOCKDOWN_REFUSED .*list `\/`/],
    ["{ fs: 'landlock' }", /^LOCKDOWN_REFUSED .*list `\/`/],
    ["{ landlock: 'report' }", /^locked null$/],
  ]) {
    // The parent (root) refuses signals from uid 65534 whatever Landlock says:
    // only the root directory check tells a forged report apart.
    const r = spawnSync(process.execPath, ['-e', `try { const r = require(${JSON.stringify(pkgDir)}).lockdown(${opts}); console.log('locked', JSON.stringify(r.landlock)) } catch (e) { console.log(e.code, e.message) }`], {
      encoding: 'utf8',
      uid: 65534,
      gid: 65534,
      env: { UV_USE_IO_URING: '0', ASP_LANDLOCK_REPORT: forged },
    })
    assert.match(r.stdout.trim(), want, `${opts}: ${r.stdout}${r.stderr}`)
  }
})

test('lockdown and landlockCommand options are checked strictly', () => {
  assert.throws(() => lockdown({ onDenied: 'log' }), TypeError)
  assert.throws(() => lockdown({ ondenied: 'kill' }), TypeError)
  assert.throws(() => landlockCommand({}, { read: ['relative'] }), linux ? TypeError : (e) => e.code === 'ERR_UNSUPPORTED_PLATFORM')
  if (linux) assert.throws(() => landlockCommand({ fs: 'not a list' }), (e) => e.code === 'INVALID_MANIFEST')
})

test('landlockCommand passes the manifest text the policy was compiled from, never its printed form', { skip: !linux && 'Linux only' }, () => {
  const manifest = { fs: ['/srv//data/', { path: '/srv/out/**', mode: 'readwrite' }], fetch: ['API.example.com:8443'], deny: { fs: ['/srv/data/.env'] } }
  const arg = (l) => l.args[l.args.indexOf('--manifest') + 1]
  assert.equal(arg(landlockCommand(manifest, {})), JSON.stringify(manifest))
  // A string is compiled as the JSON value it holds: that value's text is passed.
  assert.equal(arg(landlockCommand(`  ${JSON.stringify(manifest, null, 2)}\n`, {})), JSON.stringify(manifest))
  // The printed form differs (normalised globs and hosts) and is never what the launcher reads.
  assert.notEqual(JSON.stringify(PermissionPolicy.fromManifest(manifest, { plugin: 'p', platform: 'posix' }).toJSON()), JSON.stringify(manifest))
})

test('the example process tier runs a plugin in both modes: seccomp only, and under the launcher', { skip, timeout: 60_000 }, async () => {
  const { runPluginProcess } = require('../examples/vm-host/process-tier.js')
  const policy = PermissionPolicy.fromManifest({ events: { publishes: ['a'] } }, { plugin: 'p' })
  for (const landlock of [false, 'strict']) {
    const r = await runPluginProcess({ name: 'p', code: "await events.publish('a', 1); return 'done'", policy, landlock })
    assert.equal(r.ok, true, `${landlock}: ${r.code} ${r.message}`)
    assert.equal(r.value, 'done')
    assert.equal(r.locked.landlock, landlock ? abi : null)
  }
})
