'use strict'
// IDNA parity between the checker (url crate) and the running Node's URL
// (Ada), the parser `fetch` uses (SPEC §3 "Parser parity"):
// - a code-point scan: every BMP code point from U+0080 and every astral one
//   on a stride (FULL_SCAN=1: all of them), in three host-label positions;
// - the WPT IdnaTestV2.json and toascii.json vectors (vendored; provenance in
//   __test__/fixtures/iana/README.md).
// The oracle is Node's `new URL` plus the naive pattern model of
// __test__/oracles/fetch.js: an allowed URL must be one Node sends to a
// granted host. Each part prints its case count.
const test = require('node:test')
const assert = require('node:assert/strict')
const { createChecker, PermissionPolicy } = require('..')
const { naiveGrant, naivePattern } = require('./oracles/fetch.js')

const GRANTS = ['*.example.org', 'api.example.com', 'fußball.de']
const checker = createChecker({ fetch: GRANTS }, { plugin: 'idna-scan' })
const patterns = GRANTS.map(naivePattern)

test('code-point scan: no allowed host differs from what Node fetches', () => {
  // Default (a couple of seconds): all of the BMP in two positions, every 5th
  // BMP code point in the other two, every 61st astral one in all four.
  // FULL_SCAN=1: every code point in every position (~1.1M code points, ~40 s).
  const full = Boolean(process.env.FULL_SCAN)
  const positions = [(c) => `https://a${c}b.example.org/`, (c) => `https://fu${c}ball.de/`, (c) => `https://api${c}.example.com/`, (c) => `https://${c}.example.org/`]
  const wrong = []
  let cases = 0
  let allowed = 0
  let parityDenied = 0
  for (let cp = 0x80; cp <= 0x10ffff; cp += full || cp < 0x10000 ? 1 : 61) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue
    const ch = String.fromCodePoint(cp)
    const some = full || cp >= 0x10000 || cp % 5 === 0 ? positions : positions.slice(0, 2)
    for (const at of some) {
      const url = at(ch)
      cases++
      const d = checker.checkFetch(url)
      if (!d.allowed) {
        if (d.reason === 'invalid_url') parityDenied++
        continue
      }
      allowed++
      if (!naiveGrant(patterns, url).granted && wrong.length < 20) wrong.push({ cp: cp.toString(16), url, node: safeHref(url) })
    }
  }
  console.log(`code-point scan: ${cases} URLs, ${allowed} allowed, ${parityDenied} invalid_url, ${wrong.length} wrong allows`)
  assert.deepEqual(wrong, [])
  assert.ok(allowed > 1000, 'the scan reaches allowed hosts')
})

function safeHref(u) {
  try {
    return new URL(u).href
  } catch {
    return 'node rejects'
  }
}

function vectors(file) {
  return require(`./fixtures/${file}`).filter((v) => v !== null && typeof v === 'object' && typeof v.input === 'string')
}

function policyFor(hosts) {
  const ok = []
  for (const h of new Set(hosts)) {
    if (typeof h !== 'string' || h === '' || h.length > 1000) continue
    try {
      PermissionPolicy.fromManifest({ fetch: [h] }, { plugin: 'wpt' })
      ok.push(h)
    } catch {
      // not a pattern the grammar (or parity) accepts: not granted
    }
  }
  return ok
}

for (const file of ['IdnaTestV2.json', 'toascii.json']) {
  test(`WPT ${file}: every allowed vector goes where Node sends it, and Node's host is granted`, () => {
    const wrong = []
    let cases = 0
    let allowed = 0
    let nodeDisagreesWithWpt = 0
    let agreedButDenied = 0
    for (const v of vectors(file)) {
      if (!v.input.isWellFormed()) continue
      const url = `https://${v.input}/`
      const nodeHost = (() => {
        try {
          return new URL(url).hostname
        } catch {
          return null
        }
      })()
      if ((nodeHost === null) !== (v.output === null) || (nodeHost !== null && nodeHost !== v.output)) nodeDisagreesWithWpt++
      const grants = policyFor([v.output, nodeHost, 'unrelated.example'])
      const c = createChecker({ fetch: grants }, { plugin: 'wpt' })
      const model = grants.map(naivePattern)
      for (const entry of ['checkFetch', 'checkCapability']) {
        cases++
        const d = entry === 'checkFetch' ? c.checkFetch(url) : c.checkCapability('fetch', { url })
        if (d.allowed) {
          allowed++
          if (!naiveGrant(model, url).granted && wrong.length < 20) wrong.push({ entry, input: v.input, output: v.output, nodeHost, grants })
        } else if (nodeHost !== null && nodeHost === v.output && grants.includes(v.output)) agreedButDenied++
      }
    }
    console.log(`WPT ${file}: ${cases} checks, ${allowed} allowed, ${wrong.length} wrong allows; Node differs from WPT on ${nodeDisagreesWithWpt} vectors; ${agreedButDenied} denied where Node and WPT agree on a granted host`)
    assert.deepEqual(wrong, [])
    assert.ok(allowed > 0)
  })
}
