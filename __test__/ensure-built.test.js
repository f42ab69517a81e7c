'use strict'
// scripts/ensure-built.js rebuilds when any cargo input is newer than the
// addon: src/, data/, build.rs, Cargo.toml and Cargo.lock. Checked in a copy
// of its decision inputs (a temp tree whose `npm run build` is a marker).
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const root = path.join(__dirname, '..')

test('a newer build.rs, Cargo.lock, Cargo.toml, src/ or data/ file triggers a build; nothing newer does not', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asp-ensure-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  fs.mkdirSync(path.join(dir, 'scripts'))
  fs.copyFileSync(path.join(root, 'scripts', 'ensure-built.js'), path.join(dir, 'scripts', 'ensure-built.js'))
  fs.writeFileSync(path.join(dir, 'scripts', 'emit-dmts.js'), '')
  // `npm run build` in the temp tree only records that it ran.
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'x', version: '1.0.0', scripts: { build: 'node -e "require(\'fs\').appendFileSync(\'built\', \'1\')"' } }))
  for (const d of ['src', 'data']) fs.mkdirSync(path.join(dir, d))
  const inputs = { 'src/lib.rs': '', 'data/cases.json': '{}', 'build.rs': '', 'Cargo.toml': '', 'Cargo.lock': '' }
  for (const [f, text] of Object.entries(inputs)) fs.writeFileSync(path.join(dir, f), text)
  for (const f of ['x.node', 'binding.js', 'index.d.mts', 'index.d.ts', 'testing.d.ts', 'testing.d.mts']) fs.writeFileSync(path.join(dir, f), '')
  const old = new Date(Date.now() - 60_000)
  const setAll = (when) => {
    for (const f of Object.keys(inputs)) fs.utimesSync(path.join(dir, f), when, when)
    for (const d of ['src', 'data']) fs.utimesSync(path.join(dir, d), when, when)
  }
  const runs = () => (fs.existsSync(path.join(dir, 'built')) ? fs.readFileSync(path.join(dir, 'built'), 'utf8').length : 0)
  const ensure = () => {
    const r = spawnSync(process.execPath, ['scripts/ensure-built.js'], { cwd: dir, encoding: 'utf8' })
    assert.equal(r.status, 0, r.stderr)
  }
  setAll(old)
  ensure()
  assert.equal(runs(), 0, 'an up-to-date addon is not rebuilt')
  let expected = 0
  for (const f of Object.keys(inputs)) {
    setAll(old)
    const now = new Date()
    fs.utimesSync(path.join(dir, f), now, now)
    fs.utimesSync(path.join(dir, 'x.node'), new Date(Date.now() - 30_000), new Date(Date.now() - 30_000))
    ensure()
    assert.equal(runs(), ++expected, `${f} newer than the addon`)
  }
  fs.rmSync(path.join(dir, 'x.node'))
  setAll(old)
  ensure()
  assert.equal(runs(), ++expected, 'a missing addon is built')
})
