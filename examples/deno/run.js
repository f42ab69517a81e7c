'use strict'
// The Deno tier of the demo: the same manifest as the vm and process tiers,
// enforced on a real Deno process through its permission broker
// (runDeno: broker on a private socket, budgets sampled from /proc).
const fs = require('node:fs')
const path = require('node:path')
const { PermissionPolicy } = require('../..')
const { runDeno, resolveDeno, formatSummary } = require('../../lib/deno-broker.js')

/** The deno binary, or null with the reason (the demo skips the tier then). */
function findDeno() {
  if (process.platform === 'win32') return { deno: null, why: 'the broker listens on a Unix socket' }
  try {
    const deno = resolveDeno()
    const v = require('node:child_process').spawnSync(deno, ['--version'], { encoding: 'utf8' })
    if (v.status !== 0) return { deno: null, why: `${deno} does not run on this host (${v.error ? v.error.code : `exit ${v.status}`})` }
    return { deno, why: null }
  } catch (e) {
    return { deno: null, why: e.message }
  }
}

/**
 * Runs examples/deno/<name>.ts under `manifest` as plugin `deno-<name>`.
 * Resolves `{ ok, code, budget, stats, lines, elapsedMs }`.
 */
async function runDenoPlugin({ name, deno, manifest, root, api, meter, secrets, log }) {
  const plugin = `deno-${name}`
  const policy = PermissionPolicy.fromManifest(manifest, { plugin })
  const outFile = path.join(root, `.${plugin}.stdout`)
  const fd = fs.openSync(outFile, 'w')
  const env = { PATH: process.env.PATH, HOME: root, DENO_DIR: path.join(root, '.deno'), NO_COLOR: '1', ...Object.fromEntries(secrets) }
  const started = performance.now()
  let r
  try {
    r = await runDeno(policy, { deno, args: ['run', '--quiet', path.join(__dirname, `${name}.ts`), root, api], env, cwd: root, stdio: ['ignore', fd, 'ignore'], meter })
  } finally {
    fs.closeSync(fd)
  }
  const lines = fs.readFileSync(outFile, 'utf8').split('\n').filter(Boolean)
  for (const l of lines) log(`[${plugin}] log: ${l}`)
  for (const l of formatSummary(r.stats, r.budget).split('\n')) log(`[${plugin}] ${l.trim()}`)
  return { ok: r.exitCode === 0, code: r.budget ? 'BUDGET_EXCEEDED' : `exit ${r.exitCode}`, budget: r.budget && r.budget.budget, stats: r.stats, lines, elapsedMs: performance.now() - started }
}

module.exports = { findDeno, runDenoPlugin }
