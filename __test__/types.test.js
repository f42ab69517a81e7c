'use strict'
// index.d.ts and testing.d.ts compile under `tsc --strict` in a consumer file.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

test('a TypeScript consumer using every export compiles with tsc --strict', () => {
  const tsc = require.resolve('typescript/bin/tsc')
  const r = spawnSync(process.execPath, [tsc, '-p', path.join(__dirname, 'types', 'tsconfig.json')], { encoding: 'utf8' })
  assert.equal(r.status, 0, r.stdout + r.stderr)
})
