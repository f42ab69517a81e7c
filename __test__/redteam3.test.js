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

test('vm-host fetch: every resolved address is checked and the request connects to the checked one (DNS rebinding)', async (t) => {
  const http = require('node:http')
  const { runPlugin } = require('../lib/vm-host/host.js')
  // Two real servers on one port: 127.0.0.1 (allowed) and 127.0.0.2 (denied by a CIDR rule).
  const seen = { '127.0.0.1': [], '127.0.0.2': [] }
  const serve = (ip) =>
    http.createServer((req, res) => {
      seen[ip].push({ url: req.url, host: req.headers.host, remote: req.socket.localAddress })
      if (req.url === '/redirect') {
        res.writeHead(302, { location: '/plain' })
        return res.end()
      }
      res.end(`served by ${ip}`)
    })
  const a = serve('127.0.0.1')
  await new Promise((r) => a.listen(0, '127.0.0.1', r))
  const port = a.address().port
  const b = serve('127.0.0.2')
  await new Promise((r, j) => b.once('error', j).listen(port, '127.0.0.2', r))
  t.after(() => (a.close(), b.close()))

  const run = async (manifest, url, lookup) => {
    const policy = PermissionPolicy.fromManifest({ ...manifest, budgets: { wallClockMs: 10000 } }, { plugin: 'rebind' })
    const r = await runPlugin({ name: 'rebind', code: 'return await fetch(config.url).then((x) => x.body)', policy, config: { url }, lookup })
    return { r, fetches: r.calls.filter((c) => c.capability === 'fetch') }
  }
  const answers = (...lists) => {
    const calls = []
    const lookup = async (hostname) => {
      calls.push(hostname)
      return lists[Math.min(calls.length, lists.length) - 1].map((address) => ({ address, family: 4 }))
    }
    return { lookup, calls }
  }
  const local = { fetch: ['http://localhost:*'], deny: { fetch: ['127.0.0.2/32'] } }
  const localUrl = `http://localhost:${port}`

  // A name that resolves to a public and a loopback address: refused, whatever the order; nothing connects.
  for (const order of [['93.184.216.34', '127.0.0.1'], ['127.0.0.1', '93.184.216.34']]) {
    const { lookup } = answers(order)
    const { fetches } = await run({ fetch: ['rebind.test:*'] }, `http://rebind.test:${port}/plain`, lookup)
    assert.deepEqual(fetches.map((c) => `${c.allowed} ${c.reason}`), ['false address_not_allowed'], order.join())
  }
  // An allowed and a denied address: refused, whatever the order.
  for (const order of [['127.0.0.1', '127.0.0.2'], ['127.0.0.2', '127.0.0.1']]) {
    const { lookup } = answers(order)
    const { fetches } = await run(local, `${localUrl}/plain`, lookup)
    assert.deepEqual(fetches.map((c) => `${c.allowed} ${c.reason}`), ['false explicitly_denied'], order.join())
  }
  assert.deepEqual(seen, { '127.0.0.1': [], '127.0.0.2': [] }, 'no request was made for a refused name')

  // Rebinding: the first answer is allowed, every later one is denied. The
  // host resolves once and connects to the checked address: served by
  // 127.0.0.1, with the name in the Host header, the resolver asked once.
  let dns = answers(['127.0.0.1'], ['127.0.0.2'])
  let { r, fetches } = await run(local, `${localUrl}/plain`, dns.lookup)
  assert.equal(r.ok, true, JSON.stringify(r))
  assert.equal(r.value, 'served by 127.0.0.1')
  assert.deepEqual(fetches.map((c) => c.allowed), [true])
  assert.deepEqual(dns.calls, ['localhost'])
  assert.deepEqual(seen['127.0.0.1'], [{ url: '/plain', host: `localhost:${port}`, remote: '127.0.0.1' }])
  // A redirect hop resolves again and is checked again: the rebound answer is refused before connecting.
  dns = answers(['127.0.0.1'], ['127.0.0.2'])
  ;({ r } = await run(local, `${localUrl}/redirect`, dns.lookup))
  assert.equal(r.ok, false)
  assert.equal(r.code, 'PERMISSION_DENIED')
  assert.deepEqual(dns.calls, ['localhost', 'localhost'])
  assert.equal(seen['127.0.0.1'].length, 2)
  assert.deepEqual(seen['127.0.0.2'], [], 'the denied address never saw a request')
})

test('p26: BudgetTracker.record reads sample fields as own data properties; a getter or an inherited one is INVALID_SAMPLE', () => {
  const { BudgetTracker, isInvalidSample } = require('../index.js')
  const pol = policy({ budgets: { cpuPercent: 10, memoryMb: 64, wallClockMs: 1e9 } })
  let now = 1000
  const mk = () => new BudgetTracker(pol, { hooks: { now: () => now }, unmeasured: ['cpuPercent', 'memoryMb'], cpuGraceMs: 0 })
  let ran = 0
  const hostile = (field) => [
    ['getter', Object.defineProperty({}, field, { get: () => (ran++, 1e6), enumerable: true })],
    ['inherited', Object.create({ [field]: 1e6 })],
    ['inherited getter', Object.create(Object.defineProperty({}, field, { get: () => (ran++, 1e6) }))],
    ['throwing Proxy prototype', Object.create(new Proxy({}, { has: () => { throw new Error('trap') }, get: () => { throw new Error('trap') } }))],
  ]
  let cases = 0
  for (const field of ['now', 'cpuTimeMs', 'rssMb']) {
    for (const [what, sample] of hostile(field)) {
      const t = mk()
      // A throwing Proxy on the chain answers for every field: the first one read (now) reports.
      const expected = what === 'throwing Proxy prototype' ? 'now' : field
      assert.throws(() => t.record(sample), (e) => isInvalidSample(e) && e.details.field === expected, `${what} ${field}`)
      // Nothing changed: the clock did not move and a real reading is still judged.
      assert.equal(t.elapsedMs, 0)
      assert.deepEqual(t.record({ rssMb: 1e6 }).budget, 'memoryMb')
      cases++
    }
  }
  assert.equal(ran, 0, 'no getter ran')
  // Own data properties, and absent or explicitly undefined ones, record as before.
  const t = mk()
  now = 1500
  assert.deepEqual(t.record({ rssMb: 1, cpuTimeMs: undefined }), { ok: true, elapsedMs: 500, memoryMb: 1 })
  assert.equal(t.record(Object.assign(Object.create(null), { rssMb: 100 })).budget, 'memoryMb')
  console.log(`record: ${cases} hostile samples refused`)
})

test('p24: serializeError reads details as own data properties; a getter never runs, a throwing read is a TypeError', () => {
  const { serializeError, reviveError, PermissionDeniedError } = require('../index.js')
  let ran = 0
  const forged = (details) => ({ code: 'PERMISSION_DENIED', details })
  // Getters (throwing or not, own or inherited) are never run; their fields are left out.
  const cases = [
    [{ get plugin() { throw 42 }, capability: 'fetch', reason: 'invalid_url' }, { capability: 'fetch', reason: 'invalid_url' }],
    [{ get reason() { return (ran++, 'invalid_url') }, plugin: 'p', capability: 'fetch' }, { plugin: 'p', capability: 'fetch' }],
    [Object.create({ reason: 'invalid_url' }), {}],
    // A Proxy nested in the details is a value of another type: left out, its traps not run.
    [{ tags: new Proxy(['a'], { get() { throw 7 } }), reason: 'invalid_url' }, { reason: 'invalid_url' }],
  ]
  for (const [d, want] of cases) assert.deepEqual(serializeError(forged(d)).details, want)
  // Proxy details (a throwing trap or not) and a throwing details read: TypeError, never the thrown value.
  const throwing = [
    forged(new Proxy({}, { ownKeys() { throw new RangeError('trap') } })),
    forged(new Proxy({}, {})),
    new Proxy({}, { getOwnPropertyDescriptor: (_, k) => (k === 'code' ? { value: 'PERMISSION_DENIED', configurable: true, enumerable: true } : (() => { throw 9 })()) }),
  ]
  throwing.forEach((e, i) => assert.throws(() => serializeError(e), TypeError, String(i)))
  // A string array with a getter element is left out; a plain one is kept whole.
  const arr = ['a']
  Object.defineProperty(arr, 1, { get: () => (ran++, 'b'), enumerable: true })
  const s = serializeError(forged({ plugin: 'p', capability: 'fetch', reason: 'invalid_url', a: arr, b: ['xy', 'zw'] }))
  assert.deepEqual(s.details, { plugin: 'p', capability: 'fetch', reason: 'invalid_url', b: ['xy', 'zw'] })
  assert.equal(ran, 0, 'no getter ran')
  // A real error still round-trips.
  const real = new PermissionDeniedError({ plugin: 'p', capability: 'fetch', reason: 'host_not_allowlisted', target: 'https://a.example:443' })
  const back = reviveError(serializeError(real))
  assert.deepEqual({ ...back.details }, { ...real.details })
  assert.equal(back.message, real.message)
})
