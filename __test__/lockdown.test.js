'use strict'
// The process tier: a forked child locks down, then every way out fails with
// EPERM while IPC, timers, crypto, WebAssembly and allocation keep working.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { fork, spawnSync } = require('node:child_process')
const { lockdown } = require('..')
const { testHooksAddonPath } = require('../scripts/test-hooks-addon.js')

const linux = process.platform === 'linux' && ['x64', 'arm64'].includes(process.arch)

test('lockdown refuses when libuv may use io_uring (never a silent no-op)', { skip: !linux && 'Linux only' }, () => {
  const r = spawnSync(process.execPath, ['-e', `try { require(${JSON.stringify(path.join(__dirname, '..'))}).lockdown() } catch (e) { console.log(e.code) }`], {
    encoding: 'utf8',
    env: { ...process.env, UV_USE_IO_URING: '1' },
  })
  assert.equal(r.stdout.trim(), 'LOCKDOWN_REFUSED')
})

test('lockdown throws ERR_UNSUPPORTED_PLATFORM off Linux', { skip: linux && 'this is Linux' }, () => {
  assert.throws(() => lockdown(), (e) => e.code === 'ERR_UNSUPPORTED_PLATFORM')
})

test('after lockdown, escaped code cannot open files, connect, spawn or start workers; IPC still works', { skip: !linux && 'Linux only', timeout: 60_000 }, async () => {
  const addon = testHooksAddonPath()
  const child = fork(path.join(__dirname, 'fixtures', 'lockdown-child.js'), { env: { UV_USE_IO_URING: '0', PATH: '/usr/bin:/bin', TEST_HOOKS_ADDON: addon }, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] })
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  const first = await new Promise((resolve, reject) => child.once('message', resolve).once('exit', (c) => reject(new Error(`exited ${c}: ${stderr}`))))
  assert.equal(first.error, undefined, first.error)
  const results = Object.fromEntries(first.results)
  for (const name of ['fs.readFileSync', 'fs.promises.readFile', 'fs.writeFileSync', "process.binding('fs') open", 'net.connect', 'spawnSync']) {
    assert.equal(results[name], 'EPERM', `${name}: ${results[name]}`)
  }
  assert.notEqual(results.fetch?.startsWith('succeeded'), true, `fetch: ${results.fetch}`)
  assert.notEqual(results['new Worker']?.startsWith('succeeded'), true, `new Worker: ${results['new Worker']}`)
  assert.deepEqual(first.probe, [1, 1, 1], 'raw openat, socket and execve fail with EPERM')
  assert.deepEqual(first.still, { timers: true, promises: true, crypto: true, wasm: true, bigAlloc: true, checker: true })
  // Default deny: a short allow-list without any call that opens, connects or executes.
  assert.equal(first.report.action, 'EPERM')
  assert.ok(first.report.allowed.length > 30 && first.report.allowed.length < 80, String(first.report.allowed.length))
  for (const name of ['openat', 'socket', 'connect', 'execve', 'sendmsg', 'utimensat', 'inotify_add_watch', 'io_uring_setup']) assert.ok(!first.report.allowed.includes(name), name)
  assert.equal(first.report.landlock, null, 'not started through asp-landlock')
  // docs/process-tier.md lists exactly this allow-list (x86_64 rows marked).
  const doc = require('node:fs').readFileSync(path.join(__dirname, '..', 'docs', 'process-tier.md'), 'utf8')
  const section = doc.slice(doc.indexOf('### The allow-list'), doc.indexOf('### `fs:'))
  const documented = [...section.matchAll(/^\| `(\w+)`( \(x86_64\))? \|/gm)].filter((m) => process.arch === 'x64' || !m[2]).map((m) => m[1])
  assert.deepEqual([...documented].sort(), [...first.report.allowed].sort())
  // 1000 IPC round trips after lockdown.
  for (let i = 0; i < 1000; i++) {
    child.send({ i })
    const back = await new Promise((resolve) => child.once('message', resolve))
    assert.equal(back.i, i)
  }
  child.send('bye')
  const code = await new Promise((resolve) => child.once('exit', resolve))
  assert.equal(code, 0)
})

test('after lockdown, the child cannot signal, reprioritise or watch other processes or touch file times; it can still reach itself', { skip: !linux && 'Linux only', timeout: 60_000 }, async (t) => {
  const fs = require('node:fs')
  const os = require('node:os')
  const { spawn } = require('node:child_process')
  // A live sibling to aim at, and a file whose times must not change.
  const sibling = spawn('sleep', ['60'], { stdio: 'ignore' })
  t.after(() => sibling.kill('SIGKILL'))
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asp-reach-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const file = path.join(dir, 'target.txt')
  fs.writeFileSync(file, 'x')
  const before = fs.statSync(file)
  const niceBefore = os.getPriority(sibling.pid)
  const child = fork(path.join(__dirname, 'fixtures', 'lockdown-reach-child.js'), { env: { UV_USE_IO_URING: '0', SIBLING: String(sibling.pid), FILE: file }, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] })
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  const m = await new Promise((resolve, reject) => child.once('message', resolve).once('exit', (c) => reject(new Error(`exited ${c}: ${stderr}`))))
  for (const name of ['kill', 'tgkill', 'setpriority', 'getpriority', 'prlimit64']) {
    assert.ok(m.selfOnly.includes(name), `selfOnly has ${name}`)
  }
  // Default deny: none of these is on the allow-list.
  for (const name of ['tkill', 'rt_sigqueueinfo', 'ioprio_set', 'sched_setattr', 'sched_setaffinity', 'utimensat', 'inotify_init1', 'inotify_add_watch', 'fanotify_init', 'pidfd_send_signal', 'ptrace', 'process_vm_writev', 'kcmp', 'shmget', 'mq_open']) {
    assert.ok(!m.allowed.includes(name), `${name} is not allowed`)
  }
  for (const [name, outcome] of Object.entries(m.results)) {
    assert.equal(outcome, name.startsWith('self:') ? 'ok' : 'EPERM', name)
  }
  child.send('bye')
  assert.equal(await new Promise((resolve) => child.once('exit', resolve)), 0)
  // The targets are unharmed.
  assert.equal(sibling.exitCode, null, 'the sibling is alive')
  assert.equal(sibling.signalCode, null, 'the sibling was not signalled')
  process.kill(sibling.pid, 0)
  assert.equal(os.getPriority(sibling.pid), niceBefore, "the sibling's priority is unchanged")
  const after = fs.statSync(file)
  assert.equal(after.mtimeMs, before.mtimeMs, "the file's mtime is unchanged")
  assert.equal(after.atimeMs, before.atimeMs, "the file's atime is unchanged")
})

test("lockdown({ onDenied: 'kill' }): a plugin's work and IPC run, and the first call outside the allow-list kills the process", { skip: !linux && 'Linux only', timeout: 60_000 }, async () => {
  const child = fork(path.join(__dirname, 'fixtures', 'lockdown-kill-child.js'), { env: { UV_USE_IO_URING: '0' }, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] })
  let stderr = ''
  child.stderr.on('data', (d) => (stderr += d))
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  const first = await Promise.race([new Promise((resolve) => child.once('message', resolve)), exited.then((e) => ({ exited: e, stderr }))])
  assert.equal(first.action, 'kill', JSON.stringify(first))
  assert.deepEqual(first.still, { timers: true, uuid: true, sha256: true, wasm: true, gc: true, worker: 42 })
  for (let i = 0; i < 1000; i++) {
    child.send({ i })
    const back = await new Promise((resolve) => child.once('message', resolve))
    assert.equal(back.i, i)
  }
  child.send('escape')
  assert.deepEqual(await exited, { code: null, signal: 'SIGSYS' })
})
