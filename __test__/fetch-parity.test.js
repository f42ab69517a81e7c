'use strict'
// SPEC §3 "Parser parity with the runtime that fetches": a URL whose authority
// is not plain ASCII, or holds a percent-escape or an `xn--` label, is also
// parsed by this Node's URL; a disagreement on scheme, host or port, or a URL
// Node rejects, is `invalid_url` at every entry point. Grants Node reads as
// another host are INVALID_MANIFEST. The expectations come from Node's own URL.
const test = require('node:test')
const assert = require('node:assert/strict')
const { PermissionPolicy, PermissionChecker, createChecker } = require('..')
const { meterHarness } = require('./helpers.js')

const GRANTS = ['fußball.de', '*.example.org', 'api.example.com', 'münchen.example']
const nodeHost = (u) => {
  try {
    return new URL(u).host
  } catch {
    return null
  }
}

/** Every entry point's verdict for `url`: 'allow' or the deny reason. */
function verdicts(c, url) {
  const reason = (f) => {
    try {
      const r = f()
      return r === undefined || typeof r === 'string' || r.allowed ? 'allow' : r.reason
    } catch (e) {
      assert.equal(e.code, 'PERMISSION_DENIED', String(e))
      return e.details.reason
    }
  }
  return {
    checkFetch: reason(() => c.checkFetch(url)),
    assertFetch: reason(() => c.assertFetch(url)),
    authorizeFetch: reason(() => c.authorizeFetch(url)),
    checkFetchAddress: reason(() => c.checkFetchAddress(url, '93.184.216.34')),
    assertFetchAddress: reason(() => c.assertFetchAddress(url, '93.184.216.34')),
    checkCapability: reason(() => c.checkCapability('fetch', { url: String(url) })),
    assertCapability: reason(() => c.assertCapability('fetch', { url: String(url) })),
  }
}
const every = (reason) => ({
  checkFetch: reason,
  assertFetch: reason,
  authorizeFetch: reason,
  checkFetchAddress: reason,
  assertFetchAddress: reason,
  checkCapability: reason,
  assertCapability: reason,
})

const checker = createChecker({ fetch: GRANTS }, { plugin: 'parity' })

test('URLs Node sends elsewhere, or rejects, are invalid_url at every entry point', () => {
  const cases = [
    ['https://fuẞball.de/', 'fussball.de'],
    ['https://fu%E1%BA%9Eball.de/', 'fussball.de'],
    ['https://FUẞBALL.de/', 'fussball.de'],
    ['  https://fuẞball.de/', 'fussball.de'],
    ['https:\\\\fuẞball.de/', 'fussball.de'],
    ['https:fuẞball.de/', 'fussball.de'],
    ['https://fu\tẞball.de/', 'fussball.de'],
    ['https://fuẞ\nball.de/', 'fussball.de'],
    ['https://fuẞball.de:443/', 'fussball.de'],
    ['https://xẞ.example.org/', 'xss.example.org'],
    ['http://api.example.com\u180E/', null],
    ['https://a\u180E.example.org/', null],
  ]
  for (const [url, host] of cases) {
    assert.equal(nodeHost(url), host, `Node's reading of ${JSON.stringify(url)}`)
    assert.deepEqual(verdicts(checker, url), every('invalid_url'), JSON.stringify(url))
  }
  // A URL object is Node's own parse: its href goes where Node goes.
  assert.deepEqual(checker.checkFetch(new URL('https://fuẞball.de/')), { allowed: false, capability: 'fetch', reason: 'host_not_allowlisted' })
})

test('URLs both parsers read alike decide as before (Unicode, punycode, percent-escapes, ASCII hot path)', () => {
  const allow = ['https://fußball.de/', 'https://xn--fuball-cta.de/', 'https://fu%C3%9Fball.de/', 'https://münchen.example/', 'https://MÜNCHEN.example/x?q=%20', 'https://bücher.example.org/', 'https://api.example.com/a%20b?c=é#ü', 'https://a.example.org/', new URL('https://münchen.example/')]
  for (const url of allow) assert.deepEqual(verdicts(checker, url), every('allow'), String(url))
  assert.equal(checker.authorizeFetch('https://fußball.de/'), 'https://xn--fuball-cta.de/')
  assert.deepEqual(verdicts(checker, 'https://fussball.de/'), every('host_not_allowlisted'))
  assert.deepEqual(verdicts(checker, 'https://a@fußball.de/'), every('credentials_in_url'))
  assert.deepEqual(verdicts(checker, 'ftp://fußball.de/'), every('scheme_not_allowed'))
  assert.deepEqual(verdicts(checker, 'https://fußball.de:8443/'), every('port_not_allowed'))
})

test('a denial by parity counts once in permission_denied_total', async () => {
  const h = meterHarness()
  try {
    const c = new PermissionChecker(PermissionPolicy.fromManifest({ fetch: GRANTS }, { plugin: 'parity-metric' }), { meter: h.meter })
    c.checkFetch('https://fuẞball.de/')
    assert.throws(() => c.assertFetch('https://fuẞball.de/'))
    c.checkCapability('fetch', { url: 'https://fuẞball.de/' })
    const points = (await h.points()).filter((p) => p.name === 'plugin.permission_denied_total')
    assert.equal(points.length, 1)
    assert.deepEqual(points[0].attributes, { plugin: 'parity-metric', capability: 'fetch', reason: 'invalid_url' })
    assert.equal(points[0].value, 3)
  } finally {
    await h.shutdown()
  }
})

test('grants that Node reads as another host are INVALID_MANIFEST at their pointer', () => {
  for (const [fetch, pointer] of [
    [['fuẞball.de'], '/fetch/0'],
    [['api.example.com', '*.fuẞball.de'], '/fetch/1'],
    [['https://fuẞball.de:8443'], '/fetch/0'],
    [['ws://FUẞBALL.DE'], '/fetch/0'],
  ]) {
    assert.notEqual(nodeHost(`http://${fetch.at(-1).replace(/^\w+:\/\/|^\*\.|:\d+$/g, '')}/`), 'xn--fuball-cta.de')
    assert.throws(
      () => PermissionPolicy.fromManifest({ fetch }, { plugin: 'p' }),
      (e) => e.code === 'INVALID_MANIFEST' && e.details.pointer === pointer,
      JSON.stringify(fetch),
    )
  }
  for (const fetch of [['fußball.de'], ['xn--fuball-cta.de'], ['*.münchen.example:*'], ['https://bücher.example:8443'], ['[::1]:9000']]) {
    assert.doesNotThrow(() => PermissionPolicy.fromManifest({ fetch }, { plugin: 'p' }), JSON.stringify(fetch))
  }
})

test('a grant and a URL read alike by both parsers decide the same for every BMP letter in the grant', () => {
  // For each Latin/Greek/Cyrillic letter L, the grant `xLy.example` either is
  // rejected (the parsers differ) or allows exactly the URL Node reads alike.
  let grants = 0
  let rejected = 0
  for (let cp = 0xc0; cp <= 0x52f; cp++) {
    const ch = String.fromCodePoint(cp)
    const host = `x${ch}y.example`
    let c
    try {
      c = createChecker({ fetch: [host] }, { plugin: 'p' })
    } catch (e) {
      assert.equal(e.code, 'INVALID_MANIFEST')
      rejected++
      continue
    }
    grants++
    const url = `https://${host}/`
    const d = c.checkFetch(url)
    const node = nodeHost(url)
    if (d.allowed) assert.equal(node, new URL(c.authorizeFetch(url)).host, host)
  }
  console.log(`letter grants: ${grants} accepted, ${rejected} rejected`)
  assert.ok(grants > 500)
})

test('explainFetch reports the parity denial the checks make', () => {
  const policy = PermissionPolicy.fromManifest({ fetch: GRANTS }, { plugin: 'p' })
  const e = policy.explainFetch('https://fuẞball.de/')
  assert.deepEqual(e.decision, { allowed: false, capability: 'fetch', reason: 'invalid_url' })
  assert.deepEqual(e.parity, { node: 'fussball.de', core: 'xn--fuball-cta.de' })
  assert.deepEqual(policy.explainFetch('https://fußball.de/').decision, { allowed: true })
  assert.equal(policy.explainFetch('https://fußball.de/').parity, undefined)
})

test('dot segments are parsed by Node too: a path Node reads differently is invalid_url (red team 2, F2)', () => {
  const c = new PermissionChecker(PermissionPolicy.fromManifest({ fetch: ['https://api.example.com/public/**'], deny: { fetch: ['api.example.com/public/secret/**'] } }, { plugin: 'dots' }))
  // Node 20's URL (Ada) keeps this path as written, so fetch(u) would send it; the core removes the dot segments.
  const tricky = 'https://api.example.com/admin/.b/../../public/z'
  const nodePath = new URL(tricky).pathname
  const agrees = nodePath === '/public/z'
  for (const [url, want] of [
    [tricky, agrees ? true : 'invalid_url'],
    ['https://api.example.com/public/./z', true],
    ['https://api.example.com/x/../public/z', true],
    ['https://api.example.com/public/.well-known', true],
    ['https://api.example.com/public/x/../secret/k', 'explicitly_denied'],
    ['https://api.example.com/public/%2e%2e/admin', 'path_not_allowed'],
  ]) {
    const d = c.checkFetch(url)
    if (want === true) {
      assert.deepEqual(d, { allowed: true }, url)
      // Whatever is allowed, Node reads the path the core checked.
      assert.equal(new URL(url).pathname, new URL(c.authorizeFetch(url)).pathname, url)
    } else {
      assert.equal(d.reason, want, url)
      assert.throws(() => c.authorizeFetch(url), (e) => e.details.reason === want, url)
    }
  }
})
