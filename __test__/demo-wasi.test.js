'use strict'
// The WASI half of `npm run demo` (examples/wasi-host/demo.js): exit code,
// what each guest saw, and the metrics it prints.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { HOSTILE_TAGS } = require('../examples/wasi-host/fixture.js')

test('npm run demo (WASI guests): good guest ok, every hostile call EACCES, runaway stopped', { timeout: 60_000, skip: process.platform === 'win32' && 'the demo plants posix symlinks' }, () => {
  const r = spawnSync(process.execPath, [path.join(__dirname, '..', 'examples', 'wasi-host', 'demo.js'), '--json'], { encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr + r.stdout.slice(-2000))
  const report = JSON.parse(r.stdout)
  assert.equal(report.good.ok, true)
  assert.ok(report.good.reports.filter((x) => x.tag !== 'fetch_status').every((x) => x.value === 0))
  assert.equal(report.written, 'hello from a file\nhi therehello from 127.0.0.1')
  assert.equal(report.hostile.code, 'BUDGET_EXCEEDED')
  assert.deepEqual(report.hostile.reports.map((x) => [x.tag, x.value]), HOSTILE_TAGS.map((t) => [t, 2]))
  const denied = report.metrics.filter((m) => m.name === 'plugin.permission_denied_total')
  assert.equal(denied.reduce((a, m) => a + (m.plugin === 'wasi-hostile' ? m.value : 0), 0), HOSTILE_TAGS.length)
  assert.equal(denied.filter((m) => m.plugin === 'wasi-good').length, 0)
  assert.ok(report.lines.some((l) => /^\[wasi-hostile\] path_open "link-to-secret" -> EACCES \(fs.read symlink_escape\)$/.test(l)))
})
