'use strict'
// Red team round 3: a string over a limit is refused by the core's length
// check before any O(n) JS work. Before, a URL that needed the second parse
// reached Node's URL whatever its length: a 2^29-byte one aborted Node 20
// while it built the ERR_INVALID_URL error (not catchable), a 64 MB one cost
// ~150 ms per check. And explain answered for the U+FFFD form of a string
// with a lone surrogate, where the checks refuse it.
const test = require('node:test')
const assert = require('node:assert/strict')
const { PermissionPolicy, PermissionChecker, LIMITS } = require('../index.js')
const { createNoopMeter } = require('@opentelemetry/api')

const manifest = {
  fs: ['/a/**'],
  fetch: ['example.com', 'xn--bcher-kva.example'],
  secrets: ['K', '\ufffd', { name: 'B', hosts: ['example.com'] }],
}
const policy = PermissionPolicy.fromManifest(manifest, { plugin: 'p', platform: 'posix' })
const checker = new PermissionChecker(policy, { meter: createNoopMeter() })

/** Runs `fn` with a global URL that records the length of every input it is built from. */
function withUrlSpy(fn) {
  const Real = globalThis.URL
  const seen = []
  globalThis.URL = class extends Real {
    constructor(input, base) {
      seen.push(String(input).length)
      super(input, base)
    }
  }
  try {
    fn()
  } finally {
    globalThis.URL = Real
  }
  return seen
}

test('a URL over the byte limit never reaches Node\'s URL and is refused by the core', () => {
  // Non-ASCII, so it would need the second parse; one unit past the limit in UTF-16 units.
  for (const fill of ['é', '一', '😀', 'x%']) {
    const head = 'http://bücher.example/'
    const url = head + fill.repeat(Math.ceil((LIMITS.maxUrlBytes + 1 - head.length) / fill.length))
    assert.ok(url.length > LIMITS.maxUrlBytes)
    const seen = withUrlSpy(() => {
      assert.equal(checker.checkFetch(url).reason, 'invalid_url')
      assert.throws(() => checker.authorizeFetch(url), (e) => e.code === 'PERMISSION_DENIED' && e.details.reason === 'invalid_url')
      assert.equal(checker.checkCapability('fetch', { url }).reason, 'invalid_payload')
      assert.equal(checker.checkCapability('secrets.use', { name: 'B', url }).reason, 'invalid_payload')
      assert.throws(() => checker.assertCapability('fetch', { url }), (e) => e.code === 'PERMISSION_DENIED' && e.details.target === undefined)
      assert.equal(policy.checkFetch(url).reason, 'invalid_url')
    })
    assert.ok(seen.every((n) => n <= LIMITS.maxUrlBytes), `Node's URL parsed a string of ${Math.max(...seen)} units`)
  }
})

test('over-limit strings with a lone surrogate are refused for their length, like the well-formed ones', () => {
  const path = '/a/' + 'x'.repeat(LIMITS.maxPathBytes) + '\ud800'
  assert.equal(checker.checkFs(path, 'read').reason, 'invalid_path')
  assert.equal(checker.checkFs(path, 'write', { resolveSymlinks: true }).reason, 'invalid_path')
  assert.throws(() => checker.authorizeFs(path, 'read'), (e) => e.code === 'PERMISSION_DENIED' && e.details.reason === 'invalid_path')
  const name = 'K' + 'x'.repeat(LIMITS.maxPayloadStringBytes) + '\udfff'
  assert.equal(checker.checkCapability('secrets.get', { name }).reason, 'invalid_payload')
  assert.equal(checker.checkCapability('fs.read', { path }).reason, 'invalid_payload')
  // Exactly at the limits, well-formed: decided on the content (allowed), so the length test is not off by one.
  const atPath = '/a/' + 'x'.repeat(LIMITS.maxPathBytes - 3)
  assert.equal(checker.checkFs(atPath, 'read').allowed, true)
  const atUrl = 'http://example.com/' + 'x'.repeat(LIMITS.maxUrlBytes - 19)
  assert.equal(atUrl.length, LIMITS.maxUrlBytes)
  assert.equal(checker.checkFetch(atUrl).allowed, true)
  assert.equal(checker.checkFetch(atUrl + 'x').reason, 'invalid_url')
})

test('explain decides ill-formed strings as the checks do, never by their U+FFFD form', () => {
  const cases = [
    [policy.explainFs('/a/\ud800', 'read').decision, checker.checkFs('/a/\ud800', 'read')],
    [policy.explainFetch('http://example.com/\ud800').decision, checker.checkFetch('http://example.com/\ud800')],
    [policy.explainCapability('secrets.get', { name: '\ud800' }).decision, checker.checkCapability('secrets.get', { name: '\ud800' })],
    [policy.explainCapability('fs.read', { path: '/a/\udc00' }).decision, checker.checkCapability('fs.read', { path: '/a/\udc00' })],
  ]
  for (const [explained, checked] of cases) {
    assert.equal(checked.allowed, false)
    assert.deepEqual(explained, checked)
  }
  // Well-formed inputs keep explain's own answer (and its matched grants).
  const ok = policy.explainFs('/a/b', 'read')
  assert.equal(ok.decision.allowed, true)
})
