'use strict'
// `learn <plugin.js>` runs a real plugin (a Worker, a vm.Context) in audit
// mode. Pinned here: a failed run exits 2 and prints no manifest (unless
// --partial); an `events.subscribe` topic is learned as the pattern it is;
// secrets given to the run are read or sent by the plugin and their values
// are never printed or learned; the plugin's console reaches stderr escaped
// and bounded; the text and --json forms number calls alike. The oracle of
// the learned manifests is each plugin's known behaviour (the test writes the
// plugin from a list of calls): the checker of the learned manifest allows
// every call the run made and denies a sample of calls it did not make,
// judged by a naive model written from SPEC §2-§4 and §13.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const http = require('node:http')
const { spawn } = require('node:child_process')
const { createChecker, learnManifest, PermissionPolicy } = require('..')
const { runPlugin } = require('../lib/vm-host/host.js')

const BIN = path.join(__dirname, '..', 'bin', 'api-sandbox-permissions.js')
const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'asp-learn-run-')))
test.after(() => fs.rmSync(dir, { recursive: true, force: true }))

/** The CLI as a child (never spawnSync: the test's own servers must answer meanwhile). */
function cli(args, { env } = {}) {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env } })
    let stdout = ''
    let stderr = ''
    p.stdout.on('data', (d) => (stdout += d))
    p.stderr.on('data', (d) => (stderr += d))
    p.on('close', (status) => resolve({ status, stdout, stderr }))
  })
}

let n = 0
/** A plugin file holding `code`. */
function plugin(code) {
  const f = path.join(dir, `plugin-${++n}.js`)
  fs.writeFileSync(f, code)
  return f
}

const json = (r) => {
  try {
    return JSON.parse(r.stdout)
  } catch {
    assert.fail(`stdout is not JSON (exit ${r.status}): ${r.stdout}\n${r.stderr}`)
  }
}

// Two real servers, and a port nothing listens on.
const servers = []
let P1
let P2
let CLOSED
test.before(async () => {
  for (let i = 0; i < 3; i++) {
    const s = http.createServer((req, res) => res.end(`hello ${req.url} ${req.headers.authorization || ''}`))
    await new Promise((r) => s.listen(0, '127.0.0.1', r))
    servers.push(s)
  }
  P1 = servers[0].address().port
  P2 = servers[1].address().port
  CLOSED = servers[2].address().port
  await new Promise((r) => servers.pop().close(r))
})
test.after(() => servers.forEach((s) => s.close()))

// ---------------------------------------------------------------- failures

test('a plugin that throws: exit 2, why on stderr, no manifest on stdout (text and --json)', async () => {
  const f = plugin("await fs.readFile('/etc/hostname')\nthrow Object.assign(new Error('no config here'), { code: 'E_PLUGIN_CONFIG' })")
  const r = await cli(['learn', f])
  assert.equal(r.status, 2, r.stderr)
  assert.equal(r.stdout, '')
  assert.match(r.stderr, /^api-sandbox-permissions learn: the plugin failed with E_PLUGIN_CONFIG: no config here$/m)
  assert.match(r.stderr, /^1 call recorded, 0 not learned; no manifest printed \(--partial/m)
  const j = await cli(['learn', f, '--json'])
  assert.equal(j.status, 2)
  const out = json(j)
  assert.deepEqual(out, { error: { kind: 'plugin', code: 'E_PLUGIN_CONFIG', message: 'the plugin failed with E_PLUGIN_CONFIG: no config here' }, calls: 1, unlearned: [] })
  assert.equal(Object.hasOwn(out, 'manifest'), false)
})

test('--partial prints the manifest learned until the failure, marked, and still exits 2', async () => {
  const f = plugin("await fs.readFile('/etc/hostname')\nawait events.publish('a.b', 1)\nawait fs.readFile('/nonexistent/learn-run/x')\nawait events.publish('never.reached', 1)")
  const r = await cli(['learn', f, '--partial', '--platform', 'posix'])
  assert.equal(r.status, 2, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout), { fs: ['/etc/hostname', '/nonexistent/learn-run/x'], events: { publishes: ['a.b'] } })
  assert.match(r.stderr, /the plugin failed: ENOENT: no such file or directory, open '\/nonexistent\/learn-run\/x'$/m)
  assert.match(r.stderr, /PARTIAL/)
  const j = json(await cli(['learn', f, '--partial', '--platform', 'posix', '--json']))
  assert.equal(j.partial, true)
  assert.equal(j.error.kind, 'plugin')
  assert.match(j.error.message, /ENOENT/)
  assert.equal(j.calls, 3)
  assert.deepEqual(j.manifest.events, { publishes: ['a.b'] })
})

test('a syntax error, a wall-clock timeout and a memory breach each fail the run with their reason', async () => {
  let r = await cli(['learn', plugin('await fs.readFile(')])
  assert.equal(r.status, 2)
  assert.equal(r.stdout, '')
  assert.match(r.stderr, /learn: the plugin failed: .*(Unexpected|SyntaxError|missing)/)

  const spin = plugin("await events.publish('before.spin', 1)\nfor (;;) {}")
  r = await cli(['learn', spin, '--timeout', '300'])
  assert.equal(r.status, 2)
  assert.equal(r.stdout, '')
  assert.match(r.stderr, /learn: the plugin ran longer than 300 ms \(--timeout\)/)
  const j = json(await cli(['learn', spin, '--timeout', '300', '--json']))
  assert.deepEqual(j.error, { kind: 'plugin', code: 'BUDGET_EXCEEDED', budget: 'wallClockMs', message: 'the plugin ran longer than 300 ms (--timeout)' })
  assert.equal(j.calls, 1)

  // Retains ever more memory until the budget stops it (the timeout is only a backstop).
  const hog = plugin("const keep = []\nfor (let i = 0; ; i++) keep.push(new Array(1 << 16).fill(i))")
  r = await cli(['learn', hog, '--memory-mb', '64', '--timeout', '60000', '--json'])
  assert.equal(r.status, 2, r.stderr)
  assert.deepEqual(json(r).error, { kind: 'plugin', code: 'BUDGET_EXCEEDED', budget: 'memoryMb', message: 'the plugin used more than 64 MB (--memory-mb)' })

  for (const bad of [['--timeout', '0'], ['--timeout', '1.5'], ['--memory-mb=-1'], ['--timeout', 'soon']]) {
    const u = await cli(['learn', spin, ...bad])
    assert.equal(u.status, 2, bad.join(' '))
    assert.match(u.stderr, /must be a whole number above 0/)
  }
})

test('a plugin that succeeds exits 0 as before; run options are refused with --from', async () => {
  const r = await cli(['learn', plugin("await events.publish('x.y', 1)\nreturn 'done'")])
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout), { events: { publishes: ['x.y'] } })
  const log = path.join(dir, 'empty.jsonl')
  fs.writeFileSync(log, '')
  for (const opt of [['--secret', 'A=b'], ['--secrets-file', log], ['--timeout', '5'], ['--memory-mb', '5'], ['--partial']]) {
    const u = await cli(['learn', '--from', log, ...opt])
    assert.equal(u.status, 2, opt[0])
    assert.match(u.stderr, new RegExp(`${opt[0]} is for a plugin run, not --from`))
  }
})

test('a run keeps at most 100,000 calls and 32 Mi characters of their fields: past either it fails (fail closed)', async () => {
  const { MAX_RECORDED_CALLS, MAX_RECORDED_CHARS } = require('../lib/learn-run.js')
  let r = await cli(['learn', plugin(`for (let i = 0; i <= ${MAX_RECORDED_CALLS}; i++) await events.publish('t.x', 1)`), '--json'])
  assert.equal(r.status, 2, r.stderr)
  assert.deepEqual(json(r), { error: { kind: 'plugin', code: 'ERR_LEARN_CALLS', message: `the plugin made more calls than learn records (at most ${MAX_RECORDED_CALLS})` }, calls: MAX_RECORDED_CALLS, unlearned: [] })
  // Calls of 64 Ki characters of fields and a 5-character id (the body is not kept, so it does not count).
  const calls = Math.floor(MAX_RECORDED_CHARS / ((1 << 16) + 'x.big'.length))
  const code = `const big = 'https://a.example/' + 'x'.repeat(${(1 << 16) - 17})\nfor (let i = 0; i <= ${calls}; i++) try { await capability('x.big', { url: big, body: big + big }) } catch {}`
  r = await cli(['learn', plugin(code), '--json'])
  assert.equal(r.status, 2, r.stderr)
  assert.equal(json(r).error.code, 'ERR_LEARN_CALLS')
  assert.equal(json(r).calls, calls)
})

// ---------------------------------------------------------------- events.subscribe

test('events.subscribe: a pattern topic is learned as written, validated; publish topics stay literal', async () => {
  const f = plugin(
    [
      "await capability('events.subscribe', { topic: 'orders.*' })",
      "await capability('events.subscribe', { topic: 'audit.**' })",
      "await capability('events.subscribe', { topic: 'billing.invoice.sent' })",
      "await capability('events.subscribe', { topic: 'a.**.b' })",
      "await capability('events.subscribe', { topic: 'half*.x' })",
      "await events.publish('orders.*', 1)",
    ].join('\n'),
  )
  const r = await cli(['learn', f, '--json'])
  assert.equal(r.status, 0, r.stderr)
  const out = json(r)
  assert.deepEqual(out.manifest.events, { subscribes: ['orders.*', 'audit.**', 'billing.invoice.sent'] })
  assert.deepEqual(
    out.unlearned.map((u) => [u.call, u.capability]),
    [
      [4, 'events.subscribe'],
      [5, 'events.subscribe'],
      [6, 'events.publish'],
    ],
  )
  assert.match(out.unlearned[0].why, /not a valid grant \(\/events\/subscribes\/3: expected a topic pattern/)
  assert.match(out.unlearned[2].why, /'\*' segment, which a grant reads as a wildcard/)
  const c = createChecker(out.manifest, { plugin: 'p' })
  const sub = (t) => c.checkCapability('events.subscribe', { topic: t }).allowed
  for (const t of ['orders.*', 'orders.paid', 'audit.**', 'audit.a.b', 'billing.invoice.sent']) assert.equal(sub(t), true, t)
  for (const t of ['orders.**', 'orders', 'orders.a.b', 'audit', '**', '*', 'billing.invoice', 'billing.*']) assert.equal(sub(t), false, t)
  assert.equal(c.checkCapability('events.publish', { topic: 'orders.paid' }).allowed, false)
  // The text form points a reviewer at each learned pattern.
  const text = await cli(['learn', f])
  assert.deepEqual(
    [...text.stderr.matchAll(/^learned pattern: events\.subscribes "(.*)", as the plugin subscribed/gm)].map((m) => m[1]),
    ['orders.*', 'audit.**'],
  )
})

test('learnManifest: a subscribe pattern is a grant exactly as wide as the subscription', () => {
  const topics = ['orders.*', 'a.**', '**', '*', 'x.*.y', 'a.**.b', 'a.b*', 'a..b', '', 'ok.topic']
  const { manifest, unlearned } = learnManifest(
    topics.map((topic) => ({ capability: 'events.subscribe', payload: { topic } })),
    { platform: 'posix' },
  )
  assert.deepEqual(manifest, { events: { subscribes: ['orders.*', 'a.**', '**', '*', 'x.*.y', 'ok.topic'] } })
  assert.deepEqual(
    unlearned.map((u) => u.call),
    [5, 6, 7, 8],
  )
  const p = PermissionPolicy.fromManifest(manifest, { plugin: 'p' })
  for (const t of topics.slice(0, 5).concat('ok.topic')) assert.equal(p.checkCapability('events.subscribe', { topic: t }).allowed, true, t)
})

// ---------------------------------------------------------------- console

/** The plugin's console lines in `stderr`, prefix removed. */
const consoleLines = (stderr) =>
  stderr
    .split('\n')
    .filter((l) => l.startsWith('[plugin] '))
    .map((l) => l.slice('[plugin] '.length))

test("the plugin's console reaches stderr as it prints, prefixed, control characters escaped (text and --json)", async () => {
  const f = plugin(
    [
      "console.log('plain', 1, { a: 1 })",
      "console.log('esc \\x1b[2J bell \\x07 cr \\r nl \\n tab \\t bidi \\u202e del \\x7f lone \\ud800 sep \\u2028 back \\\\ end')",
      "await events.publish('x.y', 1)",
      "console.log('after')",
    ].join('\n'),
  )
  for (const extra of [[], ['--json']]) {
    const r = await cli(['learn', f, ...extra])
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(consoleLines(r.stderr), ['plain 1 [object Object]', 'esc \\x1b[2J bell \\x07 cr \\x0d nl \\x0a tab \\x09 bidi \\u{202e} del \\x7f lone \\u{d800} sep \\u{2028} back \\\\ end', 'after'])
    // Nothing raw got through: no control, format or separator character on stderr but its newlines.
    assert.doesNotMatch(r.stderr.replace(/\n/g, ''), /[\p{Cc}\p{Cf}\u2028\u2029\ud800]/u)
    if (extra.length) assert.equal(json(r).calls, 1)
  }
})

test('console output is bounded per line, in lines and in characters, and says how much was cut', async () => {
  const { MAX_CONSOLE_LINES, MAX_CONSOLE_CHARS, MAX_CONSOLE_LINE } = require('../lib/learn-run.js')
  let r = await cli(['learn', plugin(`for (let i = 0; i < ${MAX_CONSOLE_LINES + 500}; i++) await console.log('line ' + i)`)])
  assert.equal(r.status, 0, r.stderr)
  let lines = consoleLines(r.stderr)
  assert.equal(lines.length, MAX_CONSOLE_LINES + 1)
  assert.equal(lines[0], 'line 0')
  assert.equal(lines[MAX_CONSOLE_LINES - 1], `line ${MAX_CONSOLE_LINES - 1}`)
  assert.match(lines[MAX_CONSOLE_LINES], /^\(500 more console lines not shown/)
  // Private-use characters escape to 8 characters each: a line of them is cut.
  r = await cli(['learn', plugin("for (let i = 0; i < 200; i++) await console.log('\\ue000'.repeat(500))")])
  lines = consoleLines(r.stderr)
  const shown = lines.slice(0, -1)
  assert.ok(shown.length > 0 && shown.length < 200, `${shown.length} lines`)
  for (const l of shown) assert.ok(l.length <= MAX_CONSOLE_LINE + '... (cut)'.length && l.endsWith('... (cut)'), l.length)
  assert.ok(shown.reduce((a, l) => a + l.length, 0) <= MAX_CONSOLE_CHARS)
  assert.match(lines.at(-1), /more console lines not shown/)
})

// ---------------------------------------------------------------- secrets

const VALUE = 'sk-live-7f3a9c21d4e8b6'
const VALUE2 = 'pw"with\\quote\nand-newline'

/** Asserts that no output of `r` holds a value, or a start of one of 6 characters or more. */
function noValue(r, values = [VALUE, VALUE2]) {
  for (const v of values) {
    for (const form of [v, JSON.stringify(v).slice(1, -1)]) {
      for (const [where, text] of [
        ['stdout', r.stdout],
        ['stderr', r.stderr],
      ]) {
        assert.equal(text.includes(form.slice(0, 6)), false, `${where} holds (the start of) a secret value:\n${text}`)
      }
    }
  }
}

test('--secret NAME=VALUE: secrets.get reads it, the name is learned as readable, the value is never printed', async () => {
  const f = plugin(
    [
      "const k = await secrets.get('API_KEY')",
      "const p = await secrets.get('DB_PASSWORD')",
      'console.log(`key ${k} pw ${p}`)',
      "if (k !== 'sk-live-7f3a9c21d4e8b6') throw new Error('wrong value')",
      `await fetch('http://127.0.0.1:${P1}/data', { method: 'POST', body: k })`,
      "throw Object.assign(new Error('failing with ' + k + ' and ' + JSON.stringify(p)), { code: 'E_' + k })",
    ].join('\n'),
  )
  const args = ['learn', f, '--secret', `API_KEY=${VALUE}`, '--secret', `DB_PASSWORD=${VALUE2}`, '--partial']
  const r = await cli(args)
  assert.equal(r.status, 2, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout), { fetch: [`http://127.0.0.1:${P1}`], secrets: ['API_KEY', 'DB_PASSWORD'] })
  assert.deepEqual(consoleLines(r.stderr), ['key [secret API_KEY] pw [secret DB_PASSWORD]'])
  assert.match(r.stderr, /the plugin failed with E_\[secret API_KEY\]: failing with \[secret API_KEY\] and "\[secret DB_PASSWORD\]"$/m)
  noValue(r)
  const j = await cli([...args, '--json'])
  noValue(j)
  assert.equal(json(j).error.code, 'E_[secret API_KEY]')
  assert.deepEqual(json(j).manifest.secrets, ['API_KEY', 'DB_PASSWORD'])
})

test('--secret NAME takes the environment variable; --secrets-file a JSON object; mistakes never echo what was given', async () => {
  const f = plugin("console.log(await secrets.get('A'), await secrets.get('B'))")
  const file = path.join(dir, 'secrets.json')
  fs.writeFileSync(file, JSON.stringify({ B: VALUE2 }))
  const r = await cli(['learn', f, '--secret', 'A', '--secrets-file', file], { env: { A: VALUE } })
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout), { secrets: ['A', 'B'] })
  assert.deepEqual(consoleLines(r.stderr), ['[secret A] [secret B]'])
  noValue(r)
  // A value typed where a name belongs, an empty value, a name given twice, a bad name, a broken file: exit 2, nothing echoed.
  const bad = path.join(dir, 'bad-secrets.json')
  const cases = [
    [['--secret', VALUE], /--secret \(the 1st\): give NAME=VALUE/],
    [['--secret', 'A=ok', '--secret', `${VALUE}=`], /--secret \(the 2nd\): the value is empty/],
    [['--secret', `A=${VALUE}`, '--secret', `A=${VALUE}`], /--secret \(the 2nd\): the name is given twice/],
    [['--secret', `${'N'.repeat(300)}${VALUE}=x`], /--secret \(the 1st\): not a secret name/],
    [['--secrets-file', bad, '#', `{"A": "${VALUE}`], /bad-secrets\.json:1:\d+: is not JSON: expected a closing "/],
    [['--secrets-file', bad, '#', `{"A": 5, "B": "${VALUE}"}`], /bad-secrets\.json: secret 1: the value is not a string/],
    [['--secrets-file', bad, '#', `["${VALUE}"]`], /bad-secrets\.json: expected an object/],
  ]
  for (const [opts, why] of cases) {
    const hash = opts.indexOf('#')
    if (hash >= 0) fs.writeFileSync(bad, opts[hash + 1])
    const args = ['learn', f, ...(hash >= 0 ? opts.slice(0, hash) : opts)]
    for (const mode of [[], ['--json']]) {
      const u = await cli([...args, ...mode], { env: { A: '' } })
      assert.equal(u.status, 2, `${opts.join(' ')}: ${u.stderr}`)
      assert.match(mode.length ? json(u).error.message : u.stderr, why)
      noValue(u)
    }
  }
})

test('a call holding a secret value is not learned, and the value is not quoted', async () => {
  const f = plugin(
    [
      "const k = await secrets.get('K')",
      'await fs.writeFile(`' + dir + '/out-${k}.txt`, "x")',
      // DELETE is refused by the host before any lookup: recorded, never sent.
      "try { await fetch(`http://${k.toUpperCase()}.invalid/`, { method: 'DELETE' }) } catch {}",
      "await events.publish('t.' + k, 1)",
      'try { await capability(`x.${k}`, {}) } catch {}',
      "await events.publish('t.ok', 1)",
    ].join('\n'),
  )
  const value = 'tok3n'
  for (const mode of [[], ['--json']]) {
    const r = await cli(['learn', f, '--secret', `K=${value}`, '--platform', 'posix', ...mode])
    assert.equal(r.status, 0, r.stderr)
    assert.equal(r.stdout.includes(value) || r.stderr.includes(value) || r.stdout.toLowerCase().includes(value) || r.stderr.toLowerCase().includes(value), false, r.stdout + r.stderr)
    if (mode.length) {
      const out = json(r)
      assert.deepEqual(out.manifest, { secrets: ['K'], events: { publishes: ['t.ok'] } })
      assert.deepEqual(
        out.unlearned.map((u) => [u.call, u.capability, u.why]),
        [
          [2, 'fs.write', 'the path holds a secret value'],
          [3, 'fetch', 'the url holds a secret value'],
          [4, 'events.publish', 'the topic holds a secret value'],
          [5, 'unknown', 'the capability id holds a secret value'],
        ],
      )
    }
  }
})

test('secrets.use calls are learned as a bound secret { name, hosts } with its origins', async () => {
  const f = plugin(
    [
      `for (const url of ['http://127.0.0.1:${P1}/v1/me', 'http://127.0.0.1:${P1}/v1/other', 'http://127.0.0.1:${P2}/x']) {`,
      "  try { await capability('secrets.use', { name: 'TOKEN', url }) } catch {}",
      '}',
    ].join('\n'),
  )
  const r = await cli(['learn', f, '--secret', `TOKEN=${VALUE}`])
  assert.equal(r.status, 0, r.stderr)
  const m = JSON.parse(r.stdout)
  assert.deepEqual(m, { fetch: [`http://127.0.0.1:${P1}`, `http://127.0.0.1:${P2}`], secrets: [{ name: 'TOKEN', hosts: [`http://127.0.0.1:${P1}`, `http://127.0.0.1:${P2}`] }] })
  const c = createChecker(m, { plugin: 'p' })
  assert.equal(c.checkCapability('secrets.use', { name: 'TOKEN', url: `http://127.0.0.1:${P2}/anything` }).allowed, true)
  assert.equal(c.checkCapability('secrets.get', { name: 'TOKEN' }).allowed, false)
  assert.equal(c.checkCapability('secrets.use', { name: 'TOKEN', url: `http://127.0.0.1:${CLOSED}/` }).allowed, false)
  noValue(r)
})

test(
  "a bound secret's placeholder sent in a header is learned as { name, hosts }, the value substituted",
  { todo: "the vm-host's audit mode has no secrets.use check to record yet (its substitution calls assertCapability on a checker that has none)" },
  async () => {
    const f = plugin(
      [
        `const r = await fetch('http://127.0.0.1:${P1}/v1/me', { headers: { authorization: 'Bearer ' + config.secretPlaceholders.TOKEN } })`,
        'console.log(r.body)',
      ].join('\n'),
    )
    const r = await cli(['learn', f, '--secret', `TOKEN=${VALUE}`])
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(JSON.parse(r.stdout), { fetch: [`http://127.0.0.1:${P1}`], secrets: [{ name: 'TOKEN', hosts: [`http://127.0.0.1:${P1}`] }] })
    // The server got the value, and echoed it: shown redacted.
    assert.deepEqual(consoleLines(r.stderr), ['hello /v1/me Bearer [secret TOKEN]'])
    noValue(r)
  },
)

// ---------------------------------------------------------------- numbering

test('text and --json number calls alike (from 1, in the order made) and count them alike', async () => {
  const f = plugin(
    [
      "await events.publish('ok.one', 1)", // 1
      "try { await fs.readFile('relative/x.txt') } catch {}", // 2: relative
      "await capability('db.query', { database: 'acme' })", // 3
      "try { await capability('net.raw', {}) } catch {}", // 4: unknown
      "await events.publish('ok.one', 2)", // 5
      "await events.publish('bad..topic', 1)", // 6: invalid
      "console.log('not a call')",
    ].join('\n'),
  )
  const log = path.join(dir, 'numbering.jsonl')
  fs.writeFileSync(
    log,
    ['', JSON.stringify({ capability: 'fs.read', payload: { path: 'rel' } }), JSON.stringify({ capability: 'fs.read', payload: { path: '/ok' } }), '', JSON.stringify({ capability: 'nope', payload: {} })].join('\n'),
  )
  for (const [args, want] of [
    [['learn', f, '--platform', 'posix'], { calls: 6, unlearned: [2, 4, 6] }],
    [['learn', '--from', log, '--platform', 'posix'], { calls: 3, unlearned: [1, 3] }],
    [['learn', '--from', log, '--platform', 'posix', '--generalize'], { calls: 3, unlearned: [1, 3] }],
  ]) {
    const text = await cli(args)
    const j = json(await cli([...args, '--json']))
    assert.equal(text.status, 0, text.stderr)
    assert.deepEqual(
      j.unlearned.map((u) => u.call),
      want.unlearned,
      args.join(' '),
    )
    assert.equal(j.calls, want.calls)
    const numbered = [...text.stderr.matchAll(/^not learned: call (\d+) (\S+): (.*)$/gm)].map((m) => ({ call: Number(m[1]), capability: m[2], why: m[3] }))
    assert.deepEqual(numbered, j.unlearned, args.join(' '))
    const summary = /^(\d+) calls? recorded, (\d+) not learned$/m.exec(text.stderr)
    assert.ok(summary, text.stderr)
    assert.deepEqual([Number(summary[1]), Number(summary[2])], [j.calls, new Set(j.unlearned.map((u) => u.call)).size])
  }
})

// ---------------------------------------------------------------- the oracle

/** A seeded PRNG (mulberry32). */
function prng(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Whether subscription pattern `p` covers topic or pattern `t` (SPEC §4: `*` one segment, a final `**` one or more). */
function covers(p, t) {
  const ps = p.split('.')
  const ts = t.split('.')
  const go = (i, j) => {
    if (i === ps.length) return j === ts.length
    if (ps[i] === '**') return j < ts.length
    if (j === ts.length || ts[j] === '**') return false
    if (ps[i] === '*') return go(i + 1, j + 1)
    return ts[j] === ps[i] && go(i + 1, j + 1)
  }
  return go(0, 0)
}

const ROOT = path.join(dir, 'oracle')
const IN = ['in/a.txt', 'in/b.json', 'in/sub/c.txt', 'in/odd[1]*.txt', 'in/space name.txt'].map((f) => path.join(ROOT, f))
const OUT = ['out/w0.txt', 'out/w1.txt', 'out/sub/w2.txt'].map((f) => path.join(ROOT, f))
// Paths no plugin uses: neighbours of the ones they do.
const NEAR = [
  ...IN.flatMap((f) => [`${f}x`, f.slice(0, -1), `${f}/x`, f.toUpperCase()]),
  ...OUT.map((f) => `${f}.bak`),
  path.join(ROOT, 'in'),
  path.join(ROOT, 'in/odd1.txt'),
  path.join(ROOT, 'in/odd[1]x.txt'),
  path.join(ROOT, 'in/odd1x.txt'),
  path.join(ROOT, 'out'),
  '/etc/passwd',
]
const GET = ['S_READ_A', 'S_READ_B']
const USE = ['S_BOUND_A', 'S_BOUND_B']
const PUBLISH = ['orders.created', 'orders.paid', 'users.new']
const SUBSCRIBE = ['orders.*', 'orders.created', 'users.**', 'billing.invoice.sent', '*.audit']
const SUBSCRIBE_NEAR = ['orders.x', 'orders', 'orders.**', 'users.a.b', 'users', 'billing.*', 'x.audit', 'a.b.audit', 'orders.created.x', '**']
const SECRET_VALUES = new Map([...GET, ...USE].map((name, i) => [name, `v${i}Zq-${name.toLowerCase()}-q9`]))

test.before(() => {
  for (const f of IN) {
    fs.mkdirSync(path.dirname(f), { recursive: true })
    fs.writeFileSync(f, 'in')
  }
  for (const f of OUT) fs.mkdirSync(path.dirname(f), { recursive: true })
})

/** A random plugin: its calls (the known behaviour) and its code. */
function randomPlugin(rand) {
  const pick = (xs) => xs[Math.floor(rand() * xs.length)]
  const origins = () => [`http://127.0.0.1:${P1}`, `http://127.0.0.1:${P2}`]
  const ops = []
  const written = new Set()
  const database = rand() < 0.5 ? pick(['acme', 'billing']) : null
  const count = 1 + Math.floor(rand() * 12)
  for (let i = 0; i < count; i++) {
    const k = Math.floor(rand() * 9)
    if (k === 0) ops.push({ capability: 'fs.read', path: pick(IN) })
    else if (k === 1) {
      const p = pick(OUT)
      ops.push({ capability: 'fs.write', path: p })
      written.add(p)
    } else if (k === 2 && written.size) ops.push({ capability: 'fs.read', path: pick([...written]) })
    else if (k === 3) ops.push({ capability: 'fetch', url: `${pick(origins())}/${pick(['', 'a', 'v1/items?x=1'])}` })
    else if (k === 4) ops.push({ capability: 'fetch', url: `http://127.0.0.1:${CLOSED}/down`, fails: true })
    else if (k === 5) ops.push({ capability: 'secrets.get', name: pick(GET) })
    else if (k === 6) ops.push({ capability: 'secrets.use', name: pick(USE), url: `${pick(origins())}/api`, fails: true })
    else if (k === 7) ops.push({ capability: 'events.publish', topic: pick(PUBLISH) })
    else if (k === 8) ops.push({ capability: 'events.subscribe', topic: pick(SUBSCRIBE) })
    if (database !== null && rand() < 0.2) ops.push({ capability: 'db.query', database })
  }
  const line = (o) => {
    const s = (v) => JSON.stringify(v)
    const body =
      o.capability === 'fs.read'
        ? `await fs.readFile(${s(o.path)})`
        : o.capability === 'fs.write'
          ? `await fs.writeFile(${s(o.path)}, 'w')`
          : o.capability === 'fetch'
            ? `await fetch(${s(o.url)})`
            : o.capability === 'secrets.get'
              ? `await secrets.get(${s(o.name)})`
              : o.capability === 'events.publish'
                ? `await events.publish(${s(o.topic)}, 1)`
                : `await capability(${s(o.capability)}, ${s(o.capability === 'secrets.use' ? { name: o.name, url: o.url } : o.capability === 'db.query' ? { database: o.database } : { topic: o.topic })})`
    return o.fails ? `try { ${body} } catch {}` : body
  }
  return { ops, code: `${ops.map(line).join('\n')}\nreturn 'done'` }
}

/**
 * The naive model's verdicts on a sample of requests for a plugin's calls:
 * `[kind, args, allowed]`, where kind is fs | fetch | cap.
 */
function sample(ops) {
  const has = (pred) => ops.some(pred)
  const out = []
  for (const p of [...IN, ...OUT, ...NEAR]) {
    out.push(['fs', [p, 'read'], has((o) => o.capability === 'fs.read' && o.path === p)])
    out.push(['fs', [p, 'write'], has((o) => o.capability === 'fs.write' && o.path === p)])
  }
  const origin = (u) => new URL(u).origin
  const fetched = new Set(ops.filter((o) => o.capability === 'fetch' || o.capability === 'secrets.use').map((o) => origin(o.url)))
  for (const o of [`http://127.0.0.1:${P1}`, `http://127.0.0.1:${P2}`, `http://127.0.0.1:${CLOSED}`]) {
    out.push(['fetch', [`${o}/any/path`], fetched.has(o)])
    out.push(['fetch', [o.replace('http:', 'https:')], false])
    out.push(['fetch', [o.replace('127.0.0.1', 'localhost')], false])
    out.push(['fetch', [o.replace('127.0.0.1', '127.0.0.2')], false])
    for (const name of [...GET, ...USE, 'NOPE']) out.push(['cap', ['secrets.use', { name, url: `${o}/x` }], has((x) => x.capability === 'secrets.use' && x.name === name && origin(x.url) === o)])
  }
  for (const name of [...GET, ...USE, 'NOPE']) out.push(['cap', ['secrets.get', { name }], has((o) => o.capability === 'secrets.get' && o.name === name)])
  for (const topic of [...PUBLISH, ...SUBSCRIBE_NEAR, 'orders.created']) out.push(['cap', ['events.publish', { topic }], has((o) => o.capability === 'events.publish' && o.topic === topic)])
  for (const topic of [...SUBSCRIBE, ...SUBSCRIBE_NEAR]) out.push(['cap', ['events.subscribe', { topic }], has((o) => o.capability === 'events.subscribe' && covers(o.topic, topic))])
  for (const database of ['acme', 'billing', 'other']) out.push(['cap', ['db.query', { database }], has((o) => o.capability === 'db.query' && o.database === database)])
  return out
}

/** A call of the known behaviour as the checker is asked it. */
const asked = (o) =>
  o.capability === 'fs.read' || o.capability === 'fs.write'
    ? ['fs', [o.path, o.capability === 'fs.read' ? 'read' : 'write']]
    : o.capability === 'fetch'
      ? ['fetch', [o.url]]
      : ['cap', [o.capability, o.capability === 'secrets.get' ? { name: o.name } : o.capability === 'secrets.use' ? { name: o.name, url: o.url } : o.capability === 'db.query' ? { database: o.database } : { topic: o.topic }]]

/** Checks a learned manifest against the plugin's known behaviour; returns the number of verdicts compared. */
function judge(manifest, ops, recorded, label) {
  const c = createChecker(manifest, { plugin: 'learned', platform: 'posix' })
  const decide = ([kind, args]) => (kind === 'fs' ? c.checkFs(...args) : kind === 'fetch' ? c.checkFetch(...args) : c.checkCapability(...args)).allowed
  // Every call the run made, as the plugin made it and as the host recorded it.
  for (const o of ops) assert.equal(decide(asked(o)), true, `${label}: ${JSON.stringify(o)} is denied`)
  for (const call of recorded) assert.equal(c.checkCapability(call.capability, call.payload).allowed, true, `${label}: recorded ${JSON.stringify(call)} is denied`)
  let compared = 0
  for (const [kind, args, allowed] of sample(ops)) {
    assert.equal(decide([kind, args]), allowed, `${label}: ${kind} ${JSON.stringify(args)} should be ${allowed ? 'allowed' : 'denied'}\nmanifest ${JSON.stringify(manifest)}\nops ${JSON.stringify(ops)}`)
    compared++
  }
  return compared
}

/** The recorded call of a known one: capability and the fields the plugin passed. */
const recordedOf = (o) => {
  const [, args] = asked(o)
  if (o.capability === 'fs.read' || o.capability === 'fs.write') return { capability: o.capability, payload: { path: o.path } }
  if (o.capability === 'fetch') return { capability: 'fetch', payload: { url: o.url } }
  return { capability: args[0], payload: args[1] }
}

test('oracle (learnManifest over real runs): the learned policy allows every call made and the naive model decides the sample', async () => {
  const seed = Number(process.env.LEARN_ORACLE_SEED || 20260517)
  const rand = prng(seed)
  let compared = 0
  for (let k = 0; k < 30; k++) {
    const { ops, code } = randomPlugin(rand)
    const calls = []
    const policy = PermissionPolicy.fromManifest({ budgets: { wallClockMs: 20_000 } }, { plugin: 'learn' })
    const r = await runPlugin({ name: `oracle-${k}`, code, policy, secrets: SECRET_VALUES, audit: (capability, payload) => calls.push({ capability, payload }) })
    assert.equal(r.ok, true, `seed ${seed} plugin ${k}: ${r.code} ${r.message}\n${code}`)
    // The run made exactly the known calls, in order.
    assert.deepEqual(
      calls.map((c) => c.capability),
      ops.map((o) => o.capability),
      `seed ${seed} plugin ${k}`,
    )
    const learned = learnManifest(calls, { platform: 'posix', secretValues: [...SECRET_VALUES.values()] })
    assert.deepEqual(learned.unlearned, [], `seed ${seed} plugin ${k}`)
    compared += judge(learned.manifest, ops, calls, `seed ${seed} plugin ${k}`)
  }
  assert.ok(compared > 30 * 100, `${compared} verdicts`)
})

test('oracle (the CLI): learn --json on random plugins, the same verdicts, the secrets given on the command line', async () => {
  const seed = Number(process.env.LEARN_ORACLE_SEED || 20260518)
  const rand = prng(seed)
  const secretArgs = [...SECRET_VALUES].flatMap(([k, v]) => ['--secret', `${k}=${v}`])
  for (let k = 0; k < 8; k++) {
    const { ops, code } = randomPlugin(rand)
    const r = await cli(['learn', plugin(code), '--platform', 'posix', '--json', ...secretArgs])
    assert.equal(r.status, 0, `seed ${seed} plugin ${k}: ${r.stderr}\n${code}`)
    const out = json(r)
    assert.equal(out.calls, ops.length)
    assert.deepEqual(out.unlearned, [])
    judge(out.manifest, ops, ops.map(recordedOf), `seed ${seed} plugin ${k} (CLI)`)
    noValue(r, [...SECRET_VALUES.values()])
  }
})
