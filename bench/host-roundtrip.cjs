'use strict'
// The cost of the check inside the example host: a proxied fs.readFile round
// trip (plugin -> worker bridge -> postMessage -> host check -> readFile ->
// reply -> context promise), with the checks and without (audit mode).
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { PermissionPolicy } = require('../index.js')
const { runPlugin } = require('../examples/vm-host/host.js')

const CALLS = 2000

async function once(root, audit) {
  const policy = PermissionPolicy.fromManifest({ fs: [`${root}/**`], budgets: { wallClockMs: 60_000 } }, { plugin: 'bench' })
  const code = `const t0 = Date.now()
    for (let i = 0; i < ${CALLS}; i++) await fs.readFile(config.root + '/f-' + (i % 64) + '.txt')
    return String((Date.now() - t0) * 1e6 / ${CALLS})`
  const r = await runPlugin({ name: 'bench', code, policy, config: { root }, audit: audit ? () => {} : undefined })
  if (!r.ok) throw new Error(`plugin failed: ${r.code} ${r.message}`)
  return Number(r.value)
}

async function runHostRoundTrips(rounds) {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'asp-rt-')))
  for (let i = 0; i < 64; i++) fs.writeFileSync(path.join(root, `f-${i}.txt`), 'x'.repeat(100))
  const checked = []
  const unchecked = []
  try {
    for (let r = 0; r < rounds; r++) {
      // Interleaved, alternating order.
      if (r % 2) {
        unchecked.push(await once(root, true))
        checked.push(await once(root, false))
      } else {
        checked.push(await once(root, false))
        unchecked.push(await once(root, true))
      }
    }
  } finally {
    fs.rmSync(root, { recursive: true, force: true })
  }
  const med = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1]
  return { checked: Math.round(med(checked)), unchecked: Math.round(med(unchecked)) }
}

module.exports = { runHostRoundTrips }
