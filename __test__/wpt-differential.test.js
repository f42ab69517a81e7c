'use strict'
// Differential test: checkFetch (the Rust `url` crate) against Node's own
// WHATWG URL parser over the WPT vectors. For every absolute input:
// - Node rejects it                 -> denied;
// - Node parses it to a host H      -> a policy granting exactly H allows it
//   (or denies it for credentials / non-fetch schemes), a policy granting
//   another host denies it, and the canonical URL handed back equals Node's href.
const test = require('node:test')
const assert = require('node:assert/strict')
const { PermissionPolicy, PermissionChecker } = require('..')
const { tests } = require('./fixtures/urltestdata.json')
const known = require('./fixtures/wpt-known-differences.json')

const FETCH_SCHEMES = new Set(['http:', 'https:', 'ws:', 'wss:', 'ftp:'])
const checker = (patterns) => new PermissionChecker(PermissionPolicy.fromManifest({ fetch: patterns }, { plugin: 'wpt' }))
const other = checker(['other.invalid:*', 'ws://other.invalid:*', 'wss://other.invalid:*', 'ftp://other.invalid:*'])

function inputs() {
  const seen = new Set()
  const out = []
  for (const t of tests) {
    if (typeof t !== 'object' || t === null || typeof t.input !== 'string') continue
    // Absolute inputs: the vector has no base, or we take the input alone.
    if (seen.has(t.input)) continue
    seen.add(t.input)
    out.push(t.input)
  }
  return out
}

function differences(input) {
  let node = null
  try {
    node = new URL(input)
  } catch {}
  const problems = []
  if (node === null) {
    const d = other.checkFetch(input)
    if (d.allowed) problems.push('Node rejects it but checkFetch allowed it')
    return problems
  }
  const scheme = node.protocol
  const fetchable = FETCH_SCHEMES.has(scheme) && node.hostname !== ''
  if (!fetchable) {
    const d = checker(['example.com:*']).checkFetch(input)
    if (d.allowed) problems.push(`non-fetch URL (${scheme}) allowed`)
    return problems
  }
  const pattern = `${scheme}//${node.hostname}:*`
  let own
  try {
    own = checker([pattern])
  } catch (e) {
    problems.push(`Node's host ${JSON.stringify(node.hostname)} is not a valid grant: ${e.message}`)
    return problems
  }
  const d = own.checkFetch(input)
  const creds = node.username !== '' || node.password !== ''
  if (creds) {
    if (d.allowed || d.reason !== 'credentials_in_url') problems.push(`credentials: got ${JSON.stringify(d)}`)
  } else if (!d.allowed) {
    problems.push(`granting Node's host ${node.hostname} denied it: ${d.reason}`)
  } else {
    const href = own.authorizeFetch(input)
    if (href !== node.href) problems.push(`canonical URL ${JSON.stringify(href)} differs from Node's ${JSON.stringify(node.href)}`)
  }
  const o = other.checkFetch(input)
  if (o.allowed) problems.push('granting another host allowed it')
  return problems
}

test('checkFetch agrees with Node URL over the WPT vectors', () => {
  const all = inputs()
  assert.ok(all.length > 500, `only ${all.length} inputs`)
  const unexpected = []
  const fixed = []
  for (const input of all) {
    const problems = differences(input)
    const isKnown = Object.prototype.hasOwnProperty.call(known.differences, input)
    if (problems.length && !isKnown) unexpected.push([input, problems])
    if (!problems.length && isKnown) fixed.push(input)
  }
  assert.deepEqual(unexpected, [], 'unexpected differences')
  assert.deepEqual(fixed, [], 'known differences that no longer differ: remove them from wpt-known-differences.json')
})

test('no known difference is an allow that Node would send elsewhere', () => {
  for (const [input] of Object.entries(known.differences)) {
    let node = null
    try {
      node = new URL(input)
    } catch {}
    const d = other.checkFetch(input)
    assert.equal(d.allowed, false, input)
    if (node && FETCH_SCHEMES.has(node.protocol) && node.hostname) {
      // Whatever checkFetch decides, it never allows a host Node would not fetch.
      const grantOnlyElsewhere = checker(['elsewhere.invalid:*'])
      assert.equal(grantOnlyElsewhere.checkFetch(input).allowed, false, input)
    }
  }
})
