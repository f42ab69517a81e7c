'use strict'
// The README cannot drift: every fenced JavaScript block runs as written
// (in a temp dir that requires the package by name through a symlinked
// node_modules), and what it prints must equal the `// → …` lines under its
// console.log calls. Blocks marked `fragment <file>` must name a file that
// exists; other languages are limited to sh and toml. The table of contents
// resolves, every error code is listed, and the CLI lines use only options
// the CLI documents in its --help.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const root = path.join(__dirname, '..')
const README = fs.readFileSync(path.join(root, 'README.md'), 'utf8')
const pkgName = require('../package.json').name

/** Fenced blocks: `{ info, lang, code, line }`. */
function blocks(text) {
  const out = []
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(.*)$/.exec(lines[i])
    if (!open) continue
    const start = i
    const body = []
    for (i++; i < lines.length && lines[i] !== '```'; i++) body.push(lines[i])
    assert.ok(i < lines.length, `unclosed block at README.md:${start + 1}`)
    const info = open[1].trim()
    out.push({ info, lang: info.split(/\s+/)[0], code: body.join('\n'), line: start + 1 })
  }
  return out
}

const all = blocks(README)
const JS = new Set(['js', 'mjs', 'cjs'])
const runnable = all.filter((b) => JS.has(b.lang) && !/\bfragment\b/.test(b.info))
const fragments = all.filter((b) => JS.has(b.lang) && /\bfragment\b/.test(b.info))

test('every block is runnable JavaScript, a fragment naming its file, or sh/toml', () => {
  assert.ok(runnable.length >= 6, `only ${runnable.length} runnable blocks`)
  for (const b of all) assert.ok(JS.has(b.lang) || b.lang === 'sh' || b.lang === 'toml', `README.md:${b.line}: block language ${JSON.stringify(b.info)}`)
  for (const b of fragments) {
    const file = /\bfragment\s+(\S+)/.exec(b.info)
    assert.ok(file, `README.md:${b.line}: a fragment must name the file that holds the whole`)
    assert.ok(fs.existsSync(path.join(root, file[1])), `README.md:${b.line}: ${file[1]} does not exist`)
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
    await t.test(`README.md:${b.line} (${b.lang})`, () => {
      const file = path.join(dir, `block-${b.line}.${b.lang === 'mjs' ? 'mjs' : 'cjs'}`)
      fs.writeFileSync(file, `${b.code}\n`)
      const r = spawnSync(process.execPath, [file], { cwd: dir, env, encoding: 'utf8', timeout: 120_000 })
      assert.equal(r.status, 0, `README.md:${b.line} exited ${r.status}\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`)
      const expected = [...b.code.matchAll(/^\s*\/\/ → (.*)$/gm)].map((m) => m[1].trim())
      if (expected.length > 0) {
        const printed = r.stdout.split('\n').map((l) => l.trim()).filter(Boolean)
        assert.deepEqual(printed, expected, `README.md:${b.line}: printed output differs from its // → lines`)
      }
      ran++
    })
  }
  assert.equal(ran, runnable.length)
  console.log(`ran ${ran} README blocks`)
})

/** GitHub's heading anchors. */
function slug(heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')
}

test('every #anchor link resolves to a heading', () => {
  const anchors = new Set()
  for (const m of README.matchAll(/^#{1,6} (.*)$/gm)) anchors.add(slug(m[1]))
  const links = [...README.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1])
  assert.ok(links.length >= 15, `only ${links.length} anchor links`)
  for (const l of links) assert.ok(anchors.has(l), `#${l} matches no heading (have: ${[...anchors].join(', ')})`)
})

test('the Errors table lists every code of the registry with its id', () => {
  const { ERROR_REGISTRY } = require('..')
  assert.equal(ERROR_REGISTRY.length, 7)
  const section = README.slice(README.indexOf('\n## Errors'), README.indexOf('\n## Metrics'))
  for (const e of ERROR_REGISTRY) assert.match(section, new RegExp(`^\\| \`${e.code}\` \\| \`${e.id}\` \\|`, 'm'), e.code)
  assert.match(README, /all seven codes/)
})

test('the CLI lines in the README use only commands and options the CLI documents', () => {
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
