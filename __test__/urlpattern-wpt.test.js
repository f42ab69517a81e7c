'use strict'
// SPEC §11 against the WPT URLPattern vectors (pathname-only subset, vendored
// in __test__/fixtures/urlpattern with provenance). The subset is recognised
// here from the SPEC's grammar, independently of the checker: every pattern
// outside it must be INVALID_MANIFEST; inside it, a pure-literal pattern
// decides as URLPattern does, and a wildcard pattern never matches what
// URLPattern does not (ours is narrower: `*` is one non-empty segment).
const test = require('node:test')
const assert = require('node:assert/strict')
const { PermissionPolicy } = require('../index.js')
const vectors = require('./fixtures/urlpattern/urlpatterntestdata-pathname.json')

/** The SPEC §11 subset, read from its text: '/'-separated, each segment a literal, '*', or a last '**'. */
function inSubset(p) {
  if (!p.startsWith('/')) return false
  const segs = p.slice(1).split('/')
  return segs.every((s, i) => {
    const last = i === segs.length - 1
    if (s === '*' || (s === '**' && last)) return true
    if (s === '' ) return last
    if (/[:(){}?+*\\\s]/.test(s)) return false
    const decoded = decodeURIComponent(s)
    return decoded !== '.' && decoded !== '..' && !/[/\\%]/.test(decoded)
  })
}

/** Decoded-comparison differences: URLPattern compares escapes case-sensitively, the SPEC compares decoded segments. */
const DECODED_EQUAL = new Set(['/caf%c3%a9 ~ /café'])

test('WPT URLPattern pathname vectors: outside the subset rejected, inside never wider than URLPattern', () => {
  let rejected = 0
  let compared = 0
  let exact = 0
  for (const v of vectors) {
    const pathname = v.pattern[0].pathname
    let policy = null
    try {
      // A relative URLPattern pathname (no leading '/') is read with one: a
      // fetch pattern's path always starts at the '/' after the authority.
      const path = pathname.startsWith('/') ? pathname : `/${pathname}`
      policy = PermissionPolicy.fromManifest({ fetch: [`https://example.com${path}`] }, { plugin: 'wpt', platform: 'posix' })
    } catch (e) {
      assert.equal(e.code, 'INVALID_MANIFEST', pathname)
      assert.match(e.details.pointer, /^\/fetch\/0$/)
    }
    assert.equal(policy !== null, inSubset(pathname), `${JSON.stringify(pathname)}: accepted must equal "in the SPEC §11 subset"`)
    if (policy === null) {
      rejected++
      continue
    }
    for (const input of v.inputs || []) {
      const url = typeof input === 'string' ? input : `https://example.com${input.pathname}`
      const ours = policy.checkFetch(url).allowed
      const theirs = v.expected_match !== null && typeof v.expected_match === 'object'
      compared++
      if (!/\*/.test(pathname)) {
        exact++
        const key = `${pathname} ~ ${typeof input === 'string' ? input : input.pathname}`
        assert.equal(ours, DECODED_EQUAL.has(key) ? true : theirs, key)
        if (DECODED_EQUAL.has(key)) assert.equal(theirs, false, `${key} is listed as a difference`)
      } else if (ours) {
        assert.ok(theirs, `${pathname} matched ${url}, which URLPattern does not`)
      }
    }
  }
  console.log(`urlpattern wpt: ${vectors.length} vectors, ${rejected} patterns rejected, ${compared} inputs compared (${exact} exactly)`)
  assert.ok(rejected > 30 && compared > 15)
})
