'use strict'
// A real Deno (the `deno` devDependency) under the broker: scripts that read
// and write inside and outside the grants, traverse with `..`, follow a
// symlink out, fetch granted and ungranted hosts and ports (real HTTP
// servers on 127.0.0.1), connect raw TCP, read env vars, spawn a process,
// import a remote module from an ungranted host, and spin forever (killed by
// the wall-clock budget). Each gets the manifest's verdict, and the metrics
// (a real OpenTelemetry MeterProvider, in-memory exporter) match.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const net = require('node:net')
const path = require('node:path')
const http = require('node:http')
const { spawnSync } = require('node:child_process')
const { meterHarness } = require('./helpers.js')
const { PermissionPolicy } = require('../index.js')
const { runDeno, resolveDeno } = require('../lib/deno-broker.js')

let deno = null
let why = false
if (process.platform === 'win32') why = 'the Deno broker listens on a Unix socket'
else {
  try {
    deno = resolveDeno()
    // npm ci on a musl host (or with --libc=musl) may bring a glibc-only binary that cannot start here.
    const v = spawnSync(deno, ['--version'], { encoding: 'utf8' })
    if (v.status !== 0) why = `${deno} does not run on this host: ${v.error ? v.error.code : `exit ${v.status}`}`
  } catch (e) {
    why = `no deno binary: ${e.message}`
  }
}
const skip = why

function denoEnv(root) {
  // A private DENO_DIR; no colours; the test's own variables for the env cases.
  return { PATH: process.env.PATH, HOME: root, DENO_DIR: path.join(root, '.deno'), NO_COLOR: '1', GREETING: 'hi there', AWS_SECRET_ACCESS_KEY: 'must never be read' }
}

async function listen(handler) {
  const server = http.createServer(handler)
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  return server
}

/** Runs `code` under the broker; stdout lines of the script are JSON results. */
async function runScript(root, policy, code, options = {}) {
  const file = path.join(root, `script-${Math.random().toString(36).slice(2)}.ts`)
  fs.writeFileSync(file, code)
  const out = path.join(root, `${path.basename(file)}.out`)
  const fd = fs.openSync(out, 'w')
  const errFile = `${out}.err`
  const efd = fs.openSync(errFile, 'w')
  const decisions = []
  let r
  try {
    r = await runDeno(policy, { deno, args: ['run', '--quiet', file], env: denoEnv(root), cwd: root, stdio: ['ignore', fd, efd], meter: options.meter, onDecision: (e) => decisions.push(e), ...options.run })
  } finally {
    fs.closeSync(fd)
    fs.closeSync(efd)
  }
  const lines = fs.readFileSync(out, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
  return { ...r, lines, decisions, stderr: fs.readFileSync(errFile, 'utf8') }
}

// The script reports each attempt as { name, ok, value? | error, message }.
const PRELUDE = `
const report = (name, ok, extra) => console.log(JSON.stringify({ name, ok, ...extra }))
async function attempt(name, f) {
  try { const value = await f(); report(name, true, { value: typeof value === 'string' ? value.trim() : value }) }
  catch (e) { report(name, false, { error: e?.name, message: String(e?.message ?? e) }) }
}
`

test('real deno: fs, net, env, run, import: each gets the manifest verdict; metrics match', { skip, timeout: 60_000 }, async (t) => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'deno-real-')))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  fs.mkdirSync(path.join(root, 'data'))
  fs.mkdirSync(path.join(root, 'out'))
  fs.writeFileSync(path.join(root, 'data', 'input.txt'), 'hello from a file\n')
  fs.writeFileSync(path.join(root, 'secret.txt'), 'TOP SECRET\n')
  fs.symlinkSync(path.join(root, 'secret.txt'), path.join(root, 'data', 'link-to-secret'))
  const granted = await listen((req, res) => res.end('hello from 127.0.0.1'))
  const other = await listen((req, res) => res.end('must not be reached'))
  t.after(() => {
    granted.close()
    other.close()
  })
  const port = granted.address().port
  const otherPort = other.address().port
  const probe = meterHarness()
  t.after(() => probe.shutdown())
  const policy = PermissionPolicy.fromManifest(
    {
      fs: [`${root}/data/**`, { path: `${root}/out/*.json`, mode: 'write' }],
      fetch: [`127.0.0.1:${port}`],
      secrets: ['GREETING'],
      budgets: { wallClockMs: 30_000 },
    },
    { plugin: 'deno-real' },
  )
  const code = `${PRELUDE}
await attempt('read inside', () => Deno.readTextFile('${root}/data/input.txt'))
await attempt('read outside', () => Deno.readTextFile('${root}/secret.txt'))
await attempt('read ..', () => Deno.readTextFile('${root}/data/../secret.txt'))
await attempt('read symlink out', () => Deno.readTextFile('${root}/data/link-to-secret'))
await attempt('write inside', () => Deno.writeTextFile('${root}/out/result.json', '{"ok":true}').then(() => 'written'))
await attempt('write read-only', () => Deno.writeTextFile('${root}/data/input.txt', 'overwritten'))
await attempt('write outside', () => Deno.writeTextFile('${root}/evil.sh', 'rm -rf /'))
await attempt('fetch granted', () => fetch('http://127.0.0.1:${port}/hello').then((r) => r.text()))
await attempt('fetch other port', () => fetch('http://127.0.0.1:${otherPort}/').then((r) => r.text()))
await attempt('fetch other host', () => fetch('http://localhost:${port}/').then((r) => r.text()))
await attempt('tcp granted', async () => { const c = await Deno.connect({ hostname: '127.0.0.1', port: ${port} }); c.close(); return 'connected' })
await attempt('tcp other port', async () => { const c = await Deno.connect({ hostname: '127.0.0.1', port: ${otherPort} }); c.close(); return 'connected' })
await attempt('env granted', () => Deno.env.get('GREETING'))
await attempt('env secret', () => Deno.env.get('AWS_SECRET_ACCESS_KEY'))
await attempt('env all', () => Object.keys(Deno.env.toObject()).length)
await attempt('spawn', () => new Deno.Command('/bin/echo', { args: ['pwned'] }).output().then((o) => new TextDecoder().decode(o.stdout)))
await attempt('import ungranted', () => import('https://deno.invalid/mod.ts').then(() => 'imported'))
await attempt('sys', () => Deno.hostname())
`
  const r = await runScript(root, policy, code, { meter: probe.meter })
  assert.equal(r.exitCode, 0, r.stderr)
  const by = Object.fromEntries(r.lines.map((l) => [l.name, l]))
  const denied = (name, capability, reason) => {
    const l = by[name]
    assert.ok(l, `${name} ran`)
    assert.equal(l.ok, false, `${name}: ${JSON.stringify(l)}`)
    assert.match(l.message, new RegExp(`PERMISSION_DENIED ${capability.replace('.', '\\.')} ${reason}\\b`), `${name}: ${l.message}`)
  }
  const allowed = (name, value) => {
    assert.equal(by[name] && by[name].ok, true, `${name}: ${JSON.stringify(by[name])}`)
    if (value !== undefined) assert.equal(by[name].value, value, name)
  }
  allowed('read inside', 'hello from a file')
  denied('read outside', 'fs.read', 'not_allowlisted')
  // Deno normalises `..` before asking: the broker sees (and Deno opens) root/secret.txt.
  denied('read ..', 'fs.read', 'not_allowlisted')
  denied('read symlink out', 'fs.read', 'symlink_escape')
  allowed('write inside', 'written')
  denied('write read-only', 'fs.write', 'mode_not_granted')
  denied('write outside', 'fs.write', 'not_allowlisted')
  allowed('fetch granted', 'hello from 127.0.0.1')
  denied('fetch other port', 'fetch', 'port_not_allowed')
  denied('fetch other host', 'fetch', 'host_not_allowlisted')
  allowed('tcp granted', 'connected')
  denied('tcp other port', 'fetch', 'port_not_allowed')
  allowed('env granted', 'hi there')
  denied('env secret', 'secrets.get', 'secret_not_declared')
  denied('env all', 'secrets.get', 'secret_not_declared')
  denied('spawn', 'unknown', 'unknown_capability')
  denied('import ungranted', 'fetch', 'host_not_allowlisted')
  denied('sys', 'unknown', 'unknown_capability')
  assert.equal(fs.readFileSync(path.join(root, 'data', 'input.txt'), 'utf8'), 'hello from a file\n')
  assert.equal(fs.existsSync(path.join(root, 'evil.sh')), false)
  assert.equal(fs.readFileSync(path.join(root, 'out', 'result.json'), 'utf8'), '{"ok":true}')

  // Metrics: each denial counted once, by the broker, with the usual labels.
  const expected = {}
  for (const d of r.decisions.filter((x) => !x.allowed)) {
    const key = `plugin.permission_denied_total|deno-real|${d.capability}|${d.reason}`
    expected[key] = (expected[key] || 0) + 1
  }
  const counts = await probe.counts()
  assert.deepEqual(counts, expected)
  // And the denials the script saw are all there (Deno may ask more than once per call, e.g. stat then open).
  for (const k of ['fs.read|not_allowlisted', 'fs.read|symlink_escape', 'fs.write|mode_not_granted', 'fs.write|not_allowlisted', 'fetch|port_not_allowed', 'fetch|host_not_allowlisted', 'secrets.get|secret_not_declared', 'unknown|unknown_capability']) {
    assert.ok(counts[`plugin.permission_denied_total|deno-real|${k.replace('|', '|')}`] >= 1, k)
  }
  assert.equal(r.stats.denied, Object.values(expected).reduce((a, b) => a + b, 0))
  assert.equal(r.stats.malformed, 0)
  assert.equal(r.stats.connections, 1)
})

test('real deno: a script that spins forever is killed by the wall-clock budget', { skip, timeout: 30_000 }, async (t) => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'deno-real-')))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  const probe = meterHarness()
  t.after(() => probe.shutdown())
  const policy = PermissionPolicy.fromManifest({ budgets: { wallClockMs: 1500 } }, { plugin: 'deno-spin' })
  const started = performance.now()
  const r = await runScript(root, policy, `console.log(JSON.stringify({ name: 'started', ok: true })); while (true) {}`, { meter: probe.meter })
  const took = performance.now() - started
  assert.deepEqual(r.lines, [{ name: 'started', ok: true }])
  assert.equal(r.signal, 'SIGKILL')
  assert.equal(r.exitCode, 137)
  assert.equal(r.budget.budget, 'wallClockMs')
  assert.ok(r.budget.observed > 1500)
  assert.ok(took < 10_000, `killed after ${took} ms`)
  const counts = await probe.counts()
  assert.deepEqual(counts, { 'plugin.budget_exceeded_total|deno-spin|deno|wall_clock': 1 })
})

test('real deno: a CPU budget sampled from /proc stops a busy script', { skip: skip || (process.platform !== 'linux' && 'CPU is sampled from /proc'), timeout: 30_000 }, async (t) => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'deno-real-')))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  const policy = PermissionPolicy.fromManifest({ budgets: { cpuPercent: 15, wallClockMs: 20_000 } }, { plugin: 'deno-cpu' })
  const r = await runScript(root, policy, `while (true) {}`, { run: { sampleEveryMs: 50 } })
  assert.equal(r.signal, 'SIGKILL')
  assert.equal(r.budget.budget, 'cpuPercent')
})

test('real deno: a memory budget sampled from /proc (VmRSS) stops a growing script', { skip: skip || (process.platform !== 'linux' && 'RSS is sampled from /proc'), timeout: 30_000 }, async (t) => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'deno-real-')))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  const probe = meterHarness()
  t.after(() => probe.shutdown())
  const policy = PermissionPolicy.fromManifest({ budgets: { memoryMb: 160, wallClockMs: 20_000 } }, { plugin: 'deno-mem' })
  // 16 MB touched per step, slowly enough for the 20 ms sampler to see it pass 160 MB well before 2 GB.
  const r = await runScript(root, policy, `const keep = []; for (let i = 0; i < 128; i++) { keep.push(new Uint8Array(16 << 20).fill(1)); await new Promise((r) => setTimeout(r, 10)) }`, { meter: probe.meter })
  assert.equal(r.signal, 'SIGKILL')
  assert.equal(r.budget.budget, 'memoryMb')
  assert.ok(r.budget.observed > 160 && r.budget.observed < 1024, String(r.budget.observed))
  assert.deepEqual(await probe.counts(), { 'plugin.budget_exceeded_total|deno-mem|deno|memory': 1 })
})

test('real deno behind a wrapper script (node_modules/.bin/deno): budgets count the grandchild, and it is killed too', { skip: skip || (process.platform !== 'linux' && 'process trees are read from /proc'), timeout: 30_000 }, async (t) => {
  const wrapper = require.resolve('deno/bin.cjs')
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'deno-real-')))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  const script = path.join(root, 'spin-behind-wrapper.ts')
  fs.writeFileSync(script, 'while (true) {}')
  const policy = PermissionPolicy.fromManifest({ budgets: { cpuPercent: 15, wallClockMs: 20_000 } }, { plugin: 'deno-wrapped' })
  const r = await runDeno(policy, { deno: wrapper, args: ['run', '--quiet', script], env: denoEnv(root), stdio: 'ignore' })
  assert.equal(r.budget.budget, 'cpuPercent', 'the wrapper idles: only the grandchild deno can have used the CPU')
  await new Promise((res) => setTimeout(res, 200))
  const alive = fs
    .readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        return fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(script)
      } catch {
        return false
      }
    })
  assert.deepEqual(alive, [], 'no deno left running')
})

test('CLI: deno under a manifest, --audit, --shadow, --json, then learn --from the audit log', { skip, timeout: 60_000 }, async (t) => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'deno-cli-')))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  fs.mkdirSync(path.join(root, 'data'))
  fs.writeFileSync(path.join(root, 'data', 'a.txt'), 'A')
  fs.writeFileSync(path.join(root, 'data', 'b.txt'), 'B')
  const manifest = path.join(root, 'm.json')
  fs.writeFileSync(manifest, JSON.stringify({ fs: [`${root}/data/**`], secrets: ['GREETING'] }))
  const candidate = path.join(root, 'candidate.json')
  fs.writeFileSync(candidate, JSON.stringify({ fs: [`${root}/data/a.txt`] }))
  const script = path.join(root, 's.ts')
  fs.writeFileSync(
    script,
    `console.log(Deno.readTextFileSync('${root}/data/a.txt') + Deno.readTextFileSync('${root}/data/b.txt') + Deno.env.get('GREETING'))
try { Deno.readTextFileSync('/etc/passwd') } catch (e) { console.log(e.name) }
Deno.exit(3)`,
  )
  const audit = path.join(root, 'audit.jsonl')
  const BIN = path.join(__dirname, '..', 'bin', 'api-sandbox-permissions.js')
  const env = { ...denoEnv(root), DENO: deno }
  const r = spawnSync(process.execPath, [BIN, 'deno', manifest, '--plugin', 'cli-deno', '--shadow', candidate, '--audit', audit, '--', 'run', '--quiet', script], { encoding: 'utf8', env, cwd: root })
  assert.equal(r.status, 3, r.stderr)
  assert.equal(r.stdout, 'ABhi there\nNotCapable\n')
  assert.match(r.stderr, /deno broker: 4 checks, 3 allowed, 1 denied/)
  assert.match(r.stderr, /denied fs\.read not_allowlisted x1/)
  assert.match(r.stderr, /shadow would deny fs\.read not_allowlisted x2/)
  assert.match(r.stderr, /shadow would deny secrets\.get secret_not_declared x1/)
  const entries = fs.readFileSync(audit, 'utf8').trim().split('\n').map((l) => JSON.parse(l))
  assert.deepEqual(
    entries.map((e) => [e.permission, e.allowed, e.shadow.allowed]),
    [
      ['read', true, true],
      ['read', true, false],
      ['env', true, false],
      ['read', false, false],
    ],
  )
  // --json: the summary as one JSON object on stdout after deno's output.
  const j = spawnSync(process.execPath, [BIN, 'deno', manifest, '--json', '--', 'run', '--quiet', script], { encoding: 'utf8', env, cwd: root })
  assert.equal(j.status, 3)
  const summary = JSON.parse(j.stdout.trim().split('\n').at(-1))
  assert.equal(summary.exitCode, 3)
  assert.equal(summary.stats.denied, 1)
  // learn --from reads the audit log: the learned manifest allows every call the script asked for,
  // denied ones included (that is what it needs; review before adopting).
  const l = spawnSync(process.execPath, [BIN, 'learn', '--from', audit, '--json'], { encoding: 'utf8' })
  assert.equal(l.status, 0, l.stderr)
  const learned = JSON.parse(l.stdout)
  assert.deepEqual(learned.manifest.secrets, ['GREETING'])
  assert.deepEqual(learned.manifest.fs.map((g) => [g.path, g.mode]), [[`${root}/data/a.txt`, 'read'], [`${root}/data/b.txt`, 'read'], ['/etc/passwd', 'read']])
  assert.deepEqual(learned.unlearned, [])
  assert.equal(learned.calls, 4)
  // Usage errors: no manifest, no deno args, unknown flag.
  assert.equal(spawnSync(process.execPath, [BIN, 'deno', manifest], { encoding: 'utf8' }).status, 2)
  assert.equal(spawnSync(process.execPath, [BIN, 'deno', '--', 'run', script], { encoding: 'utf8' }).status, 2)
  assert.equal(spawnSync(process.execPath, [BIN, 'deno', manifest, '--nope', '--', 'run', script], { encoding: 'utf8' }).status, 2)
  const bad = path.join(root, 'bad.json')
  fs.writeFileSync(bad, JSON.stringify({ fs: ['relative'] }))
  const b = spawnSync(process.execPath, [BIN, 'deno', bad, '--', 'run', script], { encoding: 'utf8', env })
  assert.equal(b.status, 2)
  assert.match(b.stderr, /INVALID_MANIFEST at \/fs\/0/)
})

test('real deno: an unreachable broker ends deno with exit code 87 (fail closed)', { skip, timeout: 30_000 }, () => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'deno-real-')))
  try {
    fs.writeFileSync(path.join(root, 's.ts'), 'console.log("ran")')
    const r = spawnSync(deno, ['run', '--quiet', path.join(root, 's.ts')], { encoding: 'utf8', env: { ...denoEnv(root), DENO_PERMISSION_BROKER_PATH: path.join(root, 'nothing.sock') } })
    assert.equal(r.status, 87)
    assert.equal(r.stdout, '')
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
})

test('real deno: Deno connects once, at startup, and asks one request at a time', { skip, timeout: 30_000 }, async (t) => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'deno-real-')))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  const policy = PermissionPolicy.fromManifest({ fs: [`${root}/**`] }, { plugin: 'deno-proto' })
  // No permission check at all: Deno still connects (and would exit 87 without a broker).
  const quiet = await runScript(root, policy, 'console.log(JSON.stringify({ name: "quiet", ok: true }))')
  assert.equal(quiet.exitCode, 0)
  assert.equal(quiet.stats.connections, 1)
  assert.equal(quiet.stats.requests, 0)
  // Concurrent reads from the script still arrive as increasing ids on one connection.
  const many = await runScript(root, policy, `await Promise.all(Array.from({ length: 20 }, (_, i) => Deno.readTextFile('${root}/f' + i).catch(() => null))); console.log(JSON.stringify({ name: 'many', ok: true }))`)
  assert.equal(many.stats.connections, 1)
  assert.equal(many.stats.requests, 20)
  const ids = many.decisions.map((d) => d.id)
  assert.deepEqual(ids, [...ids].sort((a, b) => a - b))
  assert.ok(many.decisions.every((d) => d.pid === many.decisions[0].pid && d.allowed))
})

test('raw TCP to a granted IPv6 loopback port', { skip: skip || (!hasIpv6() && 'no IPv6 loopback'), timeout: 30_000 }, async (t) => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'deno-real-')))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  const server = net.createServer((s) => s.end('v6'))
  await new Promise((r) => server.listen(0, '::1', r))
  t.after(() => server.close())
  const port = server.address().port
  const policy = PermissionPolicy.fromManifest({ fetch: [`[::1]:${port}`] }, { plugin: 'deno-v6' })
  const r = await runScript(
    root,
    policy,
    `${PRELUDE}
await attempt('v6 granted', async () => { const c = await Deno.connect({ hostname: '::1', port: ${port} }); c.close(); return 'connected' })
await attempt('v6 other port', async () => { const c = await Deno.connect({ hostname: '::1', port: ${port === 65535 ? 65534 : port + 1} }); c.close(); return 'connected' })`,
  )
  assert.deepEqual(
    r.decisions.map((d) => [d.value, d.allowed]),
    [
      [`[::1]:${port}`, true],
      [`[::1]:${port === 65535 ? 65534 : port + 1}`, false],
    ],
  )
  assert.equal(r.lines[0].ok, true)
  assert.equal(r.lines[1].error, 'NotCapable')
})

function hasIpv6() {
  return Object.values(os.networkInterfaces())
    .flat()
    .some((i) => i && i.family === 'IPv6' && i.address === '::1')
}

test('real deno: a grant of one path admits no raw host, so deno reaches no path on it; a grant without a path does (SPEC §17)', { skip, timeout: 30_000 }, async (t) => {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'deno-real-')))
  t.after(() => fs.rmSync(root, { recursive: true, force: true }))
  const hits = []
  const scoped = await listen((req, res) => {
    hits.push(req.url)
    res.end('must not be reached')
  })
  const whole = await listen((req, res) => res.end(`whole ${req.url}`))
  t.after(() => {
    scoped.close()
    whole.close()
  })
  const [sp, wp] = [scoped.address().port, whole.address().port]
  // `/` only on one port, `/**` on another origin of the same server, the whole origin on the third.
  const policy = PermissionPolicy.fromManifest({ fetch: [`http://127.0.0.1:${sp}/`, `localhost:${sp}/**`, `http://127.0.0.1:${wp}`] }, { plugin: 'deno-scoped' })
  assert.equal(policy.checkFetch(`http://127.0.0.1:${sp}/`).allowed, true)
  assert.equal(policy.checkFetch(`http://127.0.0.1:${sp}/secret`).reason, 'path_not_allowed')
  const r = await runScript(
    root,
    policy,
    `${PRELUDE}
await attempt('scoped root', () => fetch('http://127.0.0.1:${sp}/').then((r) => r.text()))
await attempt('scoped secret', () => fetch('http://127.0.0.1:${sp}/secret').then((r) => r.text()))
await attempt('scoped via localhost', () => fetch('http://localhost:${sp}/a%2Fb').then((r) => r.text()))
await attempt('scoped tcp', async () => { const c = await Deno.connect({ hostname: '127.0.0.1', port: ${sp} }); c.close(); return 'connected' })
await attempt('whole', () => fetch('http://127.0.0.1:${wp}/any/path').then((r) => r.text()))`,
  )
  assert.equal(r.exitCode, 0, r.stderr)
  const by = Object.fromEntries(r.lines.map((l) => [l.name, l]))
  for (const name of ['scoped root', 'scoped secret', 'scoped via localhost', 'scoped tcp']) {
    assert.equal(by[name].ok, false, `${name}: ${JSON.stringify(by[name])}`)
    assert.match(by[name].message, /PERMISSION_DENIED fetch path_not_allowed\b/, name)
  }
  assert.deepEqual(by.whole, { name: 'whole', ok: true, value: 'whole /any/path' })
  assert.deepEqual(hits, [], 'the path-scoped server was never reached')
})
