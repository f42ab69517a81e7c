'use strict'
// The kernel as the oracle for resolveSymlinks / authorizeFs (see
// __test__/oracles/kernel-fs.js): random trees of links in a real temp dir,
// random raw paths; whatever the package allows, the kernel must open inside
// the grant, and authorizeFs must name the file the kernel opened.
const test = require('node:test')
const assert = require('node:assert/strict')
const { run } = require('./oracles/kernel-fs.js')

const seconds = Number(process.env.FUZZ_SECONDS || 3)
const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Date.now() >>> 0

test('kernel oracle: every resolveSymlinks allow opens inside the grant', { skip: process.platform !== 'linux' && 'needs /proc/self/fd', timeout: (seconds + 60) * 1000 }, async () => {
  const r = await run({ seconds, seed, log: console.log })
  console.log(`kernel-fs oracle: ${r.cases} cases (seed ${seed}); stricter-than-kernel denials (reported, not failed): ${r.overDenials.length}`)
  for (const o of r.overDenials.slice(0, 5)) console.log('  stricter:', JSON.stringify(o))
  assert.ok(r.cases > 100, `ran ${r.cases} cases`)
  assert.ok(r.allowed > 0 && r.kernelOpened > 0, 'some paths were allowed and opened')
  assert.deepEqual(r.wrongAllows.slice(0, 5), [], `seed ${seed}: ${r.wrongAllows.length} wrong allows`)
  assert.deepEqual(r.mismatches.slice(0, 5), [], `seed ${seed}: checkFs and authorizeFs disagree`)
})
