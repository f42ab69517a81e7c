'use strict'
// `learn` reads own data only (the calls, their payloads, options, the
// audit log, the manifest it builds): a polluted prototype changes nothing
// it learns. Found by a review: with `Object.prototype[0]` set, a run that
// never touched a database learned `db: { database: ... }`. The oracle is
// the same learn run without the pollution. Also its bounds: 10,000 paths
// and a 256 MiB path answer (the latter as "not learned"), never abort.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { learnManifest } = require('..')
const { generalizeManifest } = require('../lib/learn.js')

const ROOT = path.join(__dirname, '..')
const BIN = path.join(ROOT, 'bin', 'api-sandbox-permissions.js')
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asp-learn-own-'))
test.after(() => fs.rmSync(dir, { recursive: true, force: true }))

// Calls with gaps a prototype could fill: a hole, a payload without its
// field, a call without a payload, a non-string capability.
const CALLS = [
  { capability: 'fs.read', payload: { path: '/srv/app/a.json' } },
  { capability: 'fs.read', payload: { path: '/srv/app/b.json' } },
  { capability: 'fs.write', payload: { path: '/srv/app/c.json' } },
  { capability: 'fetch', payload: { url: 'https://api.example.com/v1/x' } },
  { capability: 'secrets.use', payload: { name: 'T', url: 'https://api.example.com/y' } },
  { capability: 'events.publish', payload: { topic: 'orders.created' } },
  { capability: 'fs.read', payload: {} },
  { capability: 'fetch' },
  { capability: 'db.query', payload: { schema: 'x' } },
  { payload: { path: '/etc/shadow' } },
]
const HOLEY = [...CALLS.slice(0, 3), , ...CALLS.slice(3)] // eslint-disable-line no-sparse-arrays

// Names learn or its manifest could read, numeric and named; each set on
// Object.prototype and on Array.prototype, with a string and with an object
// shaped like what learn builds.
const NAMES = [
  '0', '1', '2', '3', '10', 'capability', 'payload', 'path', 'url', 'name', 'topic', 'database', 'mode', 'hosts',
  'platform', 'secretValues', 'min', 'fs', 'fetch', 'secrets', 'events', 'publishes', 'subscribes', 'db', 'deny', 'budgets',
  'value', 'list', 'calls', 'kind', 'id', 'pointer', 'details', 'expected', 'why', 'call', 'http:', 'https:',
  'javascript:', 'file:', '/fs', '/db/database', 'toJSON', 'then',
]
const VALUES = [
  '/etc/passwd',
  { list: 'db', value: 'evil', calls: [], capability: 'db.query', path: '/etc', mode: 'readwrite', name: 'X', url: 'https://evil.example', topic: 'x', database: 'evil', kind: 'fs' },
]
const TARGETS = [
  ['Object.prototype', Object.prototype],
  ['Array.prototype', Array.prototype],
]

/** Runs `fn` with `target[name] = value`, the property removed after. */
function polluted(target, name, value, fn) {
  assert.equal(Object.hasOwn(target, name), false, name)
  target[name] = value
  try {
    return fn()
  } finally {
    delete target[name]
  }
}

const run = (calls) => {
  const learned = learnManifest(calls, { platform: 'posix' })
  return { learned, generalized: generalizeManifest(learned.manifest, { platform: 'posix' }) }
}

test('learnManifest: no polluted prototype name changes what is learned', () => {
  const want = JSON.stringify(run(HOLEY))
  assert.ok(JSON.parse(want).learned.manifest.fs.length === 3, want)
  let runs = 0
  for (const [where, target] of TARGETS) {
    for (const name of NAMES) {
      for (const value of VALUES) {
        const got = polluted(target, name, value, () => run(HOLEY))
        runs++
        // Compared once the prototype is clean again (JSON.stringify itself reads `toJSON`).
        assert.equal(JSON.stringify(got), want, `${where}[${JSON.stringify(name)}] = ${JSON.stringify(value)}`)
      }
    }
  }
  assert.equal(runs, TARGETS.length * NAMES.length * VALUES.length)
})

test('the reported case: Object.prototype[0] does not make a run without a database learn one', () => {
  const got = polluted(Object.prototype, '0', VALUES[1], () => learnManifest([{ capability: 'fs.read', payload: { path: '/srv/a' } }], { platform: 'posix' }))
  assert.deepEqual(JSON.parse(JSON.stringify(got.manifest)), { fs: ['/srv/a'] })
})

test('learn --from: no polluted prototype name changes the CLI output', () => {
  const log = path.join(dir, 'calls.jsonl')
  // (A line without a capability is an input error of the log, not a call.)
  const lines = CALLS.filter((c) => typeof c.capability === 'string')
  fs.writeFileSync(log, `${lines.map((c) => JSON.stringify(c)).join('\n')}\n`)
  // Pollutes once the CLI has read its log: Node's own module loader and
  // streams (set up before, and not what is tested) stay clean.
  const polluter = path.join(dir, 'pollute.cjs')
  fs.writeFileSync(
    polluter,
    `'use strict'
const fs = require('node:fs')
for (const m of ['', '/lib/learn.js', '/lib/checker.js', '/lib/json-source.js', '/lib/manifest-errors.js']) require(${JSON.stringify(ROOT)} + m)
require(require.resolve('@opentelemetry/api', { paths: [${JSON.stringify(ROOT)}] }))
void process.stdout, void process.stderr
const read = fs.readFileSync
fs.readFileSync = function (...args) {
  const out = read.apply(this, args)
  if (String(args[0]).endsWith('.jsonl')) {
    fs.readFileSync = read
    const target = process.env.POLLUTE_ON === 'array' ? Array.prototype : Object.prototype
    target[process.env.POLLUTE_NAME] = JSON.parse(process.env.POLLUTE_VALUE)
  }
  return out
}
`,
  )
  const cli = (env) =>
    spawnSync(process.execPath, ['--require', polluter, BIN, 'learn', '--from', log, '--generalize', '--platform', 'posix', '--json'], {
      encoding: 'utf8',
      env: { ...process.env, POLLUTE_NAME: '__unused__', POLLUTE_VALUE: 'null', ...env },
    })
  const base = cli({})
  assert.equal(base.status, 0, base.stderr)
  const want = JSON.parse(base.stdout)
  assert.equal(want.manifest.fs.length, 3)
  for (const [on] of [['object'], ['array']]) {
    for (const name of ['0', '1', 'capability', 'payload', 'path', 'url', 'db', 'database', 'min', 'platform', 'value', 'list', 'http:']) {
      const r = cli({ POLLUTE_ON: on, POLLUTE_NAME: name, POLLUTE_VALUE: JSON.stringify(VALUES[1]) })
      assert.equal(r.status, 0, `${on}[${name}]: ${r.stderr}`)
      assert.deepEqual(JSON.parse(r.stdout), want, `${on}[${name}]`)
    }
  }
})

test('learn over 10,000 paths and over a 256 MiB path: an answer, never an abort', () => {
  // Each in a child with a generous watchdog (a failure guard, not a speed goal).
  const child = (code) => spawnSync(process.execPath, ['-e', code], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 })
  const many = child(`
    const { learnManifest } = require('.')
    const calls = Array.from({ length: 10001 }, (_, i) => ({ capability: 'fs.read', payload: { path: '/srv/data/f' + i + '.json' } }))
    const r = learnManifest(calls, { platform: 'posix' })
    console.log(JSON.stringify({ fs: r.manifest.fs.length, unlearned: r.unlearned.map((u) => [u.call, u.why]) }))`)
  assert.equal(many.status, 0, many.stderr)
  const m = JSON.parse(many.stdout)
  assert.equal(m.fs, 10_000)
  assert.deepEqual(m.unlearned.map(([i]) => i), [10_000])
  assert.match(m.unlearned[0][1], /more than 10000 entries/)
  const huge = child(`
    const { learnManifest } = require('.')
    const p = '/' + 'a'.repeat(256 * 1024 * 1024)
    const r = learnManifest([{ capability: 'fs.read', payload: { path: p } }, { capability: 'fs.read', payload: { path: '/ok' } }], { platform: 'posix' })
    console.log(JSON.stringify({ manifest: r.manifest, unlearned: r.unlearned }))`)
  assert.equal(huge.status, 0, huge.stderr)
  const h = JSON.parse(huge.stdout)
  assert.deepEqual(h.manifest, { fs: ['/ok'] })
  assert.match(h.unlearned[0].why, /longer than any grant holds/)
  // Through the CLI: a 256 MiB line of the log is not parsed, and listed.
  const log = path.join(dir, 'huge.jsonl')
  const fd = fs.openSync(log, 'w')
  fs.writeSync(fd, '{"capability":"fs.read","payload":{"path":"/')
  const chunk = Buffer.alloc(1 << 20, 'a')
  for (let i = 0; i < 256; i++) fs.writeSync(fd, chunk)
  fs.writeSync(fd, '"}}\n{"capability":"fs.read","payload":{"path":"/ok"}}\n')
  fs.closeSync(fd)
  const r = spawnSync(process.execPath, [BIN, 'learn', '--from', log, '--json'], { encoding: 'utf8', timeout: 120_000, maxBuffer: 1 << 24 })
  fs.rmSync(log)
  assert.equal(r.status, 0, r.stderr)
  const out = JSON.parse(r.stdout)
  assert.equal(out.manifest.fs.length, 1)
  assert.equal(out.manifest.fs[0].path, '/ok')
  assert.equal(out.unlearned.length, 1)
  assert.match(out.unlearned[0].why, /line is longer than/)
})
