'use strict'
// Run with mocha: the harness finds mocha's global describe/it itself.
require('./suites.cjs').register({})
