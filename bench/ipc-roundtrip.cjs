'use strict'
// IPC round-trip latency to a forked child, with and without lockdown(),
// interleaved in one run (the process tier's cost).
const path = require('node:path')
const { fork } = require('node:child_process')

const CHILD = `
  const { lockdown } = require(${JSON.stringify(path.join(__dirname, '..'))})
  if (process.argv[2] === 'lock') lockdown()
  process.on('message', (m) => process.send(m))
  process.send('ready')`

async function roundTrips(child, n) {
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < n; i++) {
    child.send(i)
    await new Promise((r) => child.once('message', r))
  }
  return Number(process.hrtime.bigint() - t0) / n
}

async function runIpcRoundTrips(rounds = 5, n = 1000) {
  const spawn = (mode) => {
    const c = fork('-e', [CHILD, mode], { execArgv: [], env: { UV_USE_IO_URING: '0' }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] })
    return new Promise((resolve) => c.once('message', () => resolve(c)))
  }
  const plain = await spawn('plain')
  const locked = await spawn('lock')
  const a = []
  const b = []
  for (let r = 0; r < rounds; r++) {
    if (r % 2) {
      b.push(await roundTrips(locked, n))
      a.push(await roundTrips(plain, n))
    } else {
      a.push(await roundTrips(plain, n))
      b.push(await roundTrips(locked, n))
    }
  }
  plain.kill()
  locked.kill()
  const med = (xs) => xs.sort((x, y) => x - y)[xs.length >> 1]
  return { plain: Math.round(med(a)), locked: Math.round(med(b)) }
}

module.exports = { runIpcRoundTrips }
