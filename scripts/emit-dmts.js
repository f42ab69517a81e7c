'use strict'
// Emits index.d.mts / testing.d.mts from the hand-written .d.ts files, so the
// "import" condition has ESM-flavoured types (no "masquerading as CJS").
const fs = require('node:fs')
const path = require('node:path')

const root = path.join(__dirname, '..')
for (const [from, to] of [
  ['index.d.ts', 'index.d.mts'],
  ['testing.d.ts', 'testing.d.mts'],
]) {
  const src = fs.readFileSync(path.join(root, from), 'utf8')
  const out = `// Generated from ${from} by scripts/emit-dmts.js: do not edit.\n` + src.replace(/from '\.\/index\.js'/g, "from './index.mjs'")
  fs.writeFileSync(path.join(root, to), out)
}
