'use strict'
// `npm run test:rust`: the crate's Rust tests and the example WASI host's
// (examples/wasi-host-rs, wasmtime) in one cargo invocation, so the
// dependencies they share are resolved with one feature set and built once
// in the workspace's one target directory. Extra arguments go to `cargo test`
// (`npm run test:rust -- fs` runs the tests whose names contain `fs`).
//
// SELECTION is also what __test__/wasi-differential.test.js builds the host's
// `run` example with: the same packages and features, so after this step its
// build is a no-op rather than a second build of the crate and its
// dependencies under another feature set.
const { spawnSync } = require('node:child_process')
const path = require('node:path')

const FEATURES = ['testing', 'lockdown', 'launcher'].map((f) => `api-sandbox-permissions/${f}`).join(',')
const SELECTION = ['-p', 'api-sandbox-permissions', '-p', 'wasi-host-rs', '--no-default-features', '--features', FEATURES]

module.exports = { SELECTION }

if (require.main === module) {
  const args = ['test', ...SELECTION, ...process.argv.slice(2)]
  console.log(`cargo ${args.join(' ')}`)
  const r = spawnSync('cargo', args, { stdio: 'inherit', cwd: path.join(__dirname, '..') })
  process.exit(r.status === null ? 1 : r.status)
}
