'use strict'
// CLI errors a user meets: every manifest error with its pointer and
// line:column (not only the first), malformed JSON with line and column on
// one line, "did you mean" for a mistyped command or option. Oracles: the
// validator itself on each bad part alone (for "every error"), V8's own
// JSON.parse (for what is JSON, and for the position where its message
// gives one).
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { PermissionPolicy } = require('..')
const { manifestErrors } = require('../lib/manifest-errors.js')
const { parseJsonSource } = require('../lib/json-source.js')

const BIN = path.join(__dirname, '..', 'bin', 'api-sandbox-permissions.js')
const cli = (args) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' })
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asp-cli-errors-'))
test.after(() => fs.rmSync(dir, { recursive: true, force: true }))
const write = (name, text) => {
  const f = path.join(dir, name)
  fs.writeFileSync(f, text)
  return f
}
/** The pointer fromManifest names for `manifest`, or null when valid. */
function firstError(manifest) {
  try {
    PermissionPolicy.fromManifest(manifest, { plugin: 'p', platform: 'posix' })
    return null
  } catch (e) {
    return e.details.pointer
  }
}

// Entries that are wrong alone, and entries that are fine alone.
const FS = ['/ok/**', 'relative/**', { path: '/w/*.json', mode: 'write' }, { path: 'x' }, { path: '/y', mode: 'bogus' }, '/also/ok', '', 7, { path: '/z', extra: 1 }]
const FETCH = ['api.example.com', 'http://a b', '*.cdn.example.net', 'https://x.example:99999', 'ftp://ok.example']

test('every error, at its pointer in the manifest as given: the validator on each part alone is the oracle', () => {
  const expected = []
  FS.forEach((e, i) => {
    const p = firstError({ fs: [e] })
    if (p !== null) expected.push(p.replace(/^\/fs\/0/, `/fs/${i}`))
  })
  FETCH.forEach((e, i) => {
    const p = firstError({ fetch: [e] })
    if (p !== null) expected.push(p.replace(/^\/fetch\/0/, `/fetch/${i}`))
  })
  for (const [k, v] of [['unknownKey', 1], ['budgets', { wallClockMs: -1 }], ['secrets', ['OK', 5]]]) {
    const p = firstError({ [k]: v })
    assert.notEqual(p, null, k)
    expected.push(p)
  }
  assert.ok(expected.length >= 10, `${expected.length} bad parts`)
  const manifest = { fs: FS, fetch: FETCH, unknownKey: 1, budgets: { wallClockMs: -1 }, secrets: ['OK', 5] }
  const errors = manifestErrors(manifest, { platform: 'posix' })
  assert.deepEqual(errors.map((e) => e.pointer).sort(), expected.sort())
  assert.equal(errors[0].pointer, firstError(manifest), 'the first is the one fromManifest throws')
  for (const e of errors) assert.equal(e.code, 'INVALID_MANIFEST')
  assert.deepEqual(manifestErrors({ fs: ['/a/**'], fetch: ['api.example.com'] }), [])
  assert.deepEqual(manifestErrors([1]).map((e) => e.pointer), [''])
  // A missing required field is reported once, not again as its emptied parent.
  assert.deepEqual(manifestErrors({ db: {} }).map((e) => e.pointer), [firstError({ db: {} })])
})

test('lint prints every error with file:line:column and pointer; --json lists them', () => {
  const f = write('m.json', '{\n  "fs": ["/a/**", "rel/**",\n    {"path": "x"}],\n  "bogus": 1\n}\n')
  const r = cli(['lint', f])
  assert.equal(r.status, 1)
  assert.equal(
    r.stdout,
    [
      `${f}:2:19: INVALID_MANIFEST at /fs/1: expected an absolute posix glob starting with '/'`,
      `${f}:3:14: INVALID_MANIFEST at /fs/2/path: expected an absolute posix glob starting with '/'`,
      `${f}:4:12: INVALID_MANIFEST at /bogus: expected no unknown keys; allowed here: fs, fetch, budgets, secrets, events, db, deny`,
      `${f}: invalid, 3 errors`,
      '',
    ].join('\n'),
  )
  // Past 100 errors, the first 100 and a note that there are more.
  const many = write('many.json', JSON.stringify({ fs: Array.from({ length: 150 }, (_, i) => `rel${i}/**`) }))
  const m = cli(['lint', many])
  assert.equal(m.stdout.split('\n').filter((l) => l.includes('INVALID_MANIFEST at /fs/')).length, 100)
  assert.match(m.stdout, /invalid, 100 errors shown \(the first 100; fix these and lint again for the rest\)\n$/)
  const j = JSON.parse(cli(['lint', f, '--json']).stdout)
  assert.equal(j.valid, false)
  assert.deepEqual(j.errors.map((e) => [e.pointer, e.line, e.column]), [['/fs/1', 2, 19], ['/fs/2/path', 3, 14], ['/bogus', 4, 12]])
  assert.deepEqual(j.error, j.errors[0])
  // A key holding a newline: the pointer is escaped, so each error stays one line.
  const nl = write('nl.json', '{"a\\nb": 1}')
  assert.deepEqual(cli(['lint', nl]).stdout.split('\n').slice(1), [`${nl}: invalid, 1 error`, ''])
})

test('malformed JSON: one line with line and column, for lint, explain and learn --config', () => {
  const f = write('bad.json', '{"fs": [\n  "/a",\n  ]}')
  const want = `${f}:3:3: is not JSON: expected a value: an object, array, string, number, true, false or null, found "]"`
  for (const args of [['lint', f], ['explain', f, 'fs:read:/a'], ['learn', write('p.js', ''), '--config', f]]) {
    const r = cli(args)
    assert.equal(r.status, 2, args.join(' '))
    assert.equal(r.stderr, `api-sandbox-permissions: ${want}\n`)
  }
  const j = JSON.parse(cli(['lint', f, '--json']).stdout)
  assert.deepEqual(j, { error: { kind: 'input', message: want, line: 3, column: 3 } })
  const raw = write('raw.json', '{"a": "x\ny"}')
  assert.equal(cli(['lint', raw]).stderr, `api-sandbox-permissions: ${raw}:1:9: is not JSON: expected an escape (\\n, \\t, \\u0000, ...) instead of a raw control character in a string, found "\\n"\n`)
  const bom = write('bom.json', '\uFEFF{}')
  assert.match(cli(['lint', bom]).stderr, /bom\.json:1:1: is not JSON: expected a value, not a byte order mark \(U\+FEFF\).*found U\+FEFF\n$/)
})

test('the JSON locator agrees with JSON.parse on what is JSON, and with V8 on the position where V8 names one', () => {
  const seeds = [
    '{"fs": ["/a/**", {"path": "/b", "mode": "write"}], "fetch": ["api.example.com"], "budgets": {"wallClockMs": 100, "cpuPercent": 2.5e1}}',
    '[1, -0.5, true, false, null, "a\\"b\\u00e9\\n", {}, [], {"k": [[]]}]',
    '{\n  "a": "x",\n  "b": [\n    1,\n    2\n  ]\n}\n',
  ]
  const alphabet = ['{', '}', '[', ']', ',', ':', '"', '\\', 'u', '1', '-', '.', 'e', ' ', '\n', 't', 'x', '\u0001', '0']
  let seed = 0x2545f491
  const rand = (n) => {
    seed ^= seed << 13
    seed ^= seed >>> 17
    seed ^= seed << 5
    return (seed >>> 0) % n
  }
  let positioned = 0
  for (let k = 0; k < 4000; k++) {
    let t = seeds[rand(seeds.length)]
    for (let m = 1 + rand(2); m > 0; m--) {
      const at = rand(t.length + 1)
      const op = rand(3)
      t = op === 0 ? t.slice(0, at) + t.slice(at + 1) : op === 1 ? t.slice(0, at) + alphabet[rand(alphabet.length)] + t.slice(at) : t.slice(0, at) + alphabet[rand(alphabet.length)] + t.slice(at + 1)
    }
    let v8
    try {
      JSON.parse(t)
    } catch (e) {
      v8 = e.message
    }
    let ours
    try {
      parseJsonSource(t, 'f')
    } catch (e) {
      ours = e
    }
    assert.equal(ours === undefined, v8 === undefined, JSON.stringify(t))
    if (ours === undefined) continue
    assert.doesNotMatch(ours.message, /\n/, JSON.stringify(t))
    const pos = / at position (\d+)/.exec(v8)
    if (!pos) continue
    const offset = Number(pos[1])
    const before = t.slice(0, offset)
    const line = before.split('\n').length
    const column = offset - before.lastIndexOf('\n')
    assert.deepEqual([ours.line, ours.column], [line, column], `${JSON.stringify(t)}: V8 says ${v8}`)
    positioned++
  }
  assert.ok(positioned > 500, `only ${positioned} errors had a V8 position`)
})

test('did you mean: mistyped commands and options; an option of another command says whose', () => {
  let r = cli(['lnit', 'x.json'])
  assert.equal(r.status, 2)
  assert.match(r.stderr, /^api-sandbox-permissions: unknown command "lnit" \(did you mean lint\?\)\n/)
  assert.match(cli(['explian']).stderr, /did you mean explain\?/)
  assert.match(cli(['help', 'lern']).stderr, /no command "lern" \(did you mean learn\?\)/)
  assert.doesNotMatch(cli(['zzzz']).stderr, /did you mean/)
  r = cli(['lint', 'x.json', '--stirct'])
  assert.match(r.stderr, /^api-sandbox-permissions: Unknown option '--stirct' \(did you mean --strict\?\)\n/)
  assert.match(cli(['learn', 'p.js', '--generalise']).stderr, /did you mean --generalize\?/)
  assert.match(cli(['explain', 'm.json', 'fs:read:/a', '--strict']).stderr, /Unknown option '--strict' \(--strict is an option of lint\)/)
  r = cli(['lint', 'x.json', '--jsno', '--json'])
  assert.match(JSON.parse(r.stdout).error.message, /did you mean --json\?/)
})
