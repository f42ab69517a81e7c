'use strict'
// SPEC §8: a manifest within every limit compiles to bounded memory. Path
// scopes (SPEC §11) compile to trie nodes, one per segment, so their total
// over a policy's fetch patterns, deny.fetch rules and bound-secret hosts is
// capped (LIMITS.maxPolicyPathSegments); a manifest too large for one JS
// string is INVALID_MANIFEST, never a bare RangeError.
const test = require('node:test')
const assert = require('node:assert/strict')
const { PermissionPolicy, LIMITS, isInvalidManifest } = require('..')

const options = { plugin: 'p', platform: 'posix' }
/** `n` fetch patterns of host `h<i>.<tld>`, each with `segs` path segments. */
const patterns = (n, segs, tld) => Array.from({ length: n }, (_, i) => `https://h${i}.${tld}/` + 'a/'.repeat(segs - 1) + 'b')
const rejectsAt = (manifest, pointer) =>
  assert.throws(
    () => PermissionPolicy.fromManifest(manifest, options),
    (e) => {
      assert.equal(e.code, 'INVALID_MANIFEST')
      assert.equal(e.details.pointer, pointer)
      assert.match(e.details.expected, /^path scopes within the policy-wide cap of 131072 segments/)
      return true
    },
  )

test('LIMITS documents the policy-wide path-scope cap', () => {
  assert.equal(LIMITS.maxPolicyPathSegments, 131072)
})

test('path-scope segments are counted over fetch, deny.fetch and bound-secret hosts together; the error is at the first pattern past the cap', () => {
  const per = 500 // each pattern well under maxHostPatternBytes
  const whole = Math.floor(LIMITS.maxPolicyPathSegments / per) // patterns that fit
  assert.ok(patterns(1, per, 'x')[0].length < LIMITS.maxHostPatternBytes)
  // At the cap exactly: compiles, and the grants still decide.
  const rest = LIMITS.maxPolicyPathSegments - whole * per
  const exact = { fetch: [...patterns(whole, per, 'x'), `https://tail.x/${'c/'.repeat(rest - 1)}d`] }
  const p = PermissionPolicy.fromManifest(exact, options)
  assert.equal(p.toJSON().fetch.length, whole + 1)
  const checker = require('..').createChecker(exact, options)
  assert.equal(checker.checkFetch(`https://h0.x/${'a/'.repeat(per - 1)}b`).allowed, true)
  assert.equal(checker.checkFetch(`https://h0.x/${'a/'.repeat(per - 1)}c`).allowed, false)
  // One segment more, in each list in turn.
  rejectsAt({ fetch: [...exact.fetch, 'https://one.more/z'] }, `/fetch/${whole + 1}`)
  rejectsAt({ fetch: patterns(whole, per, 'x'), deny: { fetch: ['10.0.0.0/8', `https://d.x/${'e/'.repeat(rest)}f`] } }, '/deny/fetch/1')
  rejectsAt({ fetch: patterns(whole - 1, per, 'x'), deny: { fetch: patterns(1, per, 'y') }, secrets: [{ name: 'K', hosts: ['https://ok.z/', `https://s.z/${'g/'.repeat(rest)}h`] }] }, '/secrets/0/hosts/1')
  // Host-only patterns and CIDR denies count nothing.
  PermissionPolicy.fromManifest({ fetch: [...exact.fetch, 'https://host.only', '*.example.com:8443'], deny: { fetch: ['10.0.0.0/8'] } }, options)
})

test("the red team's manifest (10,000 patterns of 500 segments in three lists) is refused, not compiled to gigabytes", () => {
  const m = { fetch: patterns(10000, 500, 'e1'), deny: { fetch: patterns(10000, 500, 'e2') }, secrets: [{ name: 'S', hosts: patterns(10000, 500, 'e3') }] }
  const before = process.memoryUsage().rss
  rejectsAt(m, `/fetch/${Math.floor(LIMITS.maxPolicyPathSegments / 500)}`)
  // Printed, not asserted (a shared machine): the growth is the manifest's own text, not a trie.
  console.log(`RSS growth ${Math.round((process.memoryUsage().rss - before) / 1e6)} MB`)
})

test('a manifest too large for one JS string is INVALID_MANIFEST at the root, not a RangeError', () => {
  let e
  try {
    PermissionPolicy.fromManifest({ secrets: ['\x01'.repeat(1e8)] }, options)
  } catch (err) {
    e = err
  }
  assert.ok(e !== undefined, 'threw')
  assert.ok(isInvalidManifest(e), `${e && e.constructor.name}: ${e && e.message}`)
  assert.equal(e.details.pointer, '')
})
