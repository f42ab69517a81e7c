'use strict'
// The package as users install it: pack the root package and this
// platform's binary package, install both tarballs into a fresh project,
// then require/import both entry points, run the conformance harness against
// the packed checker, type-check strict TypeScript consumers (CJS and ESM,
// default and named imports), and run publint and @arethetypeswrong/cli on
// the tarball. Also: LICENSE in every tarball, the full metadata of every
// npm/<platform> package, and the glibc floor of a linux-gnu binary (reported
// for a local build, asserted <= 2.17 with RELEASE_ARTIFACT=1: the release
// workflow's --use-napi-cross build, or `npm run build:napi-cross` here).
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync, spawnSync } = require('node:child_process')

const root = path.join(__dirname, '..')
const pkg = require('../package.json')
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const { requiredGlibc, compareVersions } = require('./glibc-floor.js')
const { platformOf } = require('./platform-packages.js')
const GLIBC_FLOOR = '2.17'
const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })

function platformDir() {
  const { familySync } = (() => {
    try {
      return require('detect-libc')
    } catch {
      return { familySync: () => (process.report.getReport().header.glibcVersionRuntime ? 'glibc' : 'musl') }
    }
  })()
  if (process.platform === 'linux') return `linux-${process.arch}-${familySync() === 'musl' ? 'musl' : 'gnu'}`
  if (process.platform === 'darwin') return `darwin-${process.arch}`
  return `win32-${process.arch}-msvc`
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'asp-pack-'))
test.after(() => fs.rmSync(tmp, { recursive: true, force: true }))
let packed
/** The root package and this platform's binary package, packed once. */
function packs() {
  if (packed) return packed
  const dir = platformDir()
  const binary = `${pkg.napi.binaryName}.${dir}.node`
  assert.ok(fs.existsSync(path.join(root, binary)), `${binary} is not built: run npm run build first`)
  const packs = path.join(tmp, 'packs')
  fs.mkdirSync(packs)
  const rootTgz = path.join(packs, JSON.parse(run(npm, ['pack', '--json', '--pack-destination', packs], root))[0].filename)
  const platformSrc = path.join(tmp, 'platform')
  fs.cpSync(path.join(root, 'npm', dir), platformSrc, { recursive: true })
  fs.copyFileSync(path.join(root, binary), path.join(platformSrc, binary))
  // Linux: the platform package carries the asp-landlock launcher (the release workflow builds it per target).
  if (process.platform === 'linux') fs.copyFileSync(require('./landlock-launcher.js').landlockLauncher({ release: true }), path.join(platformSrc, 'asp-landlock'))
  const platformTgz = path.join(packs, JSON.parse(run(npm, ['pack', '--json', '--pack-destination', packs], platformSrc))[0].filename)
  packed = { dir, binary, rootTgz, platformSrc, platformTgz }
  return packed
}
/** A fresh consumer project named `name`. */
function project(name) {
  const p = path.join(tmp, name)
  fs.mkdirSync(p)
  fs.writeFileSync(path.join(p, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }))
  return p
}
const install = (cwd, ...specs) => run(npm, ['install', '--no-audit', '--no-fund', '--prefer-offline', ...specs], cwd)
/** Requires the package in `cwd`: prints which binary file loaded. */
const whichBinary = (cwd) =>
  spawnSync(process.execPath, ['-e', `const m = require('${pkg.name}'); if (m.createChecker({ fs: ['/a/**'] }, { plugin: 'p', platform: 'posix' }).checkFs('/a/../b', 'read').allowed) process.exit(3); console.log(require.resolve('${pkg.name}'))`], { cwd, encoding: 'utf8' })

test('packed tarballs install and work in a fresh project', { timeout: 600_000 }, () => {
  const { dir, binary, rootTgz, platformSrc, platformTgz } = packs()

  // Nothing but the public files ship, with the LICENSE, in both tarballs.
  const listing = JSON.parse(run(npm, ['pack', '--dry-run', '--json'], root))[0].files.map((f) => f.path).sort()
  const platformListing = JSON.parse(run(npm, ['pack', '--dry-run', '--json'], platformSrc))[0].files.map((f) => f.path).sort()
  assert.deepEqual(platformListing, ['LICENSE', 'README.md', binary, 'package.json', ...(process.platform === 'linux' ? ['asp-landlock'] : [])].sort())
  assert.ok(listing.includes('LICENSE'), 'LICENSE in the root tarball')
  assert.match(fs.readFileSync(path.join(root, 'LICENSE'), 'utf8'), /^MIT License/)
  for (const f of listing) assert.ok(!/^(src|__test__|target|npm|scripts)\//.test(f) && !f.endsWith('.node'), `unexpected file in the package: ${f}`)
  for (const f of ['index.js', 'index.mjs', 'index.d.ts', 'index.d.mts', 'testing.js', 'testing.d.ts', 'wasi.js', 'wasi.mjs', 'wasi.d.ts', 'wasi.d.mts', 'lib/wasi.js', 'fs.js', 'fs.mjs', 'fs.d.ts', 'fs.d.mts', 'lib/open.js', 'lib/binary.js', 'schema/error-details.schema.json', 'lib/vm-host/host.js']) assert.ok(listing.includes(f), `missing ${f}`)
  // lib/binary.js loads the binary; napi's generated loader does not ship.
  for (const f of ['binding.js', 'binding.d.ts']) assert.ok(!listing.includes(f), `${f} ships`)
  // The CLI's plugin runner lives in lib/; the examples do not ship.
  for (const f of listing) assert.ok(!f.startsWith('examples/'), `an example ships: ${f}`)

  const project = path.join(tmp, 'project')
  fs.mkdirSync(project)
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }))
  const dev = pkg.devDependencies
  install(project, rootTgz, platformTgz, `@opentelemetry/sdk-metrics@${dev['@opentelemetry/sdk-metrics']}`, `typescript@${dev.typescript}`, `typescript7@${dev.typescript7}`, `@types/node@${dev['@types/node']}`)

  // require and import of both entry points; the binary comes from the platform package.
  fs.writeFileSync(
    path.join(project, 'check.cjs'),
    `const m = require('${pkg.name}'); const t = require('${pkg.name}/testing')
     const c = m.createChecker({ fs: ['/a/**'] }, { plugin: 'p', platform: 'posix' })
     if (!c.checkFs('/a/b', 'read').allowed || c.checkFs('/a/../b', 'read').allowed) throw new Error('wrong decision')
     if (typeof t.runPermissionsConformance !== 'function') throw new Error('no harness')
     const w = require('${pkg.name}/wasi')
     const gate = new w.WasiGate(m.createChecker({ fs: ['/tmp/**'], deny: { fs: ['/tmp/*/STRASSE/k'] } }, { plugin: 'p', platform: 'posix' }))
     if (w.WASI_CALLS.path_rename.gate !== 'path' || gate.pathCall('path_unlink_file', { path: '/etc/passwd' }).errno !== w.ERRNO.ACCES) throw new Error('wasi gate')
     console.log(require.resolve('${pkg.name}-${dir}'))
     if (process.platform === 'linux') {
       const { command } = m.landlockCommand({ fs: ['/tmp/**'] })
       if (!command.startsWith(require('node:path').dirname(require.resolve('${pkg.name}-${dir}/package.json')))) throw new Error('the launcher is not the platform package one: ' + command)
       const st = require('node:fs').statSync(command)
       if (!(st.mode & 0o111)) throw new Error('the shipped launcher is not executable')
     }`,
  )
  assert.match(run(process.execPath, ['check.cjs'], project), new RegExp(`${pkg.name}-${dir}`.replace('/', '\\/')))
  fs.writeFileSync(
    path.join(project, 'check.mjs'),
    `import { createChecker, PermissionPolicy } from '${pkg.name}'; import { runPermissionsConformance, conformanceCases } from '${pkg.name}/testing'
     import cjs from '${pkg.name}'
     if (cjs.PermissionPolicy !== PermissionPolicy) throw new Error('two module instances')
     if (conformanceCases().length < 300 || typeof runPermissionsConformance !== 'function') throw new Error('harness')
     console.log(createChecker({ fetch: ['api.example.com'] }, { plugin: 'p' }).checkFetch('https://evil.com').reason)`,
  )
  assert.equal(run(process.execPath, ['check.mjs'], project).trim(), 'host_not_allowlisted')

  // The checked open (\`./fs\`), required and imported, against a real temp dir.
  if (process.platform !== 'win32') {
    fs.writeFileSync(
      path.join(project, 'check-fs.mjs'),
      `import { openChecked, CheckedFile } from '${pkg.name}/fs'
       import { createRequire } from 'node:module'
       import { createChecker } from '${pkg.name}'
       import fs from 'node:fs'; import os from 'node:os'; import path from 'node:path'
       if (createRequire(import.meta.url)('${pkg.name}/fs').openChecked !== openChecked) throw new Error('two module instances')
       const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'packed-open-')))
       fs.writeFileSync(path.join(dir, 'a.txt'), 'packed')
       fs.symlinkSync('/etc/passwd', path.join(dir, 'out'))
       const c = createChecker({ fs: [dir + '/**'] }, { plugin: 'p', platform: 'posix' })
       const f = await openChecked(c, path.join(dir, 'a.txt'))
       const text = await f.readFile('utf8')
       await f.close()
       const denied = await openChecked(c, path.join(dir, 'out')).then(() => 'opened', (e) => e.details.reason)
       fs.rmSync(dir, { recursive: true })
       console.log(text, denied, f instanceof CheckedFile)`,
    )
    assert.equal(run(process.execPath, ['check-fs.mjs'], project).trim(), 'packed symlink_escape true')
  }

  // Every CLI command and the diff API from the installed package (a module the
  // checkout has and the tarball lacks fails here, not in a user's CI).
  const cli = path.join(project, 'node_modules', ...pkg.name.split('/'), 'bin', 'api-sandbox-permissions.js')
  fs.writeFileSync(path.join(project, 'v1.json'), JSON.stringify({ fs: ['/srv/**'] }))
  fs.writeFileSync(path.join(project, 'v2.json'), JSON.stringify({ fs: ['/srv/app/**'] }))
  const cliRun = (...args) => spawnSync(process.execPath, [cli, ...args], { cwd: project, encoding: 'utf8' })
  const narrowed = cliRun('diff', 'v1.json', 'v2.json')
  assert.equal(narrowed.status, 0, narrowed.stdout + narrowed.stderr)
  const widened = cliRun('diff', 'v2.json', 'v1.json', '--json')
  assert.equal(widened.status, 1, widened.stdout + widened.stderr)
  assert.equal(JSON.parse(widened.stdout).verdict !== undefined, true, widened.stdout)
  assert.equal(cliRun('lint', 'v1.json').status, 0)
  assert.equal(cliRun('explain', 'v1.json', 'fs:read:/srv/a').status, 0)
  assert.equal(run(process.execPath, ['-e', `const m = require('${pkg.name}'); const P = (f) => m.PermissionPolicy.fromManifest({ fs: [f] }, { plugin: 'p', platform: 'posix' }); console.log(m.diffPolicies(P('/srv/**'), P('/srv/app/**')).exitCode)`], project).trim(), '0')

  // The conformance harness against the packed checker.
  fs.writeFileSync(path.join(project, 'conformance.test.cjs'), `const { runPermissionsConformance, packageChecker } = require('${pkg.name}/testing')\nrunPermissionsConformance('packed', packageChecker(require('${pkg.name}')))\n`)
  const env = { ...process.env }
  delete env.NODE_TEST_CONTEXT
  const conf = spawnSync(process.execPath, ['--test', '--test-reporter=tap', 'conformance.test.cjs'], { cwd: project, encoding: 'utf8', env })
  assert.equal(conf.status, 0, conf.stdout.slice(-4000) + conf.stderr)
  const passed = Number(/# pass (\d+)/.exec(conf.stdout)[1])
  assert.ok(passed >= 300, `only ${passed} conformance cases passed`)
  assert.match(conf.stdout, /# fail 0/)

  // Strict TypeScript consumers of every export, module node16: CommonJS (.ts, .cts) and ESM (.mts),
  // every consumer of __test__/types/ (but the runners', which need the runners installed), under
  // TypeScript 5.9 and 7, with and without exactOptionalPropertyTypes.
  const consumers = fs.readdirSync(path.join(root, '__test__', 'types')).filter((f) => /\.[cm]?ts$/.test(f) && !f.startsWith('.') && f !== 'runners.mts')
  assert.ok(consumers.length >= 3, consumers.join(', '))
  for (const f of consumers) fs.copyFileSync(path.join(root, '__test__', 'types', f), path.join(project, f))
  for (const exactOptionalPropertyTypes of [false, true]) {
    fs.writeFileSync(
      path.join(project, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { strict: true, exactOptionalPropertyTypes, module: 'node16', moduleResolution: 'node16', target: 'es2022', noEmit: true, types: ['node'] }, files: consumers }),
    )
    for (const compiler of ['typescript', 'typescript7']) {
      const tsc = spawnSync(process.execPath, [path.join(project, 'node_modules', compiler, 'bin', 'tsc'), '-p', '.'], { cwd: project, encoding: 'utf8' })
      assert.equal(tsc.status, 0, `${compiler}, exactOptionalPropertyTypes ${exactOptionalPropertyTypes}: ${tsc.stdout}${tsc.stderr}`)
    }
  }

  // publint and @arethetypeswrong/cli on the tarball.
  const publint = spawnSync(process.execPath, [path.join(root, 'node_modules', 'publint', 'src', 'cli.js'), rootTgz, '--strict'], { cwd: root, encoding: 'utf8' })
  assert.equal(publint.status, 0, publint.stdout + publint.stderr)
  const attwBin = path.join(root, 'node_modules', '@arethetypeswrong', 'cli', 'dist', 'index.js')
  const attw = spawnSync(process.execPath, [attwBin, rootTgz, '--format', 'ascii'], { cwd: root, encoding: 'utf8' })
  assert.equal(attw.status, 0, attw.stdout + attw.stderr)
})

// docs/install.md lists these; each is run here from the packed tarballs.
test('every install path before a release: tarball alone, git, a monorepo file: link, npm ci --offline from the lock', { timeout: 600_000 }, () => {
  const { dir, binary, rootTgz, platformTgz } = packs()

  // The root tarball alone: no binary, and the error says which package to add.
  const alone = project('alone')
  install(alone, rootTgz)
  const missing = whichBinary(alone)
  assert.equal(missing.status, 1)
  assert.ok(missing.stderr.includes(`cannot load the native binary for ${dir}`), missing.stderr)
  assert.ok(missing.stderr.includes(`npm install ${pkg.name}-${dir}@${pkg.version}`), missing.stderr)
  // ... and adding the platform tarball fixes it; so does npm ci --offline from the lock it wrote.
  install(alone, platformTgz)
  assert.equal(whichBinary(alone).status, 0, whichBinary(alone).stderr)
  fs.rmSync(path.join(alone, 'node_modules'), { recursive: true })
  run(npm, ['ci', '--offline', '--no-audit', '--no-fund'], alone)
  const ci = whichBinary(alone)
  assert.equal(ci.status, 0, ci.stderr)

  // git: a repository holding the package (as a clone of this one does), with the platform package beside it.
  const repo = path.join(tmp, 'repo')
  fs.mkdirSync(repo)
  run('tar', ['xzf', rootTgz, '-C', repo, '--strip-components=1'], tmp)
  const git = (...args) => run('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'init.defaultBranch=main', ...args], repo)
  git('init', '-q')
  git('add', '-A')
  git('commit', '-qm', 'package')
  const fromGit = project('from-git')
  install(fromGit, `git+file://${repo}`, platformTgz)
  const g = whichBinary(fromGit)
  assert.equal(g.status, 0, g.stderr)
  assert.ok(JSON.parse(fs.readFileSync(path.join(fromGit, 'package.json'), 'utf8')).dependencies[pkg.name].startsWith('git+file:'))

  // A monorepo file: link to a checkout built from source: the binary next to index.js loads.
  const checkout = path.join(tmp, 'checkout')
  fs.cpSync(repo, checkout, { recursive: true, filter: (f) => !f.includes(`${path.sep}.git`) })
  install(checkout, '--omit=dev')
  fs.copyFileSync(path.join(root, binary), path.join(checkout, binary))
  const linked = project('linked')
  install(linked, `file:${path.relative(linked, checkout)}`)
  assert.ok(fs.lstatSync(path.join(linked, 'node_modules', ...pkg.name.split('/'))).isSymbolicLink())
  const l = whichBinary(linked)
  assert.equal(l.status, 0, l.stderr)
  assert.equal(fs.realpathSync(l.stdout.trim()), path.join(fs.realpathSync(checkout), 'index.js'))

  // The registry: the release workflow adds every platform package as an optionalDependency at this version.
  const release = fs.readFileSync(path.join(root, '.github', 'workflows', 'release.yml'), 'utf8')
  assert.ok(release.indexOf('napi prepublish') > 0 && release.indexOf('napi prepublish') < release.indexOf('npm publish --access public'), 'napi prepublish before the main publish')
})

/** The fenced blocks of a docs page (the docs tests' reader). */
const docBlocks = (page) => require('../__test__/helpers.js').fencedBlocks(fs.readFileSync(path.join(root, page), 'utf8'), page)

// The bar: a newcomer with only the tarballs and the docs. The
// typed host of docs/guide.md compiles under tsc --strict against the
// installed package and runs; the harness file of docs/harness.md runs under
// node:test, mocha, Jest and Vitest (each runner as that page says), with the
// same counts under all four.
test('the docs followed from the packed tarballs: the typed host, and the harness under four runners', { timeout: 600_000 }, () => {
  const { rootTgz, platformTgz } = packs()
  const dev = pkg.devDependencies
  const p = project('newcomer')
  install(p, rootTgz, platformTgz, `@opentelemetry/sdk-metrics@${dev['@opentelemetry/sdk-metrics']}`, `typescript@${dev.typescript}`, `@types/node@${dev['@types/node']}`)

  const host = docBlocks('docs/guide.md').find((b) => b.info === 'ts')
  assert.ok(host, 'docs/guide.md has a ts block')
  fs.writeFileSync(path.join(p, 'host.mts'), host.code)
  fs.writeFileSync(path.join(p, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true, module: 'node16', moduleResolution: 'node16', target: 'es2022', outDir: 'out', types: ['node'] }, files: ['host.mts'] }))
  const tsc = spawnSync(process.execPath, [path.join(p, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.'], { cwd: p, encoding: 'utf8' })
  assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr)
  const ran = spawnSync(process.execPath, [path.join(p, 'out', 'host.mjs')], { cwd: p, encoding: 'utf8' })
  assert.equal(ran.status, 0, ran.stderr)
  assert.deepEqual(ran.stdout.trim().split('\n'), [...host.code.matchAll(/^\s*\/\/ → (.*)$/gm)].map((m) => m[1].trim()))

  const blocks = docBlocks('docs/harness.md')
  const nodeFile = blocks.find((b) => b.info === 'js' && b.code.includes('my-host.test.js'))
  const vitestFile = blocks.find((b) => b.info.startsWith('mjs') && b.code.includes("from 'vitest'"))
  assert.ok(nodeFile && vitestFile, 'docs/harness.md has the test file and its Vitest form')
  fs.writeFileSync(path.join(p, 'my-host.test.js'), nodeFile.code)
  fs.writeFileSync(path.join(p, 'my-host.spec.js'), nodeFile.code)
  fs.writeFileSync(path.join(p, 'my-host.spec.mjs'), vitestFile.code)
  const { conformanceCases } = require('../testing.js')
  const cases = conformanceCases()
  const skipped = cases.filter((c) => c.name.startsWith('budget - ') || c.op === 'budget' || c.op === 'fetchAddress').length
  const want = { total: cases.length, passed: cases.length - skipped, skipped, failed: 0 }
  const env = { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1', CI: 'true' }
  delete env.NODE_TEST_CONTEXT
  const runIn = (args) => spawnSync(process.execPath, args, { cwd: p, env, encoding: 'utf8', timeout: 300_000 })
  const bin = (x) => path.join(root, 'node_modules', x)
  const out = (name) => path.join(p, `${name}.json`)

  const nodeRun = runIn(['--test', '--test-reporter=tap', 'my-host.test.js'])
  const tap = (k) => Number(new RegExp(`^# ${k} (\\d+)$`, 'm').exec(nodeRun.stdout)[1])
  const counts = { 'node:test': { total: tap('tests'), passed: tap('pass'), skipped: tap('skipped'), failed: tap('fail') } }
  runIn([bin('mocha/bin/mocha.js'), '--reporter', 'json', '--reporter-option', `output=${out('mocha')}`, 'my-host.spec.js'])
  const m = JSON.parse(fs.readFileSync(out('mocha'), 'utf8')).stats
  counts.mocha = { total: m.tests, passed: m.passes, skipped: m.pending, failed: m.failures }
  runIn([bin('jest/bin/jest.js'), '--ci', '--runInBand', '--json', `--outputFile=${out('jest')}`, '--rootDir', p, '--config', JSON.stringify({ testEnvironment: 'node', testMatch: ['**/my-host.test.js'] })])
  const j = JSON.parse(fs.readFileSync(out('jest'), 'utf8'))
  counts.jest = { total: j.numTotalTests, passed: j.numPassedTests, skipped: j.numPendingTests, failed: j.numFailedTests }
  const v = runIn([bin('vitest/vitest.mjs'), 'run', '--root', p, '--no-cache', '--reporter=json', `--outputFile=${out('vitest')}`, 'my-host.spec.mjs'])
  assert.ok(fs.existsSync(out('vitest')), v.stdout.slice(-2000) + v.stderr.slice(-2000))
  const vr = JSON.parse(fs.readFileSync(out('vitest'), 'utf8'))
  counts.vitest = { total: vr.numTotalTests, passed: vr.numPassedTests, skipped: vr.numPendingTests, failed: vr.numFailedTests }
  console.log(`docs/harness.md from the tarballs: ${JSON.stringify(counts)}`)
  for (const [runner, c] of Object.entries(counts)) assert.deepEqual(c, want, `${runner}: ${JSON.stringify(c)}`)
})

test('every npm/<platform> package carries the full metadata and the LICENSE', () => {
  const check = spawnSync(process.execPath, [path.join(__dirname, 'platform-packages.js'), '--check'], { encoding: 'utf8' })
  assert.equal(check.status, 0, check.stderr)
  const dirs = fs.readdirSync(path.join(root, 'npm')).sort()
  assert.deepEqual(dirs, pkg.napi.targets.map((t) => platformOf(t).dir).sort())
  const license = fs.readFileSync(path.join(root, 'LICENSE'), 'utf8')
  for (const triple of pkg.napi.targets) {
    const p = platformOf(triple)
    const dir = path.join(root, 'npm', p.dir)
    const m = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))
    assert.equal(m.name, `${pkg.name}-${p.dir}`)
    assert.equal(m.version, pkg.version, `${p.dir}: version`)
    assert.equal(m.license, 'MIT')
    assert.equal(fs.readFileSync(path.join(dir, 'LICENSE'), 'utf8'), license, `${p.dir}: LICENSE`)
    assert.match(m.repository.url, /^git\+https:\/\/github\.com\//)
    assert.equal(m.repository.directory, `npm/${p.dir}`)
    assert.equal(m.homepage, pkg.homepage)
    assert.equal(m.bugs.url, pkg.bugs.url)
    assert.ok(Array.isArray(m.keywords) && m.keywords.length > 3, `${p.dir}: keywords`)
    assert.deepEqual(m.engines, pkg.engines)
    assert.ok(m.description.includes(triple))
    assert.equal(m.main, `${pkg.napi.binaryName}.${p.dir}.node`)
    assert.deepEqual(m.files, m.os[0] === 'linux' ? [m.main, 'asp-landlock'] : [m.main])
    assert.deepEqual(m.os, [{ linux: 'linux', darwin: 'darwin', windows: 'win32' }[triple.split('-')[2]]])
    assert.deepEqual(m.cpu, [{ x86_64: 'x64', aarch64: 'arm64' }[triple.split('-')[0]]])
    if (m.os[0] === 'linux') assert.deepEqual(m.libc, [triple.endsWith('musl') ? 'musl' : 'glibc'])
    else assert.equal(m.libc, undefined)
  }
  for (const k of ['keywords', 'homepage', 'bugs', 'repository', 'license']) assert.ok(pkg[k], `root package.json: ${k}`)
})

test('the linux-gnu binary\'s glibc floor', { skip: platformDir() === 'linux-x64-gnu' || platformDir() === 'linux-arm64-gnu' ? false : 'not a linux-gnu host' }, () => {
  const binary = path.join(root, `${pkg.napi.binaryName}.${platformDir()}.node`)
  assert.ok(fs.existsSync(binary), 'run npm run build first')
  const { versions, newest } = requiredGlibc(binary)
  assert.ok(newest, 'no versioned glibc symbols found: is readelf or objdump installed?')
  assert.ok(versions.every((v) => /^\d+\.\d+(\.\d+)?$/.test(v)))
  const within = compareVersions(newest, GLIBC_FLOOR) <= 0
  console.log(`${path.basename(binary)} needs glibc ${newest} (${within ? 'within' : 'above'} the ${GLIBC_FLOOR} floor of the release builds)`)
  if (process.env.RELEASE_ARTIFACT === '1') assert.ok(within, `a release binary must need at most glibc ${GLIBC_FLOOR}; this one needs ${newest}`)
})

test('the crate packages only its sources, data, README and LICENSE (anchored include)', () => {
  const r = spawnSync('cargo', ['package', '--list', '--allow-dirty', '--offline'], { cwd: root, encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  const files = r.stdout.split('\n').filter(Boolean)
  for (const f of ['Cargo.toml', 'README.md', 'LICENSE', 'build.rs', 'src/lib.rs']) assert.ok(files.includes(f), `missing ${f}`)
  for (const f of files) assert.match(f, /^(src\/|data\/|Cargo\.toml(\.orig)?$|Cargo\.lock$|README\.md$|LICENSE$|build\.rs$|\.cargo_vcs_info\.json$)/, `unexpected file in the crate: ${f}`)
})

test("the crate's rust-version is true: no dependency it builds with needs a newer Rust", () => {
  // The dependency graph of a Rust host (no dev-dependencies, no napi): what a
  // crate user compiles. Each package's own `rust-version` is a lower bound
  // for ours.
  const r = spawnSync('cargo', ['metadata', '--format-version', '1', '--offline', '--no-default-features', '--features', 'lockdown,testing'], { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 })
  assert.equal(r.status, 0, r.stderr)
  const meta = JSON.parse(r.stdout)
  const byId = new Map(meta.packages.map((p) => [p.id, p]))
  const nodes = new Map(meta.resolve.nodes.map((n) => [n.id, n]))
  const self = meta.packages.find((p) => p.name === 'api-sandbox-permissions')
  const seen = new Set()
  const stack = [self.id]
  while (stack.length) {
    const id = stack.pop()
    if (seen.has(id)) continue
    seen.add(id)
    for (const dep of nodes.get(id).deps) {
      if (dep.dep_kinds.some((k) => k.kind === null || k.kind === 'build')) stack.push(dep.pkg)
    }
  }
  const v = (s) => (s || '0').split('.').map(Number)
  const cmp = (a, b) => v(a).reduce((acc, x, i) => acc || x - (v(b)[i] || 0), 0)
  const needed = [...seen].map((id) => byId.get(id)).filter((p) => p.id !== self.id).sort((a, b) => cmp(b.rust_version, a.rust_version))[0]
  assert.ok(cmp(self.rust_version, needed.rust_version) >= 0, `rust-version ${self.rust_version} is below ${needed.name}'s ${needed.rust_version}`)
  console.log(`rust-version ${self.rust_version}; the newest a dependency needs: ${needed.rust_version} (${needed.name})`)
})
