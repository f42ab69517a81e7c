'use strict'
// The fs glob oracle (__test__/oracles/glob.js) for FUZZ_SECONDS (default 3):
// no check the naive SPEC §2 reference denies is allowed.
const test = require('node:test')
const assert = require('node:assert/strict')
const { run } = require('./oracles/glob.js')

const seconds = Number(process.env.FUZZ_SECONDS || 3)
const seed = Number(process.env.FUZZ_SEED || Date.now() % 0x7fffffff)
let result
const once = async () => (result ??= await run({ seconds, seed, log: console.log }))
const short = (list) => list.slice(0, 3).map((w) => ({ ...w, path: w.path.length > 80 ? `${w.path.slice(0, 40)}…(${w.bytes} bytes)` : w.path }))

test('fs globs agree with a naive SPEC §2 reference (posix and win32)', async () => {
  const { cases, wrongAllows, mismatches } = await once()
  console.log(`glob oracle seed ${seed}: ${cases} cases`)
  assert.ok(cases > 1000, `${cases} cases`)
  const within = wrongAllows.filter((w) => w.bytes <= 4096)
  assert.deepEqual(short(within), [], `${within.length} wrong allows (seed ${seed})`)
  assert.deepEqual(short(mismatches), [], `${mismatches.length} denials the reference allows (seed ${seed})`)
})

// The native string reader (src/binding/raw.rs) never returns a prefix: a
// path of 4097-4099 bytes ending in multi-byte characters (which V8's copy
// stops short of) is invalid_path, never checked as its own prefix
// (__test__/boundary.test.js pins the reader; this holds the oracle's paths
// near the limit to it).
test('paths past 4096 bytes are never allowed', async () => {
  const { wrongAllows } = await once()
  const over = wrongAllows.filter((w) => w.bytes > 4096)
  assert.deepEqual(short(over), [], `${over.length} over-limit paths allowed (seed ${seed})`)
})
