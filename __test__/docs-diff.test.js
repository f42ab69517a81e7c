'use strict'
// docs/diff.md cannot drift: its `json file=<name>` blocks are written to a
// temp dir, each `console` block's `$ api-sandbox-permissions ...` commands
// are run there through the CLI and must print exactly the lines below them
// (and `$ echo $?` the exit code), and its JavaScript blocks run with what
// they print equal to their `// → …` lines.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { spawnSync } = require('node:child_process')

const root = path.join(__dirname, '..')
const BIN = path.join(root, 'bin', 'api-sandbox-permissions.js')
const DOC = fs.readFileSync(path.join(root, 'docs', 'diff.md'), 'utf8')
const pkgName = require('../package.json').name

const { fencedBlocks } = require('./helpers.js')

test('docs/diff.md: the sessions are what the CLI prints, the JS runs as shown', (t) => {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'asp-docs-diff-')))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const all = fencedBlocks(DOC, 'docs/diff.md')
  const files = all.filter((b) => /^json file=/.test(b.info))
  assert.ok(files.length >= 2)
  for (const b of files) fs.writeFileSync(path.join(dir, b.info.slice('json file='.length)), b.body.join('\n'))
  let commands = 0
  for (const b of all.filter((x) => x.info === 'console')) {
    let i = 0
    let status = null
    while (i < b.body.length) {
      const cmd = b.body[i++]
      assert.match(cmd, /^\$ /, `docs/diff.md:${b.line + i}`)
      const expected = []
      while (i < b.body.length && !b.body[i].startsWith('$ ')) expected.push(b.body[i++])
      if (cmd === '$ echo $?') {
        assert.deepEqual(expected, [String(status)], `exit code at docs/diff.md:${b.line + i}`)
        continue
      }
      const args = cmd.slice(2).split(' ')
      assert.equal(args.shift(), 'api-sandbox-permissions')
      const r = spawnSync(process.execPath, [BIN, ...args], { cwd: dir, encoding: 'utf8' })
      status = r.status
      commands++
      assert.equal(r.stdout.replace(/\n$/, ''), expected.join('\n'), `${cmd} (docs/diff.md:${b.line})`)
    }
  }
  assert.ok(commands >= 3, `${commands} commands`)
  const js = all.filter((b) => b.info === 'js')
  assert.ok(js.length >= 1)
  for (const b of js) {
    const code = b.body.join('\n').replaceAll(`require('${pkgName}')`, `require(${JSON.stringify(root)})`)
    const want = b.body.filter((l) => l.startsWith('// → ')).map((l) => l.slice('// → '.length))
    const r = spawnSync(process.execPath, ['-e', code], { cwd: dir, encoding: 'utf8' })
    assert.equal(r.status, 0, r.stderr)
    assert.deepEqual(r.stdout.trimEnd().split('\n'), want, `docs/diff.md:${b.line}`)
  }
})
