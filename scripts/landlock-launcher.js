'use strict'
// Builds (when stale) the asp-landlock launcher with cargo and returns its
// path (target/debug/asp-landlock, where lib/lockdown.js looks for it). It is
// a separate binary of the crate (feature `launcher`), not part of the addon.
// Usage: `node scripts/landlock-launcher.js [--release]` prints the path.
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { SELECTION } = require('./cargo-test.js')

const root = path.join(__dirname, '..')

function landlockLauncher({ release = false } = {}) {
  // The debug build uses `npm run test:rust`'s selection (it builds the
  // launcher for tests/landlock.rs), so after that step this is a no-op. A
  // build with other features would rebuild the crate's library in
  // target/debug (a cdylib crate's library has no hash in its file name)
  // while `npm test`'s other lane may be running the doc-tests that link it.
  const selection = release ? ['--no-default-features', '--features', 'launcher'] : SELECTION
  const args = ['build', '--bin', 'asp-landlock', ...selection, '--message-format=json-render-diagnostics']
  if (release) args.push('--release')
  const json = execFileSync('cargo', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 << 20 })
  for (const line of json.split('\n')) {
    if (!line.startsWith('{')) continue
    const m = JSON.parse(line)
    if (m.reason === 'compiler-artifact' && m.target && m.target.name === 'asp-landlock' && m.executable) return m.executable
  }
  throw new Error('cargo built no asp-landlock')
}

module.exports = { landlockLauncher }
if (require.main === module) process.stdout.write(landlockLauncher({ release: process.argv.includes('--release') }) + '\n')
