'use strict'
// The example host end to end (what `npm run demo` runs): a good plugin does
// its job; every trick of the hostile one is denied; its busy loop is stopped
// by the budget; the metrics show each denial.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

test('npm run demo: exit code, expected denials and metrics', { timeout: 60_000, skip: process.platform === 'win32' && 'the demo uses posix symlinks' }, () => {
  const r = spawnSync(process.execPath, [path.join(__dirname, '..', 'examples', 'vm-host', 'demo.js'), '--json'], { encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr + r.stdout.slice(-2000))
  const report = JSON.parse(r.stdout)
  assert.equal(report.good.ok, true)
  assert.deepEqual(report.good.calls.map((c) => [c.capability, c.allowed]), [
    ['fs.read', true],
    ['fetch', true],
    ['secrets.get', true],
    ['fs.write', true],
    ['events.publish', true],
  ])
  assert.deepEqual(report.good.events, [{ topic: 'demo.finished', data: { ok: true } }])
  assert.deepEqual(report.written, { input: 'hello from a file', api: 'hello from 127.0.0.1', greeting: 'hi there' })
  assert.equal(report.evil.ok, false)
  assert.equal(report.evil.code, 'BUDGET_EXCEEDED')
  const denied = report.evil.calls.filter((c) => !c.allowed).map((c) => `${c.capability}:${c.reason}`)
  assert.deepEqual(denied, [
    'fs.read:path_traversal',
    'fs.read:symlink_escape',
    'fs.read:symlink_escape',
    'fs.write:not_allowlisted',
    'fs.write:mode_not_granted',
    'fetch:host_not_allowlisted',
    'fetch:host_not_allowlisted',
    'fetch:credentials_in_url',
    'fetch:port_not_allowed',
    'fetch:scheme_not_allowed',
    'fetch:host_not_allowlisted',
    'secrets.get:secret_not_declared',
    'events.publish:topic_not_declared',
    '__proto__:unknown_capability',
  ])
  assert.ok(report.lines.some((l) => /escape through the global: ReferenceError/.test(l)))
  assert.ok(!report.lines.some((l) => l.includes('UNEXPECTED')))
  assert.equal(report.inputUntouched, true)
  assert.equal(report.evilFileAbsent, true)
  const metric = (name, plugin, capability, reason) => report.metrics.find((m) => m.name === name && m.plugin === plugin && m.capability === capability && m.reason === reason)?.value
  assert.equal(metric('plugin.permission_denied_total', 'evil-plugin', 'fs.read', 'path_traversal'), 1)
  // The lexical capability check allows both links; authorizeFs denies each once.
  assert.equal(metric('plugin.permission_denied_total', 'evil-plugin', 'fs.read', 'symlink_escape'), 2)
  assert.equal(metric('plugin.permission_denied_total', 'evil-plugin', 'fetch', 'host_not_allowlisted'), 3)
  assert.equal(report.metrics.filter((m) => m.name === 'plugin.budget_exceeded_total' && m.plugin === 'evil-plugin').length, 1)
  if (process.platform === 'linux' && ['x64', 'arm64'].includes(process.arch)) {
    // The process tier: an escape that reaches `process` still gets EPERM everywhere.
    assert.equal(report.escape.code, 'BUDGET_EXCEEDED')
    assert.ok(report.escape.locked.allowed > 30)
    for (const line of ['reached process pid', 'read /etc/passwd: EPERM', 'write /tmp/pwned: EPERM', 'spawn /bin/sh: EPERM', 'connect 127.0.0.1:9: EPERM']) {
      assert.ok(report.lines.some((l) => l.includes(`[escape] log: ${line}`)), line)
    }
  }
  // The good plugin is never denied; the stricter shadow manifest beside it only reports (SPEC §12).
  assert.equal(report.metrics.filter((m) => m.plugin === 'good-plugin' && !m.name.includes('shadow')).length, 0)
  assert.deepEqual(report.good.shadow.map((e) => `${e.capability}:${e.reason}:${e.enforced}`), [
    'fetch:path_not_allowed:allowed',
    'fetch:path_not_allowed:allowed',
    'fetch:path_not_allowed:allowed',
    'secrets.get:secret_not_declared:allowed',
  ])
  for (const e of report.good.shadow.filter((x) => x.target)) assert.match(e.target, /^http:\/\/127\.0\.0\.1:\d+$/)
  assert.equal(metric('plugin.permission_shadow_denied_total', 'good-plugin', 'fetch', 'path_not_allowed'), 3)
  assert.equal(metric('plugin.permission_shadow_denied_total', 'good-plugin', 'secrets.get', 'secret_not_declared'), 1)
  assert.ok(report.lines.some((l) => /shadow report for good-plugin: 4 call/.test(l)))
  // Destination-bound secrets (SPEC §13): sent as a header to the granted API
  // only; never in the URL or body, never to another host, dropped on a
  // cross-origin redirect, never readable, never in the worker.
  assert.equal(report.secret.ok, true, report.lines.join('\n'))
  assert.deepEqual(JSON.parse(report.secret.value), {
    granted: '200 authorized',
    otherHost: 'secret_destination_not_allowed',
    inUrl: 'secret_destination_not_allowed',
    inBody: 'secret_destination_not_allowed',
    outOfScope: 'secret_destination_not_allowed',
    redirect: '200 collector got no authorization header',
    read: 'secret_not_readable',
    placeholderLooksRandom: true,
  })
  assert.deepEqual(report.secret.seenByCollector, [{ url: '/collect', authorization: null }])
  assert.equal(report.secret.tokenInWorkerOutput, false)
  assert.ok(report.lines.some((l) => /substituted header 'authorization' dropped/.test(l)))
  assert.equal(metric('plugin.permission_denied_total', 'secret-plugin', 'secrets.use', 'secret_destination_not_allowed'), 4)
  assert.equal(metric('plugin.permission_denied_total', 'secret-plugin', 'secrets.get', 'secret_not_readable'), 1)
  const { findDeno } = require('../examples/deno/run.js')
  const denoHere = findDeno()
  assert.equal(report['deno-good'] !== undefined, denoHere.deno !== null, `the Deno tier runs iff deno runs here (${denoHere.why})`)
  if (denoHere.deno !== null) {
    // The Deno tier: a real deno under the permission broker, same manifest.
    assert.equal(report['deno-good'].ok, true, report.lines.join('\n'))
    assert.deepEqual(report.denoWritten, { input: 'hello from a file', api: 'hello from 127.0.0.1', greeting: 'hi there' })
    assert.equal(report['deno-evil'].code, 'BUDGET_EXCEEDED')
    assert.equal(report['deno-evil'].stats.allowed, 0)
    const tricks = report['deno-evil'].lines.filter((l) => l !== 'now spinning forever')
    assert.equal(tricks.length, 11)
    for (const l of tricks) assert.match(l, /: (NotCapable|TypeError) SAND_PERM_001 PERMISSION_DENIED /, l)
    assert.equal(metric('plugin.permission_denied_total', 'deno-evil', 'fs.read', 'symlink_escape'), 1)
    assert.equal(metric('plugin.permission_denied_total', 'deno-evil', 'unknown', 'unknown_capability'), 2)
    assert.equal(metric('plugin.budget_exceeded_total', 'deno-evil', 'deno', 'wall_clock'), 1)
    assert.equal(report.metrics.filter((m) => m.plugin === 'deno-good').length, 0)
  }
})
