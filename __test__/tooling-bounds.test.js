'use strict'
// The CLI tools answer the adversarial inputs a review timed (quadratic
// before: diff 21-50 s, lint 10-24 s, learn 67 s) with the right answer or
// the documented "could not" (diff exit 2, explain's `incomplete`), and
// read a manifest the same way in every command. Each run has a generous
// watchdog, a failure guard only: the speed figures are in
// bench/tooling-bounds.mjs and docs/benchmarks.md. The oracles: the
// manifests' construction (what each pair grants is known by design) and,
// for the deep JSON, the validator's own first error.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { PermissionPolicy } = require('..')

const BIN = path.join(__dirname, '..', 'bin', 'api-sandbox-permissions.js')
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asp-tooling-'))
test.after(() => fs.rmSync(dir, { recursive: true, force: true }))
const file = (name, value) => {
  const f = path.join(dir, name)
  fs.writeFileSync(f, typeof value === 'string' ? value : JSON.stringify(value))
  return f
}
const cli = (...args) => {
  const r = spawnSync(process.execPath, [BIN, ...args, '--json'], { encoding: 'utf8', timeout: 120_000, maxBuffer: 1 << 28 })
  assert.equal(r.signal, null, `${args.join(' ')}: killed by the watchdog`)
  return { status: r.status, out: JSON.parse(r.stdout) }
}
const N = 10_000
const range = (n, f) => Array.from({ length: n }, (_, i) => f(i))

test('diff: 10,000 fetch patterns and 10,000 fs globs each side, answered exactly', () => {
  const wide = file('fa.json', { fetch: range(N, (i) => `https://h${i}.example.com/v1/**`) })
  const narrow = file('fb.json', { fetch: range(N, (i) => `https://h${i}.example.com/v1/x`) })
  let r = cli('diff', wide, narrow)
  assert.equal(r.status, 0)
  assert.equal(r.out.narrows.length, N)
  r = cli('diff', narrow, wide)
  assert.equal(r.status, 1)
  assert.equal(r.out.widens.length, N)
  const globs = file('ga.json', { fs: range(N, (i) => `/srv/d${i}/**`) })
  const json = file('gb.json', { fs: range(N, (i) => `/srv/d${i}/*.json`) })
  assert.equal(cli('diff', globs, json).status, 0)
  assert.equal(cli('diff', json, globs).status, 1)
})

test('diff: long literal-plus-wildcard globs, against themselves and against a wildcard', () => {
  const lit = file('lit.json', { fs: range(100, (i) => `/a/${String(i).padStart(4, '0')}${'q'.repeat(196)}*`) })
  assert.equal(cli('diff', lit, lit).status, 0)
  // `/a/*` grants names none of the old globs match: a widening, or unknown past the bound; never 0.
  const r = cli('diff', lit, file('star.json', { fs: ['/a/*'] }))
  assert.notEqual(r.status, 0)
  for (const w of r.out.widens) {
    const old = PermissionPolicy.fromManifest(JSON.parse(fs.readFileSync(lit, 'utf8')), { plugin: 't', platform: 'posix' })
    assert.equal(old.checkFs(w.witness.path, 'read').allowed, false)
  }
})

test('lint: thousands of unreachable deny rules and CIDR blocks, errors in a large manifest, the glob cap', () => {
  let r = cli('lint', file('ld.json', { fs: range(8000, (i) => `/srv/g${i}/**`), deny: { fs: range(8000, (i) => `/other/d${i}/**`) } }))
  assert.equal(r.out.warnings.filter((w) => w.code === 'deny-unreachable').length, 8000)
  const ip = (i) => `${1 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}.1`
  r = cli('lint', file('lc.json', { fetch: range(N, ip), deny: { fetch: range(N, (i) => `100.${(i >> 8) & 255}.${i & 255}.0/24`) } }))
  assert.equal(r.out.warnings.filter((w) => w.code === 'deny-unreachable').length, N)
  r = cli('lint', file('le.json', { fs: range(N, (i) => (i % 100 === 0 ? 'rel/x' : `/srv/g${i}/**`)) }))
  assert.equal(r.status, 1)
  assert.deepEqual(r.out.errors.map((e) => e.pointer), range(100, (i) => `/fs/${i * 100}`))
  // Past the policy-wide glob cap: errors at the grants that take it past, and a note that more may follow.
  const cap = file('lcap.json', { fs: range(300, (i) => `/a${i}/{a,b,c,d,e,f,g,h}/{a,b,c,d,e,f,g,h}/x`) })
  r = cli('lint', cap)
  assert.equal(r.status, 1)
  assert.ok(r.out.errors.length >= 1 && r.out.errors.every((e) => /policy-wide cap/.test(e.expected)), JSON.stringify(r.out.errors[0]))
  const text = spawnSync(process.execPath, [BIN, 'lint', cap], { encoding: 'utf8', timeout: 120_000 })
  assert.match(text.stdout, /more may follow between entries; fix these and lint again\)\n$/)
})

test('a 20,000-deep JSON document: INVALID_MANIFEST at the same pointer from lint, explain, diff and deno', () => {
  const deep = file('deep.json', `${'['.repeat(20000)}${']'.repeat(20000)}`)
  let want
  try {
    PermissionPolicy.fromManifest(JSON.parse(fs.readFileSync(deep, 'utf8')), { plugin: 'deep.json', platform: 'posix' })
  } catch (e) {
    want = { pointer: e.details.pointer, expected: e.details.expected }
  }
  assert.ok(want, 'the validator refuses it')
  for (const args of [['lint', deep], ['explain', deep, 'fs:read:/a'], ['diff', deep, deep]]) {
    const r = cli(...args)
    assert.notEqual(r.status, 0, args[0])
    assert.equal(r.out.valid, false, args[0])
    assert.deepEqual({ pointer: r.out.error.pointer, expected: r.out.error.expected }, want, args[0])
  }
  const text = spawnSync(process.execPath, [BIN, 'deno', deep, '--', 'run', 'x.ts'], { encoding: 'utf8', timeout: 120_000 })
  assert.equal(text.status, 2)
  assert.match(text.stderr, /INVALID_MANIFEST at \/0\/0\//)
  assert.doesNotMatch(text.stderr, /internal error|RangeError/)
})

test('explain: thousands of hostile grants in one directory, the listing bounded and marked', () => {
  const m = file('hx.json', { fs: [...range(2000, (i) => `/a/*${'?'.repeat(60)}${i}*b*`), '/a/*'] })
  const p = `/a/${'a'.repeat(4000)}`
  const r = cli('explain', m, `fs:read:${p}`)
  const policy = PermissionPolicy.fromManifest(JSON.parse(fs.readFileSync(m, 'utf8')), { plugin: 't', platform: 'posix' })
  assert.equal(r.out.decision.allowed, policy.checkFs(p, 'read').allowed)
  assert.equal(typeof r.out.incomplete, 'string')
})
