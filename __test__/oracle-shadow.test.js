'use strict'
// The shadow-policy oracle (__test__/oracles/shadow.js) for FUZZ_SECONDS
// (default 3): with any shadow, every decision and error equals the decision
// without one, and the enforced counter moves identically (SPEC §12).
const test = require('node:test')
const assert = require('node:assert/strict')
const { run } = require('./oracles/shadow.js')

const seconds = Number(process.env.FUZZ_SECONDS || 3)
const seed = Number(process.env.FUZZ_SEED || Date.now() % 0x7fffffff)

test('a shadow never changes a decision, an error or the enforced counter', async () => {
  const { cases, wrongAllows, mismatches } = await run({ seconds, seed, log: console.log })
  console.log(`shadow oracle seed ${seed}: ${cases} cases`)
  assert.ok(cases > 200, `${cases} cases`)
  assert.deepEqual(wrongAllows.slice(0, 3), [], `${wrongAllows.length} wrong allows (seed ${seed})`)
  assert.deepEqual(mismatches.slice(0, 3), [], `${mismatches.length} mismatches (seed ${seed})`)
})
