'use strict'
// See lib/vm-host/bootstrap.js: the in-context side of the plugin runner.
module.exports = require('../../lib/vm-host/bootstrap.js')
