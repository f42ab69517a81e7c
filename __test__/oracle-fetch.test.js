'use strict'
// Runs the fetch oracle (__test__/oracles/fetch.js) for FUZZ_SECONDS (default 3):
// every URL any fetch entry point allows must be one Node's URL parses to a
// granted scheme, host and port.
const test = require('node:test')
const assert = require('node:assert/strict')
const { run } = require('./oracles/fetch.js')

test('fetch oracle: no entry point allows a URL that Node would send to an ungranted origin', async () => {
  const seconds = Number(process.env.FUZZ_SECONDS || 3)
  const seed = Number(process.env.FUZZ_SEED || Date.now() % 2 ** 31)
  const r = await run({ seconds, seed, log: (m) => console.log(`${m} (seed ${seed})`) })
  assert.ok(r.cases > 1000, `ran ${r.cases} cases`)
  assert.deepEqual(r.wrongAllows, [], `seed ${seed}`)
  // Path scopes are exact in the model and the checker: they agree both ways.
  assert.deepEqual(r.mismatches, [], `seed ${seed}`)
})
