'use strict'
// The package as users install it: pack the root package and this
// platform's binary package, install both tarballs into a fresh project,
// then require/import both entry points, run the conformance harness against
// the packed checker, type-check a strict TypeScript consumer, and run
// publint and @arethetypeswrong/cli on the tarball.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync, spawnSync } = require('node:child_process')

const root = path.join(__dirname, '..')
const pkg = require('../package.json')
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
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

test('packed tarballs install and work in a fresh project', { timeout: 600_000 }, (t) => {
  const dir = platformDir()
  const binary = `${pkg.napi.binaryName}.${dir}.node`
  assert.ok(fs.existsSync(path.join(root, binary)), `${binary} is not built: run npm run build first`)
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'asp-pack-'))
  t.after(() => fs.rmSync(tmp, { recursive: true, force: true }))
  const packs = path.join(tmp, 'packs')
  fs.mkdirSync(packs)

  const rootTgz = path.join(packs, JSON.parse(run(npm, ['pack', '--json', '--pack-destination', packs], root))[0].filename)
  const platformSrc = path.join(tmp, 'platform')
  fs.cpSync(path.join(root, 'npm', dir), platformSrc, { recursive: true })
  fs.copyFileSync(path.join(root, binary), path.join(platformSrc, binary))
  const platformTgz = path.join(packs, JSON.parse(run(npm, ['pack', '--json', '--pack-destination', packs], platformSrc))[0].filename)

  // Nothing but the public files ship.
  const listing = JSON.parse(run(npm, ['pack', '--dry-run', '--json'], root))[0].files.map((f) => f.path).sort()
  for (const f of listing) assert.ok(!/^(src|__test__|target|npm|scripts)\//.test(f) && !f.endsWith('.node'), `unexpected file in the package: ${f}`)
  for (const f of ['index.js', 'index.mjs', 'index.d.ts', 'index.d.mts', 'testing.js', 'testing.d.ts', 'binding.js', 'schema/error-details.schema.json']) assert.ok(listing.includes(f), `missing ${f}`)

  const project = path.join(tmp, 'project')
  fs.mkdirSync(project)
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }))
  const dev = pkg.devDependencies
  run(npm, ['install', '--no-audit', '--no-fund', rootTgz, platformTgz, `@opentelemetry/sdk-metrics@${dev['@opentelemetry/sdk-metrics']}`, `typescript@${dev.typescript}`, `@types/node@${dev['@types/node']}`], project)

  // require and import of both entry points; the binary comes from the platform package.
  fs.writeFileSync(
    path.join(project, 'check.cjs'),
    `const m = require('${pkg.name}'); const t = require('${pkg.name}/testing')
     const c = m.createChecker({ fs: ['/a/**'] }, { plugin: 'p', platform: 'posix' })
     if (!c.checkFs('/a/b', 'read').allowed || c.checkFs('/a/../b', 'read').allowed) throw new Error('wrong decision')
     if (typeof t.runPermissionsConformance !== 'function') throw new Error('no harness')
     console.log(require.resolve('${pkg.name}-${dir}'))`,
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

  // The conformance harness against the packed checker.
  fs.writeFileSync(path.join(project, 'conformance.test.cjs'), `const { runPermissionsConformance, packageChecker } = require('${pkg.name}/testing')\nrunPermissionsConformance('packed', packageChecker(require('${pkg.name}')))\n`)
  const env = { ...process.env }
  delete env.NODE_TEST_CONTEXT
  const conf = spawnSync(process.execPath, ['--test', '--test-reporter=tap', 'conformance.test.cjs'], { cwd: project, encoding: 'utf8', env })
  assert.equal(conf.status, 0, conf.stdout.slice(-4000) + conf.stderr)
  const passed = Number(/# pass (\d+)/.exec(conf.stdout)[1])
  assert.ok(passed >= 300, `only ${passed} conformance cases passed`)
  assert.match(conf.stdout, /# fail 0/)

  // A strict TypeScript consumer of every export, module node16.
  fs.copyFileSync(path.join(root, '__test__', 'types', 'consumer.ts'), path.join(project, 'consumer.ts'))
  fs.writeFileSync(
    path.join(project, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { strict: true, module: 'node16', moduleResolution: 'node16', target: 'es2022', noEmit: true, types: ['node'] }, files: ['consumer.ts'] }),
  )
  const tsc = spawnSync(process.execPath, [path.join(project, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.'], { cwd: project, encoding: 'utf8' })
  assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr)

  // publint and @arethetypeswrong/cli on the tarball.
  const publint = spawnSync(process.execPath, [path.join(root, 'node_modules', 'publint', 'src', 'cli.js'), rootTgz, '--strict'], { cwd: root, encoding: 'utf8' })
  assert.equal(publint.status, 0, publint.stdout + publint.stderr)
  const attwBin = path.join(root, 'node_modules', '@arethetypeswrong', 'cli', 'dist', 'index.js')
  const attw = spawnSync(process.execPath, [attwBin, rootTgz, '--format', 'ascii'], { cwd: root, encoding: 'utf8' })
  assert.equal(attw.status, 0, attw.stdout + attw.stderr)
})
