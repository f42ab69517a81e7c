'use strict'
// Pins the fourth red team's findings (after issue 24's fixes), each through
// the boundary users call: the shipped runner, the CLI and a live Deno broker
// socket. The lockdown finding (a locked child setting an fd's owner to its
// parent and killing it with SIGIO) is pinned from a locked child in
// tests/lockdown.rs and __test__/lockdown.test.js.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const net = require('node:net')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { PermissionPolicy, serveDenoBroker } = require('../index.js')
const { runPlugin } = require('../lib/vm-host/host.js')

const policy = (m) => PermissionPolicy.fromManifest(m, { plugin: 't', platform: 'posix' })

// Payloads whose String() or template use throws, or that are not strings.
const HOSTILE_LINES = [
  '{ toString: 1 }',
  '{ toString: null, valueOf: null }',
  '{ [Symbol.toPrimitive]: 1 }',
  '[{ toString: 1 }]',
  '{ line: { toString: 1 } }',
  '42',
  'null',
]

test('runner: a plugin log call with a hostile payload never crashes the host; the run resolves', async () => {
  for (const line of HOSTILE_LINES) {
    const code = `await capability('log', { line: ${line} }); await capability('log', ${line}); return 'done'`
    const r = await runPlugin({ name: 'evil', code, policy: policy({ budgets: { wallClockMs: 5000 } }), log: () => {} })
    assert.equal(r.ok, true, `${line}: ${JSON.stringify(r)}`)
    assert.equal(r.value, 'done', line)
  }
})

test('runner: a capability payload that throws on every read is answered, never a host crash', async () => {
  const code = `
    const out = []
    for (const cap of ['fs.read', 'fetch', 'secrets.get', 'events.publish', 'db.query', 'nope']) {
      try { await capability(cap, { path: { toString: 1 }, url: { toString: 1 }, name: { toString: 1 }, topic: { toString: 1 }, database: { toString: 1 } }); out.push('allowed') }
      catch (e) { out.push(e.code || 'error') }
    }
    return out.join(',')`
  const r = await runPlugin({ name: 'evil', code, policy: policy({ budgets: { wallClockMs: 5000 } }), log: () => {} })
  assert.equal(r.ok, true, JSON.stringify(r))
  const got = r.value.split(',')
  assert.equal(got.length, 6)
  assert.ok(got.every((c) => c === 'PERMISSION_DENIED'), r.value)
})

test('CLI learn: a hostile log payload ends the run normally', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rt4-learn-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const file = path.join(dir, 'plugin.js')
  fs.writeFileSync(file, "await capability('log', { line: { toString: 1 } }); return 'done'\n")
  const r = spawnSync(process.execPath, [path.join(__dirname, '..', 'bin', 'api-sandbox-permissions.js'), 'learn', file], { encoding: 'utf8', timeout: 60_000 })
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`)
})

// --- Deno broker: a port-less `net` value asks for every port ---------------

const skip = process.platform === 'win32' && 'the Deno broker listens on a Unix socket'

async function ask(manifest, values) {
  const broker = await serveDenoBroker(policy(manifest))
  try {
    const sock = net.connect(broker.path)
    await new Promise((r, j) => sock.once('connect', r).once('error', j))
    let buf = ''
    const answers = new Map()
    sock.setEncoding('utf8')
    sock.on('data', (d) => {
      buf += d
      let i
      while ((i = buf.indexOf('\n')) >= 0) {
        const m = JSON.parse(buf.slice(0, i))
        answers.set(m.id, m.result)
        buf = buf.slice(i + 1)
      }
    })
    values.forEach((value, id) => sock.write(`${JSON.stringify({ v: 1, pid: 4242, id: id + 1, datetime: new Date().toISOString(), permission: 'net', value })}\n`))
    const deadline = Date.now() + 10_000
    while (answers.size < values.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
    sock.destroy()
    assert.equal(answers.size, values.length, 'every line answered')
    return values.map((_, id) => answers.get(id + 1))
  } finally {
    await broker.close()
  }
}

test('Deno broker: a port-less net value is denied when a deny rule covers any port or scheme of the host', { skip }, async () => {
  const cases = [
    [{ fetch: ['api.example.com:*'], deny: { fetch: ['api.example.com:8443'] } }, 'deny'],
    [{ fetch: ['ws://api.example.com:*'], deny: { fetch: ['https://api.example.com'] } }, 'deny'],
    [{ fetch: ['api.example.com:*'], deny: { fetch: ['wss://api.example.com:9000'] } }, 'deny'],
    [{ fetch: ['api.example.com:*'], deny: { fetch: ['*.example.com:22'] } }, 'deny'],
    [{ fetch: ['10.1.2.3:*'], deny: { fetch: ['10.0.0.0/8'] } }, 'deny'],
    // Two grants on the two ends of the port range are not every port.
    [{ fetch: ['https://api.example.com:1', 'https://api.example.com:65535'] }, 'deny'],
    [{ fetch: ['api.example.com:*'], deny: { fetch: ['ftp://api.example.com'] } }, 'deny'],
    [{ fetch: ['api.example.com:*', 'ftp://api.example.com:*'], deny: { fetch: ['ftp://api.example.com:2121'] } }, 'deny'],
    [{ fetch: ['api.example.com:*'] }, 'allow'],
    [{ fetch: ['api.example.com:*'], deny: { fetch: ['other.example.com:8443'] } }, 'allow'],
  ]
  for (const [manifest, want] of cases) {
    const host = manifest.fetch[0].replace(/^[a-z]+:\/\//, '').replace(/:.*$/, '')
    const [got] = await ask(manifest, [host])
    assert.equal(got, want, JSON.stringify(manifest))
    // A deny of any scheme (ftp included) denies that port of the raw connection too.
    const denyHost = manifest.deny ? manifest.deny.fetch[0].replace(/^[a-z]+:\/\//, '').replace(/:.*$/, '') : null
    if (denyHost === host && /:(\d+)$/.test(manifest.deny.fetch[0])) {
      const port = /:(\d+)$/.exec(manifest.deny.fetch[0])[1]
      assert.deepEqual(await ask(manifest, [`${host}:${port}`]), ['deny'], `${JSON.stringify(manifest)} :${port}`)
    }
    if (manifest.deny && manifest.deny.fetch[0] === 'ftp://api.example.com') assert.deepEqual(await ask(manifest, [`${host}:21`]), ['deny'], 'ftp deny, port 21')
  }
})

test('Deno broker: a port-less net allow implies every port is allowed (generated manifests, every named port and a sample of the rest)', { skip }, async () => {
  let s = 0x5eed4
  const rnd = (n) => {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0
    return s % n
  }
  const pick = (a) => a[rnd(a.length)]
  const HOSTS = ['api.example.com', 'b.example.com', '10.1.2.3']
  const pattern = () => {
    const scheme = pick(['', '', 'http://', 'https://', 'ws://', 'wss://', 'ftp://'])
    const host = pick([...HOSTS, '*.example.com'])
    const port = pick(['', ':*', ':*', `:${pick([1, 22, 80, 443, 8080, 8443, 65535])}`])
    return `${scheme}${host}${port}`
  }
  for (let round = 0; round < 40; round++) {
    const manifest = { fetch: Array.from({ length: 1 + rnd(3) }, pattern) }
    if (rnd(2)) manifest.deny = { fetch: Array.from({ length: 1 + rnd(2) }, pattern) }
    const host = pick(HOSTS)
    const ports = [1, 2, 20, 21, 22, 79, 80, 81, 442, 443, 444, 2121, 8080, 8443, 65534, 65535]
    for (let i = 0; i < 20; i++) ports.push(1 + rnd(65535))
    const answers = await ask(manifest, [host, ...ports.map((p) => `${host}:${p}`)])
    if (answers[0] === 'allow') {
      ports.forEach((p, i) => assert.equal(answers[i + 1], 'allow', `${JSON.stringify(manifest)}: ${host} allowed port-less but ${host}:${p} denied`))
    }
  }
})
