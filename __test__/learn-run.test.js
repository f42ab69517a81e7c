'use strict'
// `learn <plugin.js>` runs a real plugin (a Worker, a vm.Context) in audit
// mode. Pinned here: the text and --json forms number calls alike.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawn } = require('node:child_process')

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
