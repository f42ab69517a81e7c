#!/usr/bin/env node
'use strict'
// Runs every JS fuzz oracle in __test__/oracles/ for a while and reports.
// Usage: npm run fuzz:js -- [--seconds N] [--seed S] [--only name]
// Each module exports `async run({ seconds, seed, log })` returning
// `{ cases, wrongAllows, mismatches? }`. Exit code 1 on any wrong allow or mismatch.
// Among them: `ipc-frame` fuzzes the process tier parent's IPC decoder
// (lib/ipc-frame.js) as a harness of its own, and `headers` drives the
// shipped runner's fetch with generated request headers against a raw server,
// and `roundtrip` reloads random and hostile policies from their own toJSON().
const fs = require('node:fs')
const path = require('node:path')
const { parseArgs } = require('node:util')

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '30' },
    seed: { type: 'string' },
    only: { type: 'string' },
  },
})
const seconds = Number(values.seconds)
if (!Number.isFinite(seconds) || seconds <= 0) throw new TypeError('--seconds must be a positive number')
const seed = values.seed === undefined ? Date.now() % 2 ** 31 : Number(values.seed)

async function main() {
  const dir = path.join(__dirname, '..', '__test__', 'oracles')
  const names = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.js'))
    .map((f) => f.slice(0, -3))
    .filter((n) => values.only === undefined || n === values.only)
    .sort()
  if (names.length === 0) throw new Error(`no oracle modules in ${dir}`)
  let failed = false
  for (const name of names) {
    const mod = require(path.join(dir, `${name}.js`))
    if (typeof mod.run !== 'function') {
      console.log(`${name}: no run() export, skipped`)
      continue
    }
    const t0 = Date.now()
    const r = await mod.run({ seconds, seed, log: (m) => console.log(`  [${name}] ${m}`) })
    const wrong = r.wrongAllows || []
    const mismatches = r.mismatches || []
    console.log(`${name}: ${r.cases} cases in ${((Date.now() - t0) / 1000).toFixed(1)} s (seed ${seed}), ${wrong.length} wrong allows, ${mismatches.length} mismatches`)
    for (const w of wrong.slice(0, 10)) console.log(`  WRONG ALLOW ${JSON.stringify(w)}`)
    for (const m of mismatches.slice(0, 10)) console.log(`  mismatch ${JSON.stringify(m)}`)
    if (wrong.length > 0 || mismatches.length > 0) failed = true
  }
  process.exitCode = failed ? 1 : 0
}

main().catch((e) => {
  console.error(e)
  process.exitCode = 2
})
