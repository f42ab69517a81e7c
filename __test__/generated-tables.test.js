'use strict'
// index.d.ts's closed sets (deny reasons, capability ids, error codes, budget
// names and reasons, sample fields, instrument names) are generated from the
// Rust exports by scripts/emit-tables.js; this fails when they are stale, and
// checks the generator against the runtime tables it reads.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { render } = require('../scripts/emit-tables.js')
const pkg = require('../index.js')

const root = path.join(__dirname, '..')

test('index.d.ts generated regions match the Rust exports (run npm run build when this fails)', () => {
  const src = fs.readFileSync(path.join(root, 'index.d.ts'), 'utf8')
  assert.equal(render(src), src)
  const r = spawnSync(process.execPath, [path.join(root, 'scripts/emit-tables.js'), '--check'], { encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
})

test('a stale region is detected and rewritten', () => {
  const src = fs.readFileSync(path.join(root, 'index.d.ts'), 'utf8')
  const stale = src.replace("  | 'invalid_path'\n", '')
  assert.notEqual(stale, src)
  assert.equal(render(stale), src)
  assert.throws(() => render(src.replace('// @generated budget-name', '// @generated no-such-region')), /unknown region/)
})

test('the generated unions hold exactly the runtime tables', () => {
  const src = fs.readFileSync(path.join(root, 'index.d.ts'), 'utf8')
  const region = (name) => src.slice(src.indexOf(`// @generated ${name}\n`), src.indexOf('// @end', src.indexOf(`// @generated ${name}\n`)))
  const strings = (name) => [...region(name).matchAll(/'([^']+)'/g)].map((m) => m[1])
  assert.deepEqual(strings('deny-reason'), [...pkg.DENY_REASONS])
  assert.deepEqual(strings('error-code-name'), pkg.ERROR_REGISTRY.map((e) => e.code))
  assert.deepEqual(new Set(strings('capability-const')), new Set(Object.values(pkg.Capability)))
  assert.deepEqual(strings('instrument-name'), pkg.INSTRUMENTS.map((i) => i.name))
})
