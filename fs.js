'use strict'
// `@suaveplan/api-sandbox-permissions/fs`: open exactly what was checked
// (lib/open.js over the core's checked open, src/open.rs).

const { openChecked, CheckedFile } = require('./lib/open.js')

module.exports = { openChecked, CheckedFile }
