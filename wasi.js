'use strict'
// `@suaveplan/api-sandbox-permissions/wasi`: the WASI gate for node:wasi
// hosts (lib/wasi.js). Every rule of a compound fs operation is the Rust
// core's (src/wasi.rs); docs/wasi.md shows a host built on it.
module.exports = require('./lib/wasi.js')
