'use strict'
// The process tier's parent against a real hostile child (SPEC §16: the child
// is untrusted in both directions). The plugin escapes its vm.Context (the
// demo's leaked host function), reaches the locked child's `process` and
// writes raw bytes to the channel (fd 3). Whatever it writes, the host
// process survives, the child is killed, one denial is counted on a real
// MeterProvider, and the run ends with a typed ERR_CHILD_PROTOCOL; a flood of
// valid messages does not delay the wall-clock budget.
const test = require('node:test')
const assert = require('node:assert/strict')
const { PermissionPolicy } = require('../index.js')
const { runPluginProcess } = require('../examples/vm-host/process-tier.js')
const { MAX_CHILD_LINE_BYTES } = require('../examples/vm-host/process-protocol.js')
const { meterHarness } = require('./helpers.js')

const linux = process.platform === 'linux' && ['x64', 'arm64'].includes(process.arch)
const skip = !linux && 'the process tier locks down with seccomp: Linux x64/arm64 only'

// Plugin code: escape, then write config.chunks (base64) to the channel, `repeat` times each, then wait.
const WRITER = `
const p = leakedHostFunction.constructor('return process')()
const fs = p.mainModule.require('fs')
const Buf = p.mainModule.require('buffer').Buffer
for (const [b64, repeat] of config.chunks) {
  const b = Buf.from(b64, 'base64')
  for (let k = 0; k < repeat; k++) {
    let off = 0
    while (off < b.length) {
      try {
        off += fs.writeSync(3, b, off)
      } catch (e) {
        if (e.code !== 'EAGAIN') return 'write failed: ' + e.code
        await new Promise((r) => p.nextTick(r))
      }
    }
  }
}
await new Promise(() => {})
`

async function hostile(chunks, { wallClockMs = 10_000 } = {}) {
  const h = meterHarness()
  const policy = PermissionPolicy.fromManifest({ budgets: { wallClockMs } }, { plugin: 'hostile' })
  const config = { chunks: chunks.map(([b, n]) => [Buffer.from(b).toString('base64'), n ?? 1]) }
  const lines = []
  const r = await runPluginProcess({ name: 'hostile', code: WRITER, policy, meter: h.meter, config, simulateEscape: true, log: (l) => lines.push(l) })
  const counts = await h.counts()
  await h.shutdown()
  return { r, counts, lines }
}

const DENIED_UNKNOWN = 'plugin.permission_denied_total|hostile|unknown|unknown_capability'

function assertViolation({ r, counts }, kind) {
  assert.equal(r.ok, false)
  assert.equal(r.code, 'ERR_CHILD_PROTOCOL', JSON.stringify(r))
  assert.equal(r.violation, kind, r.message)
  assert.ok(r.locked && r.locked.allowed > 30, 'the child was locked down before it misbehaved')
  assert.deepEqual(counts, { [DENIED_UNKNOWN]: 1 }, 'counted once')
}

test('a malformed JSON line ({"call": \\n) kills the child, never the host', { skip, timeout: 30_000 }, async () => {
  assertViolation(await hostile([['{"call": \n']]), 'malformed')
})

test('binary garbage and bytes that are not UTF-8 kill the child', { skip, timeout: 30_000 }, async () => {
  assertViolation(await hostile([[Buffer.from([0xff, 0xfe, 0x00, 0x80, 0x0a])]]), 'malformed')
  assertViolation(await hostile([[Buffer.from('{"call":"\xc3\x28"}\n', 'latin1')]]), 'malformed')
  assertViolation(await hostile([['\n']]), 'malformed')
})

test('valid JSON of the wrong shape or at the wrong time kills the child', { skip, timeout: 60_000 }, async () => {
  for (const line of ['{"hello":1}', '[1,2]', 'null', '"call"', '42', '{"call":1}', '{"call":"x","extra":1}', '{"locked":{"arch":"x86_64","allowed":1,"landlock":null}}', '{"done":true,"ok":true,"value":1}', '{"done":true,"ok":true}', '{"done":1,"ok":true,"value":null}', '{"done":true,"ok":false,"code":5,"message":null}', '{"__proto__":{"call":"x"}}']) {
    assertViolation(await hostile([[`${line}\n`]]), 'unexpected')
  }
})

test('JSON nested or wide past the protocol shape is refused before it is parsed', { skip, timeout: 60_000 }, async () => {
  // A line of '[' at the byte bound (JSON.parse of it costs seconds): judged by its first byte.
  const arrays = await hostile([[`${'['.repeat(MAX_CHILD_LINE_BYTES - 1)}\n`]])
  assertViolation(arrays, 'unexpected')
  assert.match(arrays.r.message, /not a JSON object/)
  // An object whose member opens 2 MiB of '[': judged at the third level, never parsed.
  const nested = await hostile([[`{"call":${'['.repeat(MAX_CHILD_LINE_BYTES - 16)}\n`]])
  assertViolation(nested, 'oversized')
  assert.match(nested.r.message, /nested deeper than 2/)
  // More members than any message has.
  const wide = await hostile([['{"done":true,"ok":false,"code":null,"message":null,"x":1}\n']])
  assertViolation(wide, 'oversized')
  assert.match(wide.r.message, /more than 4 members/)
  // Brackets and commas inside the call string are its text, not structure: an honest line.
  const honest = JSON.stringify({ call: JSON.stringify({ id: 1, capability: 'log', payload: { line: '[[[[,,,,{{{{' } }) })
  const ok = await hostile([[`${honest}\n`]], { wallClockMs: 1500 })
  assert.equal(ok.r.code, 'BUDGET_EXCEEDED', JSON.stringify(ok.r))
  assert.ok(ok.lines.includes('[hostile] log: [[[[,,,,{{{{'))
})

test('a 100 MB line without a newline is cut at the byte bound: child killed early, parent memory bounded', { skip, timeout: 60_000 }, async () => {
  const before = process.memoryUsage()
  let peak = 0
  const sampler = setInterval(() => {
    const m = process.memoryUsage()
    peak = Math.max(peak, m.rss - before.rss)
  }, 5)
  const t0 = performance.now()
  const out = await hostile([[Buffer.alloc(1 << 20, 0x61), 100]])
  const took = performance.now() - t0
  clearInterval(sampler)
  assertViolation(out, 'oversized')
  assert.match(out.r.message, new RegExp(`over ${MAX_CHILD_LINE_BYTES} bytes`))
  // Killed after about MAX_CHILD_LINE_BYTES (2 MiB), not after 100 MB.
  assert.ok(out.r.elapsedMs < 2000, `killed ${out.r.elapsedMs.toFixed(0)} ms after lockdown (${took.toFixed(0)} ms in all)`)
  assert.ok(peak < 64 << 20, `parent RSS grew by ${(peak / 2 ** 20).toFixed(1)} MB`)
})

test('a line split across many writes is framed whole; then a line one byte over the bound is refused', { skip, timeout: 60_000 }, async () => {
  // A valid message written one byte at a time, then an oversized line.
  const call = JSON.stringify({ call: JSON.stringify({ id: 1, capability: 'log', payload: { line: 'x' } }) })
  const bytes = [...Buffer.from(`${call}\n`)].map((b) => [Buffer.from([b])])
  const over = Buffer.alloc(MAX_CHILD_LINE_BYTES + 1, 0x20)
  const out = await hostile([...bytes, [over], [Buffer.from('\n')]])
  assertViolation(out, 'oversized')
  // The call written byte by byte was delivered exactly once.
  assert.deepEqual(out.lines.filter((l) => l.includes('log: ')), ['[hostile] log: x'])
})

test('a flood of valid messages does not delay the wall-clock budget', { skip, timeout: 60_000 }, async () => {
  const h = meterHarness()
  const policy = PermissionPolicy.fromManifest({ budgets: { wallClockMs: 500 } }, { plugin: 'flood' })
  // Valid calls as fast as the escaped child can write them, yielding so it reads the answers.
  const code = `
const p = leakedHostFunction.constructor('return process')()
const fs = p.mainModule.require('fs')
const line = JSON.stringify({ call: JSON.stringify({ id: 1, capability: 'log', payload: { line: 'flood' } }) }) + '\\n'
const batch = line.repeat(500)
const b = p.mainModule.require('buffer').Buffer.from(batch)
for (;;) {
  // Whole batches: a write the socket takes in part is finished before the next.
  let off = 0
  while (off < b.length) {
    try { off += fs.writeSync(3, b, off) } catch (e) { if (e.code !== 'EAGAIN') throw e }
    await new Promise((r) => p.mainModule.require('timers').setImmediate(r))
  }
}
`
  let logged = 0
  const r = await runPluginProcess({ name: 'flood', code, policy, meter: h.meter, simulateEscape: true, log: () => logged++ })
  const counts = await h.counts()
  await h.shutdown()
  assert.equal(r.code, 'BUDGET_EXCEEDED', JSON.stringify(r))
  assert.equal(r.budget, 'wallClockMs')
  // The JSON IPC channel this replaces delayed enforcement by 1.9 s under a
  // flood, and reading 32 chunks per turn delayed it by ~500 ms; now it is
  // checked per chunk (slack for a loaded 2-core box).
  assert.ok(r.elapsedMs < 500 + 250, `enforced after ${r.elapsedMs.toFixed(0)} ms for a 500 ms budget`)
  assert.ok(logged > 1000, `${logged} messages handled`)
  console.log(`flood: ${logged} messages handled, budget enforced after ${r.elapsedMs.toFixed(0)} ms`)
  assert.deepEqual(
    Object.entries(counts).filter(([k]) => k.startsWith('plugin.budget_exceeded_total|flood|')).map(([k, v]) => [k.split('|')[3], v]),
    [['wall_clock', 1]],
  )
  assert.equal(Object.keys(counts).filter((k) => k.startsWith('plugin.permission_denied_total')).length, 0, 'no violation counted')
})

test('a child that never reads its answers is killed once they pile up', { skip, timeout: 60_000 }, async (t) => {
  // Calls whose answers are 1 MB each (a granted file), written by an escaped
  // child that then spins: it never reads, so the parent's answers pile up.
  const fs = require('node:fs')
  const os = require('node:os')
  const path = require('node:path')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asp-unread-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const file = path.join(dir, 'big.txt')
  fs.writeFileSync(file, 'a'.repeat(1 << 20))
  const h = meterHarness()
  const policy = PermissionPolicy.fromManifest({ fs: [{ path: file, mode: 'read' }], budgets: { wallClockMs: 30_000 } }, { plugin: 'hostile' })
  const lines = Array.from({ length: 64 }, (_, i) => JSON.stringify({ call: JSON.stringify({ id: i + 1, capability: 'fs.read', payload: { path: file } }) })).join('\n') + '\n'
  const code = `
const p = leakedHostFunction.constructor('return process')()
const fs = p.mainModule.require('fs')
const b = p.mainModule.require('buffer').Buffer.from(config.lines)
let off = 0
while (off < b.length) { try { off += fs.writeSync(3, b, off) } catch (e) { if (e.code !== 'EAGAIN') throw e } }
for (;;) {}
`
  const r = await runPluginProcess({ name: 'hostile', code, policy, meter: h.meter, config: { lines }, simulateEscape: true })
  const counts = await h.counts()
  await h.shutdown()
  assertViolation({ r, counts }, 'unexpected')
  assert.match(r.message, /answers left unread/)
  assert.ok(r.elapsedMs < 10_000, `killed after ${r.elapsedMs.toFixed(0)} ms`)
})

test('more calls in flight than the bound kill the child', { skip, timeout: 60_000 }, async (t) => {
  // A server that accepts and never answers: every fetch stays in flight.
  const net = require('node:net')
  const sockets = new Set()
  const server = net.createServer((s) => (sockets.add(s), s.on('error', () => {})))
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  t.after(() => (sockets.forEach((s) => s.destroy()), server.close()))
  const url = `http://127.0.0.1:${server.address().port}/`
  const h = meterHarness()
  const policy = PermissionPolicy.fromManifest({ fetch: ['http://127.0.0.1:*'], budgets: { wallClockMs: 30_000 } }, { plugin: 'hostile' })
  // Written raw by an escaped child: the bridge itself refuses a call past 1,024 unanswered.
  const lines = Array.from({ length: 1100 }, (_, i) => JSON.stringify({ call: JSON.stringify({ id: i + 1, capability: 'fetch', payload: { url } }) })).join('\n') + '\n'
  const code = `
const p = leakedHostFunction.constructor('return process')()
const fs = p.mainModule.require('fs')
const b = p.mainModule.require('buffer').Buffer.from(config.lines)
let off = 0
while (off < b.length) { try { off += fs.writeSync(3, b, off) } catch (e) { if (e.code !== 'EAGAIN') throw e } }
await new Promise(() => {})
`
  // The run's own bounds (maxPendingCalls, maxRunBytes) would refuse these first: raised, so the protocol's bound is what is tested.
  const r = await runPluginProcess({ name: 'hostile', code, policy, meter: h.meter, config: { lines }, simulateEscape: true, maxPendingCalls: 4096, maxRunBytes: 2 ** 40 })
  const counts = await h.counts()
  await h.shutdown()
  assertViolation({ r, counts }, 'unexpected')
  assert.match(r.message, /more than 1024 calls in flight/)
})

test('the honest child still works: calls answered, result returned, no violation counted', { skip, timeout: 30_000 }, async () => {
  const h = meterHarness()
  const policy = PermissionPolicy.fromManifest({ events: { publishes: ['a'] }, budgets: { wallClockMs: 10_000 } }, { plugin: 'honest' })
  const bus = []
  const r = await runPluginProcess({ name: 'honest', code: "await events.publish('a', 1); await events.publish('b', 2).catch((e) => e.code); return 'done'", policy, meter: h.meter, bus })
  const counts = await h.counts()
  await h.shutdown()
  assert.deepEqual({ ok: r.ok, value: r.value }, { ok: true, value: 'done' })
  assert.deepEqual(bus, [{ topic: 'a', data: 1 }])
  assert.deepEqual(counts, { 'plugin.permission_denied_total|honest|events.publish|topic_not_declared': 1 })
})

test('a result too large for the channel is replaced by the child, not a violation', { skip, timeout: 30_000 }, async () => {
  const policy = PermissionPolicy.fromManifest({ budgets: { wallClockMs: 10_000 } }, { plugin: 'big' })
  const r = await runPluginProcess({ name: 'big', code: `return 'x'.repeat(${MAX_CHILD_LINE_BYTES})`, policy })
  assert.equal(r.code, 'ERR_RESULT_TOO_LARGE', JSON.stringify(r).slice(0, 200))
})

test('an incomplete line held by the decoder is its bytes, not the chunks they came in (one-byte writes pin no buffers)', async () => {
  const { LineDecoder } = require('../lib/ipc-frame.js')
  const v8 = require('node:v8')
  const vm = require('node:vm')
  v8.setFlagsFromString('--expose-gc')
  const gc = vm.runInNewContext('gc')
  const d = new LineDecoder({ maxLineBytes: 1 << 20 })
  gc()
  const before = process.memoryUsage().arrayBuffers
  // 2,000 one-byte chunks, each a view of its own 64 KiB buffer (128 MB if the views were kept).
  for (let i = 0; i < 2000; i++) {
    const chunk = Buffer.alloc(65536).subarray(0, 1)
    chunk[0] = 0x61
    assert.equal(d.push(chunk).violation, null)
  }
  // Array buffers are freed after the collection that found them dead: collect until it settles.
  for (let i = 0; i < 6; i++) {
    gc()
    await new Promise((r) => setImmediate(r))
  }
  const held = process.memoryUsage().arrayBuffers - before
  assert.ok(held < 16 << 20, `${held} bytes held for a 2,000-byte line`)
  assert.equal(d.bufferedBytes, 2000)
  const { lines } = d.push(Buffer.from('b\nc'))
  assert.equal(lines.length, 1)
  assert.equal(Buffer.from(lines[0]).toString(), `${'a'.repeat(2000)}b`)
  assert.equal(d.bufferedBytes, 1)
})

test("a call's own JSON text is judged before the host parses it: nested past 64 levels, refused and answered (both tiers)", { timeout: 60_000 }, async () => {
  const { runPlugin } = require('../lib/vm-host/host.js')
  const code = `
    const deep = (n) => { let v = 'x'; for (let i = 0; i < n; i++) v = [v]; return v }
    const out = []
    for (const n of [62, 63, 1000]) out.push(await events.publish('t', deep(n)).then(() => 'published ' + n, (e) => e.message))
    return JSON.stringify(out)`
  for (const [tier, run] of linux ? [['worker', runPlugin], ['process', runPluginProcess]] : [['worker', runPlugin]]) {
    const bus = []
    const policy = PermissionPolicy.fromManifest({ events: { publishes: ['t'] }, budgets: { wallClockMs: 30_000 } }, { plugin: 'deep' })
    const r = await run({ name: 'deep', code, policy, bus })
    assert.equal(r.ok, true, `${tier}: ${JSON.stringify(r)}`)
    // The call text is {"id":..,"payload":{"topic":..,"data":[...]}}: data of depth n sits at depth n + 2.
    assert.deepEqual(JSON.parse(r.value), ['published 62', 'the call was refused: JSON nested deeper than 64', 'the call was refused: JSON nested deeper than 64'], tier)
    assert.equal(bus.length, 1, tier)
  }
})
