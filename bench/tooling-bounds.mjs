// `node bench/tooling-bounds.mjs [--only <name>]`: the CLI tools on the
// adversarial inputs a review timed (diff, lint, explain, learn), as wall
// time of one CLI run each, with the answer they gave. A figure, not a test:
// the outcomes are pinned in __test__/tooling-bounds.test.js and in the Rust
// unit tests; docs/benchmarks.md has the figures of one run.
import { createRequire } from 'node:module'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

const require = createRequire(import.meta.url)
const BIN = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'bin', 'api-sandbox-permissions.js')
const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : null
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asp-tooling-bench-'))
const file = (name, value) => {
  const f = path.join(dir, name)
  fs.writeFileSync(f, typeof value === 'string' ? value : JSON.stringify(value))
  return f
}
const N = 10_000
const range = (n, f) => Array.from({ length: n }, (_, i) => f(i))
const ip = (i) => `${1 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}.1`

const CASES = [
  ['diff 10,000 fetch patterns, narrowed', () => ['diff', file('fa.json', { fetch: range(N, (i) => `https://h${i}.example.com/v1/**`) }), file('fb.json', { fetch: range(N, (i) => `https://h${i}.example.com/v1/x`) })]],
  ['diff 10,000 fetch patterns, widened', () => ['diff', path.join(dir, 'fb.json'), path.join(dir, 'fa.json')]],
  ['diff 10,000 + 10,000 topics', () => ['diff', file('ta.json', { events: { publishes: range(N, (i) => `t${i}.a.*`), subscribes: range(N, (i) => `t${i}.**`) } }), file('tb.json', { events: { publishes: range(N, (i) => `t${i}.a.b`), subscribes: range(N, (i) => `t${i}.x.**`) } })]],
  ['diff 10,000 fs globs, narrowed', () => ['diff', file('ga.json', { fs: range(N, (i) => `/srv/d${i}/**`) }), file('gb.json', { fs: range(N, (i) => `/srv/d${i}/*.json`) })]],
  ['diff itself, 100 x (200-char literal + *)', () => ['diff', file('lit.json', { fs: range(100, (i) => `/a/${String(i).padStart(4, '0')}${'q'.repeat(196)}*`) }), path.join(dir, 'lit.json')]],
  ['diff 100 x (literal + *) against /a/*', () => ['diff', path.join(dir, 'lit.json'), file('star.json', { fs: ['/a/*'] })]],
  ['lint 8,000 grants, 8,000 unreachable denies', () => ['lint', file('ld.json', { fs: range(8000, (i) => `/srv/g${i}/**`), deny: { fs: range(8000, (i) => `/other/d${i}/**`) } })]],
  ['lint 10,000 IP grants, 10,000 CIDR denies', () => ['lint', file('lc.json', { fetch: range(N, ip), deny: { fetch: range(N, (i) => `100.${(i >> 8) & 255}.${i & 255}.0/24`) } })]],
  ['lint 10,000 grants, 100 invalid', () => ['lint', file('le.json', { fs: range(N, (i) => (i % 100 === 0 ? 'rel/x' : `/srv/g${i}/**`)) })]],
  ['lint past the glob cap', () => ['lint', file('lcap.json', { fs: range(300, (i) => `/a${i}/{a,b,c,d,e,f,g,h}/{a,b,c,d,e,f,g,h}/x`) })]],
  ['lint 20,000-deep JSON', () => ['lint', file('deep.json', `${'['.repeat(20000)}${']'.repeat(20000)}`)]],
  ['explain, 2,000 hostile grants in one directory', () => ['explain', file('hx.json', { fs: [...range(2000, (i) => `/a/*${'?'.repeat(60)}${i}*b*`), '/a/*'] }), `fs:read:/a/${'a'.repeat(4000)}`]],
  ['learn --from 10,000 paths', () => ['learn', '--from', file('l10k.jsonl', range(N, (i) => JSON.stringify({ capability: 'fs.read', payload: { path: `/srv/data/f${i}.json` } })).join('\n'))]],
]

console.log(`node ${process.version}, ${os.cpus().length} cores, load ${os.loadavg()[0].toFixed(1)}`)
for (const [name, args] of CASES) {
  if (only && !name.includes(only)) continue
  const argv = args()
  const t0 = process.hrtime.bigint()
  const r = spawnSync(process.execPath, [BIN, ...argv, '--json'], { encoding: 'utf8', maxBuffer: 1 << 28 })
  const ms = Number(process.hrtime.bigint() - t0) / 1e6
  let answer = `exit ${r.status}`
  try {
    const j = JSON.parse(r.stdout)
    if (j.verdict) answer += `, ${j.verdict}: ${j.widens.length} widenings, ${j.narrows.length} narrowings, ${j.unknown.length} unknown`
    else if (j.errors) answer += `, ${j.errors.length} errors`
    else if (j.warnings) answer += `, ${j.warnings.length} warnings`
    else if (j.error) answer += `, ${j.error.kind || j.error.code}`
    else if (j.decision) answer += `, ${j.decision.allowed ? 'allowed' : 'denied'}${j.incomplete ? ' (listing incomplete)' : ''}`
    else if (j.manifest) answer += `, ${j.manifest.fs ? j.manifest.fs.length : 0} fs grants`
  } catch {
    answer += `, ${r.stderr.split('\n')[0]}`
  }
  console.log(`${name.padEnd(48)} ${(ms / 1000).toFixed(2).padStart(6)} s  ${answer}`)
}
fs.rmSync(dir, { recursive: true, force: true })
