// `node bench/manifest-scaling.mjs`: how the tooling paths scale with the
// manifest size. Prints CPU time for n = 1,000 and n = 10,000 and their ratio:
// ~10 is linear (or n log n), ~100 would be quadratic. A figure, not a test.
//
// - diff: two manifests of n fetch hosts each, no host in common (the diff
//   indexes each side by host once; it used to re-parse every old pattern per
//   added one: 10,000 vs 10,000 took 20 s). One run (shared 2-core machine,
//   release build, Node 20, policy builds included): 20 ms, 236 ms, ratio 11.5.
// - lint: one bound secret of n hosts and n `*.suffix` fetch grants, none
//   covering (lint indexes the grants once; it compared every secret host
//   with every grant: 10,000 and 10,000 took 6 s). One run: 6 ms, 78 ms
//   (policy builds included), ratio ~12.
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { PermissionPolicy } = require('../index.js')
const { diffManifests } = require('../lib/diff.js')

function cpuMs(f) {
  const t0 = process.cpuUsage()
  f()
  const t = process.cpuUsage(t0)
  return (t.user + t.system) / 1e3
}

function report(name, run) {
  const small = cpuMs(() => run(1000))
  const large = cpuMs(() => run(10000))
  console.log(`${name}: n=1,000 ${small.toFixed(1)} ms, n=10,000 ${large.toFixed(1)} ms, ratio ${(large / small).toFixed(1)}`)
}

const hosts = (prefix, n) => Array.from({ length: n }, (_, i) => `${prefix}${i}.example.com`)
const policy = (m) => PermissionPolicy.fromManifest(m, { plugin: 'bench' })

report('diff', (n) => {
  const a = policy({ fetch: hosts('a', n) }).toJSON()
  const b = policy({ fetch: hosts('b', n) }).toJSON()
  diffManifests(a, b)
})

report('lint', (n) => {
  const p = policy({ secrets: [{ name: 'S', hosts: hosts('h.s', n) }], fetch: hosts('*.f', n) })
  p.lint()
})
