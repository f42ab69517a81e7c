'use strict'
// Emits index.d.mts / testing.d.mts from the hand-written .d.ts files, so the
// "import" condition has ESM-flavoured types (no "masquerading as CJS"), and
// declares their default export: index.mjs and testing.mjs export the
// CommonJS module object as default, so `import pkg from '...'` is typed too.
const fs = require('node:fs')
const path = require('node:path')

const root = path.join(__dirname, '..')
for (const [from, to, self] of [
  ['index.d.ts', 'index.d.mts', './index.mjs'],
  ['testing.d.ts', 'testing.d.mts', './testing.mjs'],
  ['wasi.d.ts', 'wasi.d.mts', './wasi.mjs'],
  ['fs.d.ts', 'fs.d.mts', './fs.mjs'],
]) {
  const src = fs.readFileSync(path.join(root, from), 'utf8')
  const out =
    `// Generated from ${from} by scripts/emit-dmts.js: do not edit.\n` +
    src.replace(/from '\.\/index\.js'/g, "from './index.mjs'") +
    `\n// The default export: the same module object as the named exports.\nimport * as _self from '${self}'\ndeclare const _default: typeof _self\nexport default _default\n`
  fs.writeFileSync(path.join(root, to), out)
}
