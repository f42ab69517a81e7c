'use strict'
// The destination-bound secrets oracle (__test__/oracles/secrets.js) for
// FUZZ_SECONDS (default 3): secrets.use never allows what the naive SPEC
// §3/§10/§11/§13 model refuses.
const test = require('node:test')
const assert = require('node:assert/strict')
const { run } = require('./oracles/secrets.js')

const seconds = Number(process.env.FUZZ_SECONDS || 3)
const seed = Number(process.env.FUZZ_SEED || Date.now() % 0x7fffffff)

test('secrets.use agrees with a naive SPEC §13 model', async () => {
  const { cases, wrongAllows, mismatches } = await run({ seconds, seed, log: console.log })
  console.log(`secrets oracle seed ${seed}: ${cases} cases`)
  assert.ok(cases > 1000, `${cases} cases`)
  assert.deepEqual(wrongAllows.slice(0, 3), [], `${wrongAllows.length} wrong allows (seed ${seed})`)
  assert.deepEqual(mismatches.slice(0, 3), [], `${mismatches.length} denials the model allows (seed ${seed})`)
})
