'use strict'
// Builds (when stale) and returns the path of a separate debug addon with the
// `test-hooks` cargo feature: `__panicForTesting`, `__rawPanicForTesting`,
// `__lockdownProbe`. The shipped addon (`npm run build`) never has them; the
// tests that need them load this one instead. Usage: `node scripts/test-hooks-addon.js`
// prints the path; `require(...).testHooksAddonPath()` returns it.
const fs = require('node:fs')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

const root = path.join(__dirname, '..')
const out = path.join(root, 'target', 'test-hooks', 'api-sandbox-permissions-test-hooks.node')

function testHooksAddonPath() {
  // `npm test` builds it in its Rust lane before the JS tests start and says
  // so here, so the JS tests do not queue for the target directory's lock
  // while that lane's `cargo test` compiles.
  if (process.env.ASP_TEST_HOOKS_BUILT === '1' && fs.existsSync(out)) return out
  // cargo decides what is stale; a fresh build is a no-op.
  const json = execFileSync('cargo', ['build', '--lib', '--features', 'test-hooks', '--message-format=json-render-diagnostics'], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 64 << 20,
  })
  let lib
  for (const line of json.split('\n')) {
    if (!line.startsWith('{')) continue
    const m = JSON.parse(line)
    if (m.reason === 'compiler-artifact' && m.target && m.target.kind.includes('cdylib')) {
      lib = m.filenames.find((f) => /\.(so|dylib|dll)$/.test(f))
    }
  }
  if (!lib) throw new Error('cargo built no cdylib for the test-hooks addon')
  fs.mkdirSync(path.dirname(out), { recursive: true })
  // Copy at once (another cargo run may overwrite the uplifted library), then rename atomically.
  const tmp = `${out}.${process.pid}.tmp`
  fs.copyFileSync(lib, tmp)
  fs.renameSync(tmp, out)
  return out
}

/** The test-hooks addon's exports (loaded once per process). */
let loaded
function loadTestHooksAddon() {
  if (loaded === undefined) {
    const p = testHooksAddonPath()
    loaded = require(p)
  }
  return loaded
}

module.exports = { testHooksAddonPath, loadTestHooksAddon }
if (require.main === module) process.stdout.write(testHooksAddonPath() + '\n')
