'use strict'
// The WASI host's gate, on the host side of the worker boundary: every WASI
// path operation of a guest arrives here as absolute host paths (the worker's
// wrapper joined the guest path to the host directory of its fd) and is
// checked with the package's PermissionChecker before the real node:wasi
// call runs. A denial is answered with the WASI errno EACCES and counted in
// plugin.permission_denied_total by the checker.
const fs = require('node:fs')
const path = require('node:path')
const { isPermissionDenied } = require('../..')

/** WASI preview1 errno values used by the host (wasi_snapshot_preview1 `errno` enum). */
const ERRNO = Object.freeze({ SUCCESS: 0, ACCES: 2, BADF: 8, EXIST: 20, FAULT: 21, ILSEQ: 25, INVAL: 28, IO: 29, LOOP: 32, NOENT: 44, NOTSUP: 58, PERM: 63, NOTCAPABLE: 76 })

/**
 * Every wasi_snapshot_preview1 import and what it needs from the gate, shared
 * with the Rust host (wasi-calls.json): `none`, `fd` (mode on the fd's
 * recorded path), `path` (follow: always / flag / never), `refuse` (errno).
 */
const WASI_CALLS = Object.freeze(JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'data', 'wasi-calls.json'), 'utf8')).calls)

/** Rights bits of `rights_base` that let the opened fd change the file (preview1 `rights` flags). */
const WRITE_RIGHTS =
  (1n << 0n) | // fd_datasync
  (1n << 4n) | // fd_sync
  (1n << 6n) | // fd_write
  (1n << 8n) | // fd_allocate
  (1n << 19n) | // path_filestat_set_size
  (1n << 20n) | // path_filestat_set_times
  (1n << 22n) | // fd_filestat_set_size
  (1n << 23n) // fd_filestat_set_times
const OFLAGS = Object.freeze({ CREAT: 1, DIRECTORY: 2, EXCL: 4, TRUNC: 8 })
const FDFLAGS_APPEND = 1
const LOOKUP_SYMLINK_FOLLOW = 1

/** The mode a `path_open` needs: create, truncate, append or any write right is a write. */
function openMode(oflags, rightsBase, fdflags) {
  if (oflags & (OFLAGS.CREAT | OFLAGS.TRUNC)) return 'write'
  if (fdflags & FDFLAGS_APPEND) return 'write'
  return BigInt.asUintN(64, BigInt(rightsBase)) & WRITE_RIGHTS ? 'write' : 'read'
}

const deniedOf = (e) => ({ allowed: false, capability: e.details.capability, reason: e.details.reason })

class WasiGate {
  /** `checker`: a PermissionChecker built with the host's meter. */
  constructor(checker, { log } = {}) {
    this.checker = checker
    this.log = log || (() => {})
    this.calls = []
    /** Trace entries dropped past `MAX_TRACE` (the oldest first). */
    this.droppedCalls = 0
  }

  /** Appends one trace entry; the trace keeps the newest `MAX_TRACE` (its `what` is already cut by `show`). */
  record(entry) {
    if (this.calls.length >= MAX_TRACE) {
      this.calls.shift()
      this.droppedCalls++
    }
    this.calls.push({ ...entry, what: clip(entry.what) })
  }

  /**
   * What `path_rename` moves, under each reading of its two names that a
   * runtime may act on: as written (the kernel's and wasmtime's reading,
   * checked first, as the Rust host does) and normalised lexically (what
   * node:wasi renames: `paths`, as `fs` handed them back), so both hosts give
   * one verdict (SPEC §16). Returns null or the denial.
   */
  renameMovesAll(checks, paths) {
    if (checks.some((c) => normalizeLexically(c.path) !== c.path)) {
      const written = []
      for (const c of checks) {
        const d = this.fsAs(c.path, c.mode, { follow: c.follow || forcesFollow(c.path) })
        if (!d.allowed) return d
        written.push(d.path)
      }
      const d = this.renameMoves(written[0], written[1])
      if (d) return d
    }
    return this.renameMoves(paths[0], paths[1])
  }

  /**
   * What a rename moves beyond its two names (both already checked): a
   * directory carries every path below it out of (or into) a deny rule's
   * reach, and a symlink's relative target means something else from its new
   * directory. Returns null, or the denial (counted once where a concrete
   * denied path exists).
   */
  renameMoves(oldPath, newPath) {
    let st
    try {
      st = fs.lstatSync(oldPath)
    } catch {
      return null // the runtime fails it (ENOENT)
    }
    if (st.isSymbolicLink()) {
      const d = this.fs(linkMeaning(newPath, fs.readlinkSync(oldPath)), 'read', { follow: true })
      return d.allowed ? null : d
    }
    if (!st.isDirectory()) return null
    const denies = (this.checker.policy.toJSON().deny || {}).fs || []
    let reached = false
    for (const dir of [oldPath, newPath]) {
      for (const glob of denies) {
        if (!mayMatchBelow(glob, dir)) continue
        reached = true
        const candidate = belowCandidate(glob, dir)
        const quiet = this.checker.policy.checkFs(candidate, 'write')
        if (!quiet.allowed && quiet.reason === 'explicitly_denied') return this.checker.checkFs(candidate, 'write')
      }
    }
    // A deny may match below but no concrete path of any was found: refused
    // all the same (fail closed); this one is not counted (as in the Rust host).
    if (reached) return { allowed: false, capability: 'fs.write', reason: 'explicitly_denied' }
    return this.movedLinks(oldPath, newPath)
  }

  /**
   * The symlinks below a directory renamed from `oldPath` to `newPath`: each
   * keeps its target text, so a relative one means that text read from its
   * new directory (`movedMeaning`) and an absolute one what it meant; each is
   * checked as `path_symlink` checks a target. The walk does not follow links
   * and is bounded (`MAX_RENAME_WALK` entries, `MAX_RENAME_DEPTH` levels):
   * past the bound, on a name or target that is not UTF-8, or a directory
   * that cannot be read, the rename is refused (fail closed), uncounted (no
   * path was checked). The first denied target refuses it, counted once by
   * its check. The Rust host's `Gate::moved_links`, step for step.
   */
  movedLinks(oldPath, newPath) {
    const unverifiable = (reason) => ({ allowed: false, capability: 'fs.read', reason })
    const newDir = newPath.replace(/\/+$/, '')
    const oldDir = oldPath.replace(/\/+$/, '')
    const pending = [['', 0]]
    let seen = 0
    while (pending.length) {
      const [rel, depth] = pending.pop()
      let entries
      try {
        entries = fs.readdirSync(`${oldDir}/${rel}`, { withFileTypes: true, encoding: 'buffer' })
      } catch {
        return unverifiable('symlink_escape')
      }
      for (const entry of entries) {
        if (++seen > MAX_RENAME_WALK) return unverifiable('symlink_escape')
        const name = utf8(entry.name)
        if (name === null) return unverifiable('invalid_path')
        if (entry.isDirectory()) {
          if (depth + 1 > MAX_RENAME_DEPTH) return unverifiable('symlink_escape')
          pending.push([`${rel}${name}/`, depth + 1])
        } else if (entry.isSymbolicLink()) {
          let raw
          try {
            raw = fs.readlinkSync(`${oldDir}/${rel}${name}`, { encoding: 'buffer' })
          } catch {
            return unverifiable('symlink_escape')
          }
          const target = utf8(raw)
          if (target === null) return unverifiable('invalid_path')
          const meant = target.startsWith('/') ? target : movedMeaning(oldDir, newDir, rel, target)
          if (meant === null) return unverifiable('symlink_escape')
          const d = this.fs(meant, 'read', { follow: true })
          if (!d.allowed) return d
        }
      }
    }
    return null
  }

  /**
   * One path check. `follow`: the operation follows a final symlink (open,
   * stat with SYMLINK_FOLLOW): the real path is checked (`authorizeFs` with
   * `resolveSymlinks`). Otherwise the operation acts on the final name itself
   * (unlink, rename, link, mkdir, readlink, a no-follow stat): the raw path is
   * checked lexically, then the real parent directory plus the name.
   * `lexical`: only the lexical check (the conformance adapter's `checkFs`).
   * Returns `{ allowed: true, path }` (the path that was checked) or a denial decision.
   */
  fs(hostPath, mode, { follow = true, lexical = false } = {}) {
    // A trailing separator, or a final `.` / `..`, makes the kernel follow a
    // final symlink whatever the call's no-follow flag (`lutimes("link/")`
    // sets the times of the link's target): such a path is checked as followed.
    if (!follow && forcesFollow(hostPath)) follow = true
    const first = this.fsAs(hostPath, mode, { follow, lexical })
    if (lexical || !first.allowed) return first
    // node:wasi (uvwasi) normalises the guest's path lexically before the
    // kernel resolves it: `link/../x` reaches the x beside the link, where the
    // kernel alone climbs from the link's target. Both readings must be inside
    // the grants; the runtime opens the normalised one, so that is the path
    // handed back (and recorded for an fd).
    const norm = normalizeLexically(hostPath)
    const second = norm === hostPath ? first : this.fsAs(norm, mode, { follow })
    if (!follow || !second.allowed) return second
    // And when it follows a final symlink itself, it reads the link's target
    // lexically too (joined to the link's directory, normalised, again for a
    // chain), where the kernel would resolve `lk/..` in it from lk's target.
    const chain = followLexically(norm)
    return chain === norm ? second : this.fsAs(chain, mode, { follow })
  }

  /** One reading of a path (see `fs`). */
  fsAs(hostPath, mode, { follow = true, lexical = false } = {}) {
    try {
      if (lexical) {
        const d = this.checker.checkFs(hostPath, mode)
        return d.allowed ? { allowed: true, path: hostPath } : d
      }
      if (follow) return { allowed: true, path: this.checker.authorizeFs(hostPath, mode, { resolveSymlinks: true }) }
      const d = this.checker.checkFs(hostPath, mode)
      if (!d.allowed) return d
      // Split the raw path, never a normalised one: `link/..` is the parent of
      // the link's target for the kernel, so the parent is resolved as written.
      const raw = hostPath.replace(/(.)\/+$/, '$1')
      const cut = raw.lastIndexOf('/')
      const parent = cut <= 0 ? '/' : raw.slice(0, cut)
      const base = raw.slice(cut + 1)
      let real
      try {
        real = fs.realpathSync.native(parent)
      } catch {
        // No such parent: the operation fails with ENOENT; still, nothing unchecked
        // reaches the runtime: the checker resolves what exists of the path.
        return { allowed: true, path: this.checker.authorizeFs(hostPath, mode, { resolveSymlinks: true }) }
      }
      const joined = real === '/' ? `/${base}` : `${real}/${base}`
      const d2 = this.checker.checkFs(joined, mode)
      return d2.allowed ? { allowed: true, path: joined } : d2
    } catch (e) {
      if (isPermissionDenied(e)) return deniedOf(e)
      throw e
    }
  }

  /**
   * A WASI path operation: `checks` are `{ path, mode, follow, what }`, in
   * order; the first denial stops (so one hostile call counts once).
   * Returns `{ errno: 0, paths }` or `{ errno: EACCES, capability, reason }`
   * (or the O_NOFOLLOW errno of a check with `noFollowFinal`).
   */
  op(op, checks) {
    const paths = []
    let base
    for (const c of checks) {
      const d = this.fs(c.path, c.mode, { follow: c.follow })
      const what = `${op} ${show(c.what)}`
      if (!d.allowed) {
        this.record({ op, capability: d.capability, what, allowed: false, reason: d.reason })
        this.log(`${what} -> EACCES (${d.capability} ${d.reason})`)
        return { errno: ERRNO.ACCES, capability: d.capability, reason: d.reason }
      }
      paths.push(d.path)
      // An absolute link target names a host path: wasmtime (cap-std) never
      // reveals one (EPERM); node:wasi would, so the gate refuses it the same way.
      if (op === 'path_readlink' && absoluteLinkTarget(d.path)) {
        this.record({ op, capability: `fs.${c.mode}`, what: `${op} ${show(c.what)}`, allowed: true, errno: ERRNO.PERM })
        this.log(`${op} ${show(c.what)} -> EPERM (an absolute target is not revealed)`)
        return { errno: ERRNO.PERM }
      }
      // The runtime follows a final symlink whatever the guest asked (node:wasi
      // opens without O_NOFOLLOW): the resolved path was checked above; a guest
      // that asked not to follow gets what O_NOFOLLOW gives (ELOOP, or EEXIST
      // for an exclusive create), the same errno the Rust host's runtime gives.
      if (c.noFollowFinal) {
        // Its final component as written or as node:wasi normalises the path: with
        // neither a symlink, what node:wasi opens is the normalised path's real path.
        const errno = finalSymlinkErrno(c.path, c.exclusive) || finalSymlinkErrno(normalizeLexically(c.path), c.exclusive)
        if (errno !== ERRNO.SUCCESS) {
          this.record({ op, capability: `fs.${c.mode}`, what: `${op} ${show(c.what)}`, allowed: true, errno })
          this.log(`${op} ${show(c.what)} -> errno ${errno} (a final symlink, not followed)`)
          return { errno }
        }
      }
    }
    if (op === 'path_rename') {
      const d = this.renameMovesAll(checks, paths)
      if (d) {
        this.record({ op, capability: d.capability, what: `${op} ${show(checks.map((c) => c.what).join(' -> '))}`, allowed: false, reason: d.reason })
        this.log(`${op} -> EACCES (${d.capability} ${d.reason}: what the rename moves)`)
        return { errno: ERRNO.ACCES, capability: d.capability, reason: d.reason }
      }
    }
    // path_open: the path string node:wasi keeps for the new fd (it joins
    // and normalises lexically, and follows a final link itself only with
    // SYMLINK_FOLLOW), for the worker to resolve later calls through it.
    if (op === 'path_open') {
      const norm = normalizeLexically(checks[0].path)
      base = checks[0].noFollowFinal ? norm : followLexically(norm)
    }
    this.record({ op, capability: `fs.${checks.some((c) => c.mode === 'write') ? 'write' : 'read'}`, what: `${op} ${show(checks.map((c) => c.what).join(' -> '))}`, allowed: true })
    this.log(`${op} ${show(checks.map((c) => c.what).join(' -> '))} -> allowed`)
    return base === undefined ? { errno: ERRNO.SUCCESS, paths } : { errno: ERRNO.SUCCESS, paths, base }
  }

  /**
   * An fd-level call (`fd_write`, `fd_readdir`, `fd_filestat_set_times`, ...):
   * `mode` on the path the host recorded for the fd (the real path checked when
   * it was opened, a preopen's real directory). That path was resolved when
   * recorded, so it is checked lexically; a denial is EACCES and counts once.
   * `capable`: the fd was opened with the call's right (wasi-calls.json
   * `right`); without it the answer is ENOTCAPABLE, as preview1 says, in both hosts.
   */
  fd(op, fdPath, mode, capable, what, resolve = false) {
    // `resolve`: a directory the runtime reaches again through its path string
    // (node:wasi): checked as a followed path, all readings, like a path call.
    const d = resolve ? this.fs(fdPath, mode, { follow: true }) : this.checker.checkFs(fdPath, mode)
    const line = `${op} ${JSON.stringify(what)}`
    if (!d.allowed) {
      this.record({ op, capability: d.capability, what: line, allowed: false, reason: d.reason })
      this.log(`${line} -> EACCES (${d.capability} ${d.reason})`)
      return { errno: ERRNO.ACCES, capability: d.capability, reason: d.reason }
    }
    return { errno: capable ? ERRNO.SUCCESS : ERRNO.NOTCAPABLE }
  }

  /**
   * A host import (`host.fetch`, `host.secret`, `host.publish`): `checkCapability`.
   * Returns the decision; the host answers a denial with EACCES.
   */
  capability(id, payload, what = '') {
    const d = this.checker.checkCapability(id, payload)
    this.record({ op: id, capability: id, what: `${id} ${show(what)}`, allowed: d.allowed, ...(d.allowed ? {} : { reason: d.reason }) })
    this.log(`${id} ${show(what)} -> ${d.allowed ? 'allowed' : `EACCES (${d.reason})`}`)
    return d
  }

  /** The re-check of a fetch's resolved address (DNS rebinding) before connecting. */
  fetchAddress(url, ip) {
    return this.checker.checkFetchAddress(url, ip)
  }
}

/**
 * The checks one WASI call needs, from the host paths of its arguments
 * (shared by the worker's wrapper and the tests). `a`: `{ fd paths joined, flags }`.
 */
function checksFor(op, a) {
  // Whether the runtime follows a final symlink, from the shared table
  // (an op it does not list as a path call: follows, the stricter check).
  const follows = (name, flags) => {
    const f = WASI_CALLS[name] && WASI_CALLS[name].gate === 'path' ? WASI_CALLS[name].follow : 'always'
    return f === 'always' || (f === 'flag' && (flags & LOOKUP_SYMLINK_FOLLOW) !== 0)
  }
  const follow = (flags) => follows(op, flags)
  switch (op) {
    case 'path_open': {
      // node:wasi follows a final symlink whatever `dirflags` says (wasi-calls.json:
      // follow "always"): what it will open is the resolved path, so that is what is checked.
      const oflags = a.oflags >>> 0
      const noFollowFinal = (a.dirflags & LOOKUP_SYMLINK_FOLLOW) === 0
      return [{ path: a.path, mode: openMode(oflags, a.rightsBase, a.fdflags), follow: follow(a.dirflags), noFollowFinal, exclusive: (oflags & (OFLAGS.CREAT | OFLAGS.EXCL)) === (OFLAGS.CREAT | OFLAGS.EXCL) }]
    }
    case 'path_filestat_get':
      return [{ path: a.path, mode: 'read', follow: follow(a.flags) }]
    case 'path_filestat_set_times':
      return [{ path: a.path, mode: 'write', follow: follow(a.flags) }]
    case 'path_readlink':
      return [{ path: a.path, mode: 'read', follow: follow(0) }]
    case 'path_create_directory':
    case 'path_remove_directory':
    case 'path_unlink_file':
      return [{ path: a.path, mode: 'write', follow: follow(0) }]
    case 'path_rename':
      return [{ path: a.oldPath, mode: 'write', follow: follow(0) }, { path: a.newPath, mode: 'write', follow: follow(0) }]
    case 'path_link':
      // A hard link shares the inode: whoever can write the new name can write the
      // source, so the source needs write too.
      return [{ path: a.oldPath, mode: 'write', follow: follow(a.oldFlags) }, { path: a.newPath, mode: 'write', follow: false }]
    case 'path_symlink': {
      // Where the link is created is a write; what it points at must be inside the
      // grants too (read), resolved from the link's directory as the kernel will.
      return [{ path: a.newPath, mode: 'write', follow: follow(0) }, { path: linkMeaning(a.newPath, a.target), mode: 'read', follow: true }]
    }
    default:
      throw new TypeError(`not a gated WASI path operation: ${op}`)
  }
}

/**
 * `hostPath` with `.`, `..` and repeated separators removed lexically (a `..`
 * at the root stays there), a trailing separator kept: what uvwasi hands the
 * kernel for a guest path.
 */
function normalizeLexically(hostPath) {
  const out = []
  for (const seg of hostPath.split('/')) {
    if (seg === '' || seg === '.') continue
    if (seg === '..') out.pop()
    else out.push(seg)
  }
  const trailing = hostPath.length > 1 && hostPath.endsWith('/') && out.length > 0 ? '/' : ''
  return `/${out.join('/')}${trailing}`
}

/** The trace's bound: entries kept, and bytes of one entry's `what`. */
const MAX_TRACE = 10_000
const MAX_WHAT = 256

/** A trace/log text cut to `MAX_WHAT` UTF-8 bytes (at a character boundary), marked when cut. */
function clip(text) {
  const s = String(text)
  if (s.length <= MAX_WHAT / 4 || Buffer.byteLength(s) <= MAX_WHAT) return s
  let out = ''
  let bytes = 0
  for (const ch of s) {
    const n = Buffer.byteLength(ch)
    if (bytes + n > MAX_WHAT - 3) break
    out += ch
    bytes += n
  }
  return `${out}…`
}

/** A guest value as shown in the trace and the log: JSON, cut (a guest path may be megabytes). */
const show = (w) => clip(JSON.stringify(String(w).slice(0, MAX_WHAT * 2)))

/** The conservative fold a deny segment and a path segment are compared in (broader than any volume's). */
const foldSeg = (s) => s.normalize('NFKC').toUpperCase().toLowerCase().replace(/\p{Default_Ignorable_Code_Point}/gu, '')
const isWild = (seg) => /[*?[{\\]/.test(seg)
const segsOf = (p) => p.split('/').filter((x, i) => i > 0 || x !== '')

/** Whether deny glob `glob` may match a path below directory `dir` (or `dir` itself). */
function mayMatchBelow(glob, dir) {
  const g = segsOf(glob)
  const d = segsOf(dir)
  for (let i = 0; i < d.length; i++) {
    if (i >= g.length) return false
    if (isWild(g[i])) return true
    if (foldSeg(g[i]) !== foldSeg(d[i])) return false
  }
  return true
}

/** One concrete path below `dir` that `glob` is meant to match: its segments past `dir`, wildcards replaced by a plain member. */
function belowCandidate(glob, dir) {
  const rest = segsOf(glob).slice(segsOf(dir).length).map(plainSegment)
  return `${dir === '/' ? '' : dir}/${rest.length ? rest.join('/') : 'x'}`
}

function plainSegment(seg) {
  if (seg === '**') return 'x'
  let out = ''
  for (let i = 0; i < seg.length; i++) {
    const c = seg[i]
    if (c === '*') continue
    if (c === '?') out += 'x'
    else if (c === '\\' && i + 1 < seg.length) out += seg[++i]
    else if (c === '[') {
      let j = i + 1
      if (seg[j] === '!' || seg[j] === '^') j++
      out += seg[j] === undefined ? 'x' : seg[j]
      const end = seg.indexOf(']', j + 1)
      i = end < 0 ? seg.length : end
    } else if (c === '{') {
      let depth = 1
      let j = i + 1
      let first = ''
      let inFirst = true
      for (; j < seg.length && depth > 0; j++) {
        if (seg[j] === '{') depth++
        else if (seg[j] === '}') depth--
        else if (seg[j] === ',' && depth === 1) inFirst = false
        if (depth > 0 && inFirst) first += seg[j]
      }
      out += plainSegment(first)
      i = j - 1
    } else out += c
  }
  return out === '' ? 'x' : out
}

/**
 * What a symlink at `linkPath` with text `target` points at: an absolute
 * target as written, a relative one from the link's directory, read as the
 * Rust host reads it (`Path::parent`: trailing separators and `.` components
 * are not names), so both hosts check one path (path_symlink, and a renamed
 * link from its new place).
 */
function linkMeaning(linkPath, target) {
  if (target.startsWith('/')) return target
  let p = linkPath
  while (/.\/\.?$/.test(p)) p = p.replace(/\/\.?$/, '')
  return `${path.posix.dirname(p)}/${target}`
}

/** Entries a directory rename's walk for the links it moves visits at most (the Rust host's MAX_RENAME_WALK). */
const MAX_RENAME_WALK = 10_000
/** Directory levels below the renamed directory that walk descends at most (MAX_RENAME_DEPTH). */
const MAX_RENAME_DEPTH = 64

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true })

/** A name or link target as UTF-8 text, or null when its bytes are not UTF-8. */
function utf8(buf) {
  try {
    return STRICT_UTF8.decode(buf)
  } catch {
    return null
  }
}

/**
 * What a relative link target `target`, found in directory `rel` ('' or
 * 'x/y/') below `oldDir`, means once `oldDir` is renamed to `newDir`, as a
 * path of the tree as it is before the rename (the Rust host's
 * `moved_meaning`): leading `..` steps climb `rel`, then out of `newDir`;
 * where they stop inside the moved directory the rest names what it names
 * now below `oldDir`, where they climb out, the rest is read from that
 * ancestor of `newDir`. null (refuse) when a `..` follows a name, as a link
 * there would decide where it climbs from.
 */
function movedMeaning(oldDir, newDir, rel, target) {
  const inside = rel.split('/').filter((c) => c !== '')
  let outOfNew = 0
  const rest = []
  for (const step of target.split('/')) {
    if (step === '' || step === '.') continue
    if (step === '..') {
      if (rest.length) return null
      if (inside.pop() === undefined) outOfNew++
    } else rest.push(step)
  }
  let meant
  if (outOfNew === 0) meant = [oldDir.replace(/\/+$/, ''), ...inside].join('/')
  else {
    const comps = newDir.split('/').filter((c) => c !== '')
    meant = comps.slice(0, Math.max(0, comps.length - outOfNew)).map((c) => `/${c}`).join('')
  }
  for (const c of rest) meant += `/${c}`
  if (meant === '') meant = '/'
  if ((target.endsWith('/') || target.endsWith('/.') || target === '.') && !meant.endsWith('/')) meant += '/'
  return meant
}

/** Whether the kernel follows a final symlink of `hostPath` whatever a no-follow flag says: a trailing separator, or a final `.` / `..` component. */
function forcesFollow(hostPath) {
  return hostPath.length > 1 && (hostPath.endsWith('/') || /(^|\/)\.\.?$/.test(hostPath))
}

/** How many links uvwasi follows in a chain before ELOOP (UVWASI__MAX_SYMLINK_FOLLOWS). */
const MAX_SYMLINK_FOLLOWS = 32

/**
 * Where uvwasi's own following of a final symlink ends: while the path is a
 * symlink, its target joined to the link's directory (or itself, absolute)
 * and normalised lexically. Intermediate components are left to the kernel.
 */
function followLexically(hostPath) {
  let p = hostPath
  for (let i = 0; i < MAX_SYMLINK_FOLLOWS; i++) {
    let target
    try {
      target = fs.readlinkSync(p.replace(/(.)\/+$/, '$1'))
    } catch {
      return p
    }
    const dir = p.replace(/(.)\/+$/, '$1').replace(/\/[^/]*$/, '') || '/'
    p = normalizeLexically(target.startsWith('/') ? target : `${dir}/${target}`)
  }
  return p
}

/**
 * What a no-follow open of `hostPath` gets from open(2) with O_NOFOLLOW when its
 * final component is a symlink: ELOOP, EEXIST for O_CREAT|O_EXCL; SUCCESS when
 * it is not a symlink (or does not exist). The parent is resolved as written.
 */
function finalSymlinkErrno(hostPath, exclusive) {
  const raw = hostPath.replace(/(.)\/+$/, '$1')
  const cut = raw.lastIndexOf('/')
  const base = raw.slice(cut + 1)
  if (base === '' || base === '.' || base === '..') return ERRNO.SUCCESS
  let st
  try {
    st = fs.lstatSync(`${fs.realpathSync.native(cut <= 0 ? '/' : raw.slice(0, cut))}/${base}`)
  } catch {
    return ERRNO.SUCCESS
  }
  if (!st.isSymbolicLink()) return ERRNO.SUCCESS
  return exclusive ? ERRNO.EXIST : ERRNO.LOOP
}

/** Whether the symlink `checkedPath` (real parent + name, as checked) holds an absolute target. */
function absoluteLinkTarget(checkedPath) {
  try {
    return fs.readlinkSync(checkedPath).startsWith('/')
  } catch {
    return false
  }
}

module.exports = { WasiGate, movedMeaning, checksFor, openMode, normalizeLexically, followLexically, forcesFollow, ERRNO, WRITE_RIGHTS, WASI_CALLS }
