'use strict'
// The shipped harness against this package's own checker (one test per case),
// and the syntax-error table (data/conformance/manifest-errors.json) through
// the public JS API: each row's pointer, what the error says would be valid
// (the row's fourth column, which the shared harness leaves to each host), and
// an error that matches the shipped schema.
const test = require('node:test')
const assert = require('node:assert/strict')
const { runPermissionsConformance, packageChecker, conformanceCases, CONFORMANCE_PLUGIN } = require('../testing.js')
const { PermissionPolicy, isInvalidManifest } = require('../index.js')
const { assertSchema } = require('./helpers.js')
const syntaxErrors = require('../data/conformance/manifest-errors.json')

runPermissionsConformance('@suaveplan/api-sandbox-permissions', packageChecker())

test('syntax-error table: INVALID_MANIFEST at the pointer, saying what would be valid', () => {
  const byName = new Map(conformanceCases().map((c) => [c.name, c]))
  let rows = 0
  for (const g of syntaxErrors.groups) {
    for (const [name, , pointer, valid] of g.manifest_cases) {
      const c = byName.get(`${g.category} - ${name}`)
      assert.ok(c, `${g.category} - ${name} is a conformance case`)
      assert.throws(
        () => PermissionPolicy.fromManifest(JSON.parse(JSON.stringify(c.manifest)), { plugin: CONFORMANCE_PLUGIN, platform: c.platform }),
        (e) => {
          assert.ok(isInvalidManifest(e), `${c.name}: ${e && (e.code || e.name)}`)
          assert.equal(e.details.pointer, pointer, c.name)
          assert.ok(e.details.expected.includes(valid), `${c.name}: ${JSON.stringify(e.details.expected)} does not say ${JSON.stringify(valid)}`)
          assertSchema(e)
          return true
        },
        c.name,
      )
      rows++
    }
  }
  console.log(`manifest-errors.json: ${rows} rows`)
  assert.ok(rows > 130, `${rows} rows`)
})
