'use strict'
// IPC round-trip latency to a forked child: not locked, after lockdown() (the
// default-deny seccomp allow-list), and after lockdown() in a child the
// asp-landlock launcher started under a manifest's Landlock ruleset. The
// children run side by side in one run, the order rotating each round; each
// figure is the median of the round medians (the process tier's cost).
const path = require('node:path')
const { fork } = require('node:child_process')

const root = path.join(__dirname, '..')
const CHILD = `
  const { lockdown } = require(${JSON.stringify(root)})
  if (process.argv[2] !== 'plain') lockdown()
  process.on('message', (m) => process.send(m))
  process.send('ready')`

const PAYLOAD = 'x'.repeat(1024)

async function roundTrips(child, n) {
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < n; i++) {
    child.send(PAYLOAD)
    await new Promise((r) => child.once('message', r))
  }
  return Number(process.hrtime.bigint() - t0) / n
}

/** The launcher's command for an empty manifest, or null when it cannot be built. */
function landlock() {
  try {
    const { landlockLauncherPath, landlockCommand } = require('../lib/lockdown.js')
    if (landlockLauncherPath() === null) process.env.ASP_LANDLOCK_LAUNCHER = require('../scripts/landlock-launcher.js').landlockLauncher()
    return landlockCommand({ fs: [], fetch: [] }, { strict: true })
  } catch {
    return null
  }
}

async function runIpcRoundTrips(rounds = 15, n = 1000) {
  const spawn = (mode, launcher) => {
    const opts = { execArgv: [], env: { UV_USE_IO_URING: '0' }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] }
    if (launcher) Object.assign(opts, { execPath: launcher.command, execArgv: [...launcher.args, process.execPath] })
    const c = fork('-e', [CHILD, mode], opts)
    return new Promise((resolve, reject) => c.once('message', () => resolve(c)).once('exit', (code) => reject(new Error(`${mode} child exited ${code}`))))
  }
  const l = landlock()
  const children = { plain: await spawn('plain'), locked: await spawn('lock') }
  if (l) children.landlock = await spawn('lock', l)
  const names = Object.keys(children)
  const times = Object.fromEntries(names.map((k) => [k, []]))
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < names.length; i++) {
      const k = names[(i + r) % names.length]
      times[k].push(await roundTrips(children[k], n))
    }
  }
  for (const c of Object.values(children)) c.kill()
  const med = (xs) => xs.sort((x, y) => x - y)[xs.length >> 1]
  return Object.fromEntries(names.map((k) => [k, Math.round(med(times[k]))]))
}

module.exports = { runIpcRoundTrips }
