'use strict'
// The two WASI hosts against each other (SPEC §14, §16): the same hostile
// guests run under the Node host (examples/wasi-host: node:wasi in a worker)
// and the Rust host (examples/wasi-host-rs: wasmtime, through its `run`
// example, which prints one JSON outcome), each in its own fresh copy of the
// same world (real files and symlinks in a temp dir, a real HTTP server on
// 127.0.0.1, a real OpenTelemetry meter). Every errno the guest sees, every
// counter and the budget outcome must be the same in both, and what each
// guest is allowed to leave on disk too. The expected errnos are written from
// the SPEC (EACCES for a denied path, budgets from instantiation), so a
// divergence is pinned to the host that is wrong, not averaged.
//
// WAT guests are assembled by wabt; C guests (examples/wasi-host/guests/c) are
// built from source by clang with wasi-libc (Debian: `apt-get install clang
// lld wasi-libc`); without them the C half is skipped with the reason. The
// Rust half needs cargo (it builds the `run` example of examples/wasi-host-rs).
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawn, spawnSync } = require('node:child_process')
const { PermissionPolicy } = require('..')
const { meterHarness } = require('./helpers.js')
const { runWasiPlugin, assembleWat } = require('../examples/wasi-host/host.js')
const { SELECTION } = require('../scripts/cargo-test.js')
const fx = require('../examples/wasi-host/fixture.js')

const C_GUESTS = path.join(__dirname, '..', 'examples', 'wasi-host', 'guests', 'c')
const E = fx.ERRNO

const skipPlatform = process.platform !== 'linux' && 'the fixtures plant posix symlinks; the Rust host reads thread CPU time'

/** Builds the Rust host's `run` example; `{ bin }` or `{ skip }` when cargo is absent. */
function rustRunner() {
  if (spawnSync('cargo', ['--version']).error) return { skip: 'cargo is not installed: the Rust WASI host cannot be built' }
  // The selection `npm run test:rust` builds with, so after it this is a no-op.
  const r = spawnSync('cargo', ['build', ...SELECTION, '--example', 'run', '--message-format', 'json-render-diagnostics'], {
    cwd: path.join(__dirname, '..'),
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  })
  if (r.status !== 0) throw new Error(`building the Rust WASI host failed:\n${r.stderr}`)
  for (const line of r.stdout.split('\n')) {
    if (!line.startsWith('{')) continue
    const m = JSON.parse(line)
    if (m.reason === 'compiler-artifact' && m.target && m.target.name === 'run' && m.executable) return { bin: m.executable }
  }
  throw new Error('cargo built no `run` executable')
}

/** clang and a wasi-libc sysroot; `{ clang, sysroot }` or `{ skip }`. */
function cToolchain() {
  if (spawnSync('clang', ['--version']).error) return { skip: 'clang is not installed (Debian: apt-get install clang lld wasi-libc)' }
  const sysroot = ['/usr/share/wasi-sysroot', '/usr'].find((d) => fs.existsSync(path.join(d, 'lib', 'wasm32-wasi', 'libc.a')))
  if (!sysroot) return { skip: 'wasi-libc is not installed (Debian: apt-get install wasi-libc)' }
  return { clang: 'clang', sysroot }
}

function compileC(tc, name, dir) {
  const out = path.join(dir, `${name}.wasm`)
  // -nodefaultlibs -lc: Debian ships compiler-rt's wasm32 builtins in another
  // package; the guests use nothing that needs them.
  const r = spawnSync(tc.clang, ['--target=wasm32-wasi', `--sysroot=${tc.sysroot}`, '-O1', '-nodefaultlibs', '-lc', '-o', out, path.join(C_GUESTS, `${name}.c`)], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`clang ${name}.c failed:\n${r.stderr}`)
  return out
}

/** A fresh world: the fixture's files and links plus plantLinks(), then the case's own `setup(root)`. */
function world(setup) {
  const root = fx.plantLinks(fx.makeRoot('wasi-diff-'))
  if (setup) setup(root)
  return root
}

/** What is on disk under root: [relative path, type, content or link target (root as `<root>`)]. */
function snapshot(root) {
  const out = []
  const walk = (rel) => {
    const abs = path.join(root, rel)
    for (const name of fs.readdirSync(abs).sort()) {
      const r = rel ? `${rel}/${name}` : name
      const st = fs.lstatSync(path.join(root, r))
      if (st.isSymbolicLink()) out.push([r, 'link', fs.readlinkSync(path.join(root, r)).split(root).join('<root>')])
      else if (st.isDirectory()) {
        out.push([r, 'dir', ''])
        walk(r)
      } else out.push([r, 'file', fs.readFileSync(path.join(root, r), 'utf8')])
    }
  }
  walk('')
  return out
}

const config = (root, port, plugin) => ({
  plugin,
  preopens: [
    ['/data', `${root}/data`],
    ['/out', `${root}/out`],
  ],
  args: [plugin, `http://127.0.0.1:${port}/hello`],
  secrets: Object.fromEntries(fx.SECRETS),
})

/** The fixture's manifest, with a case's extra deny globs (`deny(root)`). */
function manifest(root, port, budgets, deny) {
  const m = fx.manifestFor(root, port, budgets)
  if (deny) m.deny.fs.push(...deny(root))
  return m
}

async function runNode(wasm, { budgets, port, plugin, setup, deny }) {
  const root = world(setup)
  const m = meterHarness()
  const c = config(root, port, plugin)
  const r = await runWasiPlugin({
    name: plugin,
    wasm,
    policy: PermissionPolicy.fromManifest(manifest(root, port, budgets, deny), { plugin }),
    meter: m.meter,
    preopens: Object.fromEntries(c.preopens),
    args: c.args,
    secrets: new Map(fx.SECRETS),
  })
  const counters = (await m.points())
    .filter((p) => p.attributes.plugin === plugin && p.value > 0)
    .map((p) => [p.name, p.attributes.capability, p.attributes.reason, p.value])
    .sort()
  await m.shutdown()
  let outcome
  if (r.ok) outcome = { kind: 'exited', code: r.value }
  else if (r.code === 'BUDGET_EXCEEDED') outcome = { kind: 'budget', budget: r.budget }
  else if (r.code === 'ERR_WASI_EXIT') outcome = { kind: 'exited', code: Number(String(r.message).replace('exit code ', '')) }
  else outcome = { kind: 'trap', message: r.message }
  return { outcome, reports: r.reports.map((x) => [x.tag, x.value]), counters, disk: snapshot(root) }
}

/** The Rust host in a child process (asynchronously: the HTTP server it fetches from runs in this one). */
async function runRust(bin, guestFile, { budgets, port, plugin, setup, deny }) {
  const root = world(setup)
  const c = config(root, port, plugin)
  const child = spawn(bin, [], { stdio: ['pipe', 'pipe', 'pipe'] })
  const chunks = { out: [], err: [] }
  child.stdout.on('data', (b) => chunks.out.push(b))
  child.stderr.on('data', (b) => chunks.err.push(b))
  child.stdin.end(JSON.stringify({ guest: guestFile, manifest: manifest(root, port, budgets, deny), ...c }))
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
  const status = await new Promise((resolve) => child.on('close', resolve))
  clearTimeout(timer)
  if (status !== 0) throw new Error(`the Rust host failed (${status}): ${Buffer.concat(chunks.err)}`)
  const o = JSON.parse(Buffer.concat(chunks.out).toString('utf8'))
  const outcome = o.outcome.kind === 'budget' ? { kind: 'budget', budget: o.outcome.budget } : o.outcome
  return { outcome, reports: o.reports, counters: o.counters.filter((x) => x[3] > 0), disk: snapshot(root) }
}


/**
 * The guests, each with what the SPEC says it must see. `expect`: the reports
 * ([tag, errno]) in order; `outcome`: how the run ends.
 */
const WAT_CASES = [
  {
    name: 'good',
    budgets: { wallClockMs: 10_000 },
    expect: [['read', 0], ['secret', 0], ['fetch', 0], ['fetch_status', 200], ['write', 0], ['publish', 0]],
    outcome: { kind: 'exited', code: 0 },
  },
  { name: 'hostile', budgets: { wallClockMs: 1000 }, expect: fx.HOSTILE_TAGS.map((t) => [t, E.ACCES]), outcome: { kind: 'budget', budget: 'wallClockMs' } },
  { name: 'edge', budgets: { wallClockMs: 10_000 }, expect: fx.EDGE_REPORTS, outcome: { kind: 'exited', code: 0 } },
  { name: 'symlink', budgets: { wallClockMs: 10_000 }, expect: fx.SYMLINK_REPORTS, outcome: { kind: 'exited', code: 0 } },
  { name: 'fdops', budgets: { wallClockMs: 10_000 }, expect: fx.FDOPS_REPORTS, outcome: { kind: 'exited', code: 0 } },
  { name: 'start', plugin: 'start-wall', budgets: { wallClockMs: 500 }, expect: [], outcome: { kind: 'budget', budget: 'wallClockMs' } },
  { name: 'start', plugin: 'start-cpu', budgets: { wallClockMs: 60_000, cpuPercent: 10 }, expect: [], outcome: { kind: 'budget', budget: 'cpuPercent' } },
  // A guest blocked in a host call (a 2^64-1 ns poll_oneoff) is ended by its wall
  // clock as a spinning one is; the honest 50 ms sleep before it gets its event.
  { name: 'sleep', budgets: { wallClockMs: 1000 }, expect: [['short', 0], ['nevents', 1], ['userdata', 1], ['cpu_clock', 28]], outcome: { kind: 'budget', budget: 'wallClockMs' } },
]

const C_CASES = [
  {
    name: 'hostile',
    plugin: 'c-hostile',
    budgets: { wallClockMs: 1500 },
    expect: [
      ['c_nofollow_read_link_outside', E.ACCES],
      ['c_follow_read_link_outside', E.ACCES],
      ['c_nofollow_trunc_link_into_read_grant', E.ACCES],
      ['c_nofollow_create_through_dangling', E.ACCES],
      ['c_nofollow_link_inside', E.LOOP],
      ['c_nofollow_excl_on_link', E.EXIST],
      ['c_create_through_intermediate_link', E.ACCES],
      // wasi-libc asks every right a read-only open does not exclude (fd_sync,
      // the set-times rights): SPEC §14 makes any write right a write, so even a
      // plain O_RDONLY open in a read grant is denied, in both hosts.
      ['c_read_in_read_grant', E.ACCES],
      ['c_write_in_readwrite_grant', E.OK],
      ['c_stat_follow_link_outside', E.ACCES],
      ['c_lstat_link', E.OK],
      ['c_readlink_absolute_target', E.PERM],
      ['c_mkdir_through_intermediate_link', E.ACCES],
      ['c_rename_out_through_link', E.ACCES],
      ['c_set_times_data_preopen', E.ACCES],
      ['c_ftruncate_out_preopen', E.ACCES],
      ['c_write_data_preopen', E.ACCES],
      ['c_fstat_data_preopen', E.ACCES],
      ['c_fsync_out_preopen', E.ACCES],
      ['c_fallocate_out_preopen', E.ACCES],
      ['c_write_unknown_fd', E.BADF],
    ],
    outcome: { kind: 'budget', budget: 'wallClockMs' },
  },
]

async function differential(t, bin, wasm, guestFile, c, port) {
  const plugin = c.plugin || c.name
  const opts = { budgets: c.budgets, port, plugin, setup: c.setup, deny: c.deny }
  const node = await runNode(wasm, opts)
  const rust = await runRust(bin, guestFile, opts)
  // The SPEC first (which host is wrong), then each other (nothing else differs).
  assert.deepEqual(node.reports, c.expect, `${plugin}: Node host errnos`)
  assert.deepEqual(rust.reports, c.expect, `${plugin}: Rust host errnos`)
  assert.deepEqual(node.outcome, c.outcome, `${plugin}: Node host outcome`)
  assert.deepEqual(rust.outcome, c.outcome, `${plugin}: Rust host outcome`)
  assert.deepEqual(node.counters, rust.counters, `${plugin}: counters`)
  const denials = c.expect.filter(([, e]) => e === E.ACCES).length
  const sumOf = (name) => node.counters.filter((x) => x[0] === name).reduce((a, x) => a + x[3], 0)
  assert.equal(sumOf('plugin.permission_denied_total'), denials, `${plugin}: one count per EACCES`)
  assert.equal(sumOf('plugin.budget_exceeded_total'), c.outcome.kind === 'budget' ? 1 : 0, `${plugin}: budget counted once`)
  assert.deepEqual(node.disk, rust.disk, `${plugin}: what is left on disk`)
  return { node, rust }
}

test('WASI hosts agree: WAT guests (errnos, counters, budget outcomes, disk)', { skip: skipPlatform, timeout: 600_000 }, async (t) => {
  const runner = rustRunner()
  if (runner.skip) return t.skip(runner.skip)
  const { server, port } = await fx.startServer()
  t.after(() => server.close())
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wasi-diff-wat-'))
  for (const c of WAT_CASES) {
    const wasm = await assembleWat(fs.readFileSync(fx.guestPath(c.name), 'utf8'), `${c.name}.wat`)
    const file = path.join(dir, `${c.name}.wasm`)
    fs.writeFileSync(file, wasm)
    const { node } = await differential(t, runner.bin, wasm, file, c, port)
    if (c.name === 'symlink' || c.name === 'fdops') {
      // Nothing outside the grants changed: the secret, the dangling link's target, the outside dir.
      const disk = new Map(node.disk.map(([p, type, v]) => [p, `${type}:${v}`]))
      assert.equal(disk.get('secret-outside.txt'), 'file:TOP SECRET\n')
      assert.equal(disk.get('data/input.txt'), 'file:hello from a file\n')
      assert.equal(disk.has('created-outside.txt'), false)
      assert.equal(disk.has('outside-dir/x'), false)
    }
  }
})

test('WASI hosts agree: C guests built from source with clang and wasi-libc', { skip: skipPlatform, timeout: 600_000 }, async (t) => {
  const tc = cToolchain()
  if (tc.skip) return t.skip(tc.skip)
  const runner = rustRunner()
  if (runner.skip) return t.skip(runner.skip)
  const { server, port } = await fx.startServer()
  t.after(() => server.close())
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wasi-diff-c-'))
  for (const c of C_CASES) {
    const file = compileC(tc, c.name, dir)
    const { node } = await differential(t, runner.bin, fs.readFileSync(file), file, c, port)
    const disk = new Map(node.disk.map(([p, type, v]) => [p, `${type}:${v}`]))
    assert.equal(disk.get('secret-outside.txt'), 'file:TOP SECRET\n')
    assert.equal(disk.has('created-outside.txt') || disk.has('outside-dir/x') || disk.has('outside-dir/inner'), false)
  }
})

test('WASI hosts: memoryMb bounds every memory together in the Rust host; the Node host refuses it rather than leave it unenforced', { skip: skipPlatform, timeout: 600_000 }, async (t) => {
  const runner = rustRunner()
  if (runner.skip) return t.skip(runner.skip)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wasi-diff-mem-'))
  const file = path.join(dir, 'memories.wasm')
  const wasm = await assembleWat(fs.readFileSync(fx.guestPath('memories'), 'utf8'), 'memories.wat', { multi_memory: true })
  fs.writeFileSync(file, wasm)
  const policy = PermissionPolicy.fromManifest({ budgets: { memoryMb: 4 } }, { plugin: 'mem' })
  assert.throws(() => runWasiPlugin({ name: 'mem', wasm, policy }), { name: 'TypeError', message: /memoryMb/ })
  // 8 memories of 2 MiB: each under 4 MB, together over it.
  const rust = await runRust(runner.bin, file, { budgets: { memoryMb: 4 }, port: 1, plugin: 'mem' })
  assert.deepEqual(rust.outcome, { kind: 'budget', budget: 'memoryMb' })
  assert.deepEqual(rust.reports, [])
  assert.deepEqual(rust.counters, [['plugin.budget_exceeded_total', 'request', 'memory', 1]])
})

/**
 * A directory of 9,990 symlinks deep in /out (400 levels: each link's target
 * resolves through the whole depth), and a guest that renames it back and
 * forth: the host's walk over the links it moves (each checked for what it
 * means from its new place) takes far longer than the 1 s wall clock. The
 * walk asks the budget before every entry, so the run ends with the budget
 * outcome, counted once, in both hosts, and the rename is never performed
 * (no report: the call never returned). Before, the walk never looked at
 * the clock and held either host about a minute.
 */
const WALK_DEPTH = 400
const WALK_LINKS = 9_990
const walkDir = `walk/${'d/'.repeat(WALK_DEPTH)}many`
function plantWalk(root) {
  const dir = path.join(root, 'out', walkDir)
  fs.mkdirSync(dir, { recursive: true })
  for (let i = 0; i < WALK_LINKS; i++) fs.symlinkSync(`../f${i}`, path.join(dir, `l${i}`))
}
function renameLoopWat() {
  const a = Buffer.from(walkDir)
  const b = Buffer.from(`${walkDir}2`)
  return `(module
  (import "wasi_snapshot_preview1" "path_rename" (func $rename (param i32 i32 i32 i32 i32 i32) (result i32)))
  (import "host" "report" (func $report (param i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "rename")
  (data (i32.const 1024) "${a}")
  (data (i32.const 8192) "${b}")
  (func (export "_start")
    (loop $again
      (call $report (i32.const 16) (i32.const 6) (call $rename (i32.const 4) (i32.const 1024) (i32.const ${a.length}) (i32.const 4) (i32.const 8192) (i32.const ${b.length})))
      (call $report (i32.const 16) (i32.const 6) (call $rename (i32.const 4) (i32.const 8192) (i32.const ${b.length}) (i32.const 4) (i32.const 1024) (i32.const ${a.length})))
      (br $again))))`
}

test('WASI hosts agree: a rename walking 9,990 links is stopped by the wall-clock budget (counted once, never performed)', { skip: skipPlatform, timeout: 600_000 }, async (t) => {
  const runner = rustRunner()
  if (runner.skip) return t.skip(runner.skip)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wasi-diff-walk-'))
  const wasm = await assembleWat(renameLoopWat(), 'walk.wat')
  const file = path.join(dir, 'walk.wasm')
  fs.writeFileSync(file, wasm)
  const c = { name: 'walk', budgets: { wallClockMs: 1000 }, expect: [], outcome: { kind: 'budget', budget: 'wallClockMs' }, setup: plantWalk }
  const { node } = await differential(t, runner.bin, wasm, file, c, 1)
  const disk = new Set(node.disk.map(([p]) => p))
  assert.ok(disk.has(`out/${walkDir}/l0`) && !disk.has(`out/${walkDir}2`), 'not renamed')
})

/**
 * A directory whose name starts with U+FEFF, holding a file a deny names
 * under another spelling (the deny fold drops what HFS+ ignores): the guest
 * renames the directory away and reads the file from its new name. The
 * gate must check the name the runtime acts on, byte for byte (a UTF-8
 * decoder that drops a leading BOM checked `vault`, which does not exist,
 * while node:wasi renamed `\uFEFFvault`), and refuse the rename: the deny
 * reaches below it.
 */
test('WASI hosts agree: a rename is checked on the name the runtime renames (a leading U+FEFF kept) and refused where a folded deny reaches', { skip: skipPlatform, timeout: 600_000 }, async (t) => {
  const runner = rustRunner()
  if (runner.skip) return t.skip(runner.skip)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wasi-diff-bom-'))
  const from = Buffer.from('\uFEFFvault')
  const wat = `(module
  (import "wasi_snapshot_preview1" "path_rename" (func $rename (param i32 i32 i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_open" (func $open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $read (param i32 i32 i32 i32) (result i32)))
  (import "host" "report" (func $report (param i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "rename")
  (data (i32.const 32) "open")
  (data (i32.const 48) "read")
  (data (i32.const 64) "${[...from].map((b) => `\\${b.toString(16).padStart(2, '0')}`).join('')}")
  (data (i32.const 96) "moved")
  (data (i32.const 112) "moved/k")
  (data (i32.const 128) "\\00\\02\\00\\00\\10\\00\\00\\00")
  (func (export "_start") (local $e i32)
    (call $report (i32.const 16) (i32.const 6) (call $rename (i32.const 4) (i32.const 64) (i32.const ${from.length}) (i32.const 4) (i32.const 96) (i32.const 5)))
    (local.set $e (call $open (i32.const 4) (i32.const 1) (i32.const 112) (i32.const 7) (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 0)))
    (call $report (i32.const 32) (i32.const 4) (local.get $e))
    (if (i32.eqz (local.get $e)) (then
      (call $report (i32.const 48) (i32.const 4) (call $read (i32.load (i32.const 0)) (i32.const 128) (i32.const 1) (i32.const 8)))))))`
  const wasm = await assembleWat(wat, 'bom.wat')
  const file = path.join(dir, 'bom.wasm')
  fs.writeFileSync(file, wasm)
  const setup = (root) => {
    fs.mkdirSync(path.join(root, 'out', '\uFEFFvault'))
    fs.writeFileSync(path.join(root, 'out', '\uFEFFvault', 'k'), 'VAULT KEY')
  }
  const c = { name: 'bom', budgets: { wallClockMs: 10_000 }, setup, deny: (root) => [`${root}/out/vault/k`], expect: [['rename', E.ACCES], ['open', 44]], outcome: { kind: 'exited', code: 0 } }
  const { node } = await differential(t, runner.bin, wasm, file, c, 1)
  assert.ok(node.disk.some(([p]) => p === 'out/\uFEFFvault/k'), 'not moved')
})
