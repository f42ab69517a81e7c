'use strict'
// Creating and dropping policies, checkers and budget trackers does not grow
// RSS (externals and napi-rs classes are finalised). CI runs 200k; the README
// records a 1M run of the same script.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

test('RSS stays bounded over 200k policies, checkers and trackers', { timeout: 300_000 }, () => {
  const r = spawnSync(process.execPath, ['--expose-gc', path.join(__dirname, '..', 'scripts', 'leak-check.js'), '200000'], { encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  const m = JSON.parse(r.stdout)
  assert.equal(m.sink, true)
  assert.ok(m.endRssMb - m.warmRssMb < 64, `RSS grew from ${m.warmRssMb} MB to ${m.endRssMb} MB`)
})
