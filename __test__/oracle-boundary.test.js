'use strict'
// The boundary oracle (__test__/oracles/boundary.js) for FUZZ_SECONDS (default 3):
// multi-byte characters and lone surrogates around every buffer size and limit
// of the binding, against a naive model, through the public JS API.
const test = require('node:test')
const assert = require('node:assert/strict')
const { run } = require('./oracles/boundary.js')

const seconds = Number(process.env.FUZZ_SECONDS || 3)
const seed = Number(process.env.FUZZ_SEED || Date.now() % 2 ** 31)

test(`boundary oracle: no wrong allow, check = assert = model (${seconds} s, seed ${seed})`, async () => {
  const r = await run({ seconds, seed, log: console.log })
  console.log(`boundary oracle ran ${r.cases} cases (seed ${seed})`)
  assert.ok(r.cases > 100, `only ${r.cases} cases ran`)
  assert.deepEqual(r.wrongAllows.slice(0, 10), [], `${r.wrongAllows.length} wrong allows`)
  assert.deepEqual(r.mismatches.slice(0, 10), [], `${r.mismatches.length} mismatches`)
})
