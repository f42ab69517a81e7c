'use strict'
// Regenerates npm/<platform>/package.json, README.md and LICENSE from the
// root package.json and its napi.targets, so every platform package carries
// the same metadata (repository, license, homepage, bugs, keywords, engines)
// and its os/cpu/libc. `--check` exits 1 listing what is out of date
// (scripts/package.test.js runs it).
const fs = require('node:fs')
const path = require('node:path')

const root = path.join(__dirname, '..')
const pkg = require('../package.json')

/** napi target triple → npm platform suffix, os, cpu, libc. */
function platformOf(triple) {
  const [arch, , sys, abi] = triple.split('-')
  const cpu = { x86_64: 'x64', aarch64: 'arm64' }[arch]
  if (!cpu) throw new Error(`unknown arch in ${triple}`)
  if (sys === 'linux') return { dir: `linux-${cpu}-${abi}`, os: 'linux', cpu, libc: abi === 'musl' ? 'musl' : 'glibc' }
  if (sys === 'darwin') return { dir: `darwin-${cpu}`, os: 'darwin', cpu }
  if (sys === 'windows') return { dir: `win32-${cpu}-${abi}`, os: 'win32', cpu }
  throw new Error(`unknown system in ${triple}`)
}

function expected(triple) {
  const p = platformOf(triple)
  const binary = `${pkg.napi.binaryName}.${p.dir}.node`
  const manifest = {
    name: `${pkg.name}-${p.dir}`,
    version: pkg.version,
    description: `The ${triple} binary of ${pkg.name}`,
    license: pkg.license,
    repository: { ...pkg.repository, directory: `npm/${p.dir}` },
    homepage: pkg.homepage,
    bugs: pkg.bugs,
    keywords: pkg.keywords,
    main: binary,
    // Linux: the asp-landlock launcher (lockdown's Landlock tier) ships beside the addon.
    files: p.os === 'linux' ? [binary, 'asp-landlock'] : [binary],
    engines: pkg.engines,
    os: [p.os],
    cpu: [p.cpu],
    ...(p.libc ? { libc: [p.libc] } : {}),
    publishConfig: { access: 'public' },
  }
  const readme = `# \`${manifest.name}\`\n\nThe **${triple}** binary of [\`${pkg.name}\`](${pkg.homepage}). Install \`${pkg.name}\`, not this package: npm picks the binary for the platform.\n`
  return { dir: path.join(root, 'npm', p.dir), files: { 'package.json': `${JSON.stringify(manifest, null, 2)}\n`, 'README.md': readme, LICENSE: fs.readFileSync(path.join(root, 'LICENSE'), 'utf8') } }
}

function run(check) {
  const stale = []
  for (const triple of pkg.napi.targets) {
    const { dir, files } = expected(triple)
    for (const [name, text] of Object.entries(files)) {
      const file = path.join(dir, name)
      const now = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null
      if (now === text) continue
      stale.push(path.relative(root, file))
      if (!check) {
        fs.mkdirSync(dir, { recursive: true })
        fs.writeFileSync(file, text)
      }
    }
  }
  return stale
}

if (require.main === module) {
  const check = process.argv.includes('--check')
  const stale = run(check)
  if (check && stale.length) {
    console.error(`out of date (run node scripts/platform-packages.js): ${stale.join(', ')}`)
    process.exitCode = 1
  } else if (!check) console.log(stale.length ? `wrote ${stale.join(', ')}` : 'up to date')
}

module.exports = { platformOf, expected, run }
