'use strict'
// Memory per compiled policy (issue K): run as a child with --expose-gc.
// Compiles N typical manifests (distinct paths and hosts per plugin), each
// with its checker, keeps them alive, and reports the growth of RSS and of
// V8's `external` (native memory the addon reported) per policy, after GC.
// Usage: node --expose-gc bench/policy-memory.cjs [N]
const { PermissionPolicy, PermissionChecker } = require('..')

/** The typical manifest of plugin `i` (bench.mjs's host-scale group uses it too). */
const typical = (i) => ({
  fs: [`/srv/plugins/p${i}/data/**`, { path: `/srv/plugins/p${i}/out/**`, mode: 'readwrite' }, `/etc/plugins/p${i}/*.json`],
  fetch: [`https://api-${i}.example.com`, `https://*.cdn-${i}.example.net:8443/v1/*`],
  events: { publishes: [`orders.p${i}.*`] },
})
const text = (i) => JSON.stringify(typical(i)).length
module.exports = { typical }
if (require.main !== module) return
const N = Number(process.argv[2] || 10000)

const settle = () => {
  for (let k = 0; k < 4; k++) global.gc()
  return process.memoryUsage()
}
// Warm the module, the tables and the allocator first.
for (let i = 0; i < 200; i++) new PermissionChecker(PermissionPolicy.fromManifest(typical(-i - 1), { plugin: `w${i}` })).checkFs('/x', 'read')
const before = settle()
const keep = []
for (let i = 0; i < N; i++) {
  const c = new PermissionChecker(PermissionPolicy.fromManifest(typical(i), { plugin: `p${i}`, platform: 'posix' }))
  c.checkFs(`/srv/plugins/p${i}/data/a`, 'read')
  keep.push(c)
}
const after = settle()
let grantText = 0
for (let i = 0; i < N; i++) grantText += text(i)
const per = (k) => (after[k] - before[k]) / N
console.log(JSON.stringify({ n: N, rssPerPolicy: per('rss'), heapPerPolicy: per('heapUsed'), externalPerPolicy: per('external'), manifestTextPerPolicy: grantText / N, kept: keep.length }))
