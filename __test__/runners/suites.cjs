'use strict'
// Shared by the runner fixtures (mocha-suite.cjs, jest-suite.cjs,
// vitest.spec.mjs): registers the suites described by ASP_SUITES, a JSON
// array of { label, adapter, filter?, skip?, expectedFailures? }, with the harness of this
// checkout against the real checker. Run by __test__/runners.test.js and
// __test__/harness-expected-failures.test.js.
const path = require('node:path')

const root = path.join(__dirname, '..', '..')
const testing = require(path.join(root, 'testing.js'))
const pkg = require(root)

const silentMeter = Object.freeze({ createCounter: () => ({ add() {} }) })

/** Adapters: the package's own, one without checkFetchAddress (sync and async), one that records no metric, one whose checks all throw. */
function adapter(kind) {
  const good = testing.packageChecker(pkg)
  switch (kind) {
    case 'package':
      return good
    case 'no-address':
      return (manifest, context) => {
        const { checkFetchAddress, assertFetchAddress, ...rest } = good(manifest, context)
        return rest
      }
    case 'no-address-async':
      return async (manifest, context) => {
        const { checkFetchAddress, assertFetchAddress, ...rest } = good(manifest, context)
        return rest
      }
    case 'broken':
      // Every check throws: what a half-written adapter does.
      return (manifest, context) => {
        const c = good(manifest, context)
        const broken = () => {
          throw new Error('adapter not finished\n' + 'a long line of context '.repeat(200) + '\nmore\nand more')
        }
        return { ...c, checkFs: broken, checkFetch: broken, checkCapability: broken, checkFetchAddress: broken }
      }
    case 'silent-metrics':
      return (manifest, context) => good(manifest, { ...context, meter: silentMeter })
    default:
      throw new Error(`unknown adapter ${kind}`)
  }
}

function register(runner) {
  for (const s of JSON.parse(process.env.ASP_SUITES || '[{"label":"package","adapter":"package"}]')) {
    testing.runPermissionsConformance(s.label, adapter(s.adapter), { ...runner, filter: s.filter, skip: s.skip, expectedFailures: s.expectedFailures })
  }
}

module.exports = { register }
