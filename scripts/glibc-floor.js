'use strict'
// The newest glibc symbol version a linux-gnu .node needs (its glibc floor),
// read from the binary's version-requirement section with readelf (or
// objdump -T). `node scripts/glibc-floor.js <file.node> [--max 2.17]` prints
// it and exits 1 when it is above --max. Used by scripts/package.test.js and
// the release workflow.
const { execFileSync } = require('node:child_process')

const cmp = (a, b) => {
  const x = a.split('.').map(Number)
  const y = b.split('.').map(Number)
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] || 0) - (y[i] || 0)
    if (d !== 0) return d
  }
  return 0
}

/** Every `GLIBC_x.y[.z]` version the file requires, sorted, and the newest. */
function requiredGlibc(file) {
  let text
  try {
    text = execFileSync('readelf', ['--version-info', '--wide', file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  } catch {
    text = execFileSync('objdump', ['-T', file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  }
  const versions = [...new Set([...text.matchAll(/GLIBC_(\d+(?:\.\d+)+)/g)].map((m) => m[1]))].sort(cmp)
  return { versions, newest: versions.length ? versions[versions.length - 1] : null }
}

if (require.main === module) {
  const args = process.argv.slice(2)
  const at = args.indexOf('--max')
  const max = at >= 0 ? args.splice(at, 2)[1] : null
  let fail = false
  for (const file of args) {
    const { newest } = requiredGlibc(file)
    const over = max !== null && newest !== null && cmp(newest, max) > 0
    console.log(`${file}: needs glibc ${newest || '(no versioned glibc symbols)'}${max ? (over ? `, above the ${max} floor` : `, within the ${max} floor`) : ''}`)
    fail ||= over
  }
  if (args.length === 0) {
    console.error('usage: node scripts/glibc-floor.js <file.node>... [--max 2.17]')
    process.exitCode = 2
  } else if (fail) process.exitCode = 1
}

module.exports = { requiredGlibc, compareVersions: cmp }
