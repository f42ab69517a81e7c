'use strict'
// Pins the runtime dependency set, in Cargo and npm. A new runtime dependency
// is a change of this list, reviewed, not a side effect.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const pkg = require('../package.json')

/** `[section] name = ...` entries of Cargo.toml, by section. */
function cargoDeps(section) {
  const text = fs.readFileSync(path.join(__dirname, '..', 'Cargo.toml'), 'utf8')
  const out = []
  let current = null
  for (const line of text.split('\n')) {
    const h = /^\[([^\]]+)\]\s*$/.exec(line)
    if (h) {
      current = h[1]
      continue
    }
    const m = /^([A-Za-z0-9_-]+)\s*=/.exec(line)
    if (m && current === section) out.push(m[1])
  }
  return out.sort()
}

test('Cargo runtime dependencies are the design-card crates only', () => {
  // globset is a dev-dependency only: the differential reference for the
  // in-crate glob engine. napi/napi-derive: the binding (feature `napi`); opentelemetry_sdk: the
  // `testing` feature only; serde_json: the manifest is JSON (serde's parser);
  // psl: the full Public Suffix List for `lint` (no_std, no dependencies of its own but psl-types).
  // unicode-normalization (unicode-rs; tinyvec its only dependency): NFC for posix `deny.fs`
  // matching on case- and normalisation-insensitive volumes (SPEC §10, src/posix_fold.rs).
  // rustc-hash (rust-lang's FxHash; no dependencies): the glob index's path-keyed maps (napi depends on it too).
  assert.deepEqual(cargoDeps('dependencies'), ['napi', 'napi-derive', 'opentelemetry', 'opentelemetry_sdk', 'psl', 'rustc-hash', 'serde_json', 'thiserror', 'unicode-normalization', 'url'])
  assert.deepEqual(cargoDeps('build-dependencies'), ['napi-build'])
  // lockdown (Linux only, feature `lockdown`): seccompiler builds the seccomp filter, libc names the syscalls,
  // landlock (landlock-lsm's crate) builds the launcher's ruleset.
  assert.deepEqual(cargoDeps(`target.'cfg(target_os = "linux")'.dependencies`), ['landlock', 'libc', 'seccompiler'])
})

test('npm runtime dependencies are @opentelemetry/api and the platform packages only', () => {
  assert.deepEqual(Object.keys(pkg.dependencies), ['@opentelemetry/api'])
  for (const name of Object.keys(pkg.optionalDependencies || {})) {
    assert.match(name, /^@suaveplan\/api-sandbox-permissions-[a-z0-9-]+$/, name)
  }
  // The harness's SDK is an optional peer, needed only by ./testing.
  assert.deepEqual(Object.keys(pkg.peerDependencies || {}), ['@opentelemetry/sdk-metrics'])
  assert.equal(pkg.peerDependenciesMeta['@opentelemetry/sdk-metrics'].optional, true)
  assert.equal(pkg.scripts.prepare, undefined, 'no native build hides in a prepare script')
  assert.equal(pkg.scripts.install, undefined)
  assert.equal(pkg.scripts.postinstall, undefined)
})

test('every napi target has a platform package', () => {
  for (const target of pkg.napi.targets) {
    const dir = path.join(__dirname, '..', 'npm')
    const found = fs.readdirSync(dir).some((d) => {
      const p = JSON.parse(fs.readFileSync(path.join(dir, d, 'package.json'), 'utf8'))
      return p.name.startsWith(`${pkg.name}-`) && p.version === pkg.version && fs.existsSync(path.join(dir, d, 'README.md'))
    })
    assert.ok(found, target)
  }
  assert.equal(fs.readdirSync(path.join(__dirname, '..', 'npm')).length, pkg.napi.targets.length)
})
