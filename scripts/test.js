'use strict'
// `npm test`: every step in order, stopping at the first failure, then how
// long each took and the total (a newcomer's first run is a cold build; this
// says where the time went). The steps are the package.json scripts below.
const { spawnSync } = require('node:child_process')

const STEPS = ['build', 'test:rust', 'test:wasi-rs', 'test:js']
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const times = []
const started = process.hrtime.bigint()
const seconds = (from) => Number(process.hrtime.bigint() - from) / 1e9
const report = (failed) => {
  const rows = times.map(([step, s]) => `  ${step.padEnd(14)} ${s.toFixed(1).padStart(7)} s`)
  console.log(`\nnpm test: ${failed ? `FAILED at ${failed}` : 'passed'} in ${seconds(started).toFixed(1)} s\n${rows.join('\n')}`)
}
for (const step of STEPS) {
  const t = process.hrtime.bigint()
  const r = spawnSync(npm, ['run', '-s', step], { stdio: 'inherit', shell: process.platform === 'win32' })
  times.push([step, seconds(t)])
  if (r.status !== 0) {
    report(step)
    process.exit(r.status === null ? 1 : r.status)
  }
}
report(null)
