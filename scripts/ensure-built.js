'use strict'
// Builds the addon when it is missing or older than the Rust sources, so
// `npm run demo` and `npm run bench` work straight after `npm install`.
const fs = require('node:fs')
const path = require('node:path')
const { execSync } = require('node:child_process')

const root = path.join(__dirname, '..')
function newest(dir) {
  let t = 0
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name)
    t = Math.max(t, e.isDirectory() ? newest(p) : fs.statSync(p).mtimeMs)
  }
  return t
}
const addon = fs.readdirSync(root).find((f) => f.endsWith('.node'))
const built = addon && fs.existsSync(path.join(root, 'binding.js')) && fs.existsSync(path.join(root, 'index.d.mts'))
const sources = Math.max(newest(path.join(root, 'src')), newest(path.join(root, 'data')), fs.statSync(path.join(root, 'Cargo.toml')).mtimeMs)
if (!built || fs.statSync(path.join(root, addon)).mtimeMs < sources) {
  console.error('building the addon (npm run build)...')
  execSync('npm run build', { cwd: root, stdio: 'inherit' })
}
