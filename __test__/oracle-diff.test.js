'use strict'
// The semantic diff's soundness oracle (__test__/oracles/diff.js) for
// FUZZ_SECONDS (default 3): on generated manifest pairs, a diff that says
// "no new authority" (exit 0) is never contradicted by a sampled request the
// new policy allows and the old denies, and every witness is confirmed by
// both checkers. Longer runs: npm run fuzz:js -- --only diff --seconds N.
const test = require('node:test')
const assert = require('node:assert/strict')
const { run } = require('./oracles/diff.js')

const seconds = Number(process.env.FUZZ_SECONDS || 3)
const seed = Number(process.env.FUZZ_SEED || Date.now() % 0x7fffffff)

test('diff never answers "no new authority" when a sampled request widens', async () => {
  const { cases, pairs, exits, wrongAllows, mismatches } = await run({ seconds, seed, log: console.log })
  console.log(`diff oracle seed ${seed}: ${pairs} pairs, ${cases} requests`)
  assert.ok(pairs > 50, `${pairs} pairs`)
  // The generator exercises every answer: proven inclusions, widenings, and unknowns are allowed but not required.
  assert.ok(exits[0] > 0 && exits[1] > 0, `exit codes ${exits}`)
  assert.deepEqual(wrongAllows.slice(0, 3), [], `${wrongAllows.length} requests the new policy allows and the old denies under exit 0 (seed ${seed})`)
  assert.deepEqual(mismatches.slice(0, 3), [], `${mismatches.length} witnesses not confirmed (seed ${seed})`)
})
