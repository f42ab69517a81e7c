'use strict'
// The shipped harness against this package's own checker (one test per case).
const { runPermissionsConformance, packageChecker } = require('../testing.js')

runPermissionsConformance('@suaveplan/api-sandbox-permissions', packageChecker())
