'use strict'
// explain's text says what its JSON says (the deny rule that matched, a
// "why" for every decision); learn --help documents the plugin format, and
// a plugin written from that help alone (every global it lists) is learned.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const http = require('node:http')
const { spawn, spawnSync } = require('node:child_process')

const BIN = path.join(__dirname, '..', 'bin', 'api-sandbox-permissions.js')
const cli = (args) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' })
const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'asp-explain-')))
test.after(() => fs.rmSync(dir, { recursive: true, force: true }))
const manifest = path.join(dir, 'm.json')
fs.writeFileSync(
  manifest,
  JSON.stringify({
    fs: ['/data/**'],
    fetch: ['*.example.com', 'api.example.org/v1/**', 'http://plain.example.net:8080'],
    deny: { fs: ['/data/secret/**'], fetch: ['evil.example.com'] },
    secrets: ['K', { name: 'TOKEN', hosts: ['api.example.org'] }],
    events: { publishes: ['orders.*'] },
    db: { database: 'acme' },
  }),
)

test('explain text names the deny rule that matched, as the JSON does', () => {
  for (const [query, pointer, rule] of [
    ['fs:read:/data/secret/x', '/deny/fs/0', '/data/secret/**'],
    ['fetch:https://evil.example.com/', '/deny/fetch/0', 'evil.example.com'],
  ]) {
    const text = cli(['explain', manifest, query])
    assert.equal(text.status, 1)
    const json = JSON.parse(cli(['explain', manifest, query, '--json']).stdout)
    assert.equal(json.deniedBy.pointer, pointer)
    assert.ok(text.stdout.includes(`\ndenied by ${pointer} ${JSON.stringify(rule)}\n`), text.stdout)
    assert.match(text.stdout, /\nwhy: a deny rule matches the (normalised path|URL); deny wins over every grant\n/)
  }
})

test('every decision gets a why line: a sentence, not the reason code', () => {
  const queries = [
    ['fs:read:/data/a', 'allowed'],
    ['fs:write:/data/a', 'mode_not_granted'],
    ['fs:read:/other', 'not_allowlisted'],
    ['fs:read:relative', 'invalid_path'],
    ['fetch:https://api.example.org/v2/x', 'path_not_allowed'],
    ['fetch:https://plain.example.net:8080/', 'scheme_not_allowed'],
    ['fetch:http://plain.example.net:9090/', 'port_not_allowed'],
    ['fetch:https://nowhere.test/', 'host_not_allowlisted'],
    ['fetch:https://u:p@a.example.com/', 'credentials_in_url'],
    ['fetch:not a url', 'invalid_url'],
    ['cap:secrets.get:{"name":"NOPE"}', 'secret_not_declared'],
    ['cap:secrets.get:{"name":"TOKEN"}', 'secret_not_readable'],
    ['cap:secrets.use:{"name":"TOKEN","url":"https://a.example.com/"}', 'secret_destination_not_allowed'],
    ['cap:events.publish:{"topic":"users.x"}', 'topic_not_declared'],
    ['cap:db.query:{"database":"other"}', 'database_not_declared'],
    ['cap:nope.nope:{}', 'unknown_capability'],
    ['cap:secrets.get:{}', 'invalid_payload'],
    ['cap:events.publish:{"topic":"orders.new"}', 'allowed'],
  ]
  for (const [query, reason] of queries) {
    const j = JSON.parse(cli(['explain', manifest, query, '--json']).stdout)
    assert.equal(j.decision.allowed ? 'allowed' : j.decision.reason, reason, query)
    const why = j.why ?? j.fs?.why ?? j.fetch?.why
    assert.ok(typeof why === 'string' && why.includes(' ') && !why.includes(reason), `${query}: why ${why}`)
    const text = cli(['explain', manifest, query]).stdout
    assert.ok(text.includes(`\nwhy: ${why}\n`), `${query}: ${text}`)
  }
  const pathLine = cli(['explain', manifest, 'fetch:https://api.example.org/v2/x']).stdout
  assert.match(pathLine, /host matches \/fetch\/1 "api\.example\.org\/v1\/\*\*": scheme ok, port ok, path not granted/)
})

test('learn --help documents the plugin format; a plugin using every global it lists is learned', async (t) => {
  const help = cli(['learn', '--help']).stdout
  for (const g of ['fs.readFile(path)', 'fs.writeFile(path, data)', 'fetch(url, { method, headers, body })', 'secrets.get(name)', 'events.publish(topic, data)', 'capability(id, payload)', 'console.log(', 'config', 'top-level await', '--from: one JSON object per line']) {
    assert.ok(help.includes(g), `learn --help mentions ${g}`)
  }
  const server = http.createServer((req, res) => res.end(`hi ${req.method}`))
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  t.after(() => server.close())
  const root = path.join(dir, 'plugin-root')
  fs.mkdirSync(root)
  fs.writeFileSync(path.join(root, 'input.txt'), 'in')
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ root, api: `http://127.0.0.1:${server.address().port}` }))
  const plugin = path.join(dir, 'plugin.js')
  fs.writeFileSync(
    plugin,
    [
      'const input = await fs.readFile(`${config.root}/input.txt`)',
      "const res = await fetch(`${config.api}/items`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: input })",
      'await fs.writeFile(`${config.root}/out.txt`, res.body)',
      "await events.publish('orders.created', { n: 1 })",
      "await capability('db.query', { database: 'acme' })",
      'await console.log(res.status, res.body)',
      "return 'done'",
    ].join('\n'),
  )
  const r = await new Promise((resolve) => {
    const p = spawn(process.execPath, [BIN, 'learn', plugin, '--config', path.join(dir, 'config.json')])
    let stdout = ''
    let stderr = ''
    p.stdout.on('data', (d) => (stdout += d))
    p.stderr.on('data', (d) => (stderr += d))
    p.on('close', (status) => resolve({ status, stdout, stderr }))
  })
  assert.equal(r.status, 0, r.stderr)
  assert.doesNotMatch(r.stderr, /ended with/)
  const learned = JSON.parse(r.stdout)
  assert.deepEqual(learned.fs, [`${root}/input.txt`, { path: `${root}/out.txt`, mode: 'write' }])
  assert.deepEqual(learned.db, { database: 'acme' })
  assert.deepEqual(learned.events, { publishes: ['orders.created'] })
  assert.equal(learned.fetch.length, 1)
  assert.equal(fs.readFileSync(path.join(root, 'out.txt'), 'utf8'), 'hi POST')
})

test("when the checks' decision differs from the core's explanation (a lone surrogate), why says so", () => {
  const { PermissionPolicy } = require('..')
  const p = PermissionPolicy.fromManifest({ fs: ['/a/**'], fetch: ['a.example.com'] }, { plugin: 'p', platform: 'posix' })
  for (const e of [p.explainFs('/a/\uD800', 'read'), p.explainFetch('https://a.example.com/\uD800'), p.explainCapability('fs.read', { path: '/a/\uD800' })]) {
    assert.equal(e.decision.allowed, false)
    assert.match(e.why, /not well-formed UTF-16/)
  }
  assert.equal(p.explainFs('/a/b', 'read').why, 'a grant matches the normalised path for this mode')
  assert.equal(p.explainFetch('https://a.example.com/').why, 'a declaration in the manifest allows it')
})
