'use strict'
// Creates and drops N policies, checkers and budget trackers (checking with
// each), forcing GC; prints RSS after warm-up and at the end as JSON.
// Usage: node --expose-gc scripts/leak-check.js [N]
const { PermissionPolicy, PermissionChecker, BudgetTracker } = require('..')

const n = Number(process.argv[2] || 1_000_000)
if (typeof global.gc !== 'function') throw new Error('run with --expose-gc')
const manifest = { fs: ['/data/**', { path: '/out/*.json', mode: 'write' }], fetch: ['api.example.com'], budgets: { wallClockMs: 1000, memoryMb: 64 } }
const mb = () => process.memoryUsage.rss() / 2 ** 20
let sink = 0
let warm = 0
const warmAt = Math.floor(n / 5)
// Node-API finalizers run from the event loop: yield to it now and then, as
// any host does between requests.
const tick = () => new Promise((r) => setImmediate(r))
async function main() {
const t0 = Date.now()
for (let i = 1; i <= n; i++) {
  const policy = PermissionPolicy.fromManifest(manifest, { plugin: `p${i % 100}`, platform: 'posix' })
  const checker = new PermissionChecker(policy)
  const tracker = new BudgetTracker(policy, { hooks: { now: () => i, rssMb: () => 10 } })
  sink += checker.checkFs(`/data/${i}`, 'read').allowed + checker.checkFetch('https://api.example.com/').allowed + tracker.sample().ok
  if (i % 10_000 === 0) {
    global.gc()
    await tick()
  }
  if (i === warmAt) {
    global.gc()
    await tick()
    warm = mb()
  }
}
global.gc()
await tick()
global.gc()
process.stdout.write(JSON.stringify({ n, warmRssMb: +warm.toFixed(1), endRssMb: +mb().toFixed(1), seconds: (Date.now() - t0) / 1000, sink: sink === 3 * n }) + '\n')
}
main()
