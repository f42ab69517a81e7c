'use strict'
// win32 names compare as NTFS compares them (SPEC §2): two names are equal iff
// each UTF-16 unit upper-cases to the same unit in the NTFS $UpCase table.
// Oracle: the raw table data (data/ntfs-upcase.txt, generated from ntfs-3g,
// provenance in the file), read here without the checker's folding code, and
// checked through the public checkFs on platform win32, over every pair of
// characters that the table or JavaScript's own case mapping relates.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { PermissionPolicy } = require('..')

const table = new Map()
for (const line of fs.readFileSync(path.join(__dirname, '../data/ntfs-upcase.txt'), 'utf8').split('\n')) {
  if (line === '' || line.startsWith('#')) continue
  const [from, to] = line.split(' ').map((h) => parseInt(h, 16))
  table.set(from, to)
}
const up = (cp) => (cp <= 0xffff ? (table.get(cp) ?? cp) : cp)
const single = (s) => (s.length > 0 && [...s].length === 1 ? s.codePointAt(0) : null)
// Characters a win32 name segment may hold anywhere, and that are not glob syntax.
const usable = (cp) => cp >= 0x20 && !(cp >= 0xd800 && cp <= 0xdfff) && !'<>:"|?*/\\.[]{}!^-, '.includes(String.fromCodePoint(cp))

function pairs() {
  const related = new Map()
  const relate = (a, b) => {
    if (a === null || b === null || a === b || !usable(a) || !usable(b)) return
    const key = a < b ? `${a},${b}` : `${b},${a}`
    related.set(key, [Math.min(a, b), Math.max(a, b)])
  }
  const byUpper = new Map()
  for (let cp = 0; cp <= 0x1ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue
    const c = String.fromCodePoint(cp)
    relate(cp, single(c.toLowerCase()))
    relate(cp, single(c.toUpperCase()))
    relate(cp, up(cp))
    if (cp <= 0xffff) {
      const u = up(cp)
      if (!byUpper.has(u)) byUpper.set(u, [])
      byUpper.get(u).push(cp)
    }
  }
  for (const group of byUpper.values()) for (const a of group) for (const b of group) relate(a, b)
  return [...related.values()]
}

test('win32 names are equal exactly when the NTFS upcase table says so', () => {
  const all = pairs()
  const fsGrants = []
  for (const [i, [a]] of all.entries()) {
    fsGrants.push(`C:\\n${i}\\x${String.fromCodePoint(a)}`, `C:\\r${i}\\[${String.fromCodePoint(a)}-${String.fromCodePoint(a)}]`)
  }
  // Two policies: the grants of one stay under the pattern count limit.
  const half = Math.ceil(all.length / 2)
  const policies = [0, 1].map((k) =>
    PermissionPolicy.fromManifest({ fs: fsGrants.slice(k * half * 2, (k + 1) * half * 2) }, { plugin: 'ntfs', platform: 'win32' }))
  let merged = 0
  let jsMergesNtfsKeepsApart = 0
  let checks = 0
  const wrong = []
  for (const [i, [a, b]] of all.entries()) {
    const policy = policies[i < half ? 0 : 1]
    const same = up(a) === up(b)
    const A = String.fromCodePoint(a)
    const B = String.fromCodePoint(b)
    if (same) merged++
    if (!same && (A.toLowerCase() === B.toLowerCase() || A.toUpperCase() === B.toUpperCase())) jsMergesNtfsKeepsApart++
    for (const [p, what] of [[`C:\\n${i}\\x${B}`, 'literal'], [`C:\\r${i}\\${B}`, 'class'], [`c:/N${i}/X${B}`, 'literal, other case']]) {
      const got = policy.checkFs(p, 'read').allowed
      checks++
      if (got !== same) wrong.push({ a: a.toString(16), b: b.toString(16), what, got, want: same })
    }
  }
  console.log(`ntfs upcase: ${all.length} related pairs, ${checks} checks, ${merged} equal under NTFS, ${jsMergesNtfsKeepsApart} that JavaScript case mapping merges but NTFS keeps apart`)
  assert.deepEqual(wrong.slice(0, 10), [], `${wrong.length} disagreements`)
  assert.ok(jsMergesNtfsKeepsApart >= 200, `${jsMergesNtfsKeepsApart}`)
  assert.ok(merged >= 900, `${merged}`)
})

test('data/ntfs-upcase.txt is what scripts/gen-ntfs-upcase.js generates', () => {
  const { execFileSync } = require('node:child_process')
  const generated = execFileSync(process.execPath, [path.join(__dirname, '../scripts/gen-ntfs-upcase.js')], { encoding: 'utf8' })
  assert.equal(generated, fs.readFileSync(path.join(__dirname, '../data/ntfs-upcase.txt'), 'utf8'))
  assert.equal(table.size, 973)
})
