'use strict'
// Kernel oracle for `checkFs(..., { resolveSymlinks: true })` and `authorizeFs`.
//
// Shares no code with the checker: it builds random trees of directories,
// files and symlinks (relative and absolute, to `.`, `/`, the grant root,
// parent directories, dangling, loops, a 45-link chain) in a real temp dir,
// asks the package about random raw paths (`..` after link components, `.`,
// repeated slashes, 2-, 3- and 4-byte UTF-8 names), and whenever it allows,
// lets the kernel open the RAW path and reads back what was opened from
// /proc/self/fd. What the kernel opened must lie inside the grant, and the
// path authorizeFs returned must name the same file (dev/ino). Writes open
// with O_CREAT (no O_EXCL), so creating through a dangling link is covered.
// Allows the kernel says are inside but the checker denies are reported
// (`overDenials`), not failed: the checker may be stricter, never looser.
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { createChecker, isPermissionDenied } = require('../../index.js')

const { O_RDONLY, O_WRONLY, O_CREAT, O_APPEND } = fs.constants

const { rng } = require('./rng.js')

const NAMES = ['a', 'b', 'c', 'd', 'é', '中文', '😀x', 'e.txt', 'f.txt', 'd0', 'd1']

/** The oracle's own lexical normalisation of an absolute posix path (null: climbs above `/`). */
function lexical(raw) {
  const out = []
  for (const seg of raw.split('/')) {
    if (seg === '' || seg === '.') continue
    if (seg === '..') {
      if (out.length === 0) return null
      out.pop()
    } else out.push(seg)
  }
  return `/${out.join('/')}`
}

const inside = (p, root) => p !== null && p.startsWith(`${root}/`)

/** One random tree under `t`; returns the grant root and the pools of names and directories. */
function buildTree(t, r) {
  fs.mkdirSync(path.join(t, 'grant'))
  fs.mkdirSync(path.join(t, 'outside'))
  fs.writeFileSync(path.join(t, 'secret.txt'), 'secret')
  fs.writeFileSync(path.join(t, 'outside', 'secret.txt'), 'secret')
  const dirs = [path.join(t, 'grant'), path.join(t, 'outside')]
  const files = [path.join(t, 'secret.txt'), path.join(t, 'outside', 'secret.txt')]
  const names = new Set(['grant', 'outside', 'secret.txt', '..', '.', ''])
  // Directories and files.
  for (let i = 0; i < 14; i++) {
    const parent = r.pick(dirs)
    const name = r.chance(0.1) ? `${'ü'.repeat(40 + r.int(60))}${i}` : `${r.pick(NAMES)}${r.chance(0.3) ? i : ''}`
    const p = path.join(parent, name)
    if (fs.existsSync(p)) continue
    names.add(name)
    if (r.chance(0.6)) {
      fs.mkdirSync(p)
      dirs.push(p)
    } else {
      fs.writeFileSync(p, 'x')
      files.push(p)
    }
  }
  // The grant root: the `grant` dir or one level below it.
  const deeper = dirs.filter((d) => path.dirname(d) === path.join(t, 'grant'))
  const grantRoot = deeper.length > 0 && r.chance(0.3) ? r.pick(deeper) : path.join(t, 'grant')
  // Links, their directories chosen mostly inside the grant.
  const linkDirs = dirs.filter((d) => d.startsWith(`${grantRoot}/`) || d === grantRoot)
  const targets = () => {
    const node = r.pick([...dirs, ...files])
    switch (r.int(12)) {
      case 0:
        return '.'
      case 1:
        return '..'
      case 2:
        return '../..'
      case 3:
        return '/'
      case 4:
        return grantRoot
      case 5:
        return t
      case 6:
        return node
      case 7:
        return `missing-${r.int(3)}`
      case 8:
        return path.join(t, 'outside', `created-${r.int(3)}`)
      case 9:
        return `../outside/new-${r.int(3)}`
      case 10:
        return `${r.pick(['a', 'b', '.'])}/../${r.pick(['..', '.', 'a'])}`
      default:
        return null // relative to a node, filled in below
    }
  }
  for (let i = 0; i < 12; i++) {
    const dir = r.chance(0.85) && linkDirs.length > 0 ? r.pick(linkDirs) : r.pick(dirs)
    const name = `${r.pick(['l', 'link', 'lé', 'l😀'])}${i}`
    let target = targets()
    if (target === null) target = path.relative(dir, r.pick([...dirs, ...files])) || '.'
    if (fs.existsSync(path.join(dir, name))) continue
    fs.symlinkSync(target, path.join(dir, name))
    names.add(name)
  }
  // Loops: a self link and a pair.
  const ld = r.pick(linkDirs.length > 0 ? linkDirs : dirs)
  fs.symlinkSync('self', path.join(ld, 'self'))
  fs.symlinkSync('loop-b', path.join(ld, 'loop-a'))
  fs.symlinkSync('loop-a', path.join(ld, 'loop-b'))
  // A chain of 45 links ending in the grant root: the kernel follows 40, then ELOOP.
  for (let i = 0; i < 45; i++) fs.symlinkSync(i === 44 ? grantRoot : `chain${i + 1}`, path.join(ld, `chain${i}`))
  for (const n of ['self', 'loop-a', 'loop-b', 'chain0', 'chain3', 'chain5', 'chain6']) names.add(n)
  return { grantRoot, names: [...names], dirs }
}

/** A random raw path starting at the grant root (sometimes elsewhere). */
function rawPath(tree, r) {
  const start = r.chance(0.85) ? tree.grantRoot : r.pick(tree.dirs)
  let p = start
  const n = 1 + r.int(7)
  for (let i = 0; i < n; i++) {
    let c = null
    if (r.chance(0.65)) {
      // Mostly a name that exists where the kernel is now (guides the walk, decides nothing).
      try {
        const entries = fs.readdirSync(p)
        if (entries.length > 0) c = r.pick(entries)
      } catch {}
    }
    if (c === null) c = r.chance(0.25) ? '..' : r.chance(0.1) ? '.' : r.chance(0.05) ? '' : r.chance(0.1) ? `new${r.int(2)}` : r.pick(tree.names)
    p += `/${c}`
  }
  if (r.chance(0.05)) p += '/'
  return p
}

function openedPath(fd) {
  try {
    return fs.readlinkSync(`/proc/self/fd/${fd}`)
  } catch {
    return null
  }
}

async function run({ seconds = 3, seed = Date.now() >>> 0, log = () => {} } = {}) {
  if (process.platform !== 'linux') return { cases: 0, wrongAllows: [], mismatches: [], skipped: 'needs /proc/self/fd (Linux)' }
  const r = rng(seed)
  const deadline = performance.now() + seconds * 1000
  const wrongAllows = []
  const mismatches = []
  const overDenials = []
  let cases = 0
  let kernelOpened = 0
  let allowed = 0
  let trees = 0
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'asp-kernel-')))
  try {
    while (performance.now() < deadline) {
      const t = path.join(base, String(trees++))
      fs.mkdirSync(t)
      const tree = buildTree(t, r)
      const G = tree.grantRoot
      const checker = createChecker({ fs: [{ path: `${G}/**`, mode: 'readwrite' }] }, { plugin: 'kernel-oracle', platform: 'posix' })
      for (let k = 0; k < 150 && performance.now() < deadline; k++) {
        const raw = rawPath(tree, r)
        const mode = r.chance(0.5) ? 'read' : 'write'
        cases++
        const d = checker.checkFs(raw, mode, { resolveSymlinks: true })
        let returned = null
        try {
          returned = checker.authorizeFs(raw, mode, { resolveSymlinks: true })
        } catch (e) {
          if (!isPermissionDenied(e)) throw e
        }
        if (d.allowed !== (returned !== null)) mismatches.push({ raw, mode, checkFs: d, authorizeFs: returned })
        // The kernel's answer: open the raw path as the host would without the package.
        let fd = -1
        let existed = true
        try {
          existed = fs.existsSync(raw)
          fd = fs.openSync(raw, mode === 'read' ? O_RDONLY : O_WRONLY | O_CREAT | O_APPEND, 0o644)
        } catch {
          fd = -1
        }
        if (fd < 0) continue
        kernelOpened++
        try {
          const real = openedPath(fd)
          const lexicallyInside = inside(lexical(raw), G)
          if (d.allowed || returned !== null) {
            allowed++
            if (!inside(real, G) || !lexicallyInside) wrongAllows.push({ raw, mode, opened: real, lexicallyInside })
            if (returned !== null) {
              const a = fs.fstatSync(fd)
              let b = null
              try {
                b = fs.lstatSync(returned)
              } catch {}
              if (b === null || b.isSymbolicLink() || a.dev !== b.dev || a.ino !== b.ino) wrongAllows.push({ raw, mode, opened: real, returned, why: 'authorizeFs returned a different file' })
            }
          } else if (inside(real, G) && lexicallyInside && real.length <= 4096) {
            overDenials.push({ raw, mode, opened: real, reason: d.reason })
          }
          if (!existed && real !== null) fs.rmSync(real.replace(/ \(deleted\)$/, ''), { force: true })
        } finally {
          fs.closeSync(fd)
        }
      }
      fs.rmSync(t, { recursive: true, force: true })
    }
  } finally {
    fs.rmSync(base, { recursive: true, force: true })
  }
  log(`kernel-fs: seed ${seed}, ${trees} trees, ${cases} cases, ${kernelOpened} opened by the kernel, ${allowed} allowed and checked, ${overDenials.length} stricter-than-kernel denials, ${wrongAllows.length} wrong allows`)
  return { cases, wrongAllows, mismatches, overDenials, kernelOpened, allowed }
}

module.exports = { run }
