'use strict'
// Writes the closed sets of index.d.ts from the tables the Rust core exports
// (lib/native.js, `exportData`), so the types are never restated by hand.
// Each generated region sits between `// @generated <name>` and `// @end`.
// Runs after `napi build` (it needs the addon), before emit-dmts.js.
// `node scripts/emit-tables.js --check` exits 1 when index.d.ts is stale
// (__test__/generated-tables.test.js runs it).
const fs = require('node:fs')
const path = require('node:path')

const FILE = path.join(__dirname, '..', 'index.d.ts')

/** The generated regions, by name: the lines between the markers. */
function regions() {
  const n = require('../lib/native.js')
  const q = (s) => `'${s}'`
  const key = (s) => s.replace(/[.]/g, '_').toUpperCase()
  const union = (xs) => xs.map(q).join(' | ')
  const capabilities = [...n.CAPABILITY_FIELDS.keys()]
  return {
    'deny-reason': ['export type DenyReason =', ...n.DENY_REASONS.map((r) => `  | ${q(r)}`)],
    'capability-id': [`export type CapabilityId = ${union(capabilities)}`],
    'error-code-name': [`export type ErrorCodeName = ${union(n.ERROR_REGISTRY.map((e) => e.code))}`],
    'deny-reason-const': ['export declare const DenyReason: {', ...n.DENY_REASONS.map((r) => `  readonly ${key(r)}: ${q(r)}`), '}'],
    'capability-const': ['export declare const Capability: {', ...n.CAPABILITY_IDS.map((c) => `  readonly ${key(c)}: ${q(c)}`), '}'],
    'instrument-name': [`  readonly name: ${union(n.INSTRUMENTS.map((i) => i.name))}`],
    'budget-name': [`export type BudgetName = ${union(n.BUDGET_KIND_LIST)}`],
    'budget-reason': [`export type BudgetReason = ${union(n.BUDGET_KIND_LIST.map((k) => n.BUDGET_KINDS.get(k)))}`],
    'sample-field': [`  readonly field: ${union(n.SAMPLE_FIELDS)}`],
  }
}

/** `src` with every generated region rewritten; throws on a missing or unknown region. */
function render(src) {
  const want = regions()
  const seen = new Set()
  const out = src.replace(/^([ \t]*)\/\/ @generated ([a-z-]+)\n[\s\S]*?^[ \t]*\/\/ @end$/gm, (_, indent, name) => {
    if (!want[name]) throw new Error(`emit-tables: unknown region ${name}`)
    seen.add(name)
    return [`${indent}// @generated ${name}`, ...want[name], `${indent}// @end`].join('\n')
  })
  for (const name of Object.keys(want)) if (!seen.has(name)) throw new Error(`emit-tables: index.d.ts has no region ${name}`)
  return out
}

if (require.main === module) {
  const src = fs.readFileSync(FILE, 'utf8')
  const out = render(src)
  if (process.argv.includes('--check')) {
    if (out !== src) {
      console.error('index.d.ts is stale: run `node scripts/emit-tables.js` (npm run build does)')
      process.exit(1)
    }
  } else if (out !== src) {
    fs.writeFileSync(FILE, out)
  }
}

module.exports = { render }
