'use strict'
// The kernel as the oracle for the Node WASI host (see
// __test__/oracles/wasi-host.js): random worlds of files and symlinks, random
// guests making path and fd calls through runWasiPlugin and the real
// node:wasi; whatever the host allowed, the kernel must show that nothing was
// read from outside the grants and nothing changed outside the readwrite one.
// When the Rust host's `run` example is built (wasi-differential.test.js builds
// it), the same worlds and guests run under it too, judged the same way, and
// a call one host's gate denies and the other allows is a mismatch.
const test = require('node:test')
const assert = require('node:assert/strict')
const { run } = require('./oracles/wasi-host.js')

const seconds = Number(process.env.FUZZ_SECONDS || 3)
const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Date.now() >>> 0

test('kernel oracle: every call the Node WASI host allows stays inside the grants', { skip: process.platform !== 'linux' && 'posix symlinks, node:wasi on Linux', timeout: (seconds + 120) * 1000 }, async () => {
  const r = await run({ seconds, seed, log: console.log })
  console.log(`wasi-host oracle: ${r.cases} calls in ${r.worlds} worlds, ${r.allowed} allowed (seed ${seed})`)
  assert.ok(r.cases > 100, `ran ${r.cases} calls`)
  assert.ok(r.allowed > 0, 'some calls were allowed')
  assert.deepEqual(r.wrongAllows.slice(0, 3), [], `seed ${seed}: ${r.wrongAllows.length} wrong allows`)
  assert.deepEqual(r.mismatches.slice(0, 3), [], `seed ${seed}: the two hosts' gates disagree`)
  for (const d of r.runtimeDifferences.slice(0, 3)) console.log('  runtime errno difference (reported):', JSON.stringify({ call: d.call, node: d.node, rust: d.rust }))
})
