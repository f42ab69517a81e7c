'use strict'
// The shared conformance harness against an adapter built on the WASI host
// (examples/wasi-host): checkFs goes through the WasiGate that the worker's
// WASI wrapper uses for every path operation, checkFetch / checkCapability
// through the gate of the host imports, budgets through the host's tracker.
const { runPermissionsConformance } = require('../testing.js')
const { PermissionPolicy, PermissionChecker } = require('..')
const { WasiGate } = require('../examples/wasi-host/gate.js')
const { wasiBudgetTracker } = require('../examples/wasi-host/host.js')

function wasiHostAdapter(manifest, context) {
  const policy = PermissionPolicy.fromManifest(manifest, { plugin: context.plugin, platform: context.platform })
  const gate = new WasiGate(new PermissionChecker(policy, { meter: context.meter }))
  const decision = (d) => (d.allowed ? { allowed: true } : d)
  return {
    // `lexical`: the harness's fs cases are the lexical contract; the WASI
    // wrapper adds the symlink-resolving checks on top (tested in wasi-host.test.js).
    checkFs: (p, mode) => decision(gate.checkLexical(p, mode)),
    checkFetch: (url) => decision(gate.capability('fetch', { url }, url)),
    // The same checker call the host makes on a fetch's resolved address before connecting.
    checkFetchAddress: (url, ip) => decision(gate.fetchAddress(url, ip)),
    checkCapability: (id, payload) => decision(gate.capability(id, payload)),
    createBudgetTracker: (hooks, opts) => wasiBudgetTracker(policy, { meter: context.meter, hooks, cpuGraceMs: opts.cpuGraceMs, unmeasured: opts.unmeasured }),
  }
}

runPermissionsConformance('examples/wasi-host (WasiGate)', wasiHostAdapter)
