'use strict'
// The shipped runner (lib/vm-host) performs the request that was checked
// (SPEC §3, §16): a plugin cannot set Host, :authority, hop-by-hop, framing
// or routing headers; the runner refuses them with ERR_HEADER_REFUSED naming
// the header and sends nothing. A real HTTP server on 127.0.0.1 records
// exactly what arrives (req.rawHeaders).
const test = require('node:test')
const assert = require('node:assert/strict')
const http = require('node:http')
const { PermissionPolicy } = require('../index.js')
const { runPlugin, FORWARDED_HEADERS } = require('../lib/vm-host/host.js')
const { run: runHeadersOracle } = require('./oracles/headers.js')

const SECRET = 'sk-live-header-test'

async function server(t) {
  const seen = []
  const s = http.createServer((req, res) => {
    seen.push({ url: req.url, method: req.method, raw: req.rawHeaders })
    res.end('ok')
  })
  await new Promise((r) => s.listen(0, '127.0.0.1', r))
  t.after(() => s.close())
  return { seen, port: s.address().port }
}

// Each case: the headers a plugin passes to fetch. '$SECRET' is the bound secret's placeholder.
const PLUGIN = `
const out = []
for (const [i, h] of config.cases.entries()) {
  const headers = {}
  for (const [k, v] of h) headers[k] = v.split('$SECRET').join(config.secretPlaceholders.TOKEN)
  try {
    await fetch(config.base + '/case/' + i, { headers })
    out.push('sent')
  } catch (e) {
    out.push((e.code || 'no code') + ': ' + e.message)
  }
}
return JSON.stringify(out)
`

async function runCases(t, cases, extra = {}) {
  const { seen, port } = await server(t)
  const policy = PermissionPolicy.fromManifest({ fetch: ['http://localhost:*'], secrets: [{ name: 'TOKEN', hosts: ['http://localhost:*'] }], budgets: { wallClockMs: 20_000 } }, { plugin: 'headers' })
  const r = await runPlugin({
    name: 'headers',
    code: PLUGIN,
    policy,
    config: { cases, base: `http://localhost:${port}` },
    secrets: new Map([['TOKEN', SECRET]]),
    lookup: async () => [{ address: '127.0.0.1', family: 4 }],
    ...extra,
  })
  assert.equal(r.ok, true, `${r.code} ${r.message}`)
  return { out: JSON.parse(r.value), seen, port, calls: r.calls }
}

const casings = (n) => [n, n.toUpperCase(), n.replace(/(^|-)([a-z])/g, (_, a, b) => a + b.toUpperCase()), [...n].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join('')]

const REFUSED = [
  'host',
  'connection',
  'keep-alive',
  'upgrade',
  'transfer-encoding',
  'te',
  'trailer',
  'expect',
  'content-length',
  'proxy-authorization',
  'proxy-connection',
  'proxy-anything',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-forwarded-anything',
  'forwarded',
  'x-original-url',
  'x-rewrite-url',
  'x-real-ip',
  'x-http-method-override',
  'x-method-override',
  'via',
  'max-forwards',
  'x-unknown-custom',
]

test('every routing, hop-by-hop, framing or unlisted header is refused in every casing; nothing is sent', async (t) => {
  const cases = []
  for (const n of REFUSED) for (const c of casings(n)) cases.push([[c, n === 'host' ? 'evil.example:80' : 'x']])
  // With a bound secret's placeholder in the refused header, and beside an allowed one.
  cases.push([['Host', '$SECRET']], [['X-Forwarded-Host', '$SECRET']], [['Authorization', '$SECRET'], ['Host', 'evil.example']], [['Authorization', '$SECRET'], ['x-original-url', '/admin']])
  const { out, seen, calls } = await runCases(t, cases)
  assert.equal(seen.length, 0, `nothing arrives: ${JSON.stringify(seen)}`)
  for (const [i, h] of cases.entries()) {
    const refusedName = h.find(([k]) => k.toLowerCase() !== 'authorization')[0]
    assert.match(out[i], new RegExp(`^ERR_HEADER_REFUSED: header '${refusedName}' refused: `), JSON.stringify(h))
  }
  // The host's trace says refused, never allowed.
  const fetches = calls.filter((c) => c.capability === 'fetch')
  assert.equal(fetches.length, cases.length)
  assert.ok(fetches.every((c) => c.allowed === false && c.refused === 'header'))
})

test('pseudo-headers, look-alike names, duplicates and CR/LF/NUL or non-ASCII values are refused', async (t) => {
  const cases = [
    [[':authority', 'evil.example']],
    [[':path', '/admin']],
    [['x_forwarded_for', '1.2.3.4']],
    [['X_Forwarded_Host', 'evil']],
    [['host ', 'evil']],
    [['Hоst', 'evil']],
    [['Accept', 'a'], ['accept', 'b']],
    [['Accept', 'a\r\nHost: evil.example']],
    [['Accept', 'a\nX-Forwarded-For: 1.2.3.4']],
    [['Accept', 'a\rb']],
    [['Accept', 'a\u0000b']],
    [['Accept', 'é']],
    [['Accept', 'a'.repeat(8193)]],
    [['Authorization', 'Bearer $SECRET\r\nX: y']],
  ]
  const { out, seen } = await runCases(t, cases)
  assert.equal(seen.length, 0, `nothing arrives: ${JSON.stringify(seen)}`)
  for (const [i, h] of cases.entries()) assert.match(out[i], /^ERR_HEADER_REFUSED: header '[^']+' refused: /, JSON.stringify(h))
  assert.match(out[0], /header ':authority' refused/)
  assert.match(out[5], /header '\(unprintable or too long\)' refused/)
})

test('allowed headers arrive as sent, the secret substituted, and Host is the checked name:port', async (t) => {
  const cases = [[['Accept', 'text/plain'], ['USER-AGENT', 'plugin/1'], ['Authorization', 'Bearer $SECRET']], FORWARDED_HEADERS.map((n) => [n, `v-${n}`])]
  const { out, seen, port } = await runCases(t, cases)
  assert.deepEqual(out, ['sent', 'sent'])
  assert.equal(seen.length, 2)
  const pairs = (raw) => Array.from({ length: raw.length / 2 }, (_, k) => [raw[2 * k].toLowerCase(), raw[2 * k + 1]])
  const first = pairs(seen[0].raw)
  assert.deepEqual(first.filter(([k]) => k === 'host'), [['host', `localhost:${port}`]])
  assert.deepEqual(
    first.filter(([k]) => k !== 'host' && k !== 'connection'),
    [
      ['accept', 'text/plain'],
      ['user-agent', 'plugin/1'],
      ['authorization', `Bearer ${SECRET}`],
    ],
  )
  const second = pairs(seen[1].raw)
  assert.deepEqual(second.filter(([k]) => k === 'host'), [['host', `localhost:${port}`]])
  for (const n of FORWARDED_HEADERS) assert.deepEqual(second.filter(([k]) => k === n), [[n, `v-${n}`]])
  for (const [k, v] of [...first, ...second]) if (k === 'connection') assert.equal(v, 'close')
})

test('forwardHeaders adds names, and never a routing, hop-by-hop or framing one', async (t) => {
  const { out, seen } = await runCases(t, [[['X-Api-Key', 'k']], [['X-Other', 'k']]], { forwardHeaders: ['X-Api-Key'] })
  assert.equal(out[0], 'sent')
  assert.match(out[1], /^ERR_HEADER_REFUSED: header 'X-Other' refused/)
  assert.equal(seen.length, 1)
  assert.deepEqual(seen[0].raw.slice(seen[0].raw.indexOf('x-api-key')).slice(0, 2), ['x-api-key', 'k'])
  const policy = PermissionPolicy.fromManifest({ fetch: ['http://localhost:*'] }, { plugin: 'headers' })
  for (const bad of ['Host', 'x-forwarded-for', 'X-Forwarded-Anything', 'proxy-authorization', 'Transfer-Encoding', 'Connection', 'TE', 'Forwarded', 'x-original-url', 'X-Rewrite-URL', 'content-length', 'x_forwarded_for', ':authority', '', 42]) {
    assert.throws(() => runPlugin({ name: 'h', code: 'return 1', policy, forwardHeaders: [bad] }), TypeError, String(bad))
  }
})

test('header oracle (bounded): random names, casings and values through the runner agree with the SPEC/README model', async () => {
  const seconds = Number(process.env.FUZZ_SECONDS || 3)
  const seed = Number(process.env.FUZZ_SEED || Date.now() % 0x7fffffff)
  const { cases, forwarded, wrongAllows, mismatches } = await runHeadersOracle({ seconds, seed })
  console.log(`headers oracle seed ${seed}: ${cases} requests, ${forwarded} forwarded`)
  assert.ok(cases > 300 && forwarded > 50 && forwarded < cases, `${forwarded} of ${cases}`)
  assert.deepEqual(wrongAllows.slice(0, 3), [], `${wrongAllows.length} wrong allows (seed ${seed})`)
  assert.deepEqual(mismatches.slice(0, 3), [], `${mismatches.length} mismatches (seed ${seed})`)
})
