'use strict'
// `npm test`: every step, then how long each took and the total (a
// newcomer's first run is a cold build; this says where the time went). The
// steps are the package.json scripts below, in two lanes that run side by
// side: the JS lane needs the release addon, the Rust lane needs nothing the
// JS lane builds. Each lane runs its steps in order. Running them together
// keeps both cores busy: the release build ends in one serial LTO unit, and
// each test phase has serial stretches the other lane fills. Cargo locks a
// target directory per profile (the release build and the debug test builds
// do not wait for each other), and the JS tests that build with cargo wait for
// the lock, never race it.
//
// Each line of output is prefixed with its lane. The first failing step stops
// the other lane; the exit code is that step's.
const { spawn } = require('node:child_process')
const readline = require('node:readline')

const LANES = {
  js: ['build', 'test:js'],
  rust: ['test:rust', 'test:wasi-rs'],
}
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const started = process.hrtime.bigint()
const seconds = (from) => Number(process.hrtime.bigint() - from) / 1e9
const times = []
const running = new Set()
let failed = null

function report() {
  const rows = times.map(([lane, step, s, how]) => `  ${lane.padEnd(5)} ${step.padEnd(14)} ${s.toFixed(1).padStart(7)} s${how ? `  ${how}` : ''}`)
  console.log(`\nnpm test: ${failed ? `FAILED at ${failed.step}` : 'passed'} in ${seconds(started).toFixed(1)} s (two lanes side by side)\n${rows.join('\n')}`)
}

function runStep(lane, step) {
  return new Promise((resolve) => {
    const t = process.hrtime.bigint()
    const child = spawn(npm, ['run', '-s', step], {
      stdio: ['ignore', 'pipe', 'pipe'],
      shell: process.platform === 'win32',
      // Its own process group, so a failure elsewhere can stop all of it (cargo, node --test and their children).
      detached: process.platform !== 'win32',
    })
    running.add(child)
    const prefix = `[${lane}] `
    for (const [from, to] of [[child.stdout, process.stdout], [child.stderr, process.stderr]]) {
      readline.createInterface({ input: from, crlfDelay: Infinity }).on('line', (line) => to.write(prefix + line + '\n'))
    }
    child.on('close', (code) => {
      running.delete(child)
      const ok = code === 0
      times.push([lane, step, seconds(t), ok ? '' : failed ? 'stopped' : 'FAILED'])
      resolve(ok ? 0 : code || 1)
    })
  })
}

function stopOthers(signal = 'SIGTERM') {
  for (const child of running) {
    try {
      if (process.platform === 'win32') child.kill()
      else process.kill(-child.pid, signal)
    } catch {
      // already gone
    }
  }
}

// The lanes are process groups of their own, so a Ctrl-C at the terminal
// reaches only this process: pass it on, then leave.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    stopOthers(signal)
    process.exit(130)
  })
}

async function runLane(lane, steps) {
  for (const step of steps) {
    if (failed) return
    const code = await runStep(lane, step)
    if (code !== 0) {
      if (!failed) {
        failed = { step, code }
        stopOthers()
      }
      return
    }
  }
}

Promise.all(Object.entries(LANES).map(([lane, steps]) => runLane(lane, steps))).then(() => {
  report()
  process.exit(failed ? failed.code : 0)
})
