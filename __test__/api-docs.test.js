'use strict'
// The typed API reference: TypeDoc over index.d.ts, testing.d.ts and fs.d.ts
// (`npm run docs:api`, into docs/api/, not checked in) builds with warnings
// as errors: no broken {@link}, nothing referenced that is not exported. And
// every named export is documented (with --validation.notDocumented, only
// members of inline object types may go without).
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const root = path.join(__dirname, '..')
/** TypeDoc's CLI: the dev dependency, or TYPEDOC_BIN (a typedoc/bin/typedoc elsewhere). */
function typedocBin() {
  if (process.env.TYPEDOC_BIN) return process.env.TYPEDOC_BIN
  try {
    return path.join(path.dirname(require.resolve('typedoc/package.json', { paths: [root] })), 'bin', 'typedoc')
  } catch {
    return null
  }
}
const bin = typedocBin()
// In CI (npm ci installs the dev dependency) a missing TypeDoc fails; a
// checkout whose node_modules predates it skips, saying so.
const skip = bin === null && !process.env.CI ? 'typedoc is not installed in node_modules (npm ci installs it)' : false

test('the API reference builds from the .d.ts files without a warning, and every named export is documented', { skip, timeout: 300_000 }, (t) => {
  assert.ok(bin, 'typedoc is a dev dependency: npm ci')
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'asp-typedoc-'))
  t.after(() => fs.rmSync(out, { recursive: true, force: true }))
  const r = spawnSync(process.execPath, [bin, '--options', 'typedoc.json', '--out', out], { cwd: root, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } })
  assert.equal(r.status, 0, r.stdout + r.stderr)
  assert.doesNotMatch(r.stdout + r.stderr, /\[warning\]|\[error\]/)
  for (const page of ['index.html', 'classes/index.PermissionChecker.html', 'classes/index.BudgetTracker.html', 'functions/testing.runPermissionsConformance.html', 'functions/fs.openChecked.html', 'classes/fs.CheckedFile.html']) {
    assert.ok(fs.existsSync(path.join(out, page)), `${page} in the reference`)
  }
  const strict = spawnSync(process.execPath, [bin, '--options', 'typedoc.json', '--emit', 'none', '--validation.notDocumented', '--treatWarningsAsErrors', 'false'], { cwd: root, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } })
  const undocumented = (strict.stdout + strict.stderr).split('\n').filter((l) => l.includes('does not have any documentation') && !l.includes('.__type.'))
  assert.deepEqual(undocumented, [])
})
