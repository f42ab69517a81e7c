'use strict'
// The manifest-walk oracle (__test__/oracles/manifest-walk.js) for
// FUZZ_SECONDS (default 3): random manifests and hostile variants of them,
// compiled under a polluted Object.prototype / Array.prototype, against a
// naive model of the guide's rules and V8's own JSON.stringify.
const test = require('node:test')
const assert = require('node:assert/strict')
const { run } = require('./oracles/manifest-walk.js')

const seconds = Number(process.env.FUZZ_SECONDS || 3)
const seed = Number(process.env.FUZZ_SEED || Date.now() % 2 ** 31)

test(`manifest-walk oracle: the model's verdict under prototype pollution (${seconds} s, seed ${seed})`, () => {
  const r = run({ seconds, seed })
  console.log(`manifest-walk oracle ran ${r.cases} cases (seed ${seed}): ${JSON.stringify(r.kinds)}`)
  assert.deepEqual(r.wrongAllows, [], `${r.wrongAllows.length} wrong allows`)
  assert.deepEqual(r.mismatches, [], `${r.mismatches.length} mismatches`)
  assert.ok(r.cases > 100, `only ${r.cases} cases ran`)
})
