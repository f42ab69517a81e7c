'use strict'
// The semantic diff's soundness oracle (__test__/oracles/diff.js) for
// FUZZ_SECONDS (default 3): on generated manifest pairs, a diff that says
// "no new authority" (exit 0) is never contradicted by a sampled request the
// new policy allows and the old denies, and every witness is confirmed by
// both checkers. Longer runs: npm run fuzz:js -- --only diff --seconds N.
const test = require('node:test')
const assert = require('node:assert/strict')
const { run, generator, prng } = require('./oracles/diff.js')
const { PermissionPolicy, diffPolicies } = require('..')

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

test('the step-budget class: an old policy whose checks give up never covers a new one', () => {
  const gen = generator(prng(seed))
  const opts = { plugin: 'oracle-diff', platform: 'posix' }
  let gaveUp = 0
  // One pair past the budget by construction (1,040 grants of 4-byte literals), the others drawn.
  for (const fixed of [{ c: '\u{1D160}', n: 1040 }, {}, {}, {}]) {
    const [a, b, extra] = gen.stepBudgetPair(fixed)
    const oldP = PermissionPolicy.fromManifest(a, opts)
    const newP = PermissionPolicy.fromManifest(b, opts)
    const d = diffPolicies(oldP, newP)
    for (const q of extra) {
      const widens = newP.checkFs(q.path, q.mode).allowed && !oldP.checkFs(q.path, q.mode).allowed
      if (widens) gaveUp++
      assert.ok(!widens || d.exitCode !== 0, `exit 0 while the new policy allows ${q.path.length} characters the old denies (${a.fs.length} grants)`)
    }
  }
  // The class is not vacuous: some old check gave up on a path its globs allow.
  assert.ok(gaveUp > 0, 'no check gave up')
})
