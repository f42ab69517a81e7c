'use strict'
// Threads: 8 Workers each build their own policy and run 100k mixed checks
// concurrently, with the same results as one thread; Workers terminated in
// the middle of checking; the addon loaded and unloaded by many Workers.
const test = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { Worker } = require('node:worker_threads')

const PKG = path.join(__dirname, '..')
const WORKLOAD = `
  const { createChecker } = require(${JSON.stringify(PKG)})
  function run(n) {
    const c = createChecker({
      fs: ['/data/**', { path: '/out/*.json', mode: 'write' }, 'C:/nope'.slice(0, 0) || '/etc/app.conf'],
      fetch: ['api.example.com', '*.cdn.example.net:*', '127.0.0.1:8080'],
      secrets: ['A', 'B'],
      events: { publishes: ['a.*'], subscribes: ['b.**'] },
      db: { database: 'd' },
    }, { plugin: 'threads', platform: 'posix' })
    let h = 2166136261 >>> 0
    let seed = 42
    const rnd = (k) => { seed = (seed * 1103515245 + 12345) >>> 0; return seed % k }
    const paths = ['/data/x', '/data/../etc/passwd', '/out/a.json', '/out/a.txt', '/etc/app.conf', 'rel', '/data/a/b/c']
    const urls = ['https://api.example.com/', 'https://x.cdn.example.net:444/', 'http://0x7f.1:8080/', 'https://u@api.example.com/', 'file:///x', 'https://evil.com/']
    const caps = [['secrets.get', { name: 'A' }], ['secrets.get', { name: 'C' }], ['events.publish', { topic: 'a.b' }], ['events.subscribe', { topic: 'b.*' }], ['db.query', { database: 'e' }], ['__proto__', {}]]
    for (let i = 0; i < n; i++) {
      let d
      switch (rnd(3)) {
        case 0: d = c.checkFs(paths[rnd(paths.length)] + (i % 7 ? '' : '/' + i), rnd(2) ? 'read' : 'write'); break
        case 1: d = c.checkFetch(urls[rnd(urls.length)]); break
        default: { const [id, p] = caps[rnd(caps.length)]; d = c.checkCapability(id, p) }
      }
      const s = d.allowed ? 'y' : d.capability + d.reason
      for (let k = 0; k < s.length; k++) h = Math.imul(h ^ s.charCodeAt(k), 16777619) >>> 0
    }
    return h
  }`

test('8 Workers running 100k mixed checks agree with one thread', { timeout: 120_000 }, async () => {
  const expected = new Function('require', `${WORKLOAD}; return run(100000)`)(require)
  const workers = Array.from({ length: 8 }, () => new Worker(`${WORKLOAD}; require('node:worker_threads').parentPort.postMessage(run(100000))`, { eval: true }))
  const results = await Promise.all(workers.map((w) => new Promise((resolve, reject) => w.once('message', resolve).once('error', reject))))
  await Promise.all(workers.map((w) => w.terminate()))
  assert.deepEqual(results, new Array(8).fill(expected))
})

test('Workers terminated in the middle of checks leave the process healthy', { timeout: 120_000 }, async () => {
  for (let round = 0; round < 10; round++) {
    const workers = Array.from({ length: 4 }, () => new Worker(`${WORKLOAD}; require('node:worker_threads').parentPort.postMessage('go'); for (;;) run(1000)`, { eval: true }))
    await Promise.all(workers.map((w) => new Promise((resolve) => w.once('message', resolve))))
    await new Promise((r) => setTimeout(r, 5 + round * 3))
    await Promise.all(workers.map((w) => w.terminate()))
  }
  const { createChecker } = require(PKG)
  assert.equal(createChecker({ fs: ['/a/**'] }, { plugin: 'p', platform: 'posix' }).checkFs('/a/b', 'read').allowed, true)
})

test('the addon loads and unloads with many short-lived Workers', { timeout: 120_000 }, async () => {
  for (let i = 0; i < 30; i++) {
    const w = new Worker(`const { createChecker } = require(${JSON.stringify(PKG)}); require('node:worker_threads').parentPort.postMessage(createChecker({ fetch: ['a.example'] }, { plugin: 'p' }).checkFetch('https://a.example/').allowed)`, { eval: true })
    const [msg, code] = await Promise.all([new Promise((resolve, reject) => w.once('message', resolve).once('error', reject)), new Promise((r) => w.once('exit', r))])
    assert.equal(msg, true)
    assert.equal(code, 0)
  }
})
