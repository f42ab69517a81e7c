'use strict'
// SPEC §13: destination-bound secrets, through the public JS API.
const test = require('node:test')
const assert = require('node:assert/strict')
const { PermissionPolicy, PermissionChecker, isPermissionDenied, LIMITS } = require('../index.js')
const { meterHarness } = require('./helpers.js')

const pol = (m) => PermissionPolicy.fromManifest(m, { plugin: 'p', platform: 'posix' })
const manifest = {
  fetch: ['https://api.example.com', 'https://other.example.com', '*.cdn.example.net'],
  deny: { fetch: ['https://api.example.com/v1/admin/**'] },
  secrets: ['READABLE', { name: 'API_TOKEN', hosts: ['https://api.example.com/v1/**'] }, { name: 'CDN', hosts: ['*.cdn.example.net'] }],
}

// Invalid secrets manifests (JSON pointers) are rows of data/conformance/manifest-errors.json.
test('manifest: toJSON round trip', () => {
  const p = pol(manifest)
  assert.deepEqual(p.toJSON().secrets, ['READABLE', { name: 'API_TOKEN', hosts: ['https://api.example.com/v1/**'] }, { name: 'CDN', hosts: ['*.cdn.example.net'] }])
  assert.deepEqual(pol(p.toJSON()).toJSON(), p.toJSON())
})

test('secrets.get on a bound secret is secret_not_readable; secrets.use decides by checkFetch and the hosts', async () => {
  const h = meterHarness()
  const c = new PermissionChecker(pol(manifest), { meter: h.meter })
  const use = (name, url) => c.checkCapability('secrets.use', { name, url })
  assert.deepEqual(c.checkCapability('secrets.get', { name: 'READABLE' }), { allowed: true })
  assert.equal(c.checkCapability('secrets.get', { name: 'API_TOKEN' }).reason, 'secret_not_readable')
  assert.deepEqual(use('API_TOKEN', 'https://api.example.com/v1/repos'), { allowed: true })
  assert.deepEqual(use('CDN', 'https://a.cdn.example.net/x'), { allowed: true })
  const no = (name, url, reason) => assert.deepEqual(use(name, url), { allowed: false, capability: 'secrets.use', reason }, `${name} ${url}`)
  no('API_TOKEN', 'https://api.example.com/v2/x', 'secret_destination_not_allowed') // outside the path scope
  no('API_TOKEN', 'https://other.example.com/v1/x', 'secret_destination_not_allowed') // fetch allows, hosts do not
  no('API_TOKEN', 'https://api.example.com/v1/admin/users', 'secret_destination_not_allowed') // a deny rule wins
  no('API_TOKEN', 'http://api.example.com/v1/x', 'secret_destination_not_allowed') // scheme
  no('API_TOKEN', 'https://u:p@api.example.com/v1/x', 'secret_destination_not_allowed')
  no('API_TOKEN', 'https://api.example.com/v1/%2e%2e/v2/x', 'secret_destination_not_allowed')
  no('API_TOKEN', 'https://api.example.com/v1/a%2Fb', 'secret_destination_not_allowed')
  no('READABLE', 'https://api.example.com/v1/x', 'secret_destination_not_allowed') // readable, not bound
  no('NOPE', 'https://api.example.com/v1/x', 'secret_not_declared')
  no('api_token', 'https://api.example.com/v1/x', 'secret_not_declared') // case-sensitive
  no('API_TOKEN', 'https://аpi.example.com/v1/x', 'secret_destination_not_allowed') // Cyrillic а
  assert.equal(c.checkCapability('secrets.use', { name: 'API_TOKEN' }).reason, 'invalid_payload')
  assert.equal(c.checkCapability('secrets.use', { url: 'https://api.example.com/v1/x' }).reason, 'invalid_payload')
  assert.equal(c.checkCapability('secrets.use', { name: 'API_TOKEN', url: 7 }).reason, 'invalid_payload')
  assert.equal(c.checkCapability('secrets.use', { name: 'API_TOKEN', get url() { return 'https://api.example.com/v1/x' } }).reason, 'invalid_payload')
  assert.throws(
    () => c.assertCapability('secrets.use', { name: 'API_TOKEN', url: 'https://other.example.com/v1/path?q=1' }),
    (e) => isPermissionDenied(e) && e.details.reason === 'secret_destination_not_allowed' && e.details.target === 'https://other.example.com:443' && !JSON.stringify(e).includes('API_TOKEN'),
  )
  const points = await h.points()
  assert.ok(points.every((p) => !JSON.stringify(p.attributes).includes('example')))
  assert.ok(points.some((p) => p.attributes.capability === 'secrets.use' && p.attributes.reason === 'secret_not_declared'))
  await h.shutdown()
})

test('both fields: the 4096-byte limit in UTF-8 bytes, 2-, 3- and 4-byte characters across it', () => {
  const c = new PermissionChecker(pol({ fetch: ['https://api.example.com'], secrets: [{ name: 'T', hosts: ['https://api.example.com'] }] }))
  const max = LIMITS.maxPayloadStringBytes
  const base = 'https://api.example.com/'
  for (const ch of ['é', '€', '😀']) {
    for (let extra = -4; extra <= 4; extra++) {
      const room = max + extra - Buffer.byteLength(base)
      let tail = ''
      while (Buffer.byteLength(tail) + Buffer.byteLength(ch) <= room) tail += ch
      while (Buffer.byteLength(tail) < room) tail += 'a'
      const url = base + tail
      const bytes = Buffer.byteLength(url)
      const d = c.checkCapability('secrets.use', { name: 'T', url })
      if (bytes > max) assert.equal(d.reason, 'invalid_payload', `${bytes} bytes`)
      else assert.deepEqual(d, { allowed: true }, `${bytes} bytes`)
      // The name field has the same limit.
      const name = ch.repeat(Math.ceil((max + extra) / Buffer.byteLength(ch)))
      const dn = c.checkCapability('secrets.use', { name, url: base })
      assert.equal(dn.reason, Buffer.byteLength(name) > max ? 'invalid_payload' : 'secret_not_declared', `${Buffer.byteLength(name)} byte name`)
    }
  }
})

test('lint warns about a bound secret whose hosts no fetch grant covers', () => {
  const p = pol({ fetch: ['https://api.example.com', '*.example.org'], secrets: [{ name: 'T', hosts: ['https://api.example.com/v1/**', 'https://x.example.org', 'https://elsewhere.example.com', 'http://api.example.com'] }] })
  const w = p.lint().filter((x) => x.code === 'secret-host-not-granted')
  assert.deepEqual(w.map((x) => x.pointer), ['/secrets/0/hosts/2', '/secrets/0/hosts/3'])
  assert.ok(w.every((x) => !x.message.includes('"T"')))
})

test('explainCapability on secrets.use: the decision the checks make and the hosts pattern that matched', async () => {
  const h = meterHarness()
  const p = pol(manifest)
  const ok = p.explainCapability('secrets.use', { name: 'API_TOKEN', url: 'https://api.example.com/v1/x' })
  assert.deepEqual(ok.decision, { allowed: true })
  assert.deepEqual(ok.matched, [{ pointer: '/secrets/1/hosts/0', pattern: 'https://api.example.com/v1/**' }])
  const no = p.explainCapability('secrets.use', { name: 'API_TOKEN', url: 'https://other.example.com/v1/x' })
  assert.equal(no.decision.reason, 'secret_destination_not_allowed')
  assert.deepEqual(no.matched, [])
  assert.equal(no.fetch.decision.allowed, true)
  assert.equal(p.explainCapability('secrets.use', { name: 'API_TOKEN' }).decision.reason, 'invalid_payload')
  assert.equal(p.explainCapability('secrets.use', { name: 'API_TOKEN', url: 'https://аpi.example.com/v1/x' }).decision.reason, 'secret_destination_not_allowed')
  await h.shutdown()
})

test('learnManifest: secrets.use calls become a bound secret with the origins it was sent to (and their fetch grants)', () => {
  const { learnManifest } = require('../index.js')
  const { manifest, unlearned } = learnManifest(
    [
      { capability: 'secrets.use', payload: { name: 'API_TOKEN', url: 'https://api.example.com/v1/me' } },
      { capability: 'secrets.use', payload: { name: 'API_TOKEN', url: 'https://api.example.com:8443/x' } },
      { capability: 'secrets.get', payload: { name: 'BOTH' } },
      { capability: 'secrets.use', payload: { name: 'BOTH', url: 'https://x.example.com/' } },
      { capability: 'secrets.use', payload: { name: 'X', url: 'https://u:p@x.example.com/' } },
    ],
    { platform: 'posix' },
  )
  assert.deepEqual(manifest.secrets, ['BOTH', { name: 'API_TOKEN', hosts: ['https://api.example.com', 'https://api.example.com:8443'] }])
  const c = new PermissionChecker(pol(manifest))
  assert.deepEqual(c.checkCapability('secrets.use', { name: 'API_TOKEN', url: 'https://api.example.com/v1/me' }), { allowed: true })
  assert.equal(c.checkCapability('secrets.get', { name: 'API_TOKEN' }).reason, 'secret_not_readable')
  // A name both read and sent cannot be both: the use is reported, not learned; so is a URL with credentials.
  assert.deepEqual([...new Set(unlearned.map((u) => u.call))], [3, 4])
})

test('learnManifest secretValues: a call whose learned field holds a value is not learned, and the value is not quoted', () => {
  const { learnManifest } = require('../index.js')
  const value = 'tok3n'
  const calls = [
    { capability: 'fs.read', payload: { path: `/srv/${value}/a` } },
    { capability: 'fetch', payload: { url: `https://API-${value.toUpperCase()}.example.com/` } },
    { capability: 'secrets.get', payload: { name: value } },
    { capability: 'db.query', payload: { database: value } },
    { capability: 'fs.read', payload: { path: '/srv/ok' } },
  ]
  const r = learnManifest(calls, { platform: 'posix', secretValues: [value, ''] })
  assert.deepEqual(r.manifest, { fs: ['/srv/ok'] })
  assert.deepEqual(
    r.unlearned.map((u) => u.call),
    [0, 1, 2, 3],
  )
  assert.deepEqual(
    r.unlearned.map((u) => u.why),
    ['the path holds a secret value', 'the url holds a secret value', 'the name holds a secret value', 'the database holds a secret value'],
  )
  assert.equal(JSON.stringify(r).toLowerCase().includes(value), false)
  assert.deepEqual(learnManifest(calls, { platform: 'posix', secretValues: [] }).unlearned, [])
  // The option is read as own data and validated: anything but a plain array of at most 256 strings is a TypeError.
  for (const bad of ['x', [1], new Proxy([], {}), Array(257).fill('v'), null]) assert.throws(() => learnManifest(calls, { secretValues: bad }), TypeError)
  assert.throws(() => learnManifest(calls, { get secretValues() { return [value] } }), TypeError)
})
