'use strict'
// The WASI half of `npm run demo` (after examples/vm-host/demo.js): the two
// guests in guests/*.wat, assembled with wabt, run under the Node WASI host
// against real files, a real HTTP server on 127.0.0.1 and an OpenTelemetry
// MeterProvider whose counts are printed at the end.
const fs = require('node:fs')
const { PermissionPolicy } = require('../..')
const { demoMeter, logCounts } = require('../shared/meter.js')
const { demoLog, runDemo } = require('../shared/run-demo.js')
const { runWasiPlugin, assembleWat } = require('./host.js')
const fx = require('./fixture.js')

async function main({ json = false } = {}) {
  const { lines, log } = demoLog(json)
  const root = fx.makeRoot('wasi-host-demo-')
  const { server, port } = await fx.startServer()
  const metrics = demoMeter('wasi-host-demo')
  const { meter } = metrics
  const results = {}
  try {
    for (const name of ['good', 'hostile']) {
      const plugin = `wasi-${name}`
      log(`\n== WASI guest ${name} (guests/${name}.wat under node:wasi, preview1)`)
      const wasm = await assembleWat(fs.readFileSync(fx.guestPath(name), 'utf8'), `${name}.wat`)
      const policy = PermissionPolicy.fromManifest(fx.manifestFor(root, port), { plugin })
      const bus = []
      const r = await runWasiPlugin({
        name: plugin,
        wasm,
        policy,
        meter,
        log,
        preopens: { '/data': `${root}/data`, '/out': `${root}/out` },
        args: [plugin, `http://127.0.0.1:${port}/hello`],
        secrets: new Map(fx.SECRETS),
        bus,
      })
      results[name] = { ok: r.ok, code: r.code, budget: r.budget, reports: r.reports, calls: r.calls, events: bus }
      log(`[${plugin}] guest saw: ${r.reports.map((x) => `${x.tag}=${x.value}`).join(' ')}`)
      log(`[${plugin}] result: ${r.ok ? 'ok' : `${r.code}${r.budget ? ` (${r.budget})` : ''}`} after ${r.elapsedMs.toFixed(0)} ms`)
    }
    results.written = fs.readFileSync(`${root}/out/result.txt`, 'utf8')
    results.metrics = await metrics.counts()
    logCounts(log, 'WASI metrics', results.metrics)
  } finally {
    server.close()
    await metrics.shutdown()
    fs.rmSync(root, { recursive: true, force: true })
  }
  results.lines = lines
  return results
}

runDemo(module, main, (r) => r.good.ok && r.hostile.code === 'BUDGET_EXCEEDED' && r.hostile.reports.every((x) => x.value === 2))

module.exports = { main }
