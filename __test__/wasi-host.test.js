'use strict'
// The Node WASI host (examples/wasi-host) end to end: guests assembled from
// WebAssembly text by wabt in this run, run in a real worker under node:wasi,
// real files in a temp dir, a real HTTP server, a real OpenTelemetry meter.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const os = require('node:os')
const { PermissionPolicy } = require('..')
const { meterHarness } = require('./helpers.js')
const { runWasiPlugin, assembleWat } = require('../examples/wasi-host/host.js')
const { WasiGate: Gate, openMode, WASI_CALLS } = require('../lib/wasi.js')
const { PermissionChecker } = require('..')

/** The rights bits of `rights_base` that make an open a write (SPEC §14; the core's WRITE_RIGHTS), written from the preview1 witx. */
const WRITE_RIGHTS = (1n << 0n) | (1n << 4n) | (1n << 6n) | (1n << 8n) | (1n << 19n) | (1n << 20n) | (1n << 22n) | (1n << 23n)
const fx = require('../examples/wasi-host/fixture.js')

const skip = process.platform === 'win32' && 'the fixtures plant posix symlinks'
const EACCES = 2 // wasi_snapshot_preview1 errno `acces`

async function run(name, { plugin = name, budgets, root, port, meter }) {
  const wasm = await assembleWat(fs.readFileSync(fx.guestPath(name), 'utf8'), `${name}.wat`)
  const policy = PermissionPolicy.fromManifest(fx.manifestFor(root, port, budgets), { plugin })
  const bus = []
  const r = await runWasiPlugin({
    name: plugin,
    wasm,
    policy,
    meter,
    preopens: { '/data': `${root}/data`, '/out': `${root}/out` },
    args: [plugin, `http://127.0.0.1:${port}/hello`],
    secrets: new Map(fx.SECRETS),
    bus,
  })
  return { ...r, bus }
}

const sum = (points, name, plugin) => points.filter((p) => p.name === name && p.attributes.plugin === plugin).reduce((a, p) => a + p.value, 0)

test('WASI host (Node): the good guest reads, fetches, writes, publishes; nothing denied', { skip, timeout: 60_000 }, async (t) => {
  const root = fx.makeRoot()
  const { server, port } = await fx.startServer()
  const m = meterHarness()
  t.after(() => server.close())
  const r = await run('good', { root, port, meter: m.meter, budgets: { wallClockMs: 10_000 } })
  assert.equal(r.ok, true, JSON.stringify(r))
  assert.deepEqual(r.reports.map((x) => [x.tag, x.value]), [['read', 0], ['secret', 0], ['fetch', 0], ['fetch_status', 200], ['write', 0], ['publish', 0]])
  assert.equal(fs.readFileSync(path.join(root, 'out', 'result.txt'), 'utf8'), 'hello from a file\nhi therehello from 127.0.0.1')
  assert.deepEqual(r.bus, [{ topic: 'demo.finished', data: '{"ok":true}' }])
  assert.ok(r.calls.length === 5 && r.calls.every((c) => c.allowed), JSON.stringify(r.calls))
  assert.equal(sum(await m.points(), 'plugin.permission_denied_total', 'good'), 0)
  await m.shutdown()
})

test('WASI host (Node): every hostile call gets EACCES and counts once; the runaway is stopped by its CPU budget', { skip, timeout: 60_000 }, async (t) => {
  const root = fx.makeRoot()
  const { server, port } = await fx.startServer()
  const m = meterHarness()
  t.after(() => server.close())
  const r = await run('hostile', { root, port, meter: m.meter, budgets: { wallClockMs: 10_000, cpuPercent: 80 } })
  assert.equal(r.code, 'BUDGET_EXCEEDED')
  assert.equal(r.budget, 'cpuPercent')
  assert.deepEqual(r.reports.map((x) => x.tag), fx.HOSTILE_TAGS)
  for (const { tag, value } of r.reports) assert.equal(value, EACCES, `${tag}: errno ${value}`)
  assert.equal(r.calls.length, fx.HOSTILE_TAGS.length, 'no hostile call was allowed')
  assert.ok(r.calls.every((c) => !c.allowed))
  const points = await m.points()
  assert.equal(sum(points, 'plugin.permission_denied_total', 'hostile'), fx.HOSTILE_TAGS.length)
  assert.equal(sum(points, 'plugin.budget_exceeded_total', 'hostile'), 1)
  const reasons = new Set(r.calls.map((c) => `${c.capability}:${c.reason}`))
  for (const want of ['fs.read:path_traversal', 'fs.read:symlink_escape', 'fs.write:mode_not_granted', 'fs.write:path_traversal', 'secrets.get:secret_not_declared', 'fetch:host_not_allowlisted', 'events.publish:topic_not_declared']) {
    assert.ok(reasons.has(want), `${want} in ${[...reasons]}`)
  }
  // Nothing changed on disk.
  assert.equal(fs.readFileSync(path.join(root, 'data', 'input.txt'), 'utf8'), 'hello from a file\n')
  assert.deepEqual(fs.readdirSync(path.join(root, 'out')).sort(), ['here', 'own.txt'])
  assert.deepEqual(fs.readdirSync(root).sort(), ['data', 'out', 'secret-outside.txt'], 'nothing removed or added beside the grants')
  await m.shutdown()
})

test('WASI host (Node): a runaway with only a wall-clock budget is stopped on it', { skip, timeout: 60_000 }, async (t) => {
  const root = fx.makeRoot()
  const { server, port } = await fx.startServer()
  const m = meterHarness()
  t.after(() => server.close())
  const started = performance.now()
  const r = await run('hostile', { plugin: 'spinner', root, port, meter: m.meter, budgets: { wallClockMs: 300 } })
  assert.equal(r.code, 'BUDGET_EXCEEDED')
  assert.equal(r.budget, 'wallClockMs')
  assert.ok(r.elapsedMs >= 300 && performance.now() - started < 10_000)
  const points = await m.points()
  assert.equal(points.find((p) => p.name === 'plugin.budget_exceeded_total' && p.attributes.plugin === 'spinner')?.attributes.reason, 'wall_clock')
  await m.shutdown()
})

test('WASI host (Node): a memoryMb budget it cannot enforce on linear memory is refused, not ignored', () => {
  const policy = PermissionPolicy.fromManifest({ budgets: { memoryMb: 64 } }, { plugin: 'p' })
  assert.throws(() => runWasiPlugin({ name: 'p', wasm: Buffer.alloc(0), policy }), { name: 'TypeError', message: /memoryMb/ })
})

test('WASI host: the mode each path operation needs', () => {
  // Every write right, alone, makes an open a write; read-side rights do not.
  for (let bit = 0n; bit < 30n; bit++) {
    const rights = 1n << bit
    assert.equal(openMode(0, rights, 0), WRITE_RIGHTS & rights ? 'write' : 'read', `right bit ${bit}`)
  }
  for (const bit of [0n, 4n, 6n, 8n, 19n, 20n, 22n, 23n]) assert.equal(openMode(0, 1n << bit, 0), 'write')
  assert.equal(openMode(1, 2n, 0), 'write', 'O_CREAT')
  assert.equal(openMode(8, 2n, 0), 'write', 'O_TRUNC')
  assert.equal(openMode(2, 2n, 0), 'read', 'O_DIRECTORY')
  assert.equal(openMode(0, 2n, 1), 'write', 'FDFLAGS_APPEND')
  for (let bit = 30n; bit < 64n; bit++) assert.equal(openMode(0, 1n << bit, 0), 'read', `right bit ${bit}`)
  assert.equal(openMode(0, '64', 0), 'write', 'rights as a decimal string')
  assert.throws(() => openMode(0, -1, 0), TypeError)
  assert.throws(() => openMode(-1, 0n, 0), TypeError)
})

test('WASI host (Node): ABI edges: bad UTF-8, out-of-memory pointers, unknown and closed fds, NUL, opened directories as bases', { skip, timeout: 60_000 }, async (t) => {
  const root = fx.makeRoot()
  const { server, port } = await fx.startServer()
  const m = meterHarness()
  t.after(() => server.close())
  const r = await run('edge', { root, port, meter: m.meter, budgets: { wallClockMs: 10_000 } })
  assert.equal(r.ok, true, JSON.stringify(r))
  assert.deepEqual(r.reports.map((x) => [x.tag, x.value]), fx.EDGE_REPORTS)
  const points = (await m.points()).filter((p) => p.name === 'plugin.permission_denied_total' && p.attributes.plugin === 'edge')
  assert.deepEqual(points.map((p) => [p.attributes.capability, p.attributes.reason, p.value]).sort(), [
    ['fs.read', 'invalid_path', 1],
    ['fs.read', 'path_traversal', 1],
  ])
  await m.shutdown()
})

test('WasiGate: an operation on a name resolves its parent as written (link/.. is the parent of the target)', { skip }, async () => {
  const root = fx.makeRoot()
  const m = meterHarness()
  const policy = PermissionPolicy.fromManifest(fx.manifestFor(root, 1), { plugin: 'gate' })
  const gate = new Gate(new PermissionChecker(policy, { meter: m.meter }))
  // out/here -> . : lexically out/x, for the kernel root/x.
  assert.deepEqual(gate.checkPath(`${root}/out/here/../x`, 'write', { follow: false }), { allowed: false, capability: 'fs.write', reason: 'not_allowlisted' })
  assert.deepEqual(gate.checkPath(`${root}/out/here/x`, 'write', { follow: false }), { allowed: true, path: `${root}/out/x`, kernelPath: `${root}/out/x` })
  assert.deepEqual(gate.checkPath(`${root}/out/x`, 'write', { follow: false }), { allowed: true, path: `${root}/out/x`, kernelPath: `${root}/out/x` })
  // A final symlink is the name itself when not following, its target when following.
  assert.equal(gate.checkPath(`${root}/data/link-to-secret`, 'read', { follow: false }).allowed, true)
  assert.equal(gate.checkPath(`${root}/data/link-to-secret`, 'read', { follow: true }).reason, 'symlink_escape')
  assert.equal(sum(await m.points(), 'plugin.permission_denied_total', 'gate'), 2)
  await m.shutdown()
})

test('WasiGate: a trailing separator or a final . / .. is checked as followed whatever the no-follow flag (the kernel follows it)', { skip }, async () => {
  const root = fx.makeRoot()
  const m = meterHarness()
  const policy = PermissionPolicy.fromManifest(fx.manifestFor(root, 1), { plugin: 'gate' })
  const gate = new Gate(new PermissionChecker(policy, { meter: m.meter }))
  // out/away -> the root, outside the readwrite grant: lutimes("out/away/")
  // sets the times of the root; lutimes("out/away") those of the link.
  fs.symlinkSync(root, `${root}/out/away`)
  assert.equal(gate.checkPath(`${root}/out/away`, 'write', { follow: false }).allowed, true)
  for (const tail of ['/', '//', '/.', '/./']) {
    const d = gate.checkPath(`${root}/out/away${tail}`, 'write', { follow: false })
    assert.equal(d.allowed, false, `out/away${tail}: ${JSON.stringify(d)}`)
  }
  await m.shutdown()
})

test('WasiGate: a rename moves what is below it: a directory holding the paths of a deny rule, a symlink whose relative target changes meaning', { skip }, async () => {
  const { WasiGate } = require('../examples/wasi-host/gate.js')
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'gate-rename-')))
  const m = meterHarness()
  try {
    fs.mkdirSync(`${root}/out/a/private`, { recursive: true })
    fs.mkdirSync(`${root}/out/c`)
    fs.writeFileSync(`${root}/out/a/private/key.txt`, 'PRIVATE')
    fs.writeFileSync(`${root}/secret.txt`, 'SECRET')
    fs.mkdirSync(`${root}/out/s`)
    fs.symlinkSync('../secret.txt', `${root}/out/s/l`) // inside the grant from out/s, outside from out/
    fs.symlinkSync('../c', `${root}/out/s/in`) // out/c from out/s, out/../c = root/c from out/ (outside)
    fs.symlinkSync('own.txt', `${root}/out/s/same`)
    const denies = [`${root}/out/a/private/**`, `${root}/out/*/private/**`, `${root}/OUT/A/PRIVATE/**`, `${root}/out/a/{priv,x}ate/*.txt`, `${root}/out/a/pri[v]ate/**`]
    for (const deny of denies) {
      const policy = PermissionPolicy.fromManifest({ fs: [{ path: `${root}/out/**`, mode: 'readwrite' }], deny: { fs: [deny] } }, { plugin: 'gate' })
      const gate = new WasiGate(new PermissionChecker(policy, { meter: m.meter }))
      const rename = (from, to) => gate.op('path_rename', { oldPath: `${root}/${from}`, newPath: `${root}/${to}` }, [from, to])
      const moved = rename('out/a', 'out/b')
      if (deny.includes('OUT/A')) {
        // Case differs on a posix volume; the posix deny fold covers it and so does the rename rule.
        assert.equal(moved.errno, 2, `${deny}: ${JSON.stringify(moved)}`)
      } else assert.deepEqual(moved, { errno: 2, capability: 'fs.write', reason: 'explicitly_denied' }, deny)
      // Into the denied subtree's place too.
      assert.equal(rename('out/c', 'out/a').errno, 2, deny)
      // A directory no deny reaches below moves (`out/*/private/**` reaches below every out/ directory).
      assert.equal(rename('out/s', 'out/t').errno, deny.includes('/out/*/') ? 2 : 0, deny)
      if (!deny.includes('/out/*/')) assert.equal(rename('out/t', 'out/s').errno, 0, deny)
    }
    const policy = PermissionPolicy.fromManifest({ fs: [{ path: `${root}/out/**`, mode: 'readwrite' }] }, { plugin: 'gate' })
    const gate = new WasiGate(new PermissionChecker(policy, { meter: m.meter }))
    const rename = (from, to) => gate.op('path_rename', { oldPath: `${root}/${from}`, newPath: `${root}/${to}` }, [from, to])
    assert.equal(rename('out/s/l', 'out/l').errno, 2, 'a link whose target leaves the grants once moved')
    assert.equal(rename('out/s/in', 'out/in').errno, 2, 'a relative directory link that leaves the grants once moved')
    assert.equal(rename('out/s/same', 'out/same').errno, 0, 'a link that stays inside')
    // The trace never holds a guest's megabytes.
    const huge = 'a'.repeat(4 << 20)
    for (let i = 0; i < 3; i++) gate.op('path_unlink_file', { path: `${root}/out/${huge}` }, [huge])
    assert.ok(gate.calls.every((c) => Buffer.byteLength(c.what) <= 256), 'every trace entry cut to 256 bytes')
  } finally {
    await m.shutdown()
    fs.rmSync(root, { recursive: true, force: true })
  }
})

test('WasiGate: a directory rename checks every symlink it carries for what it means from its new place, as the Rust host does (bounded walk)', { skip }, async () => {
  const { WasiGate } = require('../examples/wasi-host/gate.js')
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'gate-moved-')))
  const m = meterHarness()
  const r = root
  try {
    fs.mkdirSync(`${r}/out`)
    fs.writeFileSync(`${r}/out/own.txt`, '')
    fs.mkdirSync(`${r}/out/c`)
    fs.writeFileSync(`${r}/out/c/f.txt`, '')
    fs.writeFileSync(`${r}/secret.txt`, 'SECRET')
    const policy = PermissionPolicy.fromManifest({ fs: [{ path: `${r}/out/**`, mode: 'readwrite' }] }, { plugin: 'moved' })
    const gate = new WasiGate(new PermissionChecker(policy, { meter: m.meter }))
    const denied = async () => sum(await m.points(), 'plugin.permission_denied_total', 'moved')
    const rename = (from, to) => {
      const res = gate.op('path_rename', { oldPath: `${r}/out/${from}`, newPath: `${r}/out/${to}` }, [from, to])
      if (res.errno === 0) fs.renameSync(`${r}/out/${from}`, `${r}/out/${to}`)
      return res.errno
    }
    // From out/s/a/b/c/y, ../../../.. is out/s (inside); moved to out/z/x/y it is the root (outside).
    fs.mkdirSync(`${r}/out/s/a/b/c/y`, { recursive: true })
    fs.mkdirSync(`${r}/out/z/x`, { recursive: true })
    fs.symlinkSync('../../../..', `${r}/out/s/a/b/c/y/l`)
    assert.equal(rename('s/a/b/c/y', 'z/x/y'), EACCES)
    assert.equal(await denied(), 1, 'counted once')
    assert.ok(fs.lstatSync(`${r}/out/s/a/b/c/y/l`).isSymbolicLink(), 'not moved')
    fs.mkdirSync(`${r}/out/t/a/b/c`, { recursive: true })
    assert.equal(rename('s/a/b/c/y', 't/a/b/c/y'), 0, 'moved to the same depth: out/t')
    // Inner relative links at several levels that stay inside: allowed; a `..` after a name: refused, counted.
    fs.mkdirSync(`${r}/out/d/e/f`, { recursive: true })
    fs.symlinkSync('../own.txt', `${r}/out/d/up`)
    fs.symlinkSync('../../c/f.txt', `${r}/out/d/e/f2`)
    fs.symlinkSync('../../../own.txt', `${r}/out/d/e/f/deep`)
    fs.symlinkSync('f', `${r}/out/d/e/sib`)
    fs.symlinkSync('./e/../e/f/', `${r}/out/d/dots`)
    assert.equal(rename('d', 'd2'), EACCES, 'a `..` after a name: fail closed')
    assert.equal(await denied(), 2, 'counted, as every refusal')
    fs.rmSync(`${r}/out/d/dots`)
    assert.equal(rename('d', 'd2'), 0)
    assert.equal(rename('d2', 'g'), 0)
    // Moved one level up, a link that climbed to out/ climbs to the root.
    fs.mkdirSync(`${r}/out/m/n/e`, { recursive: true })
    fs.symlinkSync('../../../secret.txt', `${r}/out/m/n/e/x`)
    assert.equal(rename('m/n', 'n'), EACCES)
    assert.equal(await denied(), 3, 'counted once more')
    assert.equal(rename('m', 'm2'), 0, 'the same depth: out/secret.txt')
    // An absolute inner link outside the grant: refused wherever it moves, even onto itself.
    fs.mkdirSync(`${r}/out/h/i`, { recursive: true })
    fs.symlinkSync(`${r}/secret.txt`, `${r}/out/h/i/abs`)
    assert.equal(rename('h', 'h2'), EACCES)
    assert.equal(rename('h', 'h'), EACCES)
    fs.rmSync(`${r}/out/h/i/abs`)
    fs.symlinkSync(`${r}/out/own.txt`, `${r}/out/h/i/abs`)
    assert.equal(rename('h', 'h2'), 0)
    // A name that is not UTF-8 cannot be checked: refused, counted.
    fs.mkdirSync(`${r}/out/u`)
    fs.symlinkSync('../own.txt', Buffer.concat([Buffer.from(`${r}/out/u/`), Buffer.from([0xff, 0x61])]))
    const before = await denied()
    assert.equal(rename('u', 'u2'), EACCES)
    assert.equal(gate.calls.at(-1).reason, 'invalid_path')
    assert.equal(await denied(), before + 1, 'counted')
    // The walk's bounds: 64 levels, 10,000 entries; one past either is refused, counted.
    let deep = `${r}/out/deep`
    for (let i = 0; i < 64; i++) deep += '/d'
    fs.mkdirSync(deep, { recursive: true })
    assert.equal(rename('deep', 'deep2'), 0, 'exactly the depth bound')
    fs.mkdirSync(`${deep.replace('/out/deep/', '/out/deep2/')}/d`)
    assert.equal(rename('deep2', 'deep3'), EACCES, 'one level past it')
    fs.mkdirSync(`${r}/out/wide`)
    for (let i = 0; i < 10_000; i++) fs.writeFileSync(`${r}/out/wide/${i}`, '')
    assert.equal(rename('wide', 'wide2'), 0, 'exactly the entry bound')
    fs.writeFileSync(`${r}/out/wide2/one-more`, '')
    assert.equal(rename('wide2', 'wide3'), EACCES)
    assert.equal(gate.calls.at(-1).reason, 'symlink_escape')
    assert.equal(await denied(), before + 3, 'each refusal counted')
    // Both readings of the names: `s2/../o` is out/c/o for the kernel and
    // wasmtime (s2 -> out/c/e) and out/o for node:wasi (normalised first).
    fs.mkdirSync(`${r}/out/c/e`)
    fs.symlinkSync(`${r}/out/c/e`, `${r}/out/s2`)
    fs.symlinkSync(`${r}/secret.txt`, `${r}/out/o`)
    const count = await denied()
    assert.equal(rename('s2/../o', 'o2'), EACCES, 'the normalised reading moves a link to outside')
    assert.equal(await denied(), count + 1, 'counted once')
    fs.rmSync(`${r}/out/o`)
    fs.writeFileSync(`${r}/out/o`, '')
    fs.mkdirSync(`${r}/out/c/o`)
    fs.symlinkSync(`${r}/secret.txt`, `${r}/out/c/o/abs`)
    assert.equal(gate.op('path_rename', { oldPath: `${r}/out/s2/../o`, newPath: `${r}/out/o2` }, ['a', 'b']).errno, EACCES, "the kernel's reading moves a directory holding a link to outside")
    assert.equal(await denied(), count + 2)
    fs.rmSync(`${r}/out/c/o/abs`)
    assert.equal(gate.op('path_rename', { oldPath: `${r}/out/s2/../o`, newPath: `${r}/out/o2` }, ['a', 'b']).errno, 0)
  } finally {
    await m.shutdown()
    fs.rmSync(root, { recursive: true, force: true })
  }
})

test('WASI host (Node): a guest sleeping in poll_oneoff is ended by its wall-clock budget; an honest sleep gets its clock event', { skip, timeout: 60_000 }, async () => {
  const root = fx.makeRoot()
  const { server, port } = await fx.startServer()
  const m = meterHarness()
  try {
    const t0 = Date.now()
    const r = await run('sleep', { budgets: { wallClockMs: 1000 }, root, port, meter: m.meter })
    const took = Date.now() - t0
    assert.equal(r.ok, false, JSON.stringify(r))
    assert.equal(r.code, 'BUDGET_EXCEEDED', JSON.stringify(r))
    assert.deepEqual(r.reports.map((x) => [x.tag, x.value]), [['short', 0], ['nevents', 1], ['userdata', 1], ['cpu_clock', 28]])
    assert.ok(took < 8000, `ended in ${took} ms, not after the sleep`)
    assert.equal(sum(await m.points(), 'plugin.budget_exceeded_total', 'sleep'), 1)
  } finally {
    server.close()
    await m.shutdown()
  }
})

test('WASI host (Node): a directory fd opened through a symlink is re-checked where the runtime reaches it after the link is swapped', { skip, timeout: 60_000 }, async () => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wasi-retarget-')))
  const m = meterHarness()
  try {
    fs.mkdirSync(`${root}/data`)
    fs.mkdirSync(`${root}/out/a/private`, { recursive: true })
    fs.writeFileSync(`${root}/out/a/private/secret.txt`, 'PRIVATE KEY')
    const wasm = await assembleWat(fs.readFileSync(fx.guestPath('retarget'), 'utf8'), 'retarget.wat')
    const policy = PermissionPolicy.fromManifest({ fs: [`${root}/data/**`, { path: `${root}/out/**`, mode: 'readwrite' }], deny: { fs: [`${root}/out/a/private/**`] }, budgets: { wallClockMs: 10_000 } }, { plugin: 'retarget' })
    const r = await runWasiPlugin({ name: 'retarget', wasm, policy, meter: m.meter, preopens: { '/data': `${root}/data`, '/out': `${root}/out` }, args: ['retarget'], secrets: new Map(), bus: [] })
    assert.equal(r.ok, true, JSON.stringify(r))
    assert.deepEqual(r.reports.map((x) => [x.tag, x.value]), [['open_dir', 0], ['swap', 0], ['open_secret', EACCES], ['readdir', EACCES]])
    assert.equal(sum(await m.points(), 'plugin.permission_denied_total', 'retarget'), 2)
  } finally {
    await m.shutdown()
    fs.rmSync(root, { recursive: true, force: true })
  }
})

test('WASI host (Node): a preopen inside another preopen, replaced by a symlink after the start, is checked where the runtime reaches it', { skip, timeout: 60_000 }, async () => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wasi-nested-')))
  const m = meterHarness()
  try {
    fs.mkdirSync(`${root}/out/a/private`, { recursive: true })
    fs.mkdirSync(`${root}/out/z/inner`, { recursive: true })
    fs.writeFileSync(`${root}/out/a/private/secret.txt`, 'PRIVATE KEY')
    const wasm = await assembleWat(fs.readFileSync(fx.guestPath('nested'), 'utf8'), 'nested.wat')
    const policy = PermissionPolicy.fromManifest({ fs: [{ path: `${root}/out/**`, mode: 'readwrite' }], deny: { fs: [`${root}/out/a/private/**`] }, budgets: { wallClockMs: 10_000 } }, { plugin: 'nested' })
    const r = await runWasiPlugin({ name: 'nested', wasm, policy, meter: m.meter, preopens: { '/out': `${root}/out`, '/z': `${root}/out/z` }, args: ['nested'], secrets: new Map(), bus: [] })
    assert.equal(r.ok, true, JSON.stringify(r))
    assert.deepEqual(r.reports.map((x) => [x.tag, x.value]), [['rename', 0], ['readdir', EACCES]])
    assert.equal(sum(await m.points(), 'plugin.permission_denied_total', 'nested'), 1)
  } finally {
    await m.shutdown()
    fs.rmSync(root, { recursive: true, force: true })
  }
})

async function runLinked(name, { plugin = name, budgets = { wallClockMs: 10_000 } } = {}) {
  const root = fx.plantLinks(fx.makeRoot())
  const { server, port } = await fx.startServer()
  const m = meterHarness()
  try {
    const r = await run(name, { plugin, budgets, root, port, meter: m.meter })
    return { r, root, points: await m.points() }
  } finally {
    server.close()
    await m.shutdown()
  }
}

test('WASI host (Node): a no-follow open is checked as what node:wasi opens (it follows the final symlink)', { skip, timeout: 60_000 }, async () => {
  const { r, root, points } = await runLinked('symlink')
  assert.equal(r.ok, true, JSON.stringify(r))
  assert.deepEqual(r.reports.map((x) => [x.tag, x.value]), fx.SYMLINK_REPORTS)
  const denied = fx.SYMLINK_REPORTS.filter(([, e]) => e === EACCES).length
  assert.equal(sum(points, 'plugin.permission_denied_total', 'symlink'), denied)
  const reasons = new Set(r.calls.filter((c) => !c.allowed).map((c) => `${c.capability}:${c.reason}`))
  for (const want of ['fs.read:symlink_escape', 'fs.write:symlink_escape', 'fs.write:mode_not_granted']) assert.ok(reasons.has(want), `${want} in ${[...reasons]}`)
  // Not read, not truncated, not created: the secret, the read-only file, the
  // dangling link's target; not unlinked through `lk/..` as node:wasi reads it.
  assert.equal(fs.readFileSync(path.join(root, 'secret-outside.txt'), 'utf8'), 'TOP SECRET\n')
  assert.equal(fs.readFileSync(path.join(root, 'data', 'input.txt'), 'utf8'), 'hello from a file\n')
  assert.equal(fs.existsSync(path.join(root, 'created-outside.txt')), false)
  assert.deepEqual(fs.readdirSync(path.join(root, 'outside-dir')), ['victim'], 'nothing created or removed outside through a link')
})

test('WASI host (Node): fd-level calls are gated by the mode of the fd\'s path (preopens included) and its rights', { skip, timeout: 60_000 }, async () => {
  const { r, root, points } = await runLinked('fdops')
  assert.equal(r.ok, true, JSON.stringify(r))
  assert.deepEqual(r.reports.map((x) => [x.tag, x.value]), fx.FDOPS_REPORTS)
  assert.equal(sum(points, 'plugin.permission_denied_total', 'fdops'), fx.FDOPS_REPORTS.filter(([, e]) => e === EACCES).length)
  // data/input.txt not written; out/own.txt written once, through the fd opened
  // for writing, with the 4 bytes the guest last read (from data/input.txt).
  assert.equal(fs.readFileSync(path.join(root, 'data', 'input.txt'), 'utf8'), 'hello from a file\n')
  assert.equal(fs.readFileSync(path.join(root, 'out', 'own.txt'), 'utf8'), 'hellguest may change this\n')
})

test('WASI host (Node): a start function runs under the budget from instantiation (wall clock and CPU)', { skip, timeout: 60_000 }, async () => {
  for (const [plugin, budgets, budget, reason] of [
    ['start-wall', { wallClockMs: 300 }, 'wallClockMs', 'wall_clock'],
    ['start-cpu', { wallClockMs: 60_000, cpuPercent: 10 }, 'cpuPercent', 'cpu'],
  ]) {
    const started = performance.now()
    const { r, points } = await runLinked('start', { plugin, budgets })
    assert.equal(r.code, 'BUDGET_EXCEEDED', JSON.stringify(r))
    assert.equal(r.budget, budget)
    assert.ok(performance.now() - started < 10_000)
    assert.deepEqual(r.reports, [])
    const b = points.filter((p) => p.name === 'plugin.budget_exceeded_total' && p.attributes.plugin === plugin)
    assert.deepEqual(b.map((p) => [p.attributes.reason, p.value]), [[reason, 1]])
  }
})

test('WASI hosts: every import node:wasi offers is classified in the shared call table', () => {
  const { WASI } = require('node:wasi')
  const offered = Object.keys(new WASI({ version: 'preview1' }).wasiImport).sort()
  const unclassified = offered.filter((n) => !Object.hasOwn(WASI_CALLS, n))
  assert.deepEqual(unclassified, [], 'the worker links only classified imports: classify these in data/wasi-calls.json')
  for (const [name, spec] of Object.entries(WASI_CALLS)) {
    assert.ok(['none', 'fd', 'path', 'refuse'].includes(spec.gate), name)
    if (spec.gate === 'fd') assert.ok(['read', 'write'].includes(spec.mode) && Number.isInteger(spec.right), name)
    if (spec.gate === 'path') assert.ok(['always', 'flag', 'never'].includes(spec.follow), name)
    // Every call that changes the tree through an fd needs write; every right
    // openMode counts as a write is a write call.
    if (spec.gate === 'fd' && (WRITE_RIGHTS >> BigInt(spec.right)) & 1n) assert.equal(spec.mode, 'write', name)
  }
  // path_open follows whatever dirflags says (node:wasi does, measured); the no-follow errno is decided after the check.
  assert.equal(WASI_CALLS.path_open.follow, 'always')
  assert.equal(WASI_CALLS.path_filestat_get.follow, 'flag')
  assert.equal(Object.getPrototypeOf(WASI_CALLS), null, 'no inherited name is an import')
})

test('WasiGate: a path is checked as the kernel reads it and as node:wasi reads it (normalised first)', { skip }, async () => {
  const root = fx.plantLinks(fx.makeRoot())
  const m = meterHarness()
  const gate = new Gate(new PermissionChecker(PermissionPolicy.fromManifest(fx.manifestFor(root, 1), { plugin: 'norm' }), { meter: m.meter }))
  // lk -> out/d1/d2: out/d1/link-out for the kernel (inside, no such file), out/link-out
  // (-> the secret) for node:wasi. Either reading outside the grants denies, once.
  assert.deepEqual(gate.checkPath(`${root}/out/lk/../link-out`, 'read', { follow: true }), { allowed: false, capability: 'fs.read', reason: 'symlink_escape' })
  assert.deepEqual(gate.checkPath(`${root}/out/lk/../link-dir/victim`, 'write', { follow: false }), { allowed: false, capability: 'fs.write', reason: 'not_allowlisted' })
  // Both readings inside: allowed; `path` is node:wasi's reading, `kernelPath` the kernel's.
  assert.deepEqual(gate.checkPath(`${root}/out/lk/../own.txt`, 'write', { follow: true }), { allowed: true, path: `${root}/out/own.txt`, kernelPath: `${root}/out/d1/own.txt` })
  // x-lex -> lk/../private/key.txt: the kernel reads out/d1/private/key.txt (no such file,
  // inside the grant); node:wasi, following the link itself, out/private/key.txt (denied).
  assert.deepEqual(gate.checkPath(`${root}/out/x-lex`, 'read', { follow: true }), { allowed: false, capability: 'fs.read', reason: 'explicitly_denied' })
  assert.equal(sum(await m.points(), 'plugin.permission_denied_total', 'norm'), 3)
  await m.shutdown()
})
