'use strict'
// The Deno broker oracle (__test__/oracles/deno-broker.js) for FUZZ_SECONDS (default 3):
// valid, mutated and over-long request lines with multi-byte characters around
// the path and line limits, split across writes anywhere, against a naive model.
const test = require('node:test')
const assert = require('node:assert/strict')
const { run } = require('./oracles/deno-broker.js')

const seconds = Number(process.env.FUZZ_SECONDS || 3)
const seed = Number(process.env.FUZZ_SEED || Date.now() % 2 ** 31)

test(`deno broker oracle: no wrong allow, replies = model (${seconds} s, seed ${seed})`, { skip: process.platform === 'win32' && 'the Deno broker listens on a Unix socket' }, async () => {
  const r = await run({ seconds, seed, log: console.log })
  console.log(`deno broker oracle ran ${r.cases} cases (seed ${seed})`)
  assert.ok(r.cases > 100, `only ${r.cases} cases ran`)
  assert.ok(r.seen.allowed > 0 && r.seen.denied > 0 && r.seen.tooLong > 0, JSON.stringify(r.seen))
  assert.deepEqual(r.wrongAllows.slice(0, 10), [], `${r.wrongAllows.length} wrong allows`)
  assert.deepEqual(r.mismatches.slice(0, 10), [], `${r.mismatches.length} mismatches`)
})
