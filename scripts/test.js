'use strict'
// `npm test`: the package.json scripts `build`, `test:rust`, `test:wasi-rs`
// and `test:js`, stopping at the first failure, then how long each part took
// and the total (a newcomer's first run is a cold build; this says where the
// time went).
//
// The three cold compiles run at once first: each waits on its own lock
// (cargo locks a profile's directory: `target/release` for the addon,
// `target/debug` for the crate's tests and then the test-hooks addon,
// `examples/wasi-host-rs/target` for the wasmtime host), and alone none keeps
// two cores busy (the addon's LTO link and the largest crates build on one
// core). Their output is held and printed when each ends. The test steps then
// run one after another and find their code built. `--serial` runs the steps
// only, one after another, printing as they go.
const { spawn, spawnSync } = require('node:child_process')
const path = require('node:path')

const root = path.join(__dirname, '..')
const pkg = require(path.join(root, 'package.json'))
const STEPS = ['build', 'test:rust', 'test:wasi-rs', 'test:js']
const win = process.platform === 'win32'
const npm = win ? 'npm.cmd' : 'npm'

/**
 * The compiles the steps would do, as `[name, [command, args]...]` (run in
 * order within a job): each is a step's own cargo command with `--no-run`,
 * so the step finds nothing left to build. Checked against package.json below.
 */
const RUST_TESTS = ['test', '--no-default-features', '--features', 'testing,lockdown,launcher']
const WASI_TESTS = ['test', '--manifest-path', 'examples/wasi-host-rs/Cargo.toml']
const COMPILES = [
  ['addon (release)', [npm, ['run', '-s', 'build']]],
  ['crate tests + test-hooks addon (debug)', ['cargo', [...RUST_TESTS, '--no-run']], [process.execPath, ['scripts/test-hooks-addon.js']]],
  ['wasmtime host tests (debug)', ['cargo', [...WASI_TESTS, '--no-run']]],
]

function check() {
  const has = (script, words) => typeof pkg.scripts[script] === 'string' && pkg.scripts[script].includes(words.join(' '))
  if (!has('test:rust', ['cargo', ...RUST_TESTS]) || !has('test:wasi-rs', ['cargo', ...WASI_TESTS]) || !has('test:js', ['node', 'scripts/test-hooks-addon.js'])) {
    throw new Error('scripts/test.js: its prebuild commands no longer match the package.json test scripts; update COMPILES')
  }
}

const times = []
const started = process.hrtime.bigint()
const seconds = (from) => Number(process.hrtime.bigint() - from) / 1e9
function report(failed) {
  const rows = times.map(([step, s]) => `  ${step.padEnd(40)} ${s.toFixed(1).padStart(7)} s`)
  console.log(`\nnpm test: ${failed ? `FAILED at ${failed}` : 'passed'} in ${seconds(started).toFixed(1)} s\n${rows.join('\n')}`)
}
function fail(step, status) {
  report(step)
  process.exit(status === null || status === 0 ? 1 : status)
}

/** The compile jobs' running processes: one failure stops the others. */
const running = new Set()

/** Runs one job's commands in order with its output held; resolves `{ status, output }`. */
function job(commands) {
  return new Promise((resolve) => {
    const chunks = []
    const next = (i) => {
      if (i === commands.length) return resolve({ status: 0, output: Buffer.concat(chunks).toString() })
      const [cmd, args] = commands[i]
      const child = spawn(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], shell: win })
      running.add(child)
      child.on('exit', () => running.delete(child))
      child.stdout.on('data', (c) => chunks.push(c))
      child.stderr.on('data', (c) => chunks.push(c))
      child.on('error', (e) => resolve({ status: 1, output: `${Buffer.concat(chunks)}${e.message}\n` }))
      child.on('close', (status) => (status === 0 ? next(i + 1) : resolve({ status, output: Buffer.concat(chunks).toString() })))
    }
    next(0)
  })
}

async function compileAll() {
  console.log(`npm test: compiling ${COMPILES.length} parts at once (${COMPILES.map(([n]) => n).join('; ')}); each one's output follows when it ends`)
  const failed = []
  await Promise.all(
    COMPILES.map(async ([name, ...commands]) => {
      const t = process.hrtime.bigint()
      const r = await job(commands)
      times.push([`compile: ${name}`, seconds(t)])
      process.stdout.write(`\n── ${name}: ${r.status === 0 ? 'built' : 'FAILED'} in ${seconds(t).toFixed(1)} s ──\n${r.output}`)
      if (r.status !== 0) {
        failed.push([name, r.status])
        for (const child of running) child.kill()
      }
    }),
  )
  if (failed.length) fail(`compile: ${failed[0][0]}`, failed[0][1])
}

async function main() {
  check()
  const serial = process.argv.includes('--serial')
  if (!serial) await compileAll()
  for (const step of serial ? STEPS : STEPS.slice(1)) {
    const t = process.hrtime.bigint()
    const r = spawnSync(npm, ['run', '-s', step], { cwd: root, stdio: 'inherit', shell: win })
    times.push([step, seconds(t)])
    if (r.status !== 0) fail(step, r.status)
  }
  report(null)
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
