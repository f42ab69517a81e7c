'use strict'
// The code tables cross once, from Rust (lib/native.js): no other JS file of
// the package spells a registry id, a deny reason, a capability id with a
// dot, an instrument name or the meter name as a string literal; each reads
// it from the table. (`fetch` and `unknown` are also manifest keys and op
// names, so they are not scanned; lib/vm-host/ is a sample host written
// against the public API, as a user's host would spell capability ids.)
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const native = require('../lib/native.js')

const ROOT = path.join(__dirname, '..')
const FILES = [
  ...fs.readdirSync(path.join(ROOT, 'lib')).filter((f) => f.endsWith('.js') && f !== 'native.js').map((f) => `lib/${f}`),
  ...fs.readdirSync(path.join(ROOT, 'bin')).filter((f) => f.endsWith('.js')).map((f) => `bin/${f}`),
  'index.js',
  'testing.js',
]
const TABLE_WORDS = new Set([
  ...native.DENY_REASONS,
  ...native.ERROR_REGISTRY.map((e) => e.id),
  ...native.CAPABILITY_IDS.filter((c) => c.includes('.')),
  ...native.INSTRUMENTS.map((i) => i.name),
  native.METER_NAME,
])

/** `file:line literal` for each quoted literal that is a table word, and each registry id outside a comment. */
function restated(file, src) {
  const hits = []
  const lineOf = (i) => src.slice(0, i).split('\n').length
  for (const m of src.matchAll(/(['"])([A-Za-z0-9_.]+)\1/g)) if (TABLE_WORDS.has(m[2])) hits.push(`${file}:${lineOf(m.index)} ${m[0]}`)
  src.split('\n').forEach((line, i) => {
    if (/^\s*(\/\/|\/?\*)/.test(line)) return
    for (const e of native.ERROR_REGISTRY) if (line.includes(e.id)) hits.push(`${file}:${i + 1} ${e.id}`)
  })
  return hits
}

test('no JS file restates a table Rust exports', () => {
  const hits = FILES.flatMap((f) => restated(f, fs.readFileSync(path.join(ROOT, f), 'utf8')))
  console.log(`${FILES.length} files scanned for ${TABLE_WORDS.size} table words`)
  assert.deepEqual(hits, [])
})

test('the scan finds a restated id, reason or instrument name', () => {
  const src = [
    "const prefix = `SAND_PERM_001 ${code}`",
    "const rank = ['port_not_allowed']",
    'const n = "plugin.permission_denied_total"',
    '// a comment may name SAND_PERM_001 and `port_not_allowed` in prose',
  ].join('\n')
  assert.deepEqual(restated('x.js', src), ["x.js:2 'port_not_allowed'", 'x.js:3 "plugin.permission_denied_total"', 'x.js:1 SAND_PERM_001'])
})
