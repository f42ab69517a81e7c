'use strict'
// index.d.ts and testing.d.ts (and the generated .d.mts) compile under
// `tsc --strict` in CommonJS and ES module consumers, with default and named
// imports, and reject payload typos; every public name has a doc comment;
// policies and checkers inspect readably.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const util = require('node:util')
const { spawnSync } = require('node:child_process')
const ts = require('typescript')

const root = path.join(__dirname, '..')

test('TypeScript consumers (CJS .ts/.cts, ESM .mts; default and named imports) compile with tsc --strict', () => {
  const config = JSON.parse(fs.readFileSync(path.join(__dirname, 'types', 'tsconfig.json'), 'utf8'))
  assert.deepEqual(config.files.sort(), ['consumer-cjs.cts', 'consumer-esm.mts', 'consumer.ts'])
  const tsc = require.resolve('typescript/bin/tsc')
  const r = spawnSync(process.execPath, [tsc, '-p', path.join(__dirname, 'types', 'tsconfig.json')], { encoding: 'utf8' })
  assert.equal(r.status, 0, r.stdout + r.stderr)
})

test('Vitest, Jest and node:test describe/it are accepted by runPermissionsConformance\'s types', () => {
  const r = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', path.join(__dirname, 'types', 'tsconfig.runners.json')], { encoding: 'utf8' })
  assert.equal(r.status, 0, r.stdout + r.stderr)
})

test('the expect-error lines are errors for the stated reason: a payload typo matches no overload', (t) => {
  // Compile the ESM consumer with its @ts-expect-error markers removed: each marked line must fail.
  const dir = fs.mkdtempSync(path.join(__dirname, 'types', '.probe-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const src = fs.readFileSync(path.join(__dirname, 'types', 'consumer-esm.mts'), 'utf8').split('\n')
  const marked = []
  const stripped = src.map((l, i) => {
    if (!l.startsWith('// @ts-expect-error')) return l
    marked.push(i + 2)
    return ''
  })
  fs.writeFileSync(path.join(dir, 'probe.mts'), stripped.join('\n'))
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ extends: '../tsconfig.json', files: ['probe.mts'] }))
  const r = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', dir], { encoding: 'utf8' })
  const errorLines = [...r.stdout.matchAll(/probe\.mts\((\d+),\d+\): error (TS\d+)/g)].map((m) => [Number(m[1]), m[2]])
  assert.deepEqual(errorLines.map(([l]) => l), marked, r.stdout)
  assert.match(r.stdout, /No overload matches this call[\s\S]*'\(capabilityId: "secrets\.get", payload: \{ name: string; \}\)/)
})

test('the generated index.d.mts and testing.d.mts declare a default export', () => {
  for (const f of ['index.d.mts', 'testing.d.mts']) {
    const text = fs.readFileSync(path.join(root, f), 'utf8')
    assert.match(text, /^export default _default$/m, f)
  }
})

/** Exported declarations, and members of exported classes and interfaces, without a JSDoc comment. */
function undocumented(file) {
  const sf = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)
  const has = (n) => ts.getJSDocCommentsAndTags(n).length > 0
  const name = (n) => (n.name ? n.name.getText(sf) : ts.SyntaxKind[n.kind])
  const missing = []
  let checked = 0
  for (const st of sf.statements) {
    if ((ts.getCombinedModifierFlags(st) & ts.ModifierFlags.Export) === 0) continue
    for (const d of ts.isVariableStatement(st) ? st.declarationList.declarations : [st]) {
      checked++
      if (!has(st) && !has(d)) missing.push(name(d))
    }
    if (ts.isClassDeclaration(st) || ts.isInterfaceDeclaration(st)) {
      for (const m of st.members) {
        if (ts.isConstructorDeclaration(m) || ts.isIndexSignatureDeclaration(m)) continue
        if (m.modifiers && m.modifiers.some((x) => x.kind === ts.SyntaxKind.PrivateKeyword)) continue
        checked++
        if (!has(m)) missing.push(`${name(st)}.${name(m)}`)
      }
    }
  }
  return { missing, checked }
}

test('every public name in index.d.ts and testing.d.ts has a doc comment', () => {
  for (const f of ['index.d.ts', 'testing.d.ts']) {
    const { missing, checked } = undocumented(path.join(root, f))
    assert.ok(checked > 20, `${f}: only ${checked} names checked`)
    assert.deepEqual(missing, [], `${f}: undocumented: ${missing.join(', ')}`)
  }
})

test('util.inspect of a policy and a checker shows plugin, platform, grant counts and budgets, never the grants', () => {
  const pkg = require('..')
  const policy = pkg.PermissionPolicy.fromManifest(
    { fs: ['/srv/secret-dir/**', { path: '/out/*.json', mode: 'write' }], fetch: ['a.example', 'b.example', 'c.example'], secrets: ['K'], events: { subscribes: ['a.*'] }, budgets: { memoryMb: 64 } },
    { plugin: 'acme', platform: 'posix' },
  )
  const text = util.inspect(policy)
  assert.match(text, /^PermissionPolicy \{/)
  assert.match(text, /plugin: 'acme'/)
  assert.match(text, /platform: 'posix'/)
  assert.match(text, /grants: \{ fs: 2, fetch: 3, secrets: 1, publishes: 0, subscribes: 1, db: 0 \}/)
  assert.match(text, /budgets: \{ memoryMb: 64 \}/)
  assert.doesNotMatch(text, /secret-dir|a\.example/)
  const checker = util.inspect(new pkg.PermissionChecker(policy))
  assert.match(checker, /^PermissionChecker \{/)
  assert.match(checker, /fetch: 3/)
  assert.match(util.inspect({ p: policy }, { depth: 0 }), /\[PermissionPolicy\]|\[Object\]/)
})
