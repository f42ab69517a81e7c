'use strict'
// Kernel oracle for the Node WASI host (examples/wasi-host), through the
// boundary a host author calls (`runWasiPlugin`) and the real node:wasi.
//
// Shares no code with the checker or the host's gate: it builds random worlds
// in a real temp dir (a read grant `ro/**`, a readwrite grant `rw/**`, files
// outside both, and symlinks of every kind: relative, absolute, dangling, to
// directories, to `.` and `..`, chains), writes a random WebAssembly guest
// that makes random path and fd calls (path_open with every dirflags / oflags
// / rights mix then reads, writes, set-times and set-size through the fd;
// path set-times, unlink, mkdir, rename, link, symlink; set-times, set-size
// and writes on the preopens themselves), runs it, and asks the kernel what
// happened. Its model, from the SPEC alone: a file may be read only if it
// really lives strictly below `ro` or `rw`, and anything may be changed,
// created or removed only strictly below `rw`, and nothing below `ro/p` or
// `rw/p` (a deny inside each preopen, so a grant narrower than the preopen
// the runtime sandboxes to) may be read or changed at all. Every byte the guest read
// names the file it came from; every change on disk is found by comparing
// lstat snapshots (set-times use a sentinel time no other change produces);
// a hard link from `rw` to a file outside it counts as a change of that file.
// Any allowed call whose effect breaks the model is a wrong allow. When the
// Rust host's `run` example is built, each world and guest is run under it
// too: the same oracle judges it, and a call one host denies and the other
// allows is a mismatch (SPEC §16).
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { PermissionPolicy } = require('../../index.js')
const { runWasiPlugin, assembleWat } = require('../../examples/wasi-host/host.js')

const { rng } = require('./rng.js')

/** The set-times sentinel (ns): 2001-09-09, a time nothing else on this machine writes. */
const SENTINEL_NS = 1_000_000_000_000_000_000n
const SENTINEL_MS = 1_000_000_000_000
const EACCES = 2

/** A random world: returns { root, files: Map(id -> real path), linkNames, links (descriptions) }. */
function makeWorld(r) {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'wasi-oracle-')))
  const files = new Map()
  let n = 0
  const file = (rel) => {
    const id = `f${n++}`
    fs.writeFileSync(path.join(root, rel), `F:${id};`)
    files.set(id, path.join(root, rel))
  }
  for (const d of ['ro', 'ro/d', 'ro/d/e', 'ro/p', 'rw', 'rw/d', 'rw/d/e', 'rw/p', 'out', 'out/d']) fs.mkdirSync(path.join(root, d))
  for (const f of ['ro/a', 'ro/d/b', 'ro/p/k', 'rw/a', 'rw/d/b', 'rw/p/k', 'out/secret', 'out/d/b']) file(f)
  const dirs = ['ro', 'ro/d', 'rw', 'rw/d']
  const everything = ['ro', 'ro/d', 'ro/d/e', 'ro/p', 'rw', 'rw/d', 'rw/d/e', 'rw/p', 'out', 'out/d', 'ro/a', 'ro/d/b', 'ro/p/k', 'rw/a', 'rw/d/b', 'rw/p/k', 'out/secret', 'out/d/b']
  const linkNames = []
  const links = []
  const count = 3 + r.int(6)
  for (let i = 0; i < count; i++) {
    const at = r.pick(dirs)
    const name = `l${i}`
    const target = r.pick([
      () => path.join(root, r.pick(['out/secret', 'out/d/b', 'out/d'])), // absolute, out of the grants
      () => path.relative(path.join(root, at), path.join(root, r.pick(['out/secret', 'out/d']))), // relative, out of the grants
      () => path.join(root, r.pick(everything)), // absolute, anywhere
      () => path.relative(path.join(root, at), path.join(root, r.pick(everything))) || '.', // relative, anywhere
      () => path.join(root, r.pick(['out', 'rw', 'ro']), `new${i}`), // dangling, absolute
      () => `../new${i}`, // dangling, relative
      () => r.pick(['.', '..', '../..', '../../..']),
      () => (linkNames.length ? path.join(root, r.pick(linkNames)) : '.'), // a chain
    ])()
    fs.symlinkSync(target, path.join(root, at, name))
    linkNames.push(`${at}/${name}`)
    links.push(`${at}/${name} -> ${target}`)
  }
  // Often, a link at the top of a preopen to a directory two levels down and
  // one out of the grants beside it: `s/../o` is `d/o` for the kernel and `o`
  // for a runtime that normalises the path first.
  if (r.chance(0.7)) {
    const top = r.pick(['ro', 'rw'])
    for (const [name, target] of [
      [`${top}/s`, path.join(root, r.pick(['ro/d/e', 'rw/d/e']))],
      [`${top}/o`, r.chance(0.5) ? path.join(root, r.pick(['out/secret', 'out/d'])) : r.pick(['../out/secret', '../out/d'])],
      // A target a runtime following the link itself reads lexically (top/p/k,
      // denied) and the kernel from s's target (top/d/p/k, no such file).
      [`${top}/xl`, r.pick(['s/../p/k', 's/../p', 's/../o'])],
    ]) {
      if (fs.existsSync(path.join(root, name))) continue
      fs.symlinkSync(target, path.join(root, name))
      linkNames.push(name)
      links.push(`${name} -> ${target}`)
    }
  }
  // The folding class (SPEC §10, §16: a posix deny folds case and
  // normalisation and ignores what HFS+ ignores): in each preopen a
  // directory spelled one way holding a file, and a deny written as
  // another spelling of the same name. Renaming the directory (or another
  // onto a spelling of it) must never make the file reachable.
  const fold = { ro: null, rw: null }
  for (const top of ['ro', 'rw']) {
    if (!r.chance(0.8)) continue
    const cls = r.pick(FOLD_CLASSES)
    const onDisk = r.pick(cls)
    const denyAs = r.pick(cls)
    // The deny ends at, one level below, or at the file below the directory:
    // renaming the directory moves what it denies whichever it is.
    const shape = r.pick(['**', '*', 'k'])
    fs.mkdirSync(path.join(root, top, onDisk))
    file(`${top}/${onDisk}/k`)
    fold[top] = { onDisk, denyAs, cls, shape }
  }
  return { root, files, linkNames, links, fold }
}

/**
 * Names each of which the posix deny fold makes one name (written from
 * SPEC §10/§16 and Apple TN1150, not from the checker): full case folding
 * (`ẞ` and `ß` are `ss`, the Kelvin sign is `k`), NFC = NFD, the HFS+
 * ignorables (U+200C-200F, U+202A-202E, U+206A-206F, U+FEFF) dropped, and
 * HFS+'s Georgian merge (U+10A0 with U+10D0).
 */
const FOLD_CLASSES = [
  ['ẞ', 'ß', 'ss', 'SS', 'Ss', 's\u200Cs'],
  ['\u10A0', '\u10D0', '\u2D00', '\u1C90'],
  ['key', 'KEY', '\u212Aey', 'k\u200Dey', '\uFEFFkey', 'ke\u202Ey'],
  ['caf\u00E9', 'cafe\u0301', 'CAF\u00C9', 'CAFE\u0301', 'caf\u200Fe\u0301'],
  ['stra\u00DFe', 'STRASSE', 'stra\u1E9Ee', 'Strasse'],
]

/** lstat snapshot of everything under root: rel -> { type, ino, mtimeMs, content, target }. */
function snapshot(root) {
  const out = new Map()
  const walk = (rel) => {
    for (const name of fs.readdirSync(path.join(root, rel))) {
      const r = rel ? `${rel}/${name}` : name
      const abs = path.join(root, r)
      const st = fs.lstatSync(abs)
      const e = { type: st.isSymbolicLink() ? 'link' : st.isDirectory() ? 'dir' : 'file', ino: st.ino, mtimeMs: st.mtimeMs }
      if (e.type === 'file') e.content = fs.readFileSync(abs, 'latin1')
      if (e.type === 'link') e.target = fs.readlinkSync(abs)
      out.set(r, e)
      if (e.type === 'dir') walk(r)
    }
  }
  const st = fs.lstatSync(root)
  out.set('', { type: 'dir', ino: st.ino, mtimeMs: st.mtimeMs })
  walk('')
  return out
}

// The model, from the SPEC (grants `ro/**` read, `rw/**` readwrite, deny
// `ro/p/**` and `rw/p/**`, which also denies `ro/p` and `rw/p`): strictly below.
const under = (rel, top) => rel.startsWith(`${top}/`)
/**
 * A relative path is denied when it is `ro/p`, `rw/p` or below them, or
 * what a folding-class deny names under any spelling of its directory
 * (every member of the class at that place is the deny's): the directory
 * and all below it (`**`), one name below it (`*`), or its file `k`.
 */
const deniedIn = (world) => (rel) =>
  ['ro/p', 'rw/p'].some((d) => rel === d || under(rel, d)) ||
  ['ro', 'rw'].some((t) => {
    const f = world.fold[t]
    if (!f) return false
    return f.cls.some((n) => {
      const dir = `${t}/${n}`
      if (f.shape === '**') return rel === dir || under(rel, dir)
      if (f.shape === '*') return under(rel, dir) && !rel.slice(dir.length + 1).includes('/')
      return rel === `${dir}/k`
    })
  })
const mayReadIn = (world) => (rel) => (under(rel, 'ro') || under(rel, 'rw')) && !deniedIn(world)(rel)
const mayWriteIn = (world) => (rel) => under(rel, 'rw') && !deniedIn(world)(rel)

/** WAT string literal bytes. */
const watString = (s) =>
  [...Buffer.from(s, 'utf8')].map((b) => (b >= 0x20 && b < 0x7f && b !== 0x22 && b !== 0x5c ? String.fromCharCode(b) : `\\${b.toString(16).padStart(2, '0')}`)).join('')

/** A random guest: returns { wat, calls } (calls: a description per report value). */
function makeGuest(r, world) {
  const strings = []
  let off = 2048
  const str = (s) => {
    const len = Buffer.byteLength(s)
    strings.push([off, s])
    const ref = `(i32.const ${off}) (i32.const ${len})`
    off += len + 8
    return ref
  }
  const segs = ['a', 'b', 'd', 'new', '..', '.', '', 'secret', 'out', 'x']
  const links = world.linkNames.map((l) => l.split('/').pop())
  const names = ['a', 'd', 'd/b', 'p/k', 'new', 'd/new', ...links, ...links.map((l) => `d/${l}`)]
  // The folding-class directories: every spelling of each, and its file.
  const folded = []
  for (const t of ['ro', 'rw']) if (world.fold[t]) for (const n of world.fold[t].cls) folded.push(n, `${n}/k`)
  names.push(...folded)
  const randPath = () => {
    // Mostly names that exist (or may be created) in a preopen, so that many
    // calls are allowed; otherwise any mix of names, links, `.` and `..`.
    if (r.chance(0.5)) return r.pick(names) + (r.chance(0.05) ? '/' : '')
    // `link/../name`: the kernel climbs from the link's target, a runtime that
    // normalises first does not; both readings must stay inside the grants.
    if (r.chance(0.2) && links.includes('s')) return `s/../${r.pick(['o', 'o/b', 'o/x', 'a', 'p/k'])}`
    if (r.chance(0.15) && links.includes('xl')) return r.pick(['xl', 'xl/k', 'xl/b'])
    if (r.chance(0.4) && links.length) return `${r.pick(links)}/../${r.pick([...links, 'a', 'd/b', 'x'])}${r.chance(0.3) ? `/${r.pick(['b', 'x', 'new'])}` : ''}`
    const k = 1 + r.int(3)
    const parts = []
    for (let i = 0; i < k; i++) parts.push(r.chance(0.45) && links.length ? r.pick(links) : r.pick(segs))
    let p = parts.join('/')
    if (r.chance(0.1)) p += '/'
    if (p === '') p = r.pick(names)
    return p
  }
  // The preopen holding `s` (see makeWorld) more often than the other.
  const sAt = world.linkNames.find((l) => l.endsWith('/s') && l.split('/').length === 2)
  const sFd = sAt === undefined ? null : sAt.startsWith('ro/') ? 3 : 4
  const fd = () => (sFd !== null && r.chance(0.3) ? sFd : r.chance(0.5) ? 3 : 4)
  const RIGHTS = [2n, 64n, 2n | 64n, 1n << 14n, (1n << 23n) | 64n, (1n << 22n) | 2n, 1n << 21n]
  const calls = []
  const body = []
  const report = (desc, expr) => {
    calls.push(desc)
    body.push(`(call $report ${str(`c${calls.length - 1}`)} ${expr})`)
  }
  /** A path_open of `p` (random flags and rights), then a read, a write, set-times and maybe a truncate through the fd. */
  const emitOpen = (p, fdNum) => {
      const d = { op: 'path_open', fd: fdNum, dirflags: r.int(2), path: p, oflags: r.pick([0, 0, 1, 2, 4 | 1, 8, 8 | 1]), rights: String(r.pick(RIGHTS)), fdflags: r.chance(0.1) ? 1 : 0 }
      report(d, `(local.tee $e (call $path_open (i32.const ${d.fd}) (i32.const ${d.dirflags}) ${str(p)} (i32.const ${d.oflags}) (i64.const ${d.rights}) (i64.const 0) (i32.const ${d.fdflags}) (i32.const 0)))`)
      // Opened: read what it holds (reported as the tag), write a marker, set
      // its times to the sentinel, and maybe truncate it; then close.
      const tag = calls.length - 1
      body.push(`(if (i32.eqz (local.get $e)) (then
        (local.set $fd (i32.load (i32.const 0)))
        (i32.store (i32.const 16) (i32.const 0))
        (if (i32.eqz (call $fd_read (local.get $fd) (i32.const 8) (i32.const 1) (i32.const 16)))
          (then (call $report (i32.const 256) (i32.load (i32.const 16)) (i32.const ${100000 + tag}))))
        (drop (call $fd_write (local.get $fd) (i32.const 24) (i32.const 1) (i32.const 16)))
        (drop (call $fd_filestat_set_times (local.get $fd) (i64.const ${SENTINEL_NS}) (i64.const ${SENTINEL_NS}) (i32.const 5)))
        ${r.chance(0.2) ? '(drop (call $fd_filestat_set_size (local.get $fd) (i64.const 1)))' : ''}
        (drop (call $fd_close (local.get $fd)))))`)
  }
  const n = 20 + r.int(20)
  for (let i = 0; i < n; i++) {
    const kind = r.int(10)
    if (kind <= 3) {
      emitOpen(randPath(), fd())
    } else if (kind === 4) {
      const d = { op: 'path_filestat_set_times', fd: fd(), flags: r.int(2), path: randPath() }
      report(d, `(call $path_filestat_set_times (i32.const ${d.fd}) (i32.const ${d.flags}) ${str(d.path)} (i64.const ${SENTINEL_NS}) (i64.const ${SENTINEL_NS}) (i32.const 5))`)
    } else if (kind === 5) {
      const d = { op: r.pick(['path_unlink_file', 'path_create_directory', 'path_remove_directory']), fd: fd(), path: randPath() }
      report(d, `(call $${d.op} (i32.const ${d.fd}) ${str(d.path)})`)
    } else if (kind === 6 && folded.length && r.chance(0.5)) {
      // A folding-class directory (its spelling on disk, or another) moved
      // away, then its file read from the new name; or a directory moved onto one of its spellings.
      const top = r.pick(['ro', 'rw'].filter((t) => world.fold[t]))
      const tfd = top === 'ro' ? 3 : 4
      if (r.chance(0.7)) {
        const to = r.pick(['x', 'new', 'd/x'])
        const d = { op: 'path_rename', fd: tfd, path: r.pick(world.fold[top].cls), fd2: tfd, path2: to }
        report(d, `(call $path_rename (i32.const ${d.fd}) ${str(d.path)} (i32.const ${d.fd2}) ${str(d.path2)})`)
        emitOpen(`${to}/k`, tfd)
      } else {
        const d = { op: 'path_rename', fd: tfd, path: r.pick(['d', 'd/e']), fd2: tfd, path2: r.pick(world.fold[top].cls) }
        report(d, `(call $path_rename (i32.const ${d.fd}) ${str(d.path)} (i32.const ${d.fd2}) ${str(d.path2)})`)
        emitOpen(`${d.path2}/k`, tfd)
      }
    } else if (kind === 6) {
      const d = { op: 'path_rename', fd: fd(), path: randPath(), fd2: fd(), path2: randPath() }
      report(d, `(call $path_rename (i32.const ${d.fd}) ${str(d.path)} (i32.const ${d.fd2}) ${str(d.path2)})`)
    } else if (kind === 7) {
      const d = { op: 'path_link', fd: fd(), flags: r.int(2), path: randPath(), fd2: fd(), path2: randPath() }
      report(d, `(call $path_link (i32.const ${d.fd}) (i32.const ${d.flags}) ${str(d.path)} (i32.const ${d.fd2}) ${str(d.path2)})`)
    } else if (kind === 8) {
      const target = r.chance(0.5) ? randPath() : path.join(world.root, r.pick(['out/secret', 'ro/a', 'rw/a']))
      const d = { op: 'path_symlink', target, fd: fd(), path: randPath() }
      report(d, `(call $path_symlink ${str(target)} (i32.const ${d.fd}) ${str(d.path)})`)
    } else {
      const d = { op: r.pick(['fd_filestat_set_times', 'fd_filestat_set_size', 'fd_write', 'fd_allocate']), fd: fd() }
      const args = {
        fd_filestat_set_times: `(i64.const ${SENTINEL_NS}) (i64.const ${SENTINEL_NS}) (i32.const 5)`,
        fd_filestat_set_size: '(i64.const 0)',
        fd_write: '(i32.const 24) (i32.const 1) (i32.const 16)',
        fd_allocate: '(i64.const 0) (i64.const 4096)',
      }[d.op]
      report(d, `(call $${d.op} (i32.const ${d.fd}) ${args})`)
    }
  }
  const I = (name, sig) => `(import "wasi_snapshot_preview1" "${name}" (func $${name} ${sig}))`
  const wat = `(module
  ${I('path_open', '(param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)')}
  ${I('path_filestat_set_times', '(param i32 i32 i32 i32 i64 i64 i32) (result i32)')}
  ${I('path_unlink_file', '(param i32 i32 i32) (result i32)')}
  ${I('path_create_directory', '(param i32 i32 i32) (result i32)')}
  ${I('path_remove_directory', '(param i32 i32 i32) (result i32)')}
  ${I('path_rename', '(param i32 i32 i32 i32 i32 i32) (result i32)')}
  ${I('path_link', '(param i32 i32 i32 i32 i32 i32 i32) (result i32)')}
  ${I('path_symlink', '(param i32 i32 i32 i32 i32) (result i32)')}
  ${I('fd_read', '(param i32 i32 i32 i32) (result i32)')}
  ${I('fd_write', '(param i32 i32 i32 i32) (result i32)')}
  ${I('fd_close', '(param i32) (result i32)')}
  ${I('fd_allocate', '(param i32 i64 i64) (result i32)')}
  ${I('fd_filestat_set_times', '(param i32 i64 i64 i32) (result i32)')}
  ${I('fd_filestat_set_size', '(param i32 i64) (result i32)')}
  (import "host" "report" (func $report (param i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 8) "\\00\\01\\00\\00\\40\\00\\00\\00")
  (data (i32.const 24) "\\00\\05\\00\\00\\06\\00\\00\\00")
  (data (i32.const 1280) "WRITE;")
${strings.map(([o, s]) => `  (data (i32.const ${o}) "${watString(s)}")`).join('\n')}
  (func (export "_start") (local $e i32) (local $fd i32)
    ${body.join('\n    ')}))`
  return { wat, calls }
}

/** Checks one run against the model; returns the wrong allows. */
function judge(world, before, after, reports, calls) {
  const wrong = []
  const mayRead = mayReadIn(world)
  const mayWrite = mayWriteIn(world)
  const rel = (abs) => path.relative(world.root, abs).split(path.sep).join('/')
  const errnoOf = new Map()
  for (const { tag, value } of reports) if (/^c\d+$/.test(tag)) errnoOf.set(Number(tag.slice(1)), value)
  // Reads: every byte read names a file the model lets the guest read.
  for (const { tag, value } of reports) {
    if (value < 100000) continue
    for (const [, id] of tag.matchAll(/F:(f\d+);/g)) {
      const where = rel(world.files.get(id))
      if (!mayRead(where)) wrong.push({ what: 'read', file: where, call: calls[value - 100000] })
    }
  }
  const allowed = calls.filter((_, i) => errnoOf.get(i) === 0)
  // Changes: each one must be strictly below rw.
  const change = (what, where) => {
    if (!mayWrite(where)) wrong.push({ what, entry: where, allowedCalls: allowed })
  }
  for (const [p, e] of after) {
    const b = before.get(p)
    if (!b) change('created', p)
    else if (b.type !== e.type || b.ino !== e.ino || b.content !== e.content || b.target !== e.target) change('changed', p)
    else if (e.mtimeMs === SENTINEL_MS && b.mtimeMs !== SENTINEL_MS) change('set-times', p)
  }
  for (const p of before.keys()) if (!after.has(p)) change('removed', p)
  // A name below rw sharing an inode with a file outside it makes that file writable.
  const outside = new Map([...after].filter(([p, e]) => e.type === 'file' && !mayWrite(p)).map(([p, e]) => [e.ino, p]))
  for (const [p, e] of after) if (e.type === 'file' && mayWrite(p) && outside.has(e.ino)) wrong.push({ what: 'hard link to a file outside rw', entry: p, file: outside.get(e.ino) })
  return wrong
}

/** The Rust host's `run` example when it is built (the differential test builds it), else null. */
function rustRunner() {
  const target = process.env.CARGO_TARGET_DIR || path.join(__dirname, '..', '..', 'target')
  const bin = path.join(target, 'debug', 'examples', 'run')
  return fs.existsSync(bin) ? bin : null
}

/** One guest under the Rust host (the `run` example), as `{ ok, reports }` like runWasiPlugin's. */
async function runRust(bin, world, wat, manifest) {
  const guest = path.join(world.root, '..', `${path.basename(world.root)}.wat`)
  fs.writeFileSync(guest, wat)
  const input = JSON.stringify({ guest, manifest, plugin: 'wasi-oracle', preopens: [['/ro', `${world.root}/ro`], ['/rw', `${world.root}/rw`]], args: ['wasi-oracle'] })
  const { spawn } = require('node:child_process')
  const child = spawn(bin, [], { stdio: ['pipe', 'pipe', 'pipe'] })
  const out = []
  const err = []
  child.stdout.on('data', (b) => out.push(b))
  child.stderr.on('data', (b) => err.push(b))
  child.stdin.end(input)
  const status = await new Promise((resolve) => child.on('close', resolve))
  fs.rmSync(guest, { force: true })
  if (status !== 0) return { ok: false, code: 'ERR_RUST_HOST', message: Buffer.concat(err).toString() }
  const o = JSON.parse(Buffer.concat(out).toString('utf8'))
  const ok = o.outcome.kind === 'exited' && o.outcome.code === 0
  return { ok, code: o.outcome.kind, message: o.outcome.message, reports: o.reports.map(([tag, value]) => ({ tag, value })) }
}

async function run({ seconds = 3, seed = Date.now() >>> 0, log = () => {} } = {}) {
  const r = rng(seed)
  const deadline = Date.now() + seconds * 1000
  let cases = 0
  let allowedCalls = 0
  let worlds = 0
  const wrongAllows = []
  const mismatches = []
  const runtimeDifferences = []
  const rust = rustRunner()
  if (!rust) log('the Rust WASI host is not built (cargo build -p wasi-host-rs --example run): Node host only')
  while (Date.now() < deadline || worlds === 0) {
    const worldSeed = r.int(2 ** 31)
    const one = async (host) => {
      const wr = rng(worldSeed)
      const world = makeWorld(wr)
      const { wat, calls } = makeGuest(wr, world)
      const manifest = {
        fs: [`${world.root}/ro/**`, { path: `${world.root}/rw/**`, mode: 'readwrite' }],
        deny: { fs: [`${world.root}/ro/p/**`, `${world.root}/rw/p/**`, ...['ro', 'rw'].filter((t) => world.fold[t]).map((t) => `${world.root}/${t}/${world.fold[t].denyAs}/${world.fold[t].shape}`)] },
        budgets: { wallClockMs: 20_000 },
      }
      const before = snapshot(world.root)
      const res = await host(world, wat, manifest)
      if (!res.ok) throw new Error(`oracle guest did not finish (seed ${seed}, world ${worlds}): ${JSON.stringify({ code: res.code, message: res.message })}`)
      const after = snapshot(world.root)
      const wrong = judge(world, before, after, res.reports, calls)
      fs.rmSync(world.root, { recursive: true, force: true })
      return { world, calls, res, wrong }
    }
    const node = await one(async (world, wat, manifest) => {
      const wasm = await assembleWat(wat, 'oracle.wat')
      const policy = PermissionPolicy.fromManifest(manifest, { plugin: 'wasi-oracle' })
      return runWasiPlugin({ name: 'wasi-oracle', wasm, policy, preopens: { '/ro': `${world.root}/ro`, '/rw': `${world.root}/rw` } })
    })
    for (const w of node.wrong) wrongAllows.push({ host: 'node', seed, world: worlds, links: node.world.links, fold: node.world.fold, ...w })
    if (rust) {
      const rs = await one((world, wat, manifest) => runRust(rust, world, wat, manifest))
      for (const w of rs.wrong) wrongAllows.push({ host: 'rust', seed, world: worlds, links: rs.world.links, fold: rs.world.fold, ...w })
      // SPEC §16: the same verdict for the same call in both hosts. A call one
      // gate denies (EACCES) and the other lets through is a mismatch; two
      // runtimes failing an allowed call with different errnos (node:wasi and
      // wasmtime word some failures differently) is reported, not failed.
      const errnos = (res) => res.reports.filter((x) => /^c\d+$/.test(x.tag)).map((x) => x.value)
      const a = errnos(node.res)
      const b = errnos(rs.res)
      // After the first runtime difference the two trees may differ (one runtime
      // created or removed what the other did not), so later calls are not compared.
      for (let i = 0; i < Math.max(a.length, b.length); i++) {
        if (a[i] === b[i]) continue
        const m = { seed, world: worlds, call: node.calls[i], node: a[i], rust: b[i], links: node.world.links }
        if (a[i] === EACCES || b[i] === EACCES || a[i] === undefined || b[i] === undefined) mismatches.push(m)
        else runtimeDifferences.push(m)
        break
      }
    }
    cases += node.calls.length
    allowedCalls += node.res.reports.filter((x) => /^c\d+$/.test(x.tag) && x.value === 0).length
    worlds++
  }
  log(`${worlds} worlds, ${cases} calls, ${allowedCalls} allowed${rust ? `, each also under the Rust host (${runtimeDifferences.length} allowed calls failed with different errnos in the two runtimes)` : ''}`)
  return { cases, allowed: allowedCalls, worlds, wrongAllows, mismatches, runtimeDifferences, rust: Boolean(rust) }
}

module.exports = { run }
