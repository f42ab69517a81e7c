'use strict'
// A policy's printed form is the policy (SPEC §17): `fromManifest(p.toJSON(),
// same options)` decides every request exactly as `p`, prints the same
// again, and diff finds nothing between them either way. The round-trip
// oracle (__test__/oracles/roundtrip.js) runs for FUZZ_SECONDS (default 3)
// over random and hostile manifests; longer: npm run fuzz:js -- --only
// roundtrip --seconds N. Found by the fourth review: `＊.example.com` (Node
// and the url crate map U+FF0A to `*`) printed as the wildcard it is not.
const test = require('node:test')
const assert = require('node:assert/strict')
const { PermissionPolicy, diffPolicies, isInvalidManifest } = require('../index.js')
const { run } = require('./oracles/roundtrip.js')

const seconds = Number(process.env.FUZZ_SECONDS || 3)
const seed = Number(process.env.FUZZ_SEED || Date.now() % 0x7fffffff)

test(`round-trip oracle: every reload decides as its policy, prints the same, diffs to nothing (${seconds} s, seed ${seed})`, async () => {
  const r = await run({ seconds, seed, log: console.log })
  // A low floor: the run is timed, and a loaded machine compiles and diffs fewer.
  assert.ok(r.policies >= 10, `only ${r.policies} policies`)
  assert.deepEqual(r.wrongAllows.slice(0, 3), [], `${r.wrongAllows.length} wrong allows (seed ${seed})`)
  assert.deepEqual(r.mismatches.slice(0, 3), [], `${r.mismatches.length} mismatches (seed ${seed})`)
})

test('a host that maps to one holding `*` (U+FF0A, U+FE61) is INVALID_MANIFEST at its pointer, wherever a fetch pattern is read', () => {
  for (const star of ['\uff0a', '\ufe61']) {
    for (const host of [`${star}.example.com`, `a${star}b.example.com`, `*.${star}.example.com`, star]) {
      for (const [manifest, pointer] of [
        [{ fetch: ['a.example', host] }, '/fetch/1'],
        [{ fetch: [`https://${host}:8443/v1/**`] }, '/fetch/0'],
        [{ fetch: ['*.example.com'], deny: { fetch: [`${host}/admin/**`] } }, '/deny/fetch/0'],
        [{ secrets: [{ name: 'K', hosts: ['a.example', host] }] }, '/secrets/0/hosts/1'],
      ]) {
        assert.throws(
          () => PermissionPolicy.fromManifest(manifest, { plugin: 'p' }),
          (e) => isInvalidManifest(e) && e.details.pointer === pointer && e.details.expected.includes('`*` only as a leading ASCII `*.` label'),
          JSON.stringify(manifest),
        )
      }
    }
  }
})

test('the printed form of hostile spellings reads back as the same policy, and diff says so both ways', () => {
  const manifest = {
    fs: ['/srv//data/', { path: '/srv/{a,b}/\\*.txt', mode: 'readwrite' }],
    fetch: ['\uff21\uff30\uff29.example.com', 'api\u3002example.net:8443/caf%C3%A9/**', 'bücher.example', '0x7f.1:*', '[::ffff:10.1.2.3]', '*.EXAMPLE.org/%2A'],
    deny: { fetch: ['[::ffff:808:800]/120', 'api.example.com/\uff41dmin/**'], fs: ['/srv/data/.env'] },
    secrets: ['A', 'A', { name: 'K', hosts: ['HTTPS://\uff21\uff30\uff29.example.com/v1/'] }],
    budgets: { cpuPercent: 0.1 + 0.2, memoryMb: 5e-324, wallClockMs: Number.MAX_VALUE },
  }
  const p = PermissionPolicy.fromManifest(manifest, { plugin: 'p', platform: 'posix' })
  const printed = p.toJSON()
  assert.deepEqual(printed.fetch, ['api.example.com', 'api.example.net:8443/caf%C3%A9/**', 'xn--bcher-kva.example', '127.0.0.1:*', '10.1.2.3', '*.example.org/%2A'])
  assert.deepEqual(printed.deny.fetch, ['8.8.8.0/24', 'api.example.com/%EF%BD%81dmin/**'])
  const q = PermissionPolicy.fromManifest(printed, { plugin: 'p', platform: 'posix' })
  assert.deepEqual(q.toJSON(), printed)
  assert.deepEqual(q.budgets, p.budgets)
  // `*` as a path literal prints escaped, never as the wildcard segment.
  assert.equal(q.checkFetch('https://x.example.org/*').allowed, true)
  assert.equal(q.checkFetch('https://x.example.org/other').reason, 'path_not_allowed')
  for (const [a, b] of [
    [p, q],
    [q, p],
  ]) {
    assert.equal(diffPolicies(a, b).exitCode, 0)
  }
})
