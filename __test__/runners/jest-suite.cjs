'use strict'
// Run with Jest: the harness finds Jest's global describe/it itself.
require('./suites.cjs').register({})
