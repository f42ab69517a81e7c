'use strict'
// `npm test`: every step, then how long each took and the total (a
// newcomer's first run is a cold build; this says where the time went). The
// steps are the package.json scripts below, in two lanes that run side by
// side, each in order:
//   js:   build (the release addon), then test:js
//   rust: build:test-hooks (the debug addon some JS tests load), then
//         test:rust (the crate's and the example WASI host's Rust tests)
// test:js also waits for build:test-hooks. Running the lanes together keeps
// both cores busy: the release build ends in one serial LTO unit, and each
// test phase has serial stretches the other lane fills. Cargo locks a
// target directory per profile, so the release build and the debug builds do
// not wait for each other; the one JS test that builds with cargo (the WASI
// host's `run` example, with test:rust's selection) waits for the debug
// lock and then finds everything built.
//
// Each line of output is prefixed with its lane. The first failing step stops
// the other lane; the exit code is that step's.
const { spawn, spawnSync } = require('node:child_process')
const readline = require('node:readline')

const LANES = {
  js: ['build', 'test:js'],
  rust: ['build:test-hooks', 'test:rust'],
}
const AFTER = { 'test:js': ['build:test-hooks'] }
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const started = process.hrtime.bigint()
const seconds = (from) => Number(process.hrtime.bigint() - from) / 1e9
const times = []
const running = new Set()
let failed = null
const done = new Map(Object.values(LANES).flat().map((step) => {
  let settle
  const p = new Promise((resolve) => (settle = resolve))
  return [step, { p, settle }]
}))

function report() {
  const rows = times.map(([lane, step, s, how]) => `  ${lane.padEnd(5)} ${step.padEnd(14)} ${s.toFixed(1).padStart(7)} s${how ? `  ${how}` : ''}`)
  console.log(`\nnpm test: ${failed ? `FAILED at ${failed.step}` : 'passed'} in ${seconds(started).toFixed(1)} s (two lanes side by side)\n${rows.join('\n')}`)
}

function runStep(lane, step) {
  return new Promise((resolve) => {
    const t = process.hrtime.bigint()
    const child = spawn(npm, ['run', '-s', step], {
      stdio: ['ignore', 'pipe', 'pipe'],
      // test:js loads the debug addon build:test-hooks made (it waited for it) without asking cargo again.
      env: step === 'test:js' ? { ...process.env, ASP_TEST_HOOKS_BUILT: '1' } : process.env,
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
      // Windows has no process groups: taskkill /T ends the shell's whole
      // tree (npm, cargo or node --test and their children), not the shell alone.
      if (process.platform === 'win32') spawnSync('taskkill', ['/pid', String(child.pid), '/T', '/F'], { stdio: 'ignore' })
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
    await Promise.all((AFTER[step] || []).map((s) => done.get(s).p))
    if (failed) break
    const code = await runStep(lane, step)
    done.get(step).settle()
    if (code !== 0) {
      if (!failed) {
        failed = { step, code }
        stopOthers()
      }
      break
    }
  }
  // A lane that stops early releases whoever waits on its steps (they see `failed`).
  for (const step of steps) done.get(step).settle()
}

Promise.all(Object.entries(LANES).map(([lane, steps]) => runLane(lane, steps))).then(() => {
  report()
  process.exit(failed ? failed.code : 0)
})
