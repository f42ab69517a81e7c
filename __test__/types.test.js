'use strict'
// index.d.ts and testing.d.ts (and the generated .d.mts) compile under
// `tsc --strict`, with and without `exactOptionalPropertyTypes`, under
// TypeScript 5.9 and TypeScript 7, in CommonJS and ES module consumers (every
// .ts/.mts/.cts file of __test__/types/), with default and named imports;
// each `@ts-expect-error` line is an error (a payload typo at the payload);
// an optional option takes `undefined` in the types exactly where the
// runtime does; every public name has a doc comment; policies and checkers
// inspect readably.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const util = require('node:util')
const { spawnSync } = require('node:child_process')
const ts = require('typescript')
const agreement = require('./types/agreement.js')

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
  for (const [config, what] of [
    ['tsconfig.json', '--strict'],
    ['tsconfig.exact.json', '--strict --exactOptionalPropertyTypes'],
  ]) {
    test(`${c.name}: every consumer (CJS .ts/.cts, ESM .mts; default and named imports) compiles with ${what}`, () => {
      assert.ok(CONSUMERS.length >= 3, CONSUMERS.join(', '))
      const r = tsc(c, ['-p', path.join(TYPES, config), '--listFiles'])
      assert.equal(r.status, 0, r.out)
      const listed = new Set(r.out.split('\n').map((l) => path.resolve(l.trim())))
      for (const f of CONSUMERS) assert.ok(listed.has(path.join(TYPES, f)), `${f} was not compiled: ${r.out}`)
    })
  }
  test(`${c.name}: Vitest, Jest and node:test describe/it are accepted by runPermissionsConformance's types`, () => {
    const r = tsc(c, ['-p', path.join(TYPES, 'tsconfig.runners.json')])
    assert.equal(r.status, 0, r.out)
  })
}

/**
 * The probe: every consumer with its `@ts-expect-error` lines blanked (line
 * numbers kept), and the agreement expressions one per line, compiled with
 * `exactOptionalPropertyTypes` by each compiler (once; the tests below share it).
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
      const first = agreement.PRELUDE_TS.split('\n').length + 1
      const agree = `${agreement.PRELUDE_TS}export const agreement = [\n${agreement.ENTRIES.map((e) => `  () => ${e.expr},`).join('\n')}\n]\n`
      fs.writeFileSync(path.join(dir, 'agreement.mts'), agree)
      fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ extends: '../tsconfig.exact.json', include: [], files: [...CONSUMERS, 'agreement.mts'] }))
      made = { dir, marked, agreementFile: path.join(dir, 'agreement.mts'), firstEntryLine: first, runs: new Map() }
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

/**
 * Every optional property declared in `file`, named by its enclosing
 * declarations (`BudgetTrackerOptions.unmeasured`,
 * `PermissionsManifest.events.publishes`, `learnManifest.options.platform`).
 */
function optionalProperties(file) {
  const sf = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)
  const named = (x) => (ts.isInterfaceDeclaration(x) || ts.isTypeAliasDeclaration(x) || ts.isClassDeclaration(x) || ts.isFunctionDeclaration(x) || ts.isMethodSignature(x) || ts.isPropertySignature(x) || ts.isParameter(x) || ts.isMethodDeclaration(x)) && x.name
  const out = []
  const visit = (n) => {
    if ((ts.isPropertySignature(n) || ts.isMethodSignature(n)) && n.questionToken) {
      const owners = []
      for (let x = n.parent; x; x = x.parent) if (named(x)) owners.unshift(x.name.getText(sf))
      out.push([...owners, n.name.getText(sf)].join('.'))
    }
    ts.forEachChild(n, visit)
  }
  visit(sf)
  return out
}

/** The CommonJS declaration file of every entry point in package.json `exports` (index.d.ts, testing.d.ts, and any new subpath's). */
const DECLARATIONS = [...new Set(Object.values(require('../package.json').exports).flatMap((e) => (e && e.require && e.require.types ? [path.join(root, e.require.types)] : [])))]

test('every optional property of the entry points\' declarations is an option pinned by the agreement table, or an output', () => {
  assert.ok(DECLARATIONS.includes(path.join(root, 'index.d.ts')) && DECLARATIONS.includes(path.join(root, 'testing.d.ts')), DECLARATIONS.join(', '))
  const declared = DECLARATIONS.flatMap((f) => optionalProperties(f))
  assert.ok(declared.length > 60, `only ${declared.length} optional properties found`)
  const pinned = new Set(agreement.ENTRIES.flatMap((e) => e.options))
  const outputs = new Set(Object.keys(agreement.OUTPUTS))
  for (const name of declared) assert.ok(pinned.has(name) !== outputs.has(name), `${name}: pin it in __test__/types/agreement.js (an option: ENTRIES; an output: OUTPUTS)`)
  for (const name of [...pinned, ...outputs]) assert.ok(declared.includes(name), `agreement.js names ${name}, which no declaration has`)
})

/** The runtime's answer to each agreement entry, in this process or (isolate) in a child. */
const runtime = (() => {
  let answers
  return async () => {
    if (answers !== undefined) return answers
    answers = new Array(agreement.ENTRIES.length)
    const sc = agreement.scope()
    const isolated = []
    for (const [i, e] of agreement.ENTRIES.entries()) {
      if (e.isolate) isolated.push(i)
      else answers[i] = await agreement.outcome(e.expr, sc)
    }
    // lockdown() without UV_USE_IO_URING=0 refuses (LOCKDOWN_REFUSED) after
    // reading its options, so nothing is installed even in the child; the
    // launcher path only has to exist for landlockCommand to read its options.
    const env = { ...process.env, ASP_LANDLOCK_LAUNCHER: process.execPath }
    delete env.UV_USE_IO_URING
    delete env.NODE_TEST_CONTEXT
    const r = spawnSync(process.execPath, [path.join(TYPES, 'agreement.js'), ...isolated.map(String)], { encoding: 'utf8', env })
    for (const m of r.stdout.matchAll(/^agreement (\d+) (accepted|refused)$/gm)) answers[Number(m[1])] = m[2]
    for (const i of isolated) assert.ok(answers[i] !== undefined, `${agreement.ENTRIES[i].expr}: no answer from the child\n${r.stdout}${r.stderr}`)
    return answers
  }
})()

for (const c of COMPILERS) {
  test(`${c.name} with exactOptionalPropertyTypes: an option takes undefined in the types exactly where the runtime does`, async () => {
    const answers = await runtime()
    const { run, agreementFile, firstEntryLine } = probeRun(c)
    const errors = run.diagnostics.filter((d) => d.file === agreementFile)
    const last = firstEntryLine + agreement.ENTRIES.length - 1
    assert.deepEqual(errors.filter((d) => d.line < firstEntryLine || d.line > last), [], 'the prelude compiles')
    const typed = agreement.ENTRIES.map((_, i) => (errors.some((d) => d.line === firstEntryLine + i) ? 'refused' : 'accepted'))
    const disagree = agreement.ENTRIES.map((e, i) => ({ ...e, runtime: answers[i], types: typed[i], errors: errors.filter((d) => d.line === firstEntryLine + i).map((d) => d.message) })).filter((e) => e.runtime !== e.types)
    assert.deepEqual(disagree, [])
    // Every option of the package reads an own undefined as absent.
    assert.deepEqual(answers.filter((a) => a !== 'accepted'), [])
  })
}

/** Paths of own properties holding `undefined`, anywhere in `v`. */
function ownUndefined(v, at = '', seen = new Set()) {
  if (v === null || typeof v !== 'object' || seen.has(v)) return []
  seen.add(v)
  const out = []
  for (const k of Object.keys(v)) {
    if (v[k] === undefined) out.push(`${at}.${k}`)
    else out.push(...ownUndefined(v[k], `${at}.${k}`, seen))
  }
  return out
}

test('outputs with optional properties leave them out, never set them to undefined (their `?: T` is exact)', () => {
  const pkg = require('..')
  const manifest = { fs: ['/a/**'], fetch: ['https://api.example.com/v1/**'], secrets: ['K', { name: 'B', hosts: ['api.example.com'] }], events: { publishes: ['a.b'], subscribes: ['a.*'] }, db: { database: 'd' }, deny: { fs: ['/a/secret/**'], fetch: ['10.0.0.0/8'] }, budgets: { cpuPercent: 50, memoryMb: 64, wallClockMs: 1000 } }
  const policy = pkg.PermissionPolicy.fromManifest(manifest, { plugin: 'p', platform: 'posix' })
  const outputs = []
  for (const p of ['/a/b', '/a/secret/x', '/etc/passwd', 'relative', '/a/../etc']) outputs.push(policy.explainFs(p, 'read'), policy.explainFs(p, 'write'))
  for (const u of ['https://api.example.com/v1/x', 'https://evil.example/', 'http://10.1.2.3/', 'https://u:p@api.example.com/', 'not a url', 'https://ｅxample.com/']) outputs.push(policy.explainFetch(u))
  const calls = [['fs.read', { path: '/a/b' }], ['fetch', { url: 'https://api.example.com/v1/x' }], ['secrets.get', { name: 'K' }], ['secrets.get', { name: 'B' }], ['secrets.use', { name: 'B', url: 'https://api.example.com/' }], ['events.publish', { topic: 'a.b' }], ['events.subscribe', { topic: 'x' }], ['db.query', { database: 'd' }], ['net.raw', {}]]
  for (const [id, payload] of calls) outputs.push(policy.explainCapability(id, payload))
  const wider = pkg.PermissionPolicy.fromManifest({ ...manifest, fs: ['/**'], fetch: ['*.example.com', '10.0.0.1'], secrets: ['K', 'L'], events: { publishes: ['**'], subscribes: ['**'] }, db: { database: 'e' }, deny: {}, budgets: { cpuPercent: 90 } }, { plugin: 'p', platform: 'posix' })
  outputs.push(pkg.diffPolicies(policy, wider), pkg.diffPolicies(wider, policy))
  const events = []
  const shadowed = new pkg.PermissionChecker(policy, { shadow: pkg.PermissionPolicy.fromManifest({}, { plugin: 'p', platform: 'posix' }), onShadow: (e) => events.push(e) })
  shadowed.checkFs('/a/b', 'read')
  shadowed.checkFetch('https://api.example.com/v1/x')
  shadowed.checkCapability('secrets.use', { name: 'B', url: 'https://api.example.com/' })
  shadowed.checkCapability('secrets.get', { name: 'K' })
  assert.equal(events.length, 4)
  outputs.push(...events)
  let clock = 0
  let cpu = 0
  let rss = 1
  for (const hooks of [{ now: () => clock }, { now: () => clock, cpuTimeMs: () => cpu }, { now: () => clock, rssMb: () => rss }, { now: () => clock, cpuTimeMs: () => cpu, rssMb: () => rss }]) {
    const t = new pkg.BudgetTracker(policy, { hooks, unmeasured: ['cpuPercent', 'memoryMb'].filter((b) => !(b === 'cpuPercent' ? hooks.cpuTimeMs : hooks.rssMb)), cpuGraceMs: 0 })
    outputs.push(t.sample(), t.check(), t.record({ rssMb: 2 }))
    clock += 10
    cpu += 1
    outputs.push(t.sample())
  }
  for (const f of [() => shadowed.assertFetch('https://evil.example/'), () => shadowed.assertFs('/etc/passwd', 'read')]) {
    try {
      f()
    } catch (e) {
      outputs.push(e.details)
    }
  }
  assert.ok(outputs.length > 40)
  assert.deepEqual(outputs.flatMap((o, i) => ownUndefined(o, `[${i}]`)), [])
})

test('the generated index.d.mts, testing.d.mts, wasi.d.mts and fs.d.mts declare a default export', () => {
  for (const f of ['index.d.mts', 'testing.d.mts', 'wasi.d.mts', 'fs.d.mts']) {
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

test('every public name in index.d.ts, testing.d.ts, wasi.d.ts and fs.d.ts has a doc comment', () => {
  for (const f of ['index.d.ts', 'testing.d.ts', 'wasi.d.ts', 'fs.d.ts']) {
    const { missing, checked } = undocumented(path.join(root, f))
    assert.ok(checked > (f === 'wasi.d.ts' ? 10 : 20), `${f}: only ${checked} names checked`)
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
