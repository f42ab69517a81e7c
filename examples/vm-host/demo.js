'use strict'
// `npm run demo`: runs the example host on the bundled plugins, against real
// files in a temp directory, a real HTTP server on 127.0.0.1, and an
// OpenTelemetry MeterProvider whose counts are printed at the end.
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const http = require('node:http')
const { PermissionPolicy } = require('../..')
const { demoMeter, logCounts } = require('../shared/meter.js')
const { demoLog, runDemo } = require('../shared/run-demo.js')
const { runPlugin } = require('./host.js')
const { runPluginProcess } = require('./process-tier.js')

async function main({ json = false } = {}) {
  const { lines, log } = demoLog(json)
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'vm-host-demo-')))
  fs.mkdirSync(path.join(root, 'data'))
  fs.mkdirSync(path.join(root, 'out'))
  fs.writeFileSync(path.join(root, 'data', 'input.txt'), 'hello from a file\n')
  fs.writeFileSync(path.join(root, 'secret-outside.txt'), 'TOP SECRET\n')
  fs.symlinkSync(path.join(root, 'secret-outside.txt'), path.join(root, 'data', 'link-to-secret'))
  // A directory link to itself: `data/here/..` is `data` lexically, but the kernel climbs from the target, to `root`.
  fs.symlinkSync('.', path.join(root, 'data', 'here'))

  // The bound secret's value: only the host and the granted API ever see it.
  const apiToken = `tok-${require('node:crypto').randomBytes(12).toString('hex')}`
  const seenByCollector = []
  const collector = http.createServer((req, res) => {
    seenByCollector.push({ url: req.url, authorization: req.headers.authorization || null })
    res.end(req.headers.authorization ? 'collector got an authorization header' : 'collector got no authorization header')
  })
  await new Promise((r) => collector.listen(0, '127.0.0.1', r))
  const collectorPort = collector.address().port
  const server = http.createServer((req, res) => {
    if (req.url.startsWith('/hello')) return res.end('hello from 127.0.0.1')
    if (req.url === '/api/v1/me') return req.headers.authorization === `Bearer ${apiToken}` ? res.end('authorized') : res.writeHead(401).end('unauthorized')
    if (req.url === '/api/v1/redirect-away') {
      res.writeHead(302, { location: `http://127.0.0.1:${collectorPort}/collect` })
      return res.end()
    }
    if (req.url === '/redirect-to-metadata') {
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' })
      return res.end()
    }
    res.writeHead(404).end()
  })
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  const port = server.address().port

  const metrics = demoMeter('vm-host-demo')
  const { meter } = metrics

  const manifest = {
    fs: [`${root}/data/**`, { path: `${root}/out/*.json`, mode: 'write' }],
    fetch: [`127.0.0.1:${port}`],
    secrets: ['GREETING'],
    events: { publishes: ['demo.*'] },
    budgets: { wallClockMs: 3000, cpuPercent: 80, memoryMb: 256 },
  }
  const config = { root, api: `http://127.0.0.1:${port}`, apiHost: `127.0.0.1:${port}`, apiPort: port, collector: `http://127.0.0.1:${collectorPort}` }
  // A stricter candidate, run in shadow beside the enforced manifest (SPEC §12):
  // path-scoped fetch, no secret, a tighter wall clock. It decides nothing;
  // the demo prints what it would have denied.
  const shadowManifest = {
    fs: [`${root}/data/input.txt`, { path: `${root}/out/*.json`, mode: 'write' }],
    fetch: [`127.0.0.1:${port}/api/**`],
    events: { publishes: ['demo.*'] },
    budgets: { wallClockMs: 2000, cpuPercent: 80, memoryMb: 256 },
  }
  const secrets = new Map([
    ['GREETING', 'hi there'],
    ['AWS_SECRET_ACCESS_KEY', 'must never be read'],
  ])
  const results = {}
  try {
    for (const name of ['good', 'evil']) {
      const policy = PermissionPolicy.fromManifest(manifest, { plugin: `${name}-plugin` })
      const shadow = name === 'good' ? PermissionPolicy.fromManifest(shadowManifest, { plugin: `${name}-plugin` }) : undefined
      const code = fs.readFileSync(path.join(__dirname, 'plugins', `${name}.js`), 'utf8')
      log(`\n== plugin ${name}${shadow ? ' (with a stricter manifest in shadow)' : ''}`)
      const bus = []
      const r = await runPlugin({ name, code, policy, shadow, meter, secrets, bus, config, log })
      results[name] = { ...r, events: bus }
      log(`[${name}] result: ${r.ok ? `ok (${r.value})` : `${r.code}${r.budget ? ` (${r.budget})` : ''}`} after ${r.elapsedMs.toFixed(0)} ms`)
    }
    {
      // Destination-bound secrets (SPEC §13): the plugin sends API_TOKEN without ever reading it.
      const name = 'secret'
      const secretManifest = {
        fetch: [`127.0.0.1:${port}`, `127.0.0.1:${collectorPort}`],
        secrets: [{ name: 'API_TOKEN', hosts: [`http://127.0.0.1:${port}/api/v1/**`] }],
        budgets: { wallClockMs: 3000, cpuPercent: 80, memoryMb: 256 },
      }
      const policy = PermissionPolicy.fromManifest(secretManifest, { plugin: `${name}-plugin` })
      const code = fs.readFileSync(path.join(__dirname, 'plugins', `${name}.js`), 'utf8')
      log(`\n== plugin ${name} (a destination-bound API_TOKEN, sent as a placeholder)`)
      const r = await runPlugin({ name, code, policy, meter, secrets: new Map([['API_TOKEN', apiToken]]), config, log })
      results[name] = { ...r, seenByCollector, tokenInWorkerOutput: JSON.stringify(r).includes(apiToken) }
      log(`[${name}] result: ${r.ok ? `ok (${r.value})` : r.code}; the collector saw ${JSON.stringify(seenByCollector)}`)
    }
    for (const name of ['good']) {
      const events = results[name].shadow
      log(`\n== shadow report for ${name}-plugin: ${events.length} call(s) the candidate manifest would have denied`)
      for (const e of events) log(`  ${e.capability} ${e.reason}${e.target ? ` ${e.target}` : ''} (enforced: ${e.enforced})`)
    }
    if (process.platform === 'linux' && ['x64', 'arm64'].includes(process.arch)) {
      const name = 'escape'
      const policy = PermissionPolicy.fromManifest({ ...manifest, budgets: { wallClockMs: 3000, cpuPercent: 80 } }, { plugin: `${name}-plugin` })
      const code = fs.readFileSync(path.join(__dirname, 'plugins', `${name}.js`), 'utf8')
      log(`\n== plugin ${name} (process tier: forked child, lockdown(), simulated vm escape)`)
      const r = await runPluginProcess({ name, code, policy, meter, secrets, config, log, simulateEscape: true })
      results[name] = r
      log(`[${name}] result: ${r.ok ? `ok (${r.value})` : `${r.code}${r.budget ? ` (${r.budget})` : ''}`} after ${r.elapsedMs.toFixed(0)} ms`)
    }
    // The Deno tier: the same manifest on a real Deno process, through its permission broker.
    const { findDeno, runDenoPlugin } = require('../deno/run.js')
    const { deno, why } = findDeno()
    if (deno === null) log(`\n== deno tier skipped: ${why}`)
    for (const name of deno === null ? [] : ['good', 'evil']) {
      log(`\n== plugin deno-${name} (deno ${name}.ts under the permission broker)`)
      const r = await runDenoPlugin({ name, deno, manifest: { ...manifest, fs: [...manifest.fs, { path: `${root}/out/deno-*.json`, mode: 'write' }], budgets: { wallClockMs: 3000, memoryMb: 256 } }, root, api: config.api, meter, secrets, log })
      results[`deno-${name}`] = r
      log(`[deno-${name}] result: ${r.ok ? 'ok' : `${r.code}${r.budget ? ` (${r.budget})` : ''}`} after ${r.elapsedMs.toFixed(0)} ms`)
    }
    results.denoWritten = fs.existsSync(path.join(root, 'out', 'deno-result.json')) ? JSON.parse(fs.readFileSync(path.join(root, 'out', 'deno-result.json'), 'utf8')) : null
    results.written = fs.existsSync(path.join(root, 'out', 'result.json')) ? JSON.parse(fs.readFileSync(path.join(root, 'out', 'result.json'), 'utf8')) : null
    results.inputUntouched = fs.readFileSync(path.join(root, 'data', 'input.txt'), 'utf8') === 'hello from a file\n'
    results.evilFileAbsent = !fs.existsSync(path.join(root, 'out', 'evil.sh'))

    results.metrics = await metrics.counts()
    logCounts(log, 'metrics', results.metrics)
  } finally {
    server.close()
    collector.close()
    await metrics.shutdown()
    fs.rmSync(root, { recursive: true, force: true })
  }
  results.lines = lines
  return results
}

runDemo(module, main, (r) => {
  const denoOk = !r['deno-good'] || (r['deno-good'].ok && r['deno-evil'].code === 'BUDGET_EXCEEDED')
  return r.good.ok && r.secret.ok && !r.evil.ok && r.evil.code === 'BUDGET_EXCEEDED' && (!r.escape || r.escape.code === 'BUDGET_EXCEEDED') && denoOk && !r.lines.some((l) => l.includes('UNEXPECTED'))
})

module.exports = { main }
