'use strict'
// The vm-host example's host is the package's plugin runner (lib/vm-host/),
// which the CLI's `learn` also runs; this example uses it as a host would.
module.exports = require('../../lib/vm-host/host.js')
