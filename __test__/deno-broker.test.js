'use strict'
// The Deno broker protocol (SPEC §15) against a raw `net.connect` client:
// the verdict of each permission, and hostile input (over-long lines,
// invalid JSON and UTF-8, unknown versions, reused ids, a client that never
// reads, a second client, a wrong pid). Each gets a deny or a closed
// connection, never an allow and never a crash. Metrics through a real
// OpenTelemetry SDK MeterProvider with an in-memory exporter.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const net = require('node:net')
const path = require('node:path')
const { meterHarness } = require('./helpers.js')
const { PermissionPolicy, serveDenoBroker } = require('../index.js')
const { parseDenyText } = require('../lib/deno-broker.js')

const skip = process.platform === 'win32' && 'the Deno broker listens on a Unix socket'

/** A raw client: send lines or bytes, read reply lines, see the close. */
function client(sockPath) {
  const sock = net.connect(sockPath)
  const lines = []
  const waiters = []
  let buf = ''
  let closed = false
  const wake = () => {
    for (const w of waiters.splice(0)) w()
  }
  sock.setEncoding('utf8')
  sock.on('data', (d) => {
    buf += d
    let i
    while ((i = buf.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(buf.slice(0, i)))
      buf = buf.slice(i + 1)
    }
    wake()
  })
  sock.on('error', () => {})
  sock.on('close', () => {
    closed = true
    wake()
  })
  const until = async (cond, what) => {
    const deadline = Date.now() + 5000
    while (!cond()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
      await new Promise((r) => {
        waiters.push(r)
        setTimeout(r, 50)
      })
    }
  }
  return {
    sock,
    lines,
    get closed() {
      return closed
    },
    connected: new Promise((r, j) => {
      sock.once('connect', r)
      sock.once('error', j)
    }),
    send: (obj) => sock.write(`${typeof obj === 'string' ? obj : JSON.stringify(obj)}\n`),
    raw: (b) => sock.write(b),
    async reply(n = lines.length + 1) {
      await until(() => lines.length >= n || closed, `reply ${n}`)
      return lines[n - 1]
    },
    waitClosed: () => until(() => closed, 'close'),
    end: () => sock.destroy(),
  }
}

let nextId = 1
const req = (permission, value, extra = {}) => ({ v: 1, datetime: '2026-12-02T00:00:00Z', pid: 4242, id: nextId++, datetime: new Date().toISOString(), permission, value, ...extra })

async function setup(t, manifest, options = {}) {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'deno-broker-test-')))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  const probe = meterHarness()
  t.after(() => probe.shutdown())
  const m = typeof manifest === 'function' ? manifest(root) : manifest
  const policy = PermissionPolicy.fromManifest(m, { plugin: 'deno-test' })
  const broker = await serveDenoBroker(policy, { meter: probe.meter, ...options })
  t.after(() => broker.close())
  return { root, probe, broker, policy }
}

test('socket: mode 0600 in a private 0700 directory, removed on close', { skip }, async (t) => {
  const { broker } = await setup(t, {})
  assert.equal(fs.statSync(broker.path).mode & 0o777, 0o600)
  assert.equal(fs.statSync(path.dirname(broker.path)).mode & 0o777, 0o700)
  assert.deepEqual(Object.keys(broker.env), ['DENO_PERMISSION_BROKER_PATH'])
  assert.equal(broker.env.DENO_PERMISSION_BROKER_PATH, broker.path)
  await broker.close()
  assert.equal(fs.existsSync(path.dirname(broker.path)), false)
})

test('verdicts per permission, as SPEC §15 maps them, each denial counted once', { skip }, async (t) => {
  const { root, probe, broker } = await setup(t, (root) => ({
    fs: [`${root}/data/**`, { path: `${root}/out/**`, mode: 'write' }],
    fetch: ['127.0.0.1:8081', 'https://api.example.com', 'wss://ws.example.com', '[::1]:*', 'http://plain.example.com:8080'],
    secrets: ['GREETING'],
  }))
  fs.mkdirSync(path.join(root, 'data'))
  fs.writeFileSync(path.join(root, 'secret.txt'), 'x')
  fs.symlinkSync(path.join(root, 'secret.txt'), path.join(root, 'data', 'link'))
  const c = client(broker.path)
  await c.connected
  const cases = [
    [['read', `${root}/data/a.txt`], true],
    [['read', `${root}/secret.txt`], 'fs.read not_allowlisted'],
    [['read', `${root}/data/../secret.txt`], 'fs.read path_traversal'],
    [['read', `${root}/data/link`], 'fs.read symlink_escape'],
    [['read', null], 'fs.read invalid_path'],
    [['read', 'relative.txt'], 'fs.read invalid_path'],
    [['write', `${root}/out/r.json`], true],
    [['write', `${root}/data/a.txt`], 'fs.write mode_not_granted'],
    [['write', null], 'fs.write invalid_path'],
    [['net', '127.0.0.1:8081'], true],
    [['net', '127.0.0.1:80'], 'fetch port_not_allowed'],
    [['net', '127.0.0.2:8081'], 'fetch host_not_allowlisted'],
    [['net', 'api.example.com:443'], true],
    [['net', 'api.example.com:80'], 'fetch port_not_allowed'],
    [['net', 'ws.example.com:443'], true],
    [['net', 'plain.example.com:8080'], true],
    [['net', 'plain.example.com:443'], 'fetch port_not_allowed'],
    [['net', '[::1]:8081'], true],
    [['net', '[::2]:8081'], 'fetch host_not_allowlisted'],
    [['net', '[::1%eth0]:1'], 'fetch invalid_url'],
    [['net', 'evil.com/@api.example.com:443'], 'fetch invalid_url'],
    [['net', 'api.example.com:99999'], 'fetch invalid_url'],
    [['net', null], 'fetch invalid_url'],
    [['import', 'api.example.com:443'], true],
    [['import', '127.0.0.1:8081'], true],
    [['import', 'plain.example.com:8080'], 'fetch scheme_not_allowed'],
    [['import', 'deno.land:443'], 'fetch host_not_allowlisted'],
    [['env', 'GREETING'], true],
    [['env', 'AWS_SECRET_ACCESS_KEY'], 'secrets.get secret_not_declared'],
    [['env', 'greeting'], 'secrets.get secret_not_declared'],
    [['env', null], 'secrets.get secret_not_declared'],
    [['run', null], 'unknown unknown_capability'],
    [['run', '/bin/sh'], 'unknown unknown_capability'],
    [['ffi', '/lib/x.so'], 'unknown unknown_capability'],
    [['sys', 'hostname'], 'unknown unknown_capability'],
    [['__proto__', 'x'], 'unknown unknown_capability'],
    [['fs.read', `${root}/data/a.txt`], 'unknown unknown_capability'],
    [['read', 42], 'unknown unknown_capability'],
  ]
  const expected = {}
  for (const [[permission, value], want] of cases) {
    const r = req(permission, value)
    c.send(r)
    const got = await c.reply()
    assert.equal(got.id, r.id, `${permission} ${value}: id`)
    if (want === true) assert.deepEqual(got, { id: r.id, result: 'allow' }, `${permission} ${value}`)
    else {
      assert.equal(got.result, 'deny', `${permission} ${value}`)
      const d = parseDenyText(got.reason)
      assert.equal(`${d.capability} ${d.reason}`, want, `${permission} ${value}: ${got.reason}`)
      const key = `plugin.permission_denied_total|deno-test|${d.capability}|${d.reason}`
      expected[key] = (expected[key] || 0) + 1
    }
  }
  assert.deepEqual(await probe.counts(), expected)
  assert.equal(broker.stats.requests, cases.length)
  assert.equal(broker.stats.allowed, cases.filter(([, w]) => w === true).length)
  c.end()
})

test('path scopes: Deno asks net and import without a path, so a path-scoped grant admits no raw host and a path-scoped deny denies the whole host', { skip }, async (t) => {
  const { probe, broker } = await setup(t, {
    fetch: ['https://api.github.com/repos/acme/**', 'docs.example.com', 'https://x.example.com:8443'],
    deny: { fetch: ['docs.example.com/admin/**', 'https://x.example.com:8443/private/*', '10.0.0.0/8'] },
  })
  const c = client(broker.path)
  await c.connected
  const cases = [
    [['net', 'api.github.com:443'], 'fetch path_not_allowed'],
    [['import', 'api.github.com:443'], 'fetch path_not_allowed'],
    [['net', 'docs.example.com:443'], 'fetch explicitly_denied'],
    [['import', 'docs.example.com:443'], 'fetch explicitly_denied'],
    [['net', 'x.example.com:8443'], 'fetch explicitly_denied'],
    [['net', '10.1.2.3:443'], 'fetch explicitly_denied'],
  ]
  for (const [[permission, value], want] of cases) {
    const r = req(permission, value)
    c.send(r)
    const got = await c.reply()
    assert.equal(got.result, 'deny', `${permission} ${value}`)
    const d = parseDenyText(got.reason)
    assert.equal(`${d.capability} ${d.reason}`, want, `${permission} ${value}`)
  }
  const counts = await probe.counts()
  assert.equal(Object.values(counts).reduce((a, b) => a + b, 0), cases.length, JSON.stringify(counts))
  c.end()
})

test('net without a port asks for every port: only a :* grant admits it; pid and datetime are required; an async audit hook that rejects is isolated (red team 2, F9)', { skip }, async (t) => {
  const { probe, broker } = await setup(t, { fetch: ['a.example.com', 'b.example.com:*', 'c.example.com:1', 'c.example.com:443'] }, { onDecision: async () => { throw new Error('audit sink down') } })
  const c = client(broker.path)
  await c.connected
  const cases = [
    [req('net', 'a.example.com'), 'fetch port_not_allowed'],
    [req('net', 'b.example.com'), true],
    [req('net', 'c.example.com'), 'fetch port_not_allowed'],
    [req('net', 'a.example.com:443'), true],
    [{ ...req('net', 'a.example.com:443'), pid: undefined }, 'unknown unknown_capability'],
    [{ ...req('net', 'a.example.com:443'), pid: '4242' }, 'unknown unknown_capability'],
    [{ ...req('net', 'a.example.com:443'), datetime: undefined }, 'unknown unknown_capability'],
    [{ ...req('net', 'a.example.com:443'), datetime: 7 }, 'unknown unknown_capability'],
  ]
  let denials = 0
  for (const [r, want] of cases) {
    c.send(r)
    const got = await c.reply()
    assert.equal(got.id, r.id)
    if (want === true) assert.equal(got.result, 'allow', JSON.stringify(r))
    else {
      denials++
      assert.equal(got.result, 'deny', JSON.stringify(r))
      const d = parseDenyText(got.reason)
      assert.equal(`${d.capability} ${d.reason}`, want, JSON.stringify(r))
    }
  }
  await new Promise((resolve) => setImmediate(resolve))
  const counts = await probe.counts()
  assert.equal(Object.values(counts).reduce((a, b) => a + b, 0), denials, JSON.stringify(counts))
  c.end()
})

test('pipelined requests are answered in order', { skip }, async (t) => {
  const { broker } = await setup(t, { secrets: ['A'] })
  const c = client(broker.path)
  await c.connected
  const rs = Array.from({ length: 200 }, (_, i) => req('env', i % 2 ? 'A' : 'B'))
  c.raw(rs.map((r) => `${JSON.stringify(r)}\n`).join(''))
  await c.reply(200)
  assert.deepEqual(
    c.lines.map((l) => [l.id, l.result]),
    rs.map((r, i) => [r.id, i % 2 ? 'allow' : 'deny']),
  )
  c.end()
})

test('malformed lines: invalid JSON, invalid UTF-8, not an object, unknown version, bad fields: deny, connection kept, counted', { skip }, async (t) => {
  const { root, probe, broker } = await setup(t, (root) => ({ fs: [`${root}/**`] }))
  const c = client(broker.path)
  await c.connected
  const bad = [
    ['{"v":1,', null],
    ['', null],
    ['[1,2]', null],
    ['null', null],
    ['"read"', null],
    [JSON.stringify({ v: 2, pid: 1, id: 900001, permission: 'read', value: `${root}/a` }), 900001],
    [JSON.stringify({ pid: 1, id: 900002, permission: 'read', value: `${root}/a` }), 900002],
    [JSON.stringify({ v: '1', pid: 1, id: 900003, permission: 'read', value: `${root}/a` }), 900003],
    [JSON.stringify({ v: 1, datetime: '2026-12-02T00:00:00Z', pid: 1, id: -1, permission: 'read', value: `${root}/a` }), null],
    [JSON.stringify({ v: 1, datetime: '2026-12-02T00:00:00Z', pid: 1, id: 1.5, permission: 'read', value: `${root}/a` }), null],
    [JSON.stringify({ v: 1, datetime: '2026-12-02T00:00:00Z', pid: 1, id: '900004', permission: 'read', value: `${root}/a` }), null],
    [JSON.stringify({ v: 1, datetime: '2026-12-02T00:00:00Z', pid: 1, id: 900005, permission: ['read'], value: `${root}/a` }), 900005],
    [JSON.stringify({ v: 1, datetime: '2026-12-02T00:00:00Z', pid: 1, id: 900006, permission: 'r'.repeat(65), value: `${root}/a` }), 900006],
    [JSON.stringify({ v: 1, datetime: '2026-12-02T00:00:00Z', pid: 1, id: 900007, value: `${root}/a` }), 900007],
  ]
  for (const [line, id] of bad) {
    c.send(line)
    const got = await c.reply()
    assert.equal(got.result, 'deny', line)
    assert.equal(got.id, id, line)
    assert.match(got.reason, /unknown unknown_capability \(malformed request: /)
  }
  // Invalid UTF-8 inside an otherwise valid request (a lone continuation byte in the path).
  const before = Buffer.from(`{"v":1,"pid":1,"id":900100,"permission":"read","value":"${root}/a`)
  c.raw(Buffer.concat([before, Buffer.from([0x80, 0x22, 0x7d, 0x0a])]))
  const utf = await c.reply()
  assert.equal(utf.result, 'deny')
  assert.equal(utf.id, null)
  // The connection still serves a valid request.
  const ok = req('read', `${root}/a`, { id: 900200 })
  c.send(ok)
  assert.deepEqual(await c.reply(), { id: 900200, result: 'allow' })
  assert.equal(broker.stats.malformed, bad.length + 1)
  const counts = await probe.counts()
  assert.equal(counts['plugin.permission_denied_total|deno-test|unknown|unknown_capability'], bad.length + 1)
  c.end()
})

test('ids reused or going backwards are denied without a check', { skip }, async (t) => {
  const { root, broker } = await setup(t, (root) => ({ fs: [`${root}/**`] }))
  const c = client(broker.path)
  await c.connected
  c.send({ v: 1, datetime: '2026-12-02T00:00:00Z', pid: 1, id: 10, permission: 'read', value: `${root}/a` })
  assert.equal((await c.reply()).result, 'allow')
  for (const id of [10, 9, 0]) {
    c.send({ v: 1, datetime: '2026-12-02T00:00:00Z', pid: 1, id, permission: 'read', value: `${root}/a` })
    const got = await c.reply()
    assert.deepEqual([got.id, got.result], [id, 'deny'])
    assert.match(got.reason, /id reused/)
  }
  c.send({ v: 1, datetime: '2026-12-02T00:00:00Z', pid: 1, id: 11, permission: 'read', value: `${root}/a` })
  assert.equal((await c.reply()).result, 'allow')
  c.end()
})

test('a line over the limit (no newline in sight) is denied and the connection closed', { skip }, async (t) => {
  const { root, broker } = await setup(t, (root) => ({ fs: [`${root}/**`] }))
  const c = client(broker.path)
  await c.connected
  // A valid, allowed request padded past 64 KiB: never parsed, never allowed.
  const big = JSON.stringify({ v: 1, datetime: '2026-12-02T00:00:00Z', pid: 1, id: 1, permission: 'read', value: `${root}/${'a'.repeat(70 * 1024)}` })
  for (let i = 0; i < big.length; i += 8192) c.raw(big.slice(i, i + 8192))
  const got = await c.reply()
  assert.deepEqual([got.id, got.result], [null, 'deny'])
  await c.waitClosed()
  assert.equal(c.lines.length, 1)
  assert.equal(broker.stats.closedForLineLength, 1)
  assert.equal(broker.stats.allowed, 0)
})

test('a line at the limit with multi-byte characters is parsed; one byte over is not', { skip }, async (t) => {
  const { root, broker } = await setup(t, (root) => ({ fs: [`${root}/**`] }), { maxLineBytes: 4096 })
  for (const [extra, closes] of [
    [0, false],
    [1, true],
  ]) {
    const head = JSON.stringify({ v: 1, datetime: '2026-12-02T00:00:00Z', pid: 1, id: 1, permission: 'read', value: `${root}/` }).slice(0, -2)
    // Fill with 3-byte characters (in segments under NAME_MAX, so the real path can be resolved), then 1-byte ones, to exactly 4096 + extra bytes.
    let pad = ''
    while (Buffer.byteLength(`${head}${pad}€/"}`) <= 4096 + extra) pad += pad.length % 60 === 59 ? '/' : '€'
    while (Buffer.byteLength(`${head}${pad}"}`) < 4096 + extra) pad += 'a'
    const line = `${head}${pad}"}`
    assert.equal(Buffer.byteLength(line), 4096 + extra)
    const c = client(broker.path)
    await c.connected
    c.send(line)
    const got = await c.reply()
    if (closes) {
      // The broker serves one client: the second one is refused outright, or (limit case) denied and closed.
      assert.ok(got === undefined || got.result === 'deny')
      await c.waitClosed()
    } else {
      assert.equal(got.result, 'allow', got.reason)
      c.end()
      await c.waitClosed()
    }
  }
})

test('a client that never reads is disconnected once its reply queue is full; memory stays bounded', { skip }, async (t) => {
  const { root, broker } = await setup(t, (root) => ({ fs: [`${root}/**`] }), { maxQueueBytes: 4096 })
  const sock = net.connect(broker.path)
  await new Promise((r) => sock.once('connect', r))
  sock.pause() // never read
  let closed = false
  sock.on('error', () => {})
  sock.on('close', () => (closed = true))
  const line = `${JSON.stringify({ v: 1, datetime: '2026-12-02T00:00:00Z', pid: 1, id: 0, permission: 'read', value: `${root}/a` })}\n`
  let id = 1
  const deadline = Date.now() + 10_000
  while (!closed && Date.now() < deadline) {
    const batch = []
    for (let i = 0; i < 500; i++) batch.push(line.replace('"id":0', `"id":${id++}`))
    sock.write(batch.join(''))
    await new Promise((r) => setTimeout(r, 5))
  }
  assert.ok(closed, 'the broker closed the connection')
  assert.equal(broker.stats.closedForBackpressure, 1)
  assert.ok(broker.stats.requests < id, 'it stopped reading before the client stopped writing')
})

test('a second client is refused; the first keeps being served', { skip }, async (t) => {
  const { root, broker } = await setup(t, (root) => ({ fs: [`${root}/**`] }))
  const first = client(broker.path)
  await first.connected
  first.send(req('read', `${root}/a`))
  assert.equal((await first.reply()).result, 'allow')
  const second = client(broker.path)
  await second.connected.catch(() => {})
  second.send(req('read', `${root}/a`))
  await second.waitClosed()
  assert.equal(second.lines.length, 0, 'no reply, let alone an allow')
  assert.equal(broker.stats.rejectedConnections, 1)
  first.send(req('read', `${root}/b`))
  assert.equal((await first.reply()).result, 'allow')
  first.end()
  await first.waitClosed()
  // Even after the first client leaves, nobody else is served.
  const third = client(broker.path)
  third.send(req('read', `${root}/a`))
  await third.waitClosed()
  assert.equal(third.lines.length, 0)
})

test('expectPid: a request naming another pid is denied', { skip }, async (t) => {
  const { root, broker } = await setup(t, (root) => ({ fs: [`${root}/**`] }))
  broker.expectPid(1234)
  const c = client(broker.path)
  await c.connected
  c.send({ v: 1, datetime: '2026-12-02T00:00:00Z', pid: 1235, id: 1, permission: 'read', value: `${root}/a` })
  assert.match((await c.reply()).reason, /pid/)
  c.send({ v: 1, datetime: '2026-12-02T00:00:00Z', pid: 1234, id: 2, permission: 'read', value: `${root}/a` })
  assert.equal((await c.reply()).result, 'allow')
  assert.throws(() => broker.expectPid(0), TypeError)
  c.end()
})

test('shadow policy: reported per request and counted, never enforced', { skip }, async (t) => {
  const root = fs.realpathSync(os.tmpdir())
  const probe = meterHarness()
  t.after(() => probe.shutdown())
  const policy = PermissionPolicy.fromManifest({ fs: [`${root}/**`], secrets: ['A'] }, { plugin: 'deno-test' })
  const shadow = PermissionPolicy.fromManifest({ fs: [`${root}/only/**`] }, { plugin: 'deno-test' })
  const seen = []
  const broker = await serveDenoBroker(policy, { meter: probe.meter, shadow, onDecision: (e) => seen.push(e) })
  t.after(() => broker.close())
  const c = client(broker.path)
  await c.connected
  c.send(req('read', `${root}/x`))
  assert.equal((await c.reply()).result, 'allow')
  c.send(req('env', 'A'))
  assert.equal((await c.reply()).result, 'allow')
  c.send(req('env', 'B'))
  assert.equal((await c.reply()).result, 'deny')
  assert.deepEqual(
    seen.map((e) => [e.allowed, e.shadow]),
    [
      [true, { allowed: false, capability: 'fs.read', reason: 'not_allowlisted' }],
      [true, { allowed: false, capability: 'secrets.get', reason: 'secret_not_declared' }],
      [false, { allowed: false, capability: 'secrets.get', reason: 'secret_not_declared' }],
    ],
  )
  assert.deepEqual(broker.stats.shadowDenials, { 'fs.read not_allowlisted': 1, 'secrets.get secret_not_declared': 2 })
  const counts = await probe.counts()
  assert.equal(counts['plugin.permission_shadow_denied_total|deno-test|fs.read|not_allowlisted'], 1)
  assert.equal(counts['plugin.permission_shadow_denied_total|deno-test|secrets.get|secret_not_declared'], 2)
  // Enforcement counted only the enforced denial.
  assert.equal(counts['plugin.permission_denied_total|deno-test|secrets.get|secret_not_declared'], 1)
  assert.equal(counts['plugin.permission_denied_total|deno-test|fs.read|not_allowlisted'], undefined)
  c.end()
})

test('a throwing onDecision hook changes nothing', { skip }, async (t) => {
  const { root, broker } = await setup(t, (root) => ({ fs: [`${root}/**`] }), {
    onDecision: () => {
      throw new Error('audit hook failed')
    },
  })
  const c = client(broker.path)
  await c.connected
  c.send(req('read', `${root}/a`))
  assert.equal((await c.reply()).result, 'allow')
  c.send(req('read', '/elsewhere'))
  assert.equal((await c.reply()).result, 'deny')
  c.end()
})

test('random garbage lines are never allowed and never crash the broker', { skip }, async (t) => {
  const { root, broker } = await setup(t, (root) => ({ fs: [`${root}/**`], fetch: ['*.example.com:*'], secrets: ['A'] }))
  const c = client(broker.path)
  await c.connected
  let seed = 12345
  const rnd = (n) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    return seed % n
  }
  const pieces = ['{', '}', '"v"', ':', '1', ',', '"id"', '"permission"', '"read"', '"value"', `"${root}/a"`, 'null', '[', ']', '"\\u0000"', '€', '\u{1F600}', '\\', '"', 'true', '2']
  const n = 400
  let sent = 0
  for (let i = 0; i < n; i++) {
    let s = ''
    const len = 1 + rnd(12)
    for (let k = 0; k < len; k++) s += pieces[rnd(pieces.length)]
    s = s.replace(/\n/g, '')
    // A garbage line never carries a valid id: any line that parses as a full request is not garbage.
    let valid = false
    try {
      const m = JSON.parse(s)
      valid = m !== null && typeof m === 'object' && m.v === 1 && Number.isSafeInteger(m.id)
    } catch {}
    if (valid) continue
    c.send(s)
    sent++
  }
  await c.reply(sent)
  assert.equal(c.lines.length, sent)
  assert.ok(c.lines.every((l) => l.result === 'deny'))
  console.log(`# deno broker garbage lines: ${sent} sent, all denied`)
  c.end()
})

test('net targets: the shapes Deno sends, read as the core reads hosts; nothing that could smuggle a path, userinfo or a mapped `*` is a target', { skip }, async (t) => {
  const { broker, probe } = await setup(t, { fetch: ['127.0.0.1:8081', 'api.example.com', '[::1]:*', '*.example.org:*'] })
  const c = client(broker.path)
  await c.connected
  const allowed = ['127.0.0.1:8081', '[::1]:8081', '[::1]', 'API.Example.COM.:443', 'api.example.com:0443', '0x7f.1:8081', '2130706433:8081', '[::ffff:127.0.0.1]:8081', 'x.example.org']
  const invalid = ['', ':80', 'a b:80', 'a@b:80', 'a/b:80', '[::1', '[::1]x', '[::1%lo]:1', '[]:1', 'a:', 'a:65536', 'a:-1', 'a:1:2', 'ex\u00e4mple.com:80', 'a#b:1', 'a?b:1', 'a\\b:1', '%2A.example.org:443', '\uff0a.example.org:443', '\ufe61.example.org:443', '*.example.org:443', 'x.example.org\u3002:443', '\ud800:1', '300.1.1.1:80']
  const seen = []
  for (const v of allowed) {
    c.send(req('net', v))
    seen.push([v, (await c.reply()).result])
  }
  for (const v of invalid) {
    c.send(req('net', v))
    const got = await c.reply()
    seen.push([v, got.result === 'deny' ? parseDenyText(got.reason).reason : got.result])
  }
  assert.deepEqual(seen, [...allowed.map((v) => [v, 'allow']), ...invalid.map((v) => [v, 'invalid_url'])])
  assert.deepEqual(await probe.counts(), { 'plugin.permission_denied_total|deno-test|fetch|invalid_url': invalid.length })
  c.end()
})

test('a raw host:port is allowed only where a grant admits every path: a grant of `/`, of `/**` or of any path scope admits none (SPEC §17)', { skip }, async (t) => {
  const { broker, probe } = await setup(t, {
    fetch: ['https://api.example.com/', 'any.example.com:*/', 'https://all.example.com/**', 'https://v1.example.com/v1/**', 'whole.example.com', 'https://mixed.example.com/', 'mixed.example.com:8443'],
  })
  const c = client(broker.path)
  await c.connected
  const cases = [
    [['net', 'api.example.com:443'], 'path_not_allowed'],
    [['import', 'api.example.com:443'], 'path_not_allowed'],
    [['import', 'api.example.com'], 'path_not_allowed'],
    [['net', 'any.example.com:8080'], 'path_not_allowed'],
    [['net', 'any.example.com'], 'path_not_allowed'],
    [['net', 'all.example.com:443'], 'path_not_allowed'],
    [['net', 'v1.example.com:443'], 'path_not_allowed'],
    [['net', 'mixed.example.com:443'], 'path_not_allowed'],
    [['net', 'mixed.example.com:8443'], true],
    [['net', 'whole.example.com:443'], true],
    [['import', 'whole.example.com:443'], true],
  ]
  let denied = 0
  for (const [[permission, value], want] of cases) {
    c.send(req(permission, value))
    const got = await c.reply()
    if (want === true) assert.equal(got.result, 'allow', `${permission} ${value}`)
    else {
      denied++
      assert.equal(`${parseDenyText(got.reason).capability} ${parseDenyText(got.reason).reason}`, `fetch ${want}`, `${permission} ${value}`)
    }
  }
  assert.deepEqual(await probe.counts(), { 'plugin.permission_denied_total|deno-test|fetch|path_not_allowed': denied })
  c.end()
})

test('the broker decides from the compiled policy, never from its printed form: a replaced toJSON changes no verdict', { skip }, async (t) => {
  const manifest = { fetch: ['a.example.com', 'https://b.example.com/'], deny: { fetch: ['a.example.com/admin/**'] }, secrets: ['K'] }
  const policy = PermissionPolicy.fromManifest(manifest, { plugin: 'deno-test' })
  const toJSON = Object.getOwnPropertyDescriptor(PermissionPolicy.prototype, 'toJSON')
  // Whatever the printed form says (here: every host and port, another deny), the verdicts are the policy's.
  Object.defineProperty(PermissionPolicy.prototype, 'toJSON', { ...toJSON, value: () => ({ fetch: ['*.example.com:*', 'b.example.com:*'], deny: { fetch: ['z.example.com/x/**'] } }) })
  t.after(() => Object.defineProperty(PermissionPolicy.prototype, 'toJSON', toJSON))
  const broker = await serveDenoBroker(policy)
  t.after(() => broker.close())
  const c = client(broker.path)
  await c.connected
  const verdicts = []
  for (const v of ['a.example.com:443', 'b.example.com:443', 'c.example.com:443', 'b.example.com']) {
    c.send(req('net', v))
    const got = await c.reply()
    verdicts.push(got.result === 'allow' ? 'allow' : parseDenyText(got.reason).reason)
  }
  // Every port of b.example.com: port 1 first, which no grant admits.
  assert.deepEqual(verdicts, ['explicitly_denied', 'path_not_allowed', 'host_not_allowlisted', 'port_not_allowed'])
  c.end()
})

test('the deny reason carries nothing from the request, and the plugin id redacted', { skip }, async (t) => {
  const policy = PermissionPolicy.fromManifest({}, { plugin: 'evil\u202eplugin' })
  const quoted = await serveDenoBroker(PermissionPolicy.fromManifest({}, { plugin: 'a"b' }))
  t.after(() => quoted.close())
  const q = client(quoted.path)
  q.send(req('env', 'X'))
  assert.match((await q.reply()).reason, /\(manifest of plugin "a\\u\{22\}b"\)$/)
  q.end()
  const broker = await serveDenoBroker(policy)
  t.after(() => broker.close())
  const c = client(broker.path)
  await c.connected
  c.send(req('read', '/x\u202e\u001b[31m/secret-name'))
  const got = await c.reply()
  assert.equal(got.result, 'deny')
  assert.equal(got.reason, 'SAND_PERM_001 PERMISSION_DENIED fs.read not_allowlisted (manifest of plugin "evil\\u{202e}plugin")')
  assert.ok(!got.reason.includes('secret-name'))
  c.end()
})

test('serveDenoBroker: argument errors are TypeErrors, and nothing is left behind', { skip }, async () => {
  const policy = PermissionPolicy.fromManifest({}, { plugin: 'deno-test' })
  await assert.rejects(serveDenoBroker({ fs: [] }), TypeError)
  await assert.rejects(serveDenoBroker(policy, null), TypeError)
  await assert.rejects(serveDenoBroker(policy, { shadow: {} }), TypeError)
  await assert.rejects(serveDenoBroker(policy, { onDecision: 'log' }), TypeError)
  await assert.rejects(serveDenoBroker(policy, { maxLineBytes: 10 }), TypeError)
  await assert.rejects(serveDenoBroker(policy, { maxQueueBytes: 1.5 }), TypeError)
  const deep = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'deno-broker-long-')))
  const long = path.join(deep, 'x'.repeat(120))
  fs.mkdirSync(long)
  try {
    await assert.rejects(serveDenoBroker(policy, { tmpDir: long }), RangeError)
    assert.deepEqual(fs.readdirSync(long), [], 'the socket directory is removed again')
  } finally {
    fs.rmSync(deep, { recursive: true, force: true })
  }
})
