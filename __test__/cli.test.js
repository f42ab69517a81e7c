'use strict'
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const http = require('node:http')
const { spawn, spawnSync } = require('node:child_process')

const BIN = path.join(__dirname, '..', 'bin', 'api-sandbox-permissions.js')
const cli = (args, opts = {}) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', ...opts })
const cliAsync = (args) =>
  new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, ...args])
    let stdout = ''
    let stderr = ''
    p.stdout.on('data', (d) => (stdout += d))
    p.stderr.on('data', (d) => (stderr += d))
    p.on('close', (status) => resolve({ status, stdout, stderr }))
  })

function tmp(t) {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'asp-cli-')))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

test('lint: valid, invalid with a pointer, warnings, --strict, --json', (t) => {
  const dir = tmp(t)
  const good = path.join(dir, 'good.json')
  fs.writeFileSync(good, JSON.stringify({ fs: ['/srv/app/data/**'], fetch: ['https://api.example.com'], budgets: { wallClockMs: 1000, memoryMb: 64 } }))
  let r = cli(['lint', good])
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stdout, /valid, 0 warnings/)
  const broad = path.join(dir, 'broad.json')
  fs.writeFileSync(broad, JSON.stringify({ fs: [{ path: '/**', mode: 'readwrite' }], fetch: ['*.co.uk:*'] }))
  r = cli(['lint', broad, '--json'])
  assert.equal(r.status, 0)
  const codes = JSON.parse(r.stdout).warnings.map((w) => `${w.code}@${w.pointer}`)
  for (const c of ['fs-root-wildcard@/fs/0', 'fs-write-near-root@/fs/0/mode', 'fetch-public-suffix@/fetch/0', 'fetch-any-port@/fetch/0', 'fetch-plain-http@/fetch/0', 'budget-missing@/budgets/wallClockMs']) {
    assert.ok(codes.includes(c), `${c} in ${codes}`)
  }
  assert.equal(cli(['lint', broad, '--strict']).status, 1)
  const bad = path.join(dir, 'bad.json')
  fs.writeFileSync(bad, JSON.stringify({ fs: ['/a/**', 'relative/**'] }))
  r = cli(['lint', bad])
  assert.equal(r.status, 1)
  assert.match(r.stdout, /INVALID_MANIFEST at \/fs\/1/)
  assert.deepEqual(JSON.parse(cli(['lint', bad, '--json']).stdout).error.pointer, '/fs/1')
  assert.equal(cli(['lint', path.join(dir, 'missing.json')]).status, 2)
  fs.writeFileSync(path.join(dir, 'notjson.json'), '{')
  assert.equal(cli(['lint', path.join(dir, 'notjson.json')]).status, 2)
})

test('explain: decision, reason and the grant that matched or why none did', (t) => {
  const dir = tmp(t)
  const m = path.join(dir, 'm.json')
  fs.writeFileSync(m, JSON.stringify({ fs: ['/data/**', { path: '/out/*.json', mode: 'write' }], fetch: ['api.example.com', '*.cdn.example.net:8443'], secrets: ['KEY'] }))
  let r = cli(['explain', m, 'fs:read:/data/a/../b.txt'])
  assert.equal(r.status, 0)
  assert.match(r.stdout, /ALLOWED/)
  assert.match(r.stdout, /normalised path: \/data\/b\.txt/)
  assert.match(r.stdout, /matches \/fs\/0 "\/data\/\*\*" \(read\)/)
  r = cli(['explain', m, 'fs:read:/out/x.json'])
  assert.equal(r.status, 1)
  assert.match(r.stdout, /DENIED fs.read mode_not_granted/)
  assert.match(r.stdout, /matches \/fs\/1 .*not for this mode/)
  r = cli(['explain', m, 'fs:read:/etc/passwd', '--json'])
  assert.equal(r.status, 1)
  assert.deepEqual(JSON.parse(r.stdout).matchedGrants, [])
  r = cli(['explain', m, 'fetch:https://a.cdn.example.net/x'])
  assert.equal(r.status, 1)
  assert.match(r.stdout, /DENIED fetch port_not_allowed/)
  assert.match(r.stdout, /host matches \/fetch\/1 "\*\.cdn\.example\.net:8443": scheme ok, port not granted/)
  r = cli(['explain', m, 'fetch:https://evil.example/'])
  assert.match(r.stdout, /no pattern matches this host/)
  r = cli(['explain', m, 'cap:secrets.get:{"name":"KEY"}'])
  assert.equal(r.status, 0)
  assert.match(r.stdout, /declared at \/secrets\/0/)
  r = cli(['explain', m, 'cap:__proto__:{}'])
  assert.equal(r.status, 1)
  assert.match(r.stdout, /unknown_capability/)
  assert.equal(cli(['explain', m, 'nonsense']).status, 2)
  assert.equal(cli(['explain', m]).status, 2)
})

test('learn: audit mode records a real plugin run and prints the minimal manifest', { skip: process.platform === 'win32' && 'posix paths' }, async (t) => {
  const dir = tmp(t)
  fs.mkdirSync(path.join(dir, 'data'))
  fs.writeFileSync(path.join(dir, 'data', 'in[1].txt'), 'x')
  const server = http.createServer((req, res) => res.end('pong'))
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  t.after(() => server.close())
  const port = server.address().port
  const plugin = path.join(dir, 'plugin.js')
  fs.writeFileSync(
    plugin,
    `await fs.readFile(config.root + '/data/in[1].txt')
     await fs.writeFile(config.root + '/data/out.txt', 'y')
     await fs.readFile(config.root + '/data/out.txt')
     await fetch(config.api + '/ping?q=1')
     await secrets.get('TOKEN').catch(() => null)
     await events.publish('jobs.done', {})
     return 'done'`,
  )
  const config = path.join(dir, 'config.json')
  fs.writeFileSync(config, JSON.stringify({ root: dir, api: `http://127.0.0.1:${port}` }))
  const r = await cliAsync(['learn', plugin, '--config', config, '--json', '--platform', 'posix'])
  assert.equal(r.status, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  assert.deepEqual(out.manifest, {
    fs: [
      { path: `${dir}/data/in[[]1[]].txt`, mode: 'read' },
      { path: `${dir}/data/out.txt`, mode: 'readwrite' },
    ],
    fetch: [`http://127.0.0.1:${port}`],
    secrets: ['TOKEN'],
    events: { publishes: ['jobs.done'] },
  })
  assert.deepEqual(out.misses, [])
  assert.equal(fs.readFileSync(path.join(dir, 'data', 'out.txt'), 'utf8'), 'y', 'audit mode performs the calls')
})

test('learn --from a recorded log', (t) => {
  const dir = tmp(t)
  const log = path.join(dir, 'audit.jsonl')
  fs.writeFileSync(
    log,
    [
      { capability: 'fetch', payload: { url: 'https://api.example.com:443/a' } },
      { capability: 'fetch', payload: { url: 'https://api.example.com/b' } },
      { capability: 'fetch', payload: { url: 'http://10.0.0.1:8080/' } },
      { capability: 'db.query', payload: { database: 'main', sql: 'select 1' } },
      { capability: 'events.subscribe', payload: { topic: 'orders.*' } },
      { capability: 'net.raw', payload: {} },
    ]
      .map((l) => JSON.stringify(l))
      .join('\n'),
  )
  const r = cli(['learn', '--from', log, '--json'])
  assert.equal(r.status, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  // A subscription may itself be a pattern (SPEC §4): learned as written. Calls are numbered from 1.
  assert.deepEqual(out.manifest, { fetch: ['https://api.example.com', 'http://10.0.0.1:8080'], events: { subscribes: ['orders.*'] }, db: { database: 'main' } })
  assert.deepEqual(
    out.unlearned.map((u) => [u.capability, u.call]),
    [['net.raw', 6]],
  )
  assert.equal(out.unlearned[0].why, 'unknown capability')
  assert.equal(cli(['learn', '--from', path.join(dir, 'nope.jsonl')]).status, 2)
})

test('usage errors exit 2', () => {
  assert.equal(cli([]).status, 2)
  assert.equal(cli(['frobnicate']).status, 2)
  assert.equal(cli(['lint', '--platform', 'darwin', 'x.json']).status, 2)
  assert.equal(cli(['lint', '--bogus']).status, 2)
})

test('--help, -h, help <command> and <command> --help print to stdout and exit 0', () => {
  for (const args of [['--help'], ['-h'], ['help']]) {
    const r = cli(args)
    assert.equal(r.status, 0, args.join(' '))
    assert.equal(r.stderr, '')
    assert.match(r.stdout, /^usage: api-sandbox-permissions <command>/)
    for (const c of ['lint', 'explain', 'learn']) assert.match(r.stdout, new RegExp(`^  ${c} `, 'm'))
  }
  for (const c of ['lint', 'explain', 'learn']) {
    for (const args of [[c, '--help'], [c, '-h'], ['help', c], [c, 'x.json', '--help']]) {
      const r = cli(args)
      assert.equal(r.status, 0, args.join(' '))
      assert.equal(r.stderr, '')
      assert.match(r.stdout, new RegExp(`^usage: api-sandbox-permissions ${c} `))
      assert.match(r.stdout, /--json/)
    }
  }
  assert.match(cli(['lint', '--help']).stdout, /--strict/)
  assert.match(cli(['learn', '--help']).stdout, /--from <audit\.jsonl>/)
  assert.match(cli(['explain', '--help']).stdout, /fetch:URL/)
})

test('--version prints the package version', () => {
  const r = cli(['--version'])
  assert.equal(r.status, 0)
  assert.equal(r.stdout.trim(), require('../package.json').version)
})

test('--flag=value and --platform=win32 are accepted', (t) => {
  const dir = tmp(t)
  const m = path.join(dir, 'm.json')
  fs.writeFileSync(m, JSON.stringify({ fs: ['C:\\data\\**'], budgets: { wallClockMs: 1, memoryMb: 1, cpuPercent: 1 } }))
  let r = cli(['explain', m, 'fs:read:c:/DATA/x.txt', '--platform=win32'])
  assert.equal(r.status, 0, r.stdout + r.stderr)
  assert.match(r.stdout, /ALLOWED/)
  r = cli(['lint', m, '--platform=win32', '--json'])
  assert.equal(r.status, 0, r.stderr)
  assert.equal(JSON.parse(r.stdout).valid, true)
  // The same manifest is relative on posix.
  r = cli(['lint', `--platform=posix`, m])
  assert.equal(r.status, 1)
  assert.match(r.stdout, /INVALID_MANIFEST at \/fs\/0/)
  const log = path.join(dir, 'a.jsonl')
  fs.writeFileSync(log, JSON.stringify({ capability: 'secrets.get', payload: { name: 'K' } }))
  r = cli(['learn', `--from=${log}`, '--json'])
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout).manifest, { secrets: ['K'] })
})

test('I/O errors: one line, exit 2, no usage text; under --json a JSON error on stdout', (t) => {
  const dir = tmp(t)
  const missing = path.join(dir, 'missing.json')
  for (const args of [['lint', missing], ['explain', missing, 'fs:read:/x'], ['learn', missing], ['learn', '--from', missing]]) {
    const r = cli(args)
    assert.equal(r.status, 2, args.join(' '))
    assert.equal(r.stdout, '')
    assert.equal(r.stderr, `api-sandbox-permissions: cannot read ${missing}: no such file\n`, args.join(' '))
    const j = cli([...args, '--json'])
    assert.equal(j.status, 2)
    assert.equal(j.stderr, '')
    assert.deepEqual(JSON.parse(j.stdout), { error: { kind: 'input', message: `cannot read ${missing}: no such file` } })
  }
  fs.writeFileSync(path.join(dir, 'bad.json'), '{')
  const r = cli(['lint', path.join(dir, 'bad.json'), '--json'])
  assert.equal(r.status, 2)
  assert.equal(JSON.parse(r.stdout).error.kind, 'input')
  assert.match(JSON.parse(r.stdout).error.message, /is not JSON/)
})

test('usage errors: the message and the command usage on stderr; under --json a JSON error', () => {
  let r = cli(['lint', '--bogus'])
  assert.equal(r.status, 2)
  assert.match(r.stderr, /Unknown option '--bogus'/)
  assert.match(r.stderr, /^usage: api-sandbox-permissions lint /m)
  assert.equal(r.stdout, '')
  r = cli(['lint', '--bogus', '--json'])
  assert.equal(r.status, 2)
  const e = JSON.parse(r.stdout).error
  assert.equal(e.kind, 'usage')
  assert.match(e.usage, /^api-sandbox-permissions lint /)
  r = cli(['explain', 'm.json', 'nope:x', '--json'])
  assert.equal(r.status, 2)
  assert.match(JSON.parse(r.stdout).error.message, /unknown query/)
  r = cli(['lint', 'x.json', '--platform'])
  assert.equal(r.status, 2)
  assert.match(r.stderr, /--platform/)
  assert.equal(cli(['help', 'nothing']).status, 2)
})

test('learn never crashes: relative paths and values no grant can hold are reported, the manifest stays valid', (t) => {
  const dir = tmp(t)
  const log = path.join(dir, 'audit.jsonl')
  const calls = [
    { capability: 'fs.read', payload: { path: 'relative/config.json' } },
    { capability: 'fs.read', payload: { path: './x' } },
    { capability: 'fs.write', payload: { path: '/srv/a/../b/out.txt' } },
    { capability: 'fs.read', payload: { path: '/srv/ok.txt' } },
    { capability: 'secrets.get', payload: { name: 'K'.repeat(300) } },
    { capability: 'events.publish', payload: { topic: 'a..b' } },
    { capability: 'fs.read', payload: null },
  ]
  fs.writeFileSync(log, calls.map((c) => JSON.stringify(c)).join('\n'))
  const r = cli(['learn', '--from', log, '--json', '--platform', 'posix'])
  assert.equal(r.status, 0, r.stdout + r.stderr)
  const out = JSON.parse(r.stdout)
  assert.deepEqual(out.manifest, { fs: [{ path: '/srv/ok.txt', mode: 'read' }] })
  assert.deepEqual(out.unlearned.map((u) => u.call), [1, 2, 3, 5, 6, 7])
  assert.match(out.unlearned[0].why, /relative path "relative\/config\.json": a grant must be an absolute path/)
  assert.match(out.unlearned[2].why, /is not a valid grant \(\/fs\/0/)
  assert.deepEqual(out.misses, [])
  // In text mode the manifest is on stdout and what was not learned on stderr.
  const text = cli(['learn', '--from', log, '--platform', 'posix'])
  assert.equal(text.status, 0)
  assert.deepEqual(JSON.parse(text.stdout), { fs: ['/srv/ok.txt'] })
  assert.match(text.stderr, /not learned: call 1 fs\.read: relative path/)
  // A line that is JSON but not a call is an input error, not a crash.
  fs.writeFileSync(log, '5\n')
  const bad = cli(['learn', '--from', log])
  assert.equal(bad.status, 2)
  assert.match(bad.stderr, /:1: expected an object/)
  assert.doesNotMatch(bad.stderr, /at .*\.js:\d+/)
})

test('learnManifest: relative win32 paths too, and a TypeError for non-arrays', () => {
  const { learnManifest } = require('..')
  const r = learnManifest([{ capability: 'fs.read', payload: { path: 'data\\x' } }, { capability: 'fs.read', payload: { path: 'C:\\data\\x' } }], { platform: 'win32' })
  assert.deepEqual(r.manifest, { fs: ['C:\\data\\x'] })
  assert.equal(r.unlearned.length, 1)
  assert.match(r.unlearned[0].why, /relative path/)
  assert.throws(() => learnManifest('x'), TypeError)
})

test('lint: *.suffix on any entry of the full Public Suffix List (private section included) is a warning', () => {
  const { PermissionPolicy } = require('..')
  const warned = (suffix) =>
    PermissionPolicy.fromManifest({ fetch: [`https://*.${suffix}`], budgets: { wallClockMs: 1, memoryMb: 1, cpuPercent: 1 } }, { plugin: 'p' })
      .lint()
      .some((w) => w.code === 'fetch-public-suffix' && w.pointer === '/fetch/0')
  for (const s of ['r2.dev', 'deno.dev', 'supabase.co', 'github.dev', 'co.uk', 'github.io', 's3.amazonaws.com', 'com']) assert.ok(warned(s), s)
  for (const s of ['example.com', 'cdn.example.net', 'my-bucket.r2.dev', 'api.example.co.uk']) assert.ok(!warned(s), s)
})

test('diff: a semantic answer with witnesses; exit 0 nothing widens, 1 widens, --json', (t) => {
  const dir = tmp(t)
  const write = (name, m) => {
    const f = path.join(dir, name)
    fs.writeFileSync(f, JSON.stringify(m))
    return f
  }
  const { PermissionPolicy } = require('..')
  const policyOf = (f) => PermissionPolicy.fromManifest(JSON.parse(fs.readFileSync(f, 'utf8')), { plugin: 'p', platform: 'posix' })
  // Every witness printed: the new policy allows it and the old denies it (narrowing: the reverse).
  const allows = (p, w) =>
    w.capability === 'fs.read' || w.capability === 'fs.write'
      ? p.checkFs(w.path, w.mode).allowed
      : w.capability === 'fetch'
        ? w.resolvedIp === undefined
          ? p.checkFetch(w.url).allowed
          : p.checkFetchAddress(w.url, w.resolvedIp).allowed
        : w.capability === 'budget'
          ? p.budgets[w.budget] === undefined || w.observed <= p.budgets[w.budget]
          : p.checkCapability(w.capability, w.payload).allowed
  const confirmed = (fa, fb, d) => {
    const [a, b] = [policyOf(fa), policyOf(fb)]
    for (const c of d.widens) assert.ok(allows(b, c.witness) && !allows(a, c.witness), JSON.stringify(c))
    for (const c of d.narrows) assert.ok(allows(a, c.witness) && !allows(b, c.witness), JSON.stringify(c))
  }
  // The JS API takes two policies, nothing else.
  const { diffPolicies } = require('..')
  assert.throws(() => diffPolicies({}, policyOf(write('x.json', {}))), TypeError)
  assert.throws(() => diffPolicies(policyOf(write('y.json', {}))), TypeError)
  // The narrowing: /srv/** -> /srv/app/** exits 0, with what was narrowed.
  const srv = write('srv.json', { fs: ['/srv/**'] })
  const app = write('app.json', { fs: ['/srv/app/**'] })
  let r = cli(['diff', srv, app, '--json'])
  assert.equal(r.status, 0, r.stdout + r.stderr)
  let d = JSON.parse(r.stdout)
  assert.equal(d.verdict, 'no-new-authority')
  assert.deepEqual(d.widens, [])
  assert.deepEqual(d.narrows.map((x) => `${x.section} ${x.pointer}`), ['fs /fs/0'])
  confirmed(srv, app, d)
  r = cli(['diff', app, srv])
  assert.equal(r.status, 1)
  assert.match(r.stdout, /\+ widens {2}fs {7}\/fs\/0: read granted on \/srv\/\*\*\n {4}new allows, old denies: fs\.read \/srv\/app\n/)
  // A rewrite that grants the same is no change at all.
  const same = write('same.json', { fs: ['/srv/{app,lib}/**', '/srv/*.json'] })
  const split = write('split.json', { fs: ['/srv/lib/**', '/srv/app/**', '/srv/[a-z]*.json', '/srv/*.json'] })
  r = cli(['diff', same, split])
  assert.equal(r.status, 0, r.stdout)
  assert.match(r.stdout, /no new authority: 0 widenings, 0 narrowings, 0 unknowns/)

  const old = write('old.json', {
    fs: ['/srv/**', { path: '/out/*', mode: 'write' }],
    fetch: ['https://api.example.com'],
    secrets: ['A', { name: 'T', hosts: ['https://api.example.com/v1/**'] }],
    budgets: { wallClockMs: 1000, cpuPercent: 50 },
    deny: { fs: ['/srv/secret/**'] },
  })
  const wider = write('new.json', {
    fs: [{ path: '/srv/**', mode: 'readwrite' }],
    fetch: ['https://api.example.com', 'https://api.example.com:8443', 'http://api.example.com', 'evil.example.org'],
    secrets: [{ name: 'A', hosts: ['https://api.example.com'] }, { name: 'T', hosts: ['https://api.example.com/v1/**', 'https://x.example.org'] }],
    budgets: { wallClockMs: 5000 },
    db: { database: 'd' },
  })
  r = cli(['diff', old, wider, '--json'])
  assert.equal(r.status, 1, r.stderr)
  d = JSON.parse(r.stdout)
  assert.equal(d.verdict, 'widens')
  assert.deepEqual(d.widens.map((x) => `${x.section} ${x.pointer}`), [
    'fs /fs/0',
    'fs /deny/fs/0',
    'fetch /fetch/1',
    'fetch /fetch/2',
    'fetch /fetch/3',
    'fetch /fetch/3',
    'secrets /secrets/0',
    'db /db/database',
    'budgets /budgets/cpuPercent',
    'budgets /budgets/wallClockMs',
  ])
  // T's new host is one the new fetch grants never reach: no widening, proven.
  assert.deepEqual(d.unknown, [])
  assert.deepEqual(d.narrows.map((x) => `${x.section} ${x.pointer}`), ['fs /fs/1', 'secrets /secrets/0'])
  assert.deepEqual(d.widens[1].witness, { capability: 'fs.read', path: '/srv/secret/x', mode: 'read' })
  confirmed(old, wider, d)
  // The reverse change narrows most of it, and widens what the new one bound (A readable again).
  r = cli(['diff', wider, old])
  assert.equal(r.status, 1)
  assert.match(r.stdout, /\+ widens {2}secrets {2}\/secrets\/0: secret A readable\n {4}new allows, old denies: secrets\.get \{"name":"A"\}/)
  assert.match(r.stdout, /- narrows fetch {4}\/fetch\/3: fetch grant evil\.example\.org \(https URLs\) removed or narrowed/)
  // No change: exit 0.
  r = cli(['diff', old, old])
  assert.equal(r.status, 0)
  assert.match(r.stdout, /no new authority: 0 widenings, 0 narrowings, 0 unknowns/)
  // An invalid manifest: exit 2 with its pointer; a usage error: exit 2.
  const bad = write('bad.json', { fs: ['relative'] })
  r = cli(['diff', old, bad])
  assert.equal(r.status, 2)
  assert.match(r.stdout, /INVALID_MANIFEST at \/fs\/0/)
  assert.equal(cli(['diff', old]).status, 2)
})

test('diff: exit 2 when inclusion cannot be proven (a dropped deny rule no path confirms)', (t) => {
  const dir = tmp(t)
  const write = (name, m) => {
    const f = path.join(dir, name)
    fs.writeFileSync(f, JSON.stringify(m))
    return f
  }
  // The old deny denies every spelling of `/a/*` under case folding, `[!b]*`
  // included; the new policy drops it but keeps `/a/b?*` out. Whether the
  // dropped rule removed something from `/a/b` is not decided: 2, never 0.
  const a = write('a.json', { fs: ['/a/*/**'], deny: { fs: ['/a/[!b]*/**', '/a/b?*/**'] } })
  const b = write('b.json', { fs: ['/a/*/**'], deny: { fs: ['/a/b?*/**', '/a/[!bB]*/**'] } })
  const r = cli(['diff', a, b, '--json'])
  const d = JSON.parse(r.stdout)
  assert.ok(r.status === 2 || r.status === 1, r.stdout)
  if (r.status === 2) assert.equal(d.verdict, 'unknown')
  assert.ok(d.unknown.length + d.widens.length > 0)
})

test('diff: 1,000 fs and fetch grants each side, narrowed everywhere but one grant', (t) => {
  // Correctness on a large pair; the time is a benchmark (benches/diff.rs), not asserted here.
  const dir = tmp(t)
  const old = { fs: [], fetch: [] }
  const neu = { fs: [], fetch: [] }
  for (let i = 0; i < 500; i++) {
    old.fs.push(`/srv/app${i}/**`)
    neu.fs.push(`/srv/app${i}/data/*.json`)
    old.fetch.push(`*.svc${i}.example.com`)
    neu.fetch.push(`https://api.svc${i}.example.com/v1/**`)
  }
  neu.fs[321] = '/srv/app321x/**'
  const fa = path.join(dir, 'a.json')
  const fb = path.join(dir, 'b.json')
  fs.writeFileSync(fa, JSON.stringify(old))
  fs.writeFileSync(fb, JSON.stringify(neu))
  let r = cli(['diff', fa, fb, '--json'])
  assert.equal(r.status, 1, r.stderr)
  const d = JSON.parse(r.stdout)
  assert.deepEqual(d.widens.map((x) => x.pointer), ['/fs/321'])
  assert.deepEqual(d.widens[0].witness, { capability: 'fs.read', path: '/srv/app321x/x', mode: 'read' })
  neu.fs[321] = '/srv/app321/x'
  fs.writeFileSync(fb, JSON.stringify(neu))
  r = cli(['diff', fa, fb])
  assert.equal(r.status, 0, r.stdout.slice(-2000))
})

test('learn --generalize: a glob per cluster of 3+ exact fs grants, with what it widens; still allows every call', (t) => {
  const dir = tmp(t)
  const log = path.join(dir, 'audit.jsonl')
  const call = (capability, p) => JSON.stringify({ capability, payload: { path: p } })
  const lines = []
  for (let i = 0; i < 12; i++) lines.push(call('fs.read', `/srv/x/cache/item-${i}.json`))
  lines.push(call('fs.read', '/srv/x/cache/notes.txt'), call('fs.read', '/srv/x/cache/odd[1].json'))
  for (const n of ['a', 'b', 'c']) lines.push(call('fs.write', `/srv/x/out/${n}.log`))
  lines.push(call('fs.read', '/srv/x/out/readme.md'))
  fs.writeFileSync(log, `${lines.join('\n')}\n`)
  let r = cli(['learn', '--from', log, '--generalize', '--platform', 'posix', '--json'])
  assert.equal(r.status, 0, r.stderr + r.stdout)
  const g = JSON.parse(r.stdout).generalized
  assert.deepEqual(
    g.proposals.map((p) => [p.glob, p.mode, p.count, p.note]),
    [
      ['/srv/x/cache/*.json', 'read', 12, '12 reads under /srv/x/cache/*.json'],
      ['/srv/x/out/*.log', 'write', 3, '3 writes under /srv/x/out/*.log'],
    ],
  )
  assert.match(g.proposals[0].widens, /any other \.json file directly in \/srv\/x\/cache \(not below it\)/)
  // What is not in a cluster stays exact (an escaped name, a lone .txt, a lone .md).
  assert.deepEqual(g.manifest.fs, [
    { path: '/srv/x/cache/*.json', mode: 'read' },
    { path: '/srv/x/cache/notes.txt', mode: 'read' },
    { path: '/srv/x/cache/odd[[]1[]].json', mode: 'read' },
    { path: '/srv/x/out/*.log', mode: 'write' },
    { path: '/srv/x/out/readme.md', mode: 'read' },
  ])
  r = cli(['learn', '--from', log, '--generalize', '--platform', 'posix'])
  assert.equal(r.status, 0)
  assert.match(r.stderr, /proposed: 12 reads under \/srv\/x\/cache\/\*\.json \(replaces 12 exact grants\); widens: /)
  assert.ok(!/not allowed by the generalized manifest/.test(r.stderr))
  // Without --generalize: exact grants only, as before.
  r = cli(['learn', '--from', log, '--platform', 'posix', '--json'])
  assert.equal(JSON.parse(r.stdout).manifest.fs.length, 18)
})
