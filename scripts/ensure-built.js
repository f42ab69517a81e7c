'use strict'
// Builds the addon when it is missing or older than anything cargo builds it
// from (src/, data/, build.rs, Cargo.toml, Cargo.lock), so `npm run demo` and
// `npm run bench` work straight after `npm install` and after a pull that
// only moved Cargo.lock. Regenerates the .d.mts when a .d.ts is newer.
const fs = require('node:fs')
const path = require('node:path')
const { execSync } = require('node:child_process')

const root = path.join(__dirname, '..')
/** Newest mtime under a file or directory (0 when absent). */
function newest(p) {
  let st
  try {
    st = fs.statSync(p)
  } catch {
    return 0
  }
  if (!st.isDirectory()) return st.mtimeMs
  let t = st.mtimeMs
  for (const e of fs.readdirSync(p)) t = Math.max(t, newest(path.join(p, e)))
  return t
}
const INPUTS = ['src', 'data', 'build.rs', 'Cargo.toml', 'Cargo.lock']
const addon = fs.readdirSync(root).find((f) => f.endsWith('.node'))
const built = addon && fs.existsSync(path.join(root, 'binding.js')) && fs.existsSync(path.join(root, 'index.d.mts'))
const sources = Math.max(...INPUTS.map((p) => newest(path.join(root, p))))
if (!built || fs.statSync(path.join(root, addon)).mtimeMs < sources) {
  console.error('building the addon (npm run build)...')
  execSync('npm run build', { cwd: root, stdio: 'inherit' })
} else if (['index', 'testing'].some((n) => newest(path.join(root, `${n}.d.ts`)) > newest(path.join(root, `${n}.d.mts`)))) {
  execSync(`"${process.execPath}" scripts/emit-dmts.js`, { cwd: root, stdio: 'inherit' })
}
module.exports = { INPUTS }
