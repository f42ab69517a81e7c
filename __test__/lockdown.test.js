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
  assert.ok(first.report.denied > 40)
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
