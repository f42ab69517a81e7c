'use strict'
// Child of bench.mjs, run with --experimental-permission: measures
// process.permission.has next to picomatch over the same inputs.
const picomatch = require('picomatch')
const rounds = Number(process.argv[2] || 5)
const allow = []
for (let i = 0; i < 10; i += 3) allow.push(`/srv/app-${i}/data/**`)
const pm = picomatch(allow, { dot: true })
const inputs = []
for (let j = 0; j < 4096; j++) inputs.push(`/srv/app-${3 * (j % 4)}/data/dir-${j % 13}/file-${j}.txt`)
let sink = 0
function time(fn) {
  const n = 200_000
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < n; i++) sink ^= fn(inputs[i & 4095]) ? 1 : 0
  return Number(process.hrtime.bigint() - t0) / n
}
const med = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1]
const has = []
const pmr = []
for (let r = 0; r < rounds; r++) {
  has.push(time((p) => process.permission.has('fs.read', p)))
  pmr.push(time((p) => pm(p)))
}
process.stdout.write(JSON.stringify({ has: +med(has).toFixed(1), picomatch: +med(pmr).toFixed(1), sink }))
