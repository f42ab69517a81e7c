'use strict'
// index.d.ts and testing.d.ts (and the generated .d.mts) compile under
// `tsc --strict` under TypeScript 5.9 and TypeScript 7, in CommonJS and ES
// module consumers (every .ts/.mts/.cts file of __test__/types/), with
// default and named imports; each `@ts-expect-error` line is an error (a
// payload typo at the payload); every public name has a doc comment;
// policies and checkers inspect readably.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const util = require('node:util')
const { spawnSync } = require('node:child_process')
const ts = require('typescript')

const root = path.join(__dirname, '..')
const TYPES = path.join(__dirname, 'types')

/** Both compilers: `typescript` (5.9, with the JS API) and `typescript7` (the native compiler, an npm alias). */
const COMPILERS = [
  { name: 'TypeScript 5.9', pkg: 'typescript', version: /^Version 5\.9\.\d+$/ },
  { name: 'TypeScript 7', pkg: 'typescript7', version: /^Version 7\.\d+\.\d+$/ },
].map((c) => ({ ...c, bin: path.join(path.dirname(require.resolve(`${c.pkg}/package.json`)), 'bin', 'tsc') }))

/** The consumer files every config compiles: each .ts/.mts/.cts of __test__/types/ but the runners' (tsconfig.runners.json). */
const CONSUMERS = fs
  .readdirSync(TYPES)
  .filter((f) => /\.[cm]?ts$/.test(f) && !f.endsWith('.d.ts') && !f.startsWith('.') && f !== 'runners.mts')
  .sort()

/** `{ status, out, diagnostics: [{ file, line, col, code, message }] }` of one tsc run (lines and columns 1-based). */
function tsc(compiler, args) {
  const r = spawnSync(process.execPath, [compiler.bin, '--pretty', 'false', ...args], { encoding: 'utf8' })
  const diagnostics = []
  for (const line of r.stdout.split('\n')) {
    const m = /^(.+?)\((\d+),(\d+)\): error (TS\d+): (.*)$/.exec(line)
    if (m) diagnostics.push({ file: path.resolve(m[1]), line: Number(m[2]), col: Number(m[3]), code: m[4], message: m[5] })
    else if (/^\s/.test(line) && diagnostics.length > 0) diagnostics[diagnostics.length - 1].message += `\n${line}`
  }
  return { status: r.status, out: r.stdout + r.stderr, diagnostics }
}

test('both compilers are installed at their pinned versions', () => {
  const pkg = require('../package.json')
  assert.match(pkg.devDependencies.typescript7, /^npm:typescript@7\.\d+\.\d+$/, 'TypeScript 7 is pinned to one version')
  for (const c of COMPILERS) {
    const r = spawnSync(process.execPath, [c.bin, '--version'], { encoding: 'utf8' })
    assert.match(r.stdout.trim(), c.version, `${c.name}: ${r.stdout}${r.stderr}`)
  }
})

for (const c of COMPILERS) {
  test(`${c.name}: every consumer (CJS .ts/.cts, ESM .mts; default and named imports) compiles with --strict`, () => {
    assert.ok(CONSUMERS.length >= 3, CONSUMERS.join(', '))
    const r = tsc(c, ['-p', path.join(TYPES, 'tsconfig.json'), '--listFiles'])
    assert.equal(r.status, 0, r.out)
    const listed = new Set(r.out.split('\n').map((l) => path.resolve(l.trim())))
    for (const f of CONSUMERS) assert.ok(listed.has(path.join(TYPES, f)), `${f} was not compiled: ${r.out}`)
  })
  test(`${c.name}: Vitest, Jest and node:test describe/it are accepted by runPermissionsConformance's types`, () => {
    const r = tsc(c, ['-p', path.join(TYPES, 'tsconfig.runners.json')])
    assert.equal(r.status, 0, r.out)
  })
}

/**
 * The probe: every consumer with its `@ts-expect-error` lines blanked (line
 * numbers kept), compiled by each compiler (once; the tests below share it).
 */
const probe = (() => {
  let made
  return () => {
    if (made === undefined) {
      const dir = fs.mkdtempSync(path.join(TYPES, '.probe-'))
      process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }))
      const marked = new Map()
      for (const f of CONSUMERS) {
        const src = fs.readFileSync(path.join(TYPES, f), 'utf8').split('\n')
        const lines = []
        const stripped = src.map((l, i) => {
          if (!l.trimStart().startsWith('// @ts-expect-error')) return l
          lines.push({ line: i + 2, atPayload: /^\s*\/\/ @ts-expect-error at payload\b/.test(l) })
          return ''
        })
        fs.writeFileSync(path.join(dir, f), stripped.join('\n'))
        marked.set(path.join(dir, f), lines)
      }
      fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ extends: '../tsconfig.json', include: [], files: CONSUMERS }))
      made = { dir, marked, runs: new Map() }
    }
    return made
  }
})()

/** The probe's diagnostics under compiler `c`. */
function probeRun(c) {
  const p = probe()
  if (!p.runs.has(c.name)) p.runs.set(c.name, tsc(c, ['-p', p.dir]))
  return { ...p, run: p.runs.get(c.name) }
}

/** The 1-based [start, end] line/column span of the payload (second argument) of the call statement on `line`. */
function payloadSpan(file, line) {
  const sf = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)
  const st = sf.statements.find((s) => sf.getLineAndCharacterOfPosition(s.getStart(sf)).line + 1 === line)
  assert.ok(st && ts.isExpressionStatement(st) && ts.isCallExpression(st.expression) && st.expression.arguments.length === 2, `${path.basename(file)}:${line}: an "at payload" marker must stand above a call with a payload`)
  const arg = st.expression.arguments[1]
  const at = (pos) => {
    const lc = sf.getLineAndCharacterOfPosition(pos)
    return [lc.line + 1, lc.character + 1]
  }
  return [at(arg.getStart(sf)), at(arg.getEnd())]
}

const before = (a, b) => a[0] < b[0] || (a[0] === b[0] && a[1] <= b[1])

for (const c of COMPILERS) {
  test(`${c.name}: each @ts-expect-error line is an error, a payload typo at the payload (never on the capability id)`, () => {
    const { marked, run } = probeRun(c)
    let payloads = 0
    for (const [file, lines] of marked) {
      const errors = run.diagnostics.filter((d) => d.file === file)
      assert.deepEqual([...new Set(errors.map((d) => d.line))], lines.map((l) => l.line), `${path.basename(file)}: the errors are exactly the marked lines\n${run.out}`)
      for (const { line } of lines.filter((l) => l.atPayload)) {
        payloads++
        const [start, end] = payloadSpan(file, line)
        for (const d of errors.filter((e) => e.line === line)) {
          assert.ok(before(start, [d.line, d.col]) && before([d.line, d.col], end), `${path.basename(file)}:${line}:${d.col}: the error is not on the payload (${start}-${end}): ${d.message}`)
          assert.doesNotMatch(d.message, /'never'|No overload matches/, `${path.basename(file)}:${line}`)
        }
      }
    }
    assert.ok(payloads >= 5, `only ${payloads} payload typos are checked`)
  })
}

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
