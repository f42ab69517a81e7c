'use strict'
// SPEC §8: the total compiled size of a policy's fs globs is capped, and a
// manifest at the cap compiles quickly and checks cheaply. Timings are
// printed, not asserted (the machine is shared); the Rust unit test
// glob::tests::hostile_brace_manifest_is_capped_and_checks_stay_cheap counts
// the match work per check.
const test = require('node:test')
const assert = require('node:assert/strict')
const { PermissionPolicy, LIMITS } = require('..')

const hostile = (i, tail = '') => `/a/*/{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}${i}${tail}`

test('LIMITS documents the per-glob and policy-wide brace caps', () => {
  assert.equal(LIMITS.maxBraceVariants, 256)
  assert.equal(LIMITS.maxPolicyGlobVariants, 16384)
  assert.equal(LIMITS.maxPolicyGlobSize, 1 << 20)
  assert.equal(LIMITS.maxMatchSteps, 4000000)
})

test('a manifest past the policy-wide cap is INVALID_MANIFEST at the first glob over it', () => {
  const atCap = LIMITS.maxPolicyGlobVariants / 256
  const fs = Array.from({ length: 10000 }, () => hostile(0))
  const t = process.hrtime.bigint()
  assert.throws(() => PermissionPolicy.fromManifest({ fs }, { plugin: 'p', platform: 'posix' }), (e) => {
    assert.equal(e.code, 'INVALID_MANIFEST')
    assert.equal(e.details.pointer, `/fs/${atCap}`)
    return true
  })
  console.log(`10,000 x 256-variant globs rejected in ${Number(process.hrtime.bigint() - t) / 1e6} ms`)
})

test('a manifest at the cap compiles and checks fast (timings printed)', () => {
  const atCap = LIMITS.maxPolicyGlobVariants / 256
  for (const [shape, tail] of [['literal last segment', ''], ['wildcard last segment', '*']]) {
    const fs = Array.from({ length: atCap }, (_, i) => hostile(i, tail))
    let t = process.hrtime.bigint()
    const policy = PermissionPolicy.fromManifest({ fs }, { plugin: 'p', platform: 'posix' })
    const compileMs = Number(process.hrtime.bigint() - t) / 1e6
    const paths = ['/a/x/acegikmo7', '/a/x/acegikmo7x', '/a/x/zzzz', '/a/x/y/z', '/b/c']
    const want = [true, tail === '*', false, false, false]
    const n = 200
    t = process.hrtime.bigint()
    for (let k = 0; k < n; k++) {
      for (const [j, p] of paths.entries()) assert.equal(policy.checkFs(p, 'read').allowed, want[j], p)
    }
    const perCheckUs = Number(process.hrtime.bigint() - t) / 1e3 / (n * paths.length)
    console.log(`${shape}: ${atCap * 256} variants compiled in ${compileMs.toFixed(1)} ms; ${perCheckUs.toFixed(1)} µs per check`)
  }
})

test('a hostile wildcard run cannot stall a check (timings printed)', () => {
  // Runs holding `?` cannot be found by substring search: each grant stops at
  // its linear step budget, the whole check at LIMITS.maxMatchSteps.
  const fs = Array.from({ length: 500 }, (_, i) => `/a/*?${'a'.repeat(2000)}${i}b*`)
  const policy = PermissionPolicy.fromManifest({ fs }, { plugin: 'p', platform: 'posix' })
  const name = 'a'.repeat(4000)
  const t = process.hrtime.bigint()
  assert.equal(policy.checkFs(`/a/${name}`, 'read').allowed, false)
  console.log(`500 hostile '?' runs against a 4000-byte name: ${(Number(process.hrtime.bigint() - t) / 1e6).toFixed(1)} ms`)
  // With a handful of such grants the budget is not reached: a real match matches.
  const few = PermissionPolicy.fromManifest({ fs: fs.slice(0, 5) }, { plugin: 'p', platform: 'posix' })
  assert.equal(few.checkFs(`/a/x${'a'.repeat(2000)}3by`, 'read').allowed, true)
  assert.equal(few.checkFs(`/a/${name}`, 'read').allowed, false)
})
