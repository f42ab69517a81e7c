'use strict'
// The README and the pages under docs/ cannot drift: every fenced JavaScript
// block runs as written (in a temp dir that requires the package by name
// through a symlinked node_modules), and what it prints must equal the
// `// → …` lines under its console.log calls. Blocks marked
// `fragment <file>` must name a file that exists; other languages are
// limited to sh, toml and text. Every link between the pages (and to
// #anchors) resolves, every error code is listed, the CLI lines use only
// options the CLI documents in its --help, and no page cites a SPEC that
// does not ship.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { fencedBlocks } = require('./helpers.js')

const root = path.join(__dirname, '..')
const pkgName = require('../package.json').name
/** The documents: the front page and every page under docs/ (repo-relative names). */
const DOCS = ['README.md', ...fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)]
const TEXT = new Map(DOCS.map((d) => [d, fs.readFileSync(path.join(root, d), 'utf8')]))
const README = TEXT.get('README.md')
/**
 * Pages other branches write (the process tier and the semantic diff): the
 * front page links to them before they land here. Remove a name once its
 * page is in docs/.
 */
const PENDING = new Set(['docs/process-tier.md', 'docs/diff.md'].filter((d) => !TEXT.has(d)))

const all = DOCS.flatMap((d) => fencedBlocks(TEXT.get(d), d))
// `ts` blocks are ES modules type-checked with tsc --strict, then run.
const JS = new Set(['js', 'mjs', 'cjs', 'ts'])
const runnable = all.filter((b) => JS.has(b.lang) && !/\bfragment\b/.test(b.info))
const fragments = all.filter((b) => JS.has(b.lang) && /\bfragment\b/.test(b.info))

// `json file=` and `console` blocks are a review session that
// __test__/docs-diff.test.js replays (docs/diff.md): written, run, compared.
const SESSION = (b) => b.doc === 'docs/diff.md' && (/^json file=\S+$/.test(b.info) || b.lang === 'console')

test('every block is runnable JavaScript, a fragment naming its file, sh/toml/text, or a replayed session', () => {
  assert.ok(runnable.length >= 8, `only ${runnable.length} runnable blocks`)
  for (const d of ['README.md', 'docs/guide.md', 'docs/rules.md', 'docs/harness.md']) assert.ok(runnable.some((b) => b.doc === d), `${d} has runnable blocks`)
  assert.ok(runnable.some((b) => b.lang === 'ts'), 'a TypeScript block')
  for (const b of all) assert.ok(JS.has(b.lang) || b.lang === 'sh' || b.lang === 'toml' || b.lang === 'text' || SESSION(b), `${b.doc}:${b.line}: block language ${JSON.stringify(b.info)}`)
  for (const b of fragments) {
    const file = /\bfragment\s+(\S+)/.exec(b.info)
    assert.ok(file, `${b.doc}:${b.line}: a fragment must name the file that holds the whole`)
    assert.ok(fs.existsSync(path.join(root, file[1])), `${b.doc}:${b.line}: ${file[1]} does not exist`)
  }
})

test('runnable blocks run and print what their // → lines say', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'asp-readme-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const scope = path.join(dir, 'node_modules', ...pkgName.split('/').slice(0, -1))
  fs.mkdirSync(scope, { recursive: true })
  fs.symlinkSync(root, path.join(dir, 'node_modules', pkgName), process.platform === 'win32' ? 'junction' : 'dir')
  const env = { ...process.env }
  delete env.NODE_TEST_CONTEXT
  let ran = 0
  for (const b of runnable) {
    await t.test(`${b.doc}:${b.line} (${b.lang})`, () => {
      const base = path.join(dir, `block-${b.doc.replace(/\W/g, '-')}-${b.line}`)
      const file = `${base}.${b.lang === 'mjs' || b.lang === 'ts' ? 'mjs' : 'cjs'}`
      if (b.lang === 'ts') {
        const ts = require('typescript')
        fs.writeFileSync(`${base}.mts`, `${b.code}\n`)
        const config = { compilerOptions: { strict: true, module: 'node16', moduleResolution: 'node16', target: 'es2022', noEmit: true, types: ['node'], typeRoots: [path.join(root, 'node_modules', '@types')] }, files: [`${base}.mts`] }
        fs.writeFileSync(`${base}.tsconfig.json`, JSON.stringify(config))
        const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', `${base}.tsconfig.json`], { cwd: dir, encoding: 'utf8' })
        assert.equal(tsc.status, 0, `${b.doc}:${b.line} does not compile under tsc --strict:\n${tsc.stdout}${tsc.stderr}`)
        fs.writeFileSync(file, ts.transpileModule(b.code, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText)
      } else fs.writeFileSync(file, `${b.code}\n`)
      const r = spawnSync(process.execPath, [file], { cwd: dir, env, encoding: 'utf8', timeout: 120_000 })
      assert.equal(r.status, 0, `${b.doc}:${b.line} exited ${r.status}\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`)
      const expected = [...b.code.matchAll(/^\s*\/\/ → (.*)$/gm)].map((m) => m[1].trim())
      if (expected.length > 0) {
        const printed = r.stdout.split('\n').map((l) => l.trim()).filter(Boolean)
        assert.deepEqual(printed, expected, `${b.doc}:${b.line}: printed output differs from its // → lines`)
      }
      ran++
    })
  }
  assert.equal(ran, runnable.length)
  console.log(`ran ${ran} blocks from ${DOCS.length} pages`)
})

/** GitHub's heading anchors. */
function slug(heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')
}

/** The headings' anchors of a page, outside code blocks. */
function anchorsOf(text) {
  const anchors = new Set()
  let code = false
  for (const l of text.split('\n')) {
    if (l.startsWith('```')) code = !code
    const m = /^#{1,6} (.*)$/.exec(l)
    if (m && !code) anchors.add(slug(m[1]))
  }
  return anchors
}

test('every link between the pages, and every #anchor, resolves', () => {
  let checked = 0
  for (const doc of DOCS) {
    for (const [, target] of TEXT.get(doc).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target)) continue
      const [file, anchor] = target.split('#')
      const dest = file === '' ? doc : path.posix.normalize(path.posix.join(path.posix.dirname(doc), file))
      checked++
      if (PENDING.has(dest)) continue
      assert.ok(fs.existsSync(path.join(root, dest)), `${doc}: link ${target}: ${dest} does not exist`)
      if (anchor !== undefined) {
        assert.ok(TEXT.has(dest), `${doc}: link ${target}: an anchor into a file that is not a doc page`)
        assert.ok(anchorsOf(TEXT.get(dest)).has(anchor), `${doc}: link ${target}: #${anchor} matches no heading of ${dest}`)
      }
    }
  }
  assert.ok(checked >= 30, `only ${checked} links`)
  // The front page links every page under docs/.
  for (const d of DOCS.filter((x) => x !== 'README.md')) assert.ok(README.includes(`](${d})`) || README.includes(`](${d}#`), `README.md links ${d}`)
})

test('the pages state the rules themselves: no citation of a SPEC that does not ship', () => {
  for (const doc of DOCS) assert.doesNotMatch(TEXT.get(doc), /SPEC\s*§|\bSPEC\b/, doc)
  // The shipped types are documentation too (editors show them).
  for (const f of ['index.d.ts', 'testing.d.ts']) assert.doesNotMatch(fs.readFileSync(path.join(root, f), 'utf8'), /SPEC\s*§/, f)
})

test('the front page stays a front page: short, with install, quick start and the links', () => {
  const lines = README.split('\n').length
  const processTier = README.indexOf('\n## Process tier')
  // The process-tier section is shortened by its own branch (docs/process-tier.md).
  const front = processTier === -1 ? lines : README.slice(0, processTier).split('\n').length
  assert.ok(front <= 160, `README.md before the process tier is ${front} lines`)
  for (const h of ['## Install', '## Quick start', '## Documentation']) assert.ok(README.includes(`\n${h}\n`), h)
})

test('the Errors table lists every code of the registry with its id', () => {
  const { ERROR_REGISTRY } = require('..')
  assert.equal(ERROR_REGISTRY.length, 7)
  const guide = TEXT.get('docs/guide.md')
  const section = guide.slice(guide.indexOf('\n## Errors'), guide.indexOf('\n## Metrics'))
  for (const e of ERROR_REGISTRY) assert.match(section, new RegExp(`^\\| \`${e.code}\` \\| \`${e.id}\` \\|`, 'm'), e.code)
  assert.match(README, /all seven codes/)
})

test('the CLI lines in the docs use only commands and options the CLI documents', () => {
  const bin = path.join(root, 'bin', 'api-sandbox-permissions.js')
  const help = (args) => spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8' })
  const cliLines = all.filter((b) => b.lang === 'sh').flatMap((b) => b.code.split('\n')).filter((l) => l.startsWith('api-sandbox-permissions '))
  assert.ok(cliLines.length >= 6)
  for (const line of cliLines) {
    const cmd = line.split(/\s+/)[1]
    const r = cmd.startsWith('-') ? help(['--help']) : help([cmd, '--help'])
    assert.equal(r.status, 0, `${line}: ${r.stderr}`)
    for (const [flag] of line.matchAll(/--[a-z-]+/g)) {
      if (flag === '--help' || flag === '--version') continue
      assert.ok(r.stdout.includes(flag), `${line}: ${flag} is not in "${cmd} --help"`)
    }
  }
  assert.equal(help(['--version']).stdout.trim(), require('../package.json').version)
})
