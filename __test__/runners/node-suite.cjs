'use strict'
// Run with `node --test`: no global describe/it, so the harness uses node:test's.
require('./suites.cjs').register({})
