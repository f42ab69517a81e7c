'use strict'
// Pins the fixes of the third red team's findings, each through the public
// JS API with real parts.
const test = require('node:test')
const assert = require('node:assert/strict')
const { PermissionPolicy, isInvalidManifest, LIMITS } = require('../index.js')

const policy = (m) => PermissionPolicy.fromManifest(m, { plugin: 't', platform: 'posix' })

function prng(seed) {
  let s = seed >>> 0
  return (n) => {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0
    return s % n
  }
}

test('p14/p15: lint secret-host-not-granted on generated grants matches a naive pairwise model', () => {
  // lint indexes the grants once (exact hosts, a label trie of *.suffix
  // grants); it used to compare every secret host with every grant. The
  // naive model here is that comparison, written from SPEC §13 on the
  // generated parts (scheme, exact or suffix, labels).
  const rnd = prng(0x5eed)
  const LABELS = ['a', 'b', 'api', 'cdn', 'x-y']
  const TLDS = ['example.com', 'example.org', 'co.uk']
  const gen = () => {
    const kind = rnd(4) === 0 ? 'suffix' : 'exact'
    const depth = rnd(3)
    const labels = Array.from({ length: depth }, () => LABELS[rnd(LABELS.length)])
    const name = [...labels, TLDS[rnd(TLDS.length)]].join('.')
    const scheme = [null, 'https', 'http'][rnd(3)]
    const port = rnd(4) === 0 ? ':8443' : ''
    const host = kind === 'suffix' ? `*.${name}` : name
    return { p: `${scheme ? `${scheme}://` : ''}${host}${port}`, kind, name, scheme }
  }
  const covers = (g, h) => {
    if (g.scheme !== null && g.scheme !== h.scheme) return false
    if (g.kind === 'exact') return h.kind === 'exact' && g.name === h.name
    return h.name.endsWith(`.${g.name}`) || (h.kind === 'suffix' && h.name === g.name)
  }
  let cases = 0
  let warned = 0
  for (let round = 0; round < 40; round++) {
    const grants = Array.from({ length: 1 + rnd(30) }, gen)
    const secrets = Array.from({ length: 1 + rnd(4) }, (_, i) => ({ name: `S${i}`, hosts: Array.from({ length: 1 + rnd(20) }, gen) }))
    const p = policy({ fetch: grants.map((g) => g.p), secrets: secrets.map((s) => ({ name: s.name, hosts: s.hosts.map((h) => h.p) })) })
    const got = p
      .lint()
      .filter((w) => w.code === 'secret-host-not-granted')
      .map((w) => w.pointer)
    const want = secrets.flatMap((s, i) => s.hosts.flatMap((h, j) => (grants.some((g) => covers(g, h)) ? [] : [`/secrets/${i}/hosts/${j}`])))
    assert.deepEqual(got, want, JSON.stringify({ grants: grants.map((g) => g.p), secrets }))
    cases += secrets.reduce((n, s) => n + s.hosts.length, 0)
    warned += want.length
  }
  assert.ok(warned > 0 && warned < cases, `both outcomes occur (${warned} of ${cases} warned)`)
  console.log(`lint secret hosts: ${cases} hosts checked`)
})

test('p14: bound-secret hosts share one policy-wide cap of LIMITS.maxPatterns, the error at the first host past it', () => {
  assert.equal(LIMITS.maxPatterns, 10000)
  const hosts = (n, h) => Array.from({ length: n }, () => h)
  const m = (a, b) => ({ secrets: [{ name: 'A', hosts: hosts(a, 'a.example.com') }, 'R', { name: 'B', hosts: hosts(b, 'b.example.com') }] })
  // At the cap: valid, and lint still answers.
  const p = policy({ ...m(6000, 4000), fetch: ['a.example.com'] })
  assert.equal(p.lint().filter((w) => w.code === 'secret-host-not-granted').length, 4000)
  // Past it, by one: INVALID_MANIFEST at the first host over the cap.
  let err
  assert.throws(() => policy(m(6000, 4001)), (e) => ((err = e), isInvalidManifest(e)))
  assert.equal(err.details.pointer, '/secrets/2/hosts/4000')
  assert.match(err.details.expected, /^bound-secret hosts within the policy-wide cap of 10000 patterns/)
  // Ten thousand secrets of ten thousand hosts each are refused at the same point, not compiled.
  assert.throws(() => policy({ secrets: [{ name: 'A', hosts: hosts(10000, 'a.example.com') }, { name: 'B', hosts: hosts(10000, 'b.example.com') }] }), (e) => isInvalidManifest(e) && e.details.pointer === '/secrets/1/hosts/0')
})
