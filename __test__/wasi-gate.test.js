'use strict'
// The WASI gate as public API (`@suaveplan/api-sandbox-permissions/wasi`):
// the core's compound fs rules through the binding, refusals counted once on
// the checker (and its shadow), arguments read as own data and validated,
// and every call bounded by the host's budget. Real temp dirs, a real
// OpenTelemetry SDK meter.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { PermissionPolicy, PermissionChecker } = require('..')
const { meterHarness } = require('./helpers.js')
const wasi = require('@suaveplan/api-sandbox-permissions/wasi')
const { WasiGate, WASI_CALLS, ERRNO, openMode } = wasi

const skip = process.platform === 'win32' && 'posix symlinks and paths'

function world(t) {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wasi-gate-')))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  fs.mkdirSync(`${root}/out/a/private`, { recursive: true })
  fs.writeFileSync(`${root}/out/a/private/key.txt`, 'KEY')
  fs.mkdirSync(`${root}/out/c`)
  return root
}

const denied = async (m, plugin, name = 'plugin.permission_denied_total') =>
  (await m.points()).filter((p) => p.name === name && p.attributes.plugin === plugin).reduce((a, p) => a + p.value, 0)

test('the subpath resolves to the gate, by require and import', async () => {
  assert.equal(require('../wasi.js'), wasi)
  const esm = await import('@suaveplan/api-sandbox-permissions/wasi')
  assert.equal(esm.WasiGate, WasiGate)
  assert.equal(esm.default, wasi)
  assert.equal(WASI_CALLS.path_rename.gate, 'path')
  assert.equal(Object.getPrototypeOf(WASI_CALLS), null)
  assert.ok(Object.isFrozen(WASI_CALLS) && Object.isFrozen(WASI_CALLS.fd_write))
  assert.equal(ERRNO.ACCES, 2)
  assert.equal(openMode(1, 0n, 0), 'write')
  assert.equal(openMode(0, 2n, 0), 'read')
})

test('a directory whose name the deny fold matches cannot be renamed out of its reach; refusals count once, on the shadow too', { skip }, async (t) => {
  const root = world(t)
  fs.mkdirSync(`${root}/out/\u10D0/sub`, { recursive: true })
  const m = meterHarness()
  t.after(() => m.shutdown())
  const manifest = { fs: [{ path: `${root}/out/**`, mode: 'readwrite' }], deny: { fs: [`${root}/out/\u10A0/sub/*`] } }
  const policy = PermissionPolicy.fromManifest(manifest, { plugin: 'gate' })
  const shadow = PermissionPolicy.fromManifest({ fs: [{ path: `${root}/out/**`, mode: 'readwrite' }], deny: { fs: [`${root}/out/c/**`] } }, { plugin: 'gate' })
  const events = []
  const gate = new WasiGate(new PermissionChecker(policy, { meter: m.meter, shadow, onShadow: (e) => events.push(e) }))
  assert.equal(policy.checkFs(`${root}/out/\u10D0/sub/x`, 'read').reason, 'explicitly_denied', 'the deny check folds Georgian as HFS+ does')
  const r = gate.pathCall('path_rename', { oldPath: `${root}/out/\u10D0`, newPath: `${root}/out/moved` })
  assert.deepEqual(r, { errno: ERRNO.ACCES, capability: 'fs.write', reason: 'explicitly_denied' })
  assert.equal(await denied(m, 'gate'), 1)
  // Allowed by the policy, refused by the shadow (out/c below its deny): reported, never enforced.
  const ok = gate.pathCall('path_rename', { oldPath: `${root}/out/c`, newPath: `${root}/out/d` })
  assert.equal(ok.errno, 0, JSON.stringify(ok))
  assert.deepEqual(ok.paths, [`${root}/out/c`, `${root}/out/d`])
  assert.equal(await denied(m, 'gate'), 1)
  assert.equal(await denied(m, 'gate', 'plugin.permission_shadow_denied_total'), 1)
  assert.deepEqual(events.map((e) => [e.capability, e.reason, e.enforced]), [['fs.write', 'explicitly_denied', 'allowed']])
})

test('the budget bounds the host work: a call out of time is refused as outOfBudget, never counted as a denial', { skip }, async (t) => {
  const root = world(t)
  for (let i = 0; i < 50; i++) fs.symlinkSync(`../f${i}`, `${root}/out/c/l${i}`)
  const m = meterHarness()
  t.after(() => m.shutdown())
  const policy = PermissionPolicy.fromManifest({ fs: [{ path: `${root}/out/**`, mode: 'readwrite' }] }, { plugin: 'budget' })
  const gate = new WasiGate(new PermissionChecker(policy, { meter: m.meter }))
  const call = { oldPath: `${root}/out/c`, newPath: `${root}/out/d` }
  for (const timeLeftMs of [0, -5]) assert.deepEqual(gate.pathCall('path_rename', call, { timeLeftMs }), { errno: ERRNO.IO, outOfBudget: true })
  assert.deepEqual(gate.fdCall(`${root}/out`, 'read', { reread: true, timeLeftMs: 0 }), { errno: ERRNO.IO, outOfBudget: true })
  assert.deepEqual(gate.checkPath(`${root}/out/c`, 'read', { timeLeftMs: 0 }), { allowed: false, outOfBudget: true })
  assert.equal(gate.pathCall('path_rename', call, { timeLeftMs: Infinity }).errno, 0)
  assert.equal(gate.pathCall('path_rename', call, { timeLeftMs: 60_000 }).errno, 0)
  assert.equal(await denied(m, 'budget'), 0)
})

test('arguments are own data, validated; a name that is not well-formed is refused and counted', { skip }, async (t) => {
  const root = world(t)
  const m = meterHarness()
  t.after(() => m.shutdown())
  const policy = PermissionPolicy.fromManifest({ fs: [{ path: `${root}/out/**`, mode: 'readwrite' }] }, { plugin: 'args' })
  const gate = new WasiGate(new PermissionChecker(policy, { meter: m.meter }))
  assert.throws(() => new WasiGate(policy), TypeError)
  assert.throws(() => new WasiGate({}), TypeError)
  assert.throws(() => gate.pathCall('fd_write', { path: '/x' }), TypeError)
  assert.throws(() => gate.pathCall('__proto__', {}), TypeError)
  assert.throws(() => gate.pathCall('path_unlink_file', null), TypeError)
  assert.throws(() => gate.pathCall('path_unlink_file', { path: 1 }), TypeError)
  assert.throws(() => gate.pathCall('path_rename', { oldPath: `${root}/out/a` }), TypeError)
  assert.throws(() => gate.pathCall('path_open', { path: `${root}/out/f`, oflags: -1 }), TypeError)
  assert.throws(() => gate.pathCall('path_open', { path: `${root}/out/f`, rightsBase: -1 }), TypeError)
  assert.throws(() => gate.pathCall('path_open', { path: `${root}/out/f`, rightsBase: '18446744073709551616' }), TypeError)
  assert.throws(() => gate.pathCall('path_unlink_file', { path: `${root}/out/f` }, { timeLeftMs: '1' }), TypeError)
  assert.throws(() => gate.pathCall('path_unlink_file', { path: `${root}/out/f` }, { other: 1 }), TypeError)
  assert.throws(() => gate.fdCall(`${root}/out`, 'append'), TypeError)
  // A getter or an inherited path is never read: the call has no path.
  const getter = Object.defineProperty({}, 'path', { get: () => `${root}/out/x`, enumerable: true })
  assert.throws(() => gate.pathCall('path_unlink_file', getter), TypeError)
  assert.throws(() => gate.pathCall('path_unlink_file', Object.create({ path: `${root}/out/x` })), TypeError)
  let trapped = false
  const proxy = new Proxy({ path: `${root}/out/x` }, { getOwnPropertyDescriptor: (o, k) => ((trapped = true), Reflect.getOwnPropertyDescriptor(o, k)) })
  assert.throws(() => gate.pathCall('path_unlink_file', proxy), TypeError)
  assert.equal(trapped, false, 'refused before any trap runs')
  // Lone surrogates name no file: refused, counted once.
  assert.deepEqual(gate.pathCall('path_unlink_file', { path: `${root}/out/\ud800` }), { errno: ERRNO.ACCES, capability: 'fs.write', reason: 'invalid_path' })
  assert.equal(await denied(m, 'args'), 1)
  // A u64 rights value: every form the runtime may hand over; a write right makes the open a write.
  for (const rightsBase of [64n, 64, '64', (1n << 64n) - 1n]) {
    const r = gate.pathCall('path_open', { path: `${root}/out/new.txt`, rightsBase })
    assert.equal(r.errno, 0, JSON.stringify(r))
  }
  const ro = new WasiGate(new PermissionChecker(PermissionPolicy.fromManifest({ fs: [`${root}/out/**`] }, { plugin: 'args' }), { meter: m.meter }))
  assert.equal(ro.pathCall('path_open', { path: `${root}/out/a`, rightsBase: 64n }).reason, 'mode_not_granted')
  assert.equal(ro.pathCall('path_open', { path: `${root}/out/a`, rightsBase: 2n }).errno, 0)
  // path_link following a symlink: EINVAL before any check (not a denial).
  assert.deepEqual(gate.pathCall('path_link', { oldPath: `${root}/out/a`, oldFlags: 1, newPath: `${root}/out/b` }), { errno: ERRNO.INVAL })
  assert.equal(await denied(m, 'args'), 2)
})
