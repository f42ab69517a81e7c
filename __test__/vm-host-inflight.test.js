'use strict'
// Calls a run started end with it, and what they hold is bounded. Found by
// a review: with one slow granted endpoint, a 30 s run left gigabytes on the
// host. Real 127.0.0.1 servers that never answer or never stop sending, a
// real FIFO, real Workers and a real locked-down child. The oracle is the
// server's own view (every connection it accepted is closed once the run has
// ended) and the runner's byte count, never timing.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const http = require('node:http')
const { once } = require('node:events')
const { execFileSync } = require('node:child_process')
const { PermissionPolicy } = require('..')
const { runPlugin, MAX_FILE_BYTES } = require('../lib/vm-host/host.js')
const { runPluginProcess } = require('../examples/vm-host/process-tier.js')
const { RunScope } = require('../lib/vm-host/run-scope.js')

const linux = process.platform === 'linux' && ['x64', 'arm64'].includes(process.arch)
const tiers = linux ? [['worker', runPlugin], ['process', runPluginProcess]] : [['worker', runPlugin]]

/**
 * A server whose `/slow` answers headers and a first chunk, then nothing,
 * forever; `/firehose` sends as fast as it can, forever; `/count` says how
 * many `/slow` requests are open. `closed()` resolves once every socket it
 * accepted has closed.
 */
async function slowServer() {
  const sockets = new Set()
  const hoses = []
  let slowOpen = 0
  const server = http.createServer((req, res) => {
    // A client that goes away mid-response is this server's everyday case.
    req.on('error', () => {})
    res.on('error', () => {})
    if (req.url === '/count') return res.end(String(slowOpen))
    res.writeHead(200, { 'content-type': 'text/plain' })
    if (req.url === '/slow') {
      slowOpen++
      res.write('x'.repeat(1024))
      req.socket.on('close', () => slowOpen--)
      return
    }
    // /firehose?n=N: held until N of them are open, so they all stream at once.
    const n = Number(new URL(req.url, 'http://x').searchParams.get('n') || 1)
    const chunk = Buffer.alloc(64 * 1024, 0x61)
    const pump = () => {
      while (!res.destroyed && res.write(chunk)) {}
    }
    res.on('drain', pump)
    res.on('error', () => {})
    hoses.push(pump)
    if (hoses.length >= n) for (const p of hoses.splice(0)) p()
  })
  server.on('connection', (s) => {
    sockets.add(s)
    s.on('error', () => {})
    s.on('close', () => sockets.delete(s))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const origin = `http://127.0.0.1:${server.address().port}`
  return {
    origin,
    get open() {
      return sockets.size
    },
    accepted: () => sockets.size,
    async closed() {
      await Promise.all([...sockets].map((s) => once(s, 'close')))
    },
    stop: () => new Promise((r) => server.close(r)),
  }
}

test('calls pending when a run ends are aborted: the server sees every connection closed, nothing is left pending', async () => {
  for (const [tier, run] of tiers) {
    const srv = await slowServer()
    const policy = PermissionPolicy.fromManifest({ fetch: [srv.origin], budgets: { wallClockMs: 30_000 } }, { plugin: 'slow' })
    // 40 requests the server never finishes; the plugin ends once the server holds all of them.
    const code = `
      for (let i = 0; i < 40; i++) fetch(config.origin + '/slow').catch(() => {})
      for (;;) {
        const r = await fetch(config.origin + '/count')
        if (r.body === '40') return 'all open'
      }`
    const r = await run({ name: 'slow', code, policy, config: { origin: srv.origin } })
    assert.deepEqual({ ok: r.ok, value: r.value }, { ok: true, value: 'all open' }, `${tier}: ${JSON.stringify(r)}`)
    assert.equal(r.inFlight.pending, 0, `${tier}: no call of the run is still pending`)
    assert.equal(r.inFlight.bytes, 0, tier)
    assert.ok(r.inFlight.peakPending >= 40, `${tier}: ${r.inFlight.peakPending}`)
    // Every connection the server accepted closes: the run aborted its requests.
    await srv.closed()
    assert.equal(srv.open, 0, tier)
    await srv.stop()
  }
})

test('a run performs at most maxPendingCalls at once; the rest are refused at once, not queued', async () => {
  for (const [tier, run] of tiers) {
    const srv = await slowServer()
    const policy = PermissionPolicy.fromManifest({ fetch: [srv.origin], budgets: { wallClockMs: 30_000 } }, { plugin: 'many' })
    const code = `
      const out = await Promise.race(Array.from({ length: 100 }, () => fetch(config.origin + '/slow').then(() => 'answered', (e) => e.message)))
      return out`
    const r = await run({ name: 'many', code, policy, config: { origin: srv.origin }, maxPendingCalls: 8 })
    assert.equal(r.ok, true, `${tier}: ${JSON.stringify(r)}`)
    assert.match(r.value, /more than 8 calls in flight/, tier)
    assert.equal(r.inFlight.peakPending, 8, tier)
    assert.equal(r.inFlight.refused, 92, tier)
    assert.equal(r.inFlight.pending, 0, tier)
    await srv.closed()
    await srv.stop()
  }
})

test("the bytes a run's calls hold are bounded by counting them: endless responses never hold more than maxRunBytes", async () => {
  for (const [tier, run] of tiers) {
    const srv = await slowServer()
    const policy = PermissionPolicy.fromManifest({ fetch: [srv.origin], budgets: { wallClockMs: 30_000 } }, { plugin: 'hose' })
    // 16 endless responses at once: each call holds at most 256 KiB, together they would hold 4 MiB.
    const code = `
      const rs = await Promise.all(Array.from({ length: 16 }, () => fetch(config.origin + '/firehose?n=4').then((r) => 'body ' + r.body.length, (e) => e.message)))
      return JSON.stringify(rs)`
    const maxRunBytes = 1 << 20
    const r = await run({ name: 'hose', code, policy, config: { origin: srv.origin }, maxRunBytes })
    assert.equal(r.ok, true, `${tier}: ${JSON.stringify(r)}`)
    const rs = JSON.parse(r.value)
    assert.ok(r.inFlight.peakBytes <= maxRunBytes, `${tier}: ${r.inFlight.peakBytes} bytes held at the peak`)
    // Four fit (4 x 256 KiB reserved up front): they are answered, cut at 64 KiB characters; the others are refused whole.
    assert.equal(rs.filter((x) => x === 'body 65536').length, 4, `${tier}: ${r.value}`)
    assert.equal(rs.filter((x) => /would hold more than 1048576 bytes/.test(x)).length, 12, `${tier}: ${r.value}`)
    assert.equal(r.inFlight.refused, 12, tier)
    assert.deepEqual({ pending: r.inFlight.pending, bytes: r.inFlight.bytes }, { pending: 0, bytes: 0 }, tier)
    await srv.closed()
    await srv.stop()
  }
})

test('a granted file is read at most MAX_FILE_BYTES, and a FIFO in a grant holds no call past the run', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asp-inflight-'))
  try {
    fs.writeFileSync(path.join(dir, 'big.txt'), Buffer.alloc(MAX_FILE_BYTES + 1, 0x62))
    fs.writeFileSync(path.join(dir, 'small.txt'), 'small')
    if (linux) execFileSync('mkfifo', [path.join(dir, 'fifo')])
    for (const [tier, run] of tiers) {
      const policy = PermissionPolicy.fromManifest({ fs: [`${dir}/**`], budgets: { wallClockMs: 30_000 } }, { plugin: 'files' })
      const code = `
        const out = []
        for (const f of ['big.txt', 'small.txt'${linux ? ", 'fifo'" : ''}]) out.push(await fs.readFile(config.dir + '/' + f).then((t) => 'read ' + t.length, (e) => e.message))
        return JSON.stringify(out)`
      const r = await run({ name: 'files', code, policy, config: { dir } })
      assert.equal(r.ok, true, `${tier}: ${JSON.stringify(r)}`)
      const out = JSON.parse(r.value)
      assert.match(out[0], new RegExp(`larger than ${MAX_FILE_BYTES} bytes`), tier)
      assert.equal(out[1], 'read 5', tier)
      // No writer: opened without blocking, read to its end at once.
      if (linux) assert.equal(out[2], 'read 0', tier)
      assert.equal(r.inFlight.pending, 0, tier)
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('RunScope: bounds, reservations given back, abort ends every call and refuses new ones', async () => {
  const s = new RunScope({ maxPendingCalls: 2, maxRunBytes: 10 })
  const a = s.begin(4)
  const b = s.begin(0)
  assert.throws(() => s.begin(0), { code: 'ERR_RUN_BOUND' })
  assert.throws(() => b.reserve(7), { code: 'ERR_RUN_BOUND' })
  b.reserve(6)
  assert.deepEqual(s.stats, { pending: 2, bytes: 10, peakPending: 2, peakBytes: 10, refused: 2 })
  a.end()
  a.end()
  assert.deepEqual({ pending: s.stats.pending, bytes: s.stats.bytes }, { pending: 1, bytes: 6 })
  assert.throws(() => s.begin(5), { code: 'ERR_RUN_BOUND' }, 'a call whose request alone is over the bound')
  assert.equal(s.stats.pending, 1, 'a refused call is not pending')
  const drained = s.drained()
  s.abort()
  assert.equal(b.signal.aborted, true)
  assert.throws(() => b.reserve(1), { code: 'ERR_RUN_BOUND' })
  assert.throws(() => s.begin(0), { code: 'ERR_RUN_BOUND' })
  b.end()
  await drained
  assert.deepEqual({ pending: s.stats.pending, bytes: s.stats.bytes }, { pending: 0, bytes: 0 })
  for (const bad of [0, -1, 1.5, '2', null]) assert.throws(() => new RunScope({ maxPendingCalls: bad }), TypeError, String(bad))
})

test('a plugin that never awaits cannot queue calls in the host: past 1,024 unanswered calls or 16 Mi characters the bridge refuses', async () => {
  const { MAX_UNANSWERED_CALLS, MAX_UNANSWERED_CHARS } = require('../lib/vm-host/bootstrap.js')
  for (const [tier, run] of tiers) {
    const policy = PermissionPolicy.fromManifest({ events: { publishes: ['t'] }, budgets: { wallClockMs: 30_000 } }, { plugin: 'flood' })
    // No await between calls: nothing is answered while the loop runs.
    const code = `
      const big = 'x'.repeat(config.big)
      const small = [], large = []
      for (let i = 0; i < 1500; i++) small.push(events.publish('t', i).then(() => 'ok', (e) => e.code))
      const a = await Promise.all(small)
      for (let i = 0; i < 40; i++) large.push(events.publish('t', big).then(() => 'ok', (e) => e.code))
      const b = await Promise.all(large)
      const count = (xs, v) => xs.filter((x) => x === v).length
      return JSON.stringify([count(a, 'ok'), count(a, 'ERR_CALLS_PENDING'), count(b, 'ok'), count(b, 'ERR_CALLS_PENDING')])`
    const big = (1 << 20) - 256
    const bus = []
    const r = await run({ name: 'flood', code, policy, bus, config: { big } })
    assert.equal(r.ok, true, `${tier}: ${JSON.stringify(r).slice(0, 500)}`)
    const [okSmall, refusedSmall, okLarge, refusedLarge] = JSON.parse(r.value)
    assert.deepEqual([okSmall, refusedSmall], [MAX_UNANSWERED_CALLS, 1500 - MAX_UNANSWERED_CALLS], tier)
    // Each large call's text is `big` characters and its envelope (ids 1501 to 1540: four digits).
    const text = JSON.stringify({ id: 1501, capability: 'events.publish', payload: { topic: 't', data: '' } }).length + big
    const fit = Math.floor(MAX_UNANSWERED_CHARS / text)
    assert.deepEqual([okLarge, refusedLarge], [fit, 40 - fit], tier)
    assert.equal(bus.length, MAX_UNANSWERED_CALLS + fit, tier)
  }
})

test("a run's result is at most MAX_RESULT_CHARS characters: a longer one is ERR_RESULT_TOO_LARGE, never copied to the host", async () => {
  const { MAX_RESULT_CHARS } = require('../lib/vm-host/bootstrap.js')
  for (const [tier, run] of tiers) {
    const policy = PermissionPolicy.fromManifest({ budgets: { wallClockMs: 30_000 } }, { plugin: 'result' })
    const at = await run({ name: 'result', code: `return 'r'.repeat(${MAX_RESULT_CHARS})`, policy })
    assert.deepEqual({ ok: at.ok, length: at.value && at.value.length }, { ok: true, length: MAX_RESULT_CHARS }, tier)
    const over = await run({ name: 'result', code: `return 'r'.repeat(${MAX_RESULT_CHARS + 1})`, policy })
    assert.deepEqual({ ok: over.ok, code: over.code }, { ok: false, code: 'ERR_RESULT_TOO_LARGE' }, tier)
    const thrown = await run({ name: 'result', code: `throw Object.assign(new Error('m'.repeat(${MAX_RESULT_CHARS} * 2)), { code: 'c'.repeat(1000) })`, policy })
    assert.deepEqual({ ok: thrown.ok, code: thrown.code.length, message: thrown.message.length }, { ok: false, code: 256, message: MAX_RESULT_CHARS }, tier)
  }
})
