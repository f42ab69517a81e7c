// `npm run bench`: medians over interleaved rounds, as ratios against peers
// measured in the same process (tinybench). Each task runs a batch of calls
// over thousands of distinct inputs, so no decision cache can stand in for
// the check. Usage: node bench/bench.mjs [--quick] [--json out.json] [--only name]
// (without --only, each group runs in a child process of its own: GROUPS).
import { Bench } from 'tinybench'
import picomatch from 'picomatch'
import { createRequire } from 'node:module'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import path from 'node:path'
import fs from 'node:fs'
import os from 'node:os'

const require = createRequire(import.meta.url)
const pkg = require('../index.js')
const { PermissionPolicy, PermissionChecker, BudgetTracker } = pkg
const here = path.dirname(fileURLToPath(import.meta.url))

const args = process.argv.slice(2)
const QUICK = args.includes('--quick')
const ONLY = args.includes('--only') ? args[args.indexOf('--only') + 1] : null
const JSON_OUT = args.includes('--json') ? args[args.indexOf('--json') + 1] : null
const ROUNDS = QUICK ? 3 : 7
const TIME = QUICK ? 60 : 150
const BATCH = 256

/**
 * The groups, each run in a child process of its own unless `--only` names
 * one: what a group leaves behind (thousands of compiled policies for the
 * collector, a JIT state tuned to its calls) is then never charged to the
 * next group's tasks (a full run once reported checkFetch at 1.4x its peer
 * after the checkFs group, 0.5x alone). The ratios are still measured side
 * by side, within a group, in one process.
 */
const GROUPS = ['checkFs', 'checkFetch', 'deny', 'diff', 'compile', 'scale', 'budget', 'floor', 'permission-model', 'host', 'open', 'lockdown']
if (ONLY === null) {
  const all = []
  for (const g of GROUPS) {
    const out = path.join(os.tmpdir(), `asp-bench-${process.pid}-${g}.json`)
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), ...(QUICK ? ['--quick'] : []), '--only', g, '--json', out], { stdio: 'inherit' })
    if (r.status !== 0) process.exit(r.status ?? 1)
    all.push(...JSON.parse(fs.readFileSync(out, 'utf8')).results)
    fs.unlinkSync(out)
  }
  if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify({ node: process.version, date: new Date().toISOString(), rounds: ROUNDS, results: all }, null, 2))
  process.exit(0)
}
const INPUTS = 4096

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}
// A sink so calls are not optimised away.
let sink = 0
const use = (x) => {
  sink ^= x === true || (x && x.allowed) ? 1 : 0
}

/** Runs groups of tasks in interleaved rounds; returns ns/op medians by task name. */
async function measure(tasks) {
  const samples = new Map(tasks.map(([name]) => [name, []]))
  for (let r = 0; r < ROUNDS; r++) {
    const bench = new Bench({ time: TIME, warmupTime: 20 })
    const order = r % 2 ? [...tasks].reverse() : tasks
    for (const [name, fn] of order) bench.add(name, fn)
    await bench.run()
    for (const t of bench.tasks) samples.get(t.name).push((t.result.latency.p50 * 1e6) / t.batch)
  }
  return new Map([...samples].map(([k, v]) => [k, median(v)]))
}

/** A task calling `fn` on consecutive distinct inputs, in batches sized to ~50 µs. */
function batched(name, fn, inputs, batch) {
  if (batch === undefined) {
    const t0 = process.hrtime.bigint()
    for (let k = 0; k < 16; k++) use(fn(inputs[k % inputs.length]))
    const per = Number(process.hrtime.bigint() - t0) / 16
    batch = Math.max(1, Math.min(BATCH, Math.round(50_000 / Math.max(per, 1))))
  }
  let i = 0
  const run = () => {
    for (let k = 0; k < batch; k++) {
      use(fn(inputs[i]))
      i = i + 1 === inputs.length ? 0 : i + 1
    }
  }
  return [name, run, batch]
}

async function group(title, tasks, ratios) {
  const withBatch = tasks.map(([name, fn, batch]) => {
    const f = () => fn()
    f.batch = batch
    return [name, f, batch]
  })
  const res = await measureBatched(withBatch)
  const rows = []
  for (const [name] of tasks) rows.push({ task: name, 'ns/op': +res.get(name).toFixed(1) })
  const ratioRows = ratios.map(([a, b, goal]) => ({ ratio: `${a} / ${b}`, value: +(res.get(a) / res.get(b)).toFixed(3), goal: goal ?? '' }))
  console.log(`\n## ${title}`)
  console.table(rows)
  if (ratioRows.length) console.table(ratioRows)
  return { title, rows, ratios: ratioRows }
}

async function measureBatched(tasks) {
  const samples = new Map(tasks.map(([name]) => [name, []]))
  const batchOf = new Map(tasks.map(([name, , b]) => [name, b]))
  for (let r = 0; r < ROUNDS; r++) {
    const bench = new Bench({ time: TIME, warmupTime: 10, iterations: 5, warmupIterations: 2 })
    const order = r % 2 ? [...tasks].reverse() : tasks
    for (const [name, fn] of order) bench.add(name, fn)
    await bench.run()
    for (const t of bench.tasks) samples.get(t.name).push((t.result.latency.p50 * 1e6) / batchOf.get(t.name))
  }
  return new Map([...samples].map(([k, v]) => [k, median(v)]))
}

// ---- fs fixtures ----
function fsPatterns(n) {
  const out = []
  for (let i = 0; i < n; i++) {
    switch (i % 3) {
      case 0:
        out.push(`/srv/app-${i}/data/**`)
        break
      case 1:
        out.push(`/tmp/cache-${i}/*.json`)
        break
      default:
        out.push(`/etc/app-${i}.conf`)
    }
  }
  return out
}
function fsInputs(n, shape) {
  const out = []
  for (let j = 0; j < INPUTS; j++) {
    const k = 3 * ((j * 7919) % Math.ceil(n / 3))
    switch (shape) {
      case 'allow':
        out.push(`/srv/app-${k}/data/dir-${j % 13}/file-${j}.txt`)
        break
      case 'deny':
        out.push(`/home/user-${j}/.ssh/id_rsa`)
        break
      case 'json':
        out.push(`/tmp/cache-${k + 1}/entry-${j}.json`)
        break
      case 'near-miss':
        out.push(`/srv/app-${k}/datax/file-${j}.txt`)
        break
    }
  }
  return out
}

// ---- fetch fixtures ----
function fetchPatterns(n) {
  const out = []
  for (let i = 0; i < n; i++) out.push(i % 2 ? `api-${i}.example.com` : `*.cdn-${i}.example.net`)
  return out
}
function fetchInputs(n, shape) {
  const out = []
  for (let j = 0; j < INPUTS; j++) {
    const k = 2 * ((j * 7919) % Math.ceil(n / 2))
    if (shape === 'exact') out.push(`https://api-${k + 1}.example.com/v1/items/${j}?q=${j}`)
    else if (shape === 'suffix') out.push(`https://img-${j}.cdn-${k}.example.net/a/${j}.png`)
    else out.push(`https://evil-${j}.example.org/steal?x=${j}`)
  }
  return out
}
/** The JS peer: new URL + an exact Set + a suffix label walk. */
function jsFetchMatcher(patterns) {
  const exact = new Set()
  const suffix = new Set()
  for (const p of patterns) (p.startsWith('*.') ? suffix.add(p.slice(2)) : exact.add(p))
  return (u) => {
    let url
    try {
      url = new URL(u)
    } catch {
      return false
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return false
    if (url.username || url.password || url.port) return false
    let h = url.hostname
    if (exact.has(h)) return true
    for (let i = h.indexOf('.'); i !== -1; i = h.indexOf('.')) {
      h = h.slice(i + 1)
      if (suffix.has(h)) return true
    }
    return false
  }
}

const results = []
const want = (name) => !ONLY || name.toLowerCase().includes(ONLY.toLowerCase())

if (want('checkFs')) {
  for (const n of QUICK ? [10, 10000] : [10, 100, 1000, 10000]) {
    const patterns = fsPatterns(n)
    const checker = new PermissionChecker(PermissionPolicy.fromManifest({ fs: patterns }, { plugin: 'bench', platform: 'posix' }))
    const pm = picomatch(patterns, { dot: true })
    const tasks = []
    const ratios = []
    for (const shape of ['allow', 'deny', 'json', 'near-miss']) {
      const inputs = fsInputs(n, shape)
      // Sanity: both agree on every input.
      for (const p of inputs.slice(0, 200)) {
        if (checker.checkFs(p, 'read').allowed !== pm(p)) throw new Error(`disagreement on ${p}`)
      }
      tasks.push(batched(`checkFs ${shape}`, (p) => checker.checkFs(p, 'read'), inputs))
      tasks.push(batched(`picomatch ${shape}`, (p) => pm(p), inputs))
      ratios.push([`checkFs ${shape}`, `picomatch ${shape}`, n === 10 ? '<= 0.5' : ''])
    }
    results.push(await group(`checkFs at ${n} patterns`, tasks, ratios))
  }
}

if (want('checkFetch')) {
  for (const n of [10, 1000]) {
    const patterns = fetchPatterns(n)
    const checker = new PermissionChecker(PermissionPolicy.fromManifest({ fetch: patterns }, { plugin: 'bench', platform: 'posix' }))
    const js = jsFetchMatcher(patterns)
    const tasks = []
    const ratios = []
    for (const shape of ['exact', 'suffix', 'deny']) {
      const inputs = fetchInputs(n, shape)
      for (const u of inputs.slice(0, 200)) {
        if (checker.checkFetch(u).allowed !== js(u)) throw new Error(`disagreement on ${u}`)
      }
      tasks.push(batched(`checkFetch ${shape}`, (u) => checker.checkFetch(u), inputs))
      tasks.push(batched(`new URL + lookup ${shape}`, (u) => js(u), inputs))
      ratios.push([`checkFetch ${shape}`, `new URL + lookup ${shape}`, '<= 1.0'])
    }
    results.push(await group(`checkFetch at ${n} patterns`, tasks, ratios))
  }
}

// SPEC §10, §11: the same URLs against 1,000 host-only grants and against
// 1,000 path-scoped grants (100 hosts x 10 scopes, walked through the per-host
// segment trie); the same paths with no deny globs and with 1,000.
if (want('deny') || want('path')) {
  const hostOnly = []
  const scoped = []
  for (let i = 0; i < 1000; i++) {
    hostOnly.push(`https://api-${i}.example.com`)
    scoped.push(`https://api-${i % 100}.example.com/v1/repos/r${Math.floor(i / 100)}/*/issues`)
  }
  const urls = (hosts) => {
    const out = []
    for (let j = 0; j < INPUTS; j++) out.push(`https://api-${(j * 7919) % hosts}.example.com/v1/repos/r${j % 10}/acme-${j}/issues?page=${j}`)
    return out
  }
  const a = new PermissionChecker(PermissionPolicy.fromManifest({ fetch: hostOnly }, { plugin: 'bench', platform: 'posix' }))
  const b = new PermissionChecker(PermissionPolicy.fromManifest({ fetch: scoped }, { plugin: 'bench', platform: 'posix' }))
  const ua = urls(1000)
  const ub = urls(100)
  for (const u of ua.slice(0, 200)) if (!a.checkFetch(u).allowed) throw new Error(`host-only grant should allow ${u}`)
  for (const u of ub.slice(0, 200)) if (!b.checkFetch(u).allowed) throw new Error(`path grant should allow ${u}`)
  const miss = ub.map((u) => u.replace('/issues?', '/pulls?'))
  for (const u of miss.slice(0, 200)) if (b.checkFetch(u).reason !== 'path_not_allowed') throw new Error(`path grant should deny ${u}`)
  results.push(
    await group(
      'checkFetch: 1,000 path-scoped grants vs 1,000 host-only grants',
      [batched('checkFetch 1000 host-only', (u) => a.checkFetch(u), ua), batched('checkFetch 1000 path-scoped', (u) => b.checkFetch(u), ub), batched('checkFetch 1000 path-scoped, path miss', (u) => b.checkFetch(u), miss)],
      [['checkFetch 1000 path-scoped', 'checkFetch 1000 host-only', '<= 1.2']],
    ),
  )

  const grants = fsPatterns(1000)
  const deny = []
  for (let i = 0; i < 1000; i++) deny.push(i % 2 ? `/srv/app-${3 * (i % 334)}/data/**/*.key${i}` : `/srv/app-${3 * (i % 334)}/data/private-${i}/**`)
  const none = new PermissionChecker(PermissionPolicy.fromManifest({ fs: grants }, { plugin: 'bench', platform: 'posix' }))
  const withDeny = new PermissionChecker(PermissionPolicy.fromManifest({ fs: grants, deny: { fs: deny } }, { plugin: 'bench', platform: 'posix' }))
  const allowIn = fsInputs(1000, 'allow')
  const denyIn = fsInputs(1000, 'deny')
  for (const p of allowIn.slice(0, 200)) if (!withDeny.checkFs(p, 'read').allowed) throw new Error(`should allow ${p}`)
  const denied = allowIn.map((p, j) => p.replace(/\/data\/dir-\d+\//, `/data/private-${2 * (j % 500)}/`))
  let hits = 0
  for (const p of denied.slice(0, 200)) hits += withDeny.checkFs(p, 'read').reason === 'explicitly_denied' ? 1 : 0
  if (hits === 0) throw new Error('deny globs never matched')
  results.push(
    await group(
      'checkFs: 1,000 deny globs vs none',
      [
        batched('checkFs allow, no deny', (p) => none.checkFs(p, 'read'), allowIn),
        batched('checkFs allow, 1000 deny', (p) => withDeny.checkFs(p, 'read'), allowIn),
        batched('checkFs not granted, no deny', (p) => none.checkFs(p, 'read'), denyIn),
        batched('checkFs not granted, 1000 deny', (p) => withDeny.checkFs(p, 'read'), denyIn),
        batched('checkFs denied by a deny glob', (p) => withDeny.checkFs(p, 'read'), denied),
      ],
      [
        ['checkFs allow, 1000 deny', 'checkFs allow, no deny', '<= 1.2'],
        ['checkFs not granted, 1000 deny', 'checkFs not granted, no deny', '<= 1.2'],
      ],
    ),
  )
}

if (want('diff')) {
  // The semantic diff of two 1,000-grant manifests (issue 26: under 1 s), both directions, witnesses confirmed.
  const side = (narrow, widen) => {
    const fs = []
    const fetch = []
    for (let i = 0; i < 500; i++) {
      fs.push(narrow ? [`/srv/app${i}/data/*.json`, `/data/t${i}/x*.json`, `/var/log/p${i}/**`, `/opt/p${i}/[c-f]x/**`][i % 4] : [`/srv/app${i}/**`, `/data/t${i}/*.json`, `/var/{log,cache}/p${i}/**`, `/opt/p${i}/[a-m]*/**`][i % 4])
      fetch.push(narrow ? `https://api.svc${i}.example.com/v1/**` : `*.svc${i}.example.com`)
    }
    if (widen) fs[321] = '/data/t321/**'
    const m = { fs, fetch, deny: { fs: ['/srv/app1/secret/**', '/data/**/.env'], fetch: ['10.0.0.0/8'] }, events: { publishes: ['orders.*'], subscribes: ['audit.**'] }, budgets: { wallClockMs: 1000 } }
    return [m, PermissionPolicy.fromManifest(m, { plugin: 'bench', platform: 'posix' })]
  }
  const [oldM, old] = side(false, false)
  const [, same] = side(false, false)
  const [narrowM, narrow] = side(true, false)
  const [, widen] = side(true, true)
  if (pkg.diffPolicies(old, narrow).exitCode !== 0 || pkg.diffPolicies(old, widen).exitCode !== 1) throw new Error('diff bench: unexpected verdicts')
  const tasks = [
    ['diffPolicies 1000 grants, equal', () => pkg.diffPolicies(old, same), 1],
    ['diffPolicies 1000 grants, narrowed', () => pkg.diffPolicies(old, narrow), 1],
    ['diffPolicies 1000 grants, one widening', () => pkg.diffPolicies(old, widen), 1],
    ['fromManifest both sides', () => [PermissionPolicy.fromManifest(oldM, { plugin: 'bench', platform: 'posix' }), PermissionPolicy.fromManifest(narrowM, { plugin: 'bench', platform: 'posix' })], 1],
  ]
  results.push(await group('diff: 1,000 grants each side (goal: under 1 s, i.e. 1e9 ns/op)', tasks, [['diffPolicies 1000 grants, narrowed', 'fromManifest both sides', '']]))
}

if (want('compile')) {
  const patterns = fsPatterns(10000)
  const tasks = [
    ['fromManifest 10000 fs globs', () => PermissionPolicy.fromManifest({ fs: patterns }, { plugin: 'bench', platform: 'posix' }), 1],
    ['picomatch compile 10000 globs', () => picomatch(patterns, { dot: true }), 1],
  ]
  results.push(await group('policy construction', tasks, [['fromManifest 10000 fs globs', 'picomatch compile 10000 globs', '<= 1.0']]))
}

if (want('scale')) {
  // Host scale (issue K): the fixed cost of compiling a policy, against the
  // JSON round trip of the same manifest and against the peers compiling the
  // same patterns; checks spread over many policies against one policy.
  const empty = {}
  const { typical } = require('./policy-memory.cjs')
  // Distinct manifests, so nothing a cache could keep stands in for the compile.
  const manifests = Array.from({ length: INPUTS }, (_, i) => typical(i))
  const ids = Array.from({ length: INPUTS }, (_, i) => `p${i}`)
  // The empty manifest and the typical one in groups of their own: what one
  // task leaves for the collector (thousands of compiled policies) is not
  // charged to the other group's tasks.
  // A new small manifest per call: never a text another live policy shares.
  let fresh = 0
  const emptyTasks = [
    batched('fromManifest({})', (i) => PermissionPolicy.fromManifest(empty, { plugin: ids[i], platform: 'posix' }), manifests.map((_, i) => i)),
    batched('JSON round trip of {}', () => JSON.parse(JSON.stringify(empty)), [0]),
    batched('fromManifest(a new small manifest)', (i) => PermissionPolicy.fromManifest({ budgets: { wallClockMs: ++fresh } }, { plugin: ids[i], platform: 'posix' }), manifests.map((_, i) => i)),
    batched('JSON round trip of a small manifest', () => JSON.parse(JSON.stringify({ budgets: { wallClockMs: ++fresh } })), [0]),
  ]
  results.push(
    await group('policy compile: fixed cost (the empty manifest, shared; a new small one, compiled)', emptyTasks, [
      ['fromManifest({})', 'JSON round trip of {}', '<= 4'],
      ['fromManifest(a new small manifest)', 'JSON round trip of a small manifest', ''],
    ]),
  )
  // The typical manifest's text is longer than the shared texts (lib/policy.js
  // SHARE_MAX_TEXT): each call compiles, whatever the inputs repeat.
  const typicalTasks = [
    batched('fromManifest(typical, 6 grants)', (m) => PermissionPolicy.fromManifest(m, { plugin: 'p', platform: 'posix' }), manifests),
    batched('JSON round trip of typical', (m) => JSON.parse(JSON.stringify(m)), manifests),
    batched(
      'picomatch x3 + new URL x2 (typical)',
      (m) => {
        picomatch(m.fs[0], { dot: true })
        picomatch(m.fs[1].path, { dot: true })
        picomatch(m.fs[2], { dot: true })
        new URL(m.fetch[0])
        return new URL(m.fetch[1].replace('*.', 'x.').replace('/v1/*', '/v1/'))
      },
      manifests,
    ),
  ]
  if (JSON.stringify(manifests[0]).length <= 128) throw new Error('scale bench: the typical manifest would be shared')
  results.push(
    await group('policy compile: a typical manifest', typicalTasks, [['fromManifest(typical, 6 grants)', 'picomatch x3 + new URL x2 (typical)', '<= 1']]),
  )
  const N = QUICK ? 2000 : 10000
  const checkers = Array.from({ length: N }, (_, i) => new PermissionChecker(PermissionPolicy.fromManifest(typical(i), { plugin: `p${i}`, platform: 'posix' })))
  const one = checkers[0]
  const oneIn = Array.from({ length: INPUTS }, (_, j) => [0, `/srv/plugins/p0/data/d${j % 13}/f${j}.txt`])
  const spreadIn = Array.from({ length: INPUTS }, (_, j) => {
    const i = (j * 7919) % N
    return [i, `/srv/plugins/p${i}/data/d${j % 13}/f${j}.txt`]
  })
  for (const [i, p] of spreadIn.slice(0, 200)) if (!checkers[i].checkFs(p, 'read').allowed) throw new Error(`should allow ${p}`)
  // Every input visits a different policy: walk all N in turn.
  const rr = []
  for (let i = 0; i < N; i++) rr.push([i, `/srv/plugins/p${i}/data/d${i % 13}/f${i}.txt`])
  results.push(
    await group(
      `checkFs over ${N} policies round-robin vs one policy`,
      [batched('checkFs, one policy', ([, p]) => one.checkFs(p, 'read'), oneIn), batched(`checkFs, ${N} policies round-robin`, ([i, p]) => checkers[i].checkFs(p, 'read'), rr)],
      [[`checkFs, ${N} policies round-robin`, 'checkFs, one policy', '<= 2']],
    ),
  )
  const mem = spawnSync(process.execPath, ['--expose-gc', path.join(here, 'policy-memory.cjs'), String(N)], { encoding: 'utf8' })
  if (mem.status === 0) {
    const m = JSON.parse(mem.stdout)
    const rows = [
      { measure: 'RSS per policy + checker (bytes)', value: Math.round(m.rssPerPolicy) },
      { measure: 'V8 heap per policy + checker (bytes)', value: Math.round(m.heapPerPolicy) },
      { measure: 'external per policy (bytes)', value: Math.round(m.externalPerPolicy) },
      { measure: "the manifest's JSON text (bytes)", value: Math.round(m.manifestTextPerPolicy) },
      { measure: 'RSS beyond the text (goal < 4096)', value: Math.round(m.rssPerPolicy - m.manifestTextPerPolicy) },
    ]
    console.log(`\n## memory per compiled policy (${N} typical policies, child process)`)
    console.table(rows)
    results.push({ title: 'memory per compiled policy', rows })
  } else console.log(`\n(policy memory child failed: ${mem.stderr.split('\n')[0]})`)
}

if (want('budget')) {
  const policy = PermissionPolicy.fromManifest({ budgets: { cpuPercent: 90, memoryMb: 512, wallClockMs: 1e9 } }, { plugin: 'bench' })
  let t = 0
  const hooks = { now: () => (t += 0.01), cpuTimeMs: () => t * 0.5, rssMb: () => 100 }
  const tracker = new BudgetTracker(policy, { hooks, cpuGraceMs: 0 })
  // The same arithmetic in JS, as the peer.
  const js = (() => {
    const start = hooks.now()
    const cpu0 = hooks.cpuTimeMs()
    let last = start
    let cpuMax = cpu0
    return () => {
      const now = hooks.now()
      const cpu = hooks.cpuTimeMs()
      const rss = hooks.rssMb()
      if (!(Number.isFinite(now) && now >= 0 && Number.isFinite(cpu) && cpu >= 0 && Number.isFinite(rss) && rss >= 0)) throw new Error('invalid')
      if (now > last) last = now
      if (cpu > cpuMax) cpuMax = cpu
      const elapsed = last - start
      const cpuPercent = elapsed > 0 ? (100 * (cpuMax - cpu0)) / elapsed : undefined
      const ok = !(elapsed > 1e9 || rss > 512 || cpuPercent > 90)
      return ok ? { ok: true, elapsedMs: elapsed, cpuPercent, memoryMb: rss } : { ok: false }
    }
  })()
  const tasks = [
    ['BudgetTracker.sample()', () => tracker.sample(), 1],
    ['JS budget arithmetic', () => js(), 1],
  ].map(([name, fn]) => batched(name, fn, [0]))
  results.push(await group('budget sampling (all three hooks)', tasks, [['BudgetTracker.sample()', 'JS budget arithmetic', '<= 2.0']]))
}

if (want('floor')) {
  // The Node-API floor: the cheapest call into the addon that takes one string.
  const { binding } = require('../lib/native.js')
  const inputs = fsInputs(10, 'allow')
  const tasks = [batched('addon redactedOriginOf(string) (napi-rs, one string)', (p) => binding.redactedOriginOf(p), inputs)]
  results.push(await group('Node-API floor', tasks, []))
}

if (want('permission-model')) {
  // Node's own permission model can only run in a process started with
  // --experimental-permission, where (on Node 20) addons cannot load: it is
  // measured in a child process, next to the same picomatch reference, and
  // reported as a ratio to that reference.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asp-perm-'))
  const allow = fsPatterns(10).filter((p) => p.endsWith('/**')).map((p) => p.replace('/**', '/*'))
  const r = spawnSync(process.execPath, ['--experimental-permission', `--allow-fs-read=${here}/*`, `--allow-fs-read=${path.join(here, '..', 'node_modules')}/*`, ...allow.map((a) => `--allow-fs-read=${a}`), path.join(here, 'permission-model.cjs'), String(ROUNDS)], { encoding: 'utf8' })
  fs.rmSync(dir, { recursive: true, force: true })
  if (r.status === 0) {
    const m = JSON.parse(r.stdout)
    console.log('\n## Node permission model (child process, --experimental-permission)')
    console.table([{ task: 'process.permission.has allow', 'ns/op': m.has }, { task: 'picomatch allow (same child)', 'ns/op': m.picomatch }, { ratio: 'has / picomatch', value: +(m.has / m.picomatch).toFixed(3) }])
    results.push({ title: 'Node permission model (child process)', rows: [{ task: 'process.permission.has allow', 'ns/op': m.has }, { task: 'picomatch allow (same child)', 'ns/op': m.picomatch }], ratios: [{ ratio: 'process.permission.has / picomatch', value: +(m.has / m.picomatch).toFixed(3) }] })
  } else {
    console.log(`\n(permission model child failed: ${r.stderr.split('\n')[0]})`)
  }
}

if (want('host')) {
  const { runHostRoundTrips } = require('./host-roundtrip.cjs')
  const r = await runHostRoundTrips(QUICK ? 3 : 5)
  console.log('\n## example host: proxied fs.readFile round trip')
  const rows = [
    { task: 'round trip with assertCapability + assertFs(resolveSymlinks)', 'ns/op': r.checked },
    { task: 'round trip without the check (audit mode)', 'ns/op': r.unchecked },
  ]
  const ratios = [{ ratio: 'checked / unchecked', value: +(r.checked / r.unchecked).toFixed(3), goal: '' }]
  console.table(rows)
  console.table(ratios)
  results.push({ title: 'example host fs.readFile round trip', rows, ratios })
}

if (want('open') && process.platform !== 'win32') {
  const { runOpenReads } = require('./open-read.cjs')
  const r = await runOpenReads(QUICK ? 2 : 5, 2000)
  console.log('\n## checked open + read of a 4 KB file vs fs.promises (open, read, close; per-call medians, interleaved)')
  const rows = [
    { task: 'openChecked + read + close', 'ns/op': r.checked },
    { task: 'fs.promises.open + read + close', 'ns/op': r.plain },
  ]
  const ratios = [{ ratio: 'openChecked / fs.promises.open', value: +(r.checked / r.plain).toFixed(3), goal: '<= 1.25' }]
  console.table(rows)
  console.table(ratios)
  results.push({ title: 'checked open + read', rows, ratios })
}

if (want('lockdown') && process.platform === 'linux') {
  const { runIpcRoundTrips } = require('./ipc-roundtrip.cjs')
  const r = await runIpcRoundTrips(QUICK ? 5 : 15)
  console.log('\n## process tier: IPC round trip (1 KB) to a forked child, medians of interleaved rounds')
  const rows = [
    { task: 'IPC round trip, child not locked down', 'ns/op': r.plain },
    { task: 'IPC round trip, child after lockdown() (seccomp allow-list)', 'ns/op': r.locked },
  ]
  const ratios = [{ ratio: 'locked / not locked', value: +(r.locked / r.plain).toFixed(3), goal: '<= 1.1' }]
  if (r.landlock !== undefined) {
    rows.push({ task: 'IPC round trip, asp-landlock launcher + lockdown()', 'ns/op': r.landlock })
    ratios.push({ ratio: 'Landlock + locked / not locked', value: +(r.landlock / r.plain).toFixed(3), goal: '<= 1.1' })
  }
  console.table(rows)
  console.table(ratios)
  results.push({ title: 'process tier IPC round trip', rows, ratios })
}

if (JSON_OUT) fs.writeFileSync(JSON_OUT, JSON.stringify({ node: process.version, date: new Date().toISOString(), rounds: ROUNDS, results }, null, 2))
if (sink === 42) console.log('')
