'use strict'
// Oracle for fs globs (SPEC §2): a naive reference matcher written from the
// SPEC, sharing no code with the checker, fuzzed against the public checkFs on
// posix and win32.
//
// The reference walks the glob as a tree: a `{a,b}` group is tried
// alternative by alternative with the rest of the glob as a continuation, so
// alternatives are never glued into text (`{*,x}*` stays inside one segment).
// `*` `?` and classes never match a separator; `**` (written as a whole
// segment) matches zero or more segments, one or more when it ends the glob.
// win32: `\` and `/` separate, names compare through the NTFS upper-case table
// read from data/ntfs-upcase.txt, a class matches a character when the
// character or one NTFS treats as equal lies in a range, and a segment shaped
// like an 8.3 short name (`NAME~1.EXT`) is matched only by a pattern segment
// with no wildcard in it. Simple recursive backtracking: inputs stay small,
// except the long paths across the 4096-byte limit, matched by short globs.

const fs = require('node:fs')
const path = require('node:path')
const { PermissionPolicy } = require('../../index.js')

const MAX_PATH_BYTES = 4096

// ---- NTFS upper case, from the raw table ------------------------------------
const UP = new Map()
const SAME_UPPER = new Map() // upper -> every code point that upper-cases to it
for (const line of fs.readFileSync(path.join(__dirname, '../../data/ntfs-upcase.txt'), 'utf8').split('\n')) {
  if (line === '' || line.startsWith('#')) continue
  const [from, to] = line.split(' ').map((h) => parseInt(h, 16))
  UP.set(from, to)
}
const up = (cp) => (cp <= 0xffff && UP.has(cp) ? UP.get(cp) : cp)
for (const [from, to] of UP) {
  if (!SAME_UPPER.has(to)) SAME_UPPER.set(to, [])
  SAME_UPPER.get(to).push(from)
}
/** Every code point NTFS treats as the same name character as `cp`. */
function ntfsEquals(cp) {
  const u = up(cp)
  const out = new Set([cp, ...(SAME_UPPER.get(u) || [])])
  if (up(u) === u) out.add(u)
  return [...out]
}

// ---- glob parsing (SPEC §2 grammar) -----------------------------------------
class GlobSyntax extends Error {}

/** Parses a glob body ("/a/{b,*}/**") into a tree. */
function parseGlob(body, escapes) {
  const cps = Array.from(body)
  let i = 0
  function seq(depth) {
    const out = []
    while (i < cps.length) {
      const c = cps[i]
      if (depth > 0 && (c === ',' || c === '}')) return out
      if (c === '}') throw new GlobSyntax('unmatched }')
      if (escapes && c === '\\') {
        if (i + 1 >= cps.length || cps[i + 1] === '/') throw new GlobSyntax('bad escape')
        out.push({ t: 'lit', cp: cps[i + 1].codePointAt(0) })
        i += 2
      } else if (c === '[') {
        out.push(parseClass())
      } else if (c === '{') {
        i++
        const alts = []
        for (;;) {
          const alt = seq(depth + 1)
          if (alt.length === 0) throw new GlobSyntax('empty alternative')
          alts.push(alt)
          if (cps[i] === ',') i++
          else if (cps[i] === '}') { i++; break } else throw new GlobSyntax('unclosed {')
        }
        out.push({ t: 'group', alts })
      } else if (c === '/') {
        out.push({ t: 'sep' }); i++
      } else if (c === '*' && cps[i + 1] === '*') {
        // Recursive only when written as a whole segment, outside braces.
        if (depth === 0 && cps[i - 1] === '/' && (i + 2 === cps.length || cps[i + 2] === '/')) {
          out.push({ t: 'rec' }); i += 2
        } else throw new GlobSyntax('** inside a name or a group')
      } else if (c === '*') {
        out.push({ t: 'star' }); i++
      } else if (c === '?') {
        out.push({ t: 'any' }); i++
      } else {
        out.push({ t: 'lit', cp: c.codePointAt(0) }); i++
      }
    }
    if (depth > 0) throw new GlobSyntax('unclosed {')
    return out
  }
  function parseClass() {
    i++
    let neg = false
    if (cps[i] === '!' || cps[i] === '^') { neg = true; i++ }
    const one = () => {
      if (i >= cps.length) throw new GlobSyntax('unclosed [')
      if (escapes && cps[i] === '\\') {
        if (i + 1 >= cps.length) throw new GlobSyntax('unclosed [')
        i += 2
        return cps[i - 1].codePointAt(0)
      }
      return cps[i++].codePointAt(0)
    }
    const ranges = []
    let first = true
    for (;;) {
      if (i >= cps.length) throw new GlobSyntax('unclosed [')
      if (cps[i] === ']' && !first) { i++; break }
      first = false
      const lo = one()
      let hi = lo
      if (cps[i] === '-' && i + 1 < cps.length && cps[i + 1] !== ']') {
        i++
        hi = one()
        if (hi < lo) throw new GlobSyntax('range out of order')
      }
      if (lo <= 0x2f && 0x2f <= hi) throw new GlobSyntax('separator in a class')
      ranges.push([lo, hi])
    }
    return { t: 'class', neg, ranges }
  }
  return seq(0)
}

// ---- path normalisation (SPEC §2 rules 1-2) ---------------------------------
const DEVICES = new Set(['CON', 'PRN', 'AUX', 'NUL', 'CONIN$', 'CONOUT$'])
for (const d of ['COM', 'LPT']) for (const n of '0123456789¹²³') DEVICES.add(d + n)
function badWin32Segment(s) {
  if (/[<>:"|?*\u0000-\u001f]/.test(s) || s.endsWith('.') || s.endsWith(' ')) return true
  return DEVICES.has(s.split('.')[0].replace(/ +$/, '').toUpperCase())
}

/** `{ root, segs }` of a path the reference allows to be matched, or null (denied before matching). */
function normalizePath(raw, platform) {
  if (raw === '' || raw.includes('\0') || !raw.isWellFormed() || Buffer.byteLength(raw, 'utf8') > MAX_PATH_BYTES) return null
  let root, rest
  if (platform === 'posix') {
    if (!raw.startsWith('/')) return null
    root = ''
    rest = raw.split('/')
  } else {
    if (!/^[A-Za-z]:[\\/]/.test(raw)) return null
    root = raw[0].toUpperCase() + ':'
    rest = raw.slice(2).split(/[\\/]/)
  }
  const segs = []
  for (const s of rest) {
    if (s === '' || s === '.') continue
    if (s === '..') {
      if (segs.length === 0) return null
      segs.pop()
    } else segs.push(s)
  }
  if (platform === 'win32' && segs.some(badWin32Segment)) return null
  return { root, segs }
}

/** An 8.3-shaped name: before the first dot at most 8 characters with `~` and a digit, after it at most 3. */
function shortShaped(seg) {
  const dot = seg.indexOf('.')
  const base = dot < 0 ? seg : seg.slice(0, dot)
  const ext = dot < 0 ? '' : seg.slice(dot + 1)
  return Array.from(base).length <= 8 && Array.from(ext).length <= 3 && /~[0-9]/.test(base)
}

// ---- matching ---------------------------------------------------------------
function globMatches(glob, platform, norm) {
  const fold = platform === 'win32'
  let g = fold ? glob.replace(/\\/g, '/') : glob
  const slash = g.indexOf('/')
  const groot = g.slice(0, slash)
  if ((fold ? groot.toUpperCase() : groot) !== norm.root) return false
  g = g.slice(slash).replace(/\/+/g, '/')
  if (g.length > 1 && g.endsWith('/')) g = g.slice(0, -1)
  const tree = parseGlob(g, !fold)
  // The root has no segments: only a glob that is the root itself covers it.
  if (norm.segs.length === 0) return g === '/'
  const P = Array.from('/' + norm.segs.join('/'))
  const cp = P.map((c) => c.codePointAt(0))
  const n = P.length
  const eq = (a, b) => (fold ? up(a) === up(b) : a === b)
  const inClass = (node, c) => {
    const cands = fold ? ntfsEquals(c) : [c]
    const hit = node.ranges.some(([lo, hi]) => cands.some((d) => lo <= d && d <= hi))
    return hit !== node.neg
  }
  const segText = (a, b) => P.slice(a, b).join('')
  // A segment [a, b) may be matched by wildcards only when it is not 8.3-shaped (win32).
  const wildOk = (a, b) => !fold || !shortShaped(segText(a, b))
  const restWildOk = (s) => {
    let a = s
    for (let e = s; e <= n; e++) {
      if (e === n || P[e] === '/') {
        if (!wildOk(a, e)) return false
        a = e + 1
      }
    }
    return true
  }
  function m(seq, i, s, wild, segStart, cont) {
    if (i === seq.length) return cont(s, wild, segStart)
    const node = seq[i]
    const next = (s2, w2, ss2) => m(seq, i + 1, s2, w2, ss2, cont)
    switch (node.t) {
      case 'lit':
        return s < n && P[s] !== '/' && eq(cp[s], node.cp) && next(s + 1, wild, segStart)
      case 'any':
        return s < n && P[s] !== '/' && next(s + 1, true, segStart)
      case 'class':
        return s < n && P[s] !== '/' && inClass(node, cp[s]) && next(s + 1, true, segStart)
      case 'star':
        for (let e = s; ; e++) {
          if (next(e, true, segStart)) return true
          if (e >= n || P[e] === '/') return false
        }
      case 'sep':
        if (s >= n || P[s] !== '/') return false
        if (s > 0 && wild && !wildOk(segStart, s)) return false
        return next(s + 1, false, s + 1)
      case 'rec': {
        if (i === seq.length - 1) return s < n && restWildOk(s) && cont(n, false, n)
        // Zero segments: skip `**` and its separator.
        if (m(seq, i + 2, s, false, s, cont)) return true
        for (let e = s + 1; e < n; e++) {
          if (P[e] === '/' && wildSpanOk(s, e) && next(e, false, segStart)) return true
        }
        return false
      }
      case 'group':
        return node.alts.some((alt) => m(alt, 0, s, wild, segStart, next))
    }
    throw new Error('bad node')
  }
  function wildSpanOk(a, b) {
    let x = a
    for (let e = a; e <= b; e++) {
      if (e === b || P[e] === '/') {
        if (!wildOk(x, e)) return false
        x = e + 1
      }
    }
    return true
  }
  return m(tree, 0, 0, false, 0, (s, wild, segStart) => s === n && (!wild || wildOk(segStart, s)))
}

/** Variants a parsed glob expands to. */
function variantCount(seq) {
  let n = 1
  for (const node of seq) if (node.t === 'group') n *= node.alts.reduce((sum, alt) => sum + variantCount(alt), 0)
  return n
}

/** Whether the reference reads a glob as valid (SPEC §2 grammar, §8 per-glob limits). */
function referenceAccepts(glob, platform) {
  const fold = platform === 'win32'
  let g = fold ? glob.replace(/\\/g, '/') : glob
  g = g.slice(g.indexOf('/')).replace(/\/+/g, '/')
  if (g.length > 1 && g.endsWith('/')) g = g.slice(0, -1)
  if (g.split('/').some((seg) => seg === '.' || seg === '..')) return false
  let tree
  try {
    tree = parseGlob(g, !fold)
  } catch (e) {
    if (e instanceof GlobSyntax) return false
    throw e
  }
  const groups = (g.match(/\{/g) || []).length
  const commas = (g.match(/,/g) || []).length
  if (groups > 8 || groups + commas > 64 || variantCount(tree) > 256) return false
  // Every variant's segments: none empty, none '.' or '..' (checked on the tree's literal text).
  return !/(^|\/)\.{1,2}(\/|$)/.test(g)
}

// ---- generators -------------------------------------------------------------
function rng(seed) {
  let x = seed >>> 0 || 1
  return (k) => {
    x ^= x << 13; x >>>= 0
    x ^= x >>> 17
    x ^= x << 5; x >>>= 0
    return x % k
  }
}

const LITS = ['a', 'b', 'x', 'straße', 'ﬁ', 'İ', 'ŉ', 'é', 'ж', 'Ж', '€', '\u212A', 'k', 'K', 'ß', '\u1E9E', 'å', 'Å', '\u212B', '\u03C9', '\u2126', '𐐨', '𐐀', '😀', '~1', '.txt', 'SECRET', 'ab', '\u10A0', '\u10D0', '\u2D00', 's\u200Cx']
const WILD = ['*', '?', '[a-c]', '[!a]', '[\u0100-\u212A]', '[\u2126-\u2400]', '[é-ж]', '[Ж]', '[!é]', '[k]', '[ß]', '[\u10D0]', '[\u10A0-\u10A5]', '[!\u2D00]']
const BRACES = ['{a,*}', '{*,x}', '{*/x,y}', '{é,{b,*}}', '{*}', '{k,K}', '{ab,a*b}', '{~1,*~1}', '{a/b,*}']
const POSIX_ONLY = ['\\*', '\\?', '\\{', '\\[']
const PATH_SEGS = ['a', 'b', 'ab', 'ba', 'x', 'y', 'é', 'ж', 'Ж', 'k', 'K', '\u212A', 'ß', '\u1E9E', 'å', 'Å', '\u212B', '\u03C9', '\u03A9', '\u2126', '𐐨', '𐐀', '😀', '*a', 'SECRET~1.TXT', 'secret~1.txt', 'AB~1', 'ab.txt', 'x.txt', '..', '.', '', 'ax', 'ay', 'xab', 'CON', 'a~b', '\u10A0', '\u10D0', '\u2D00', '\u1C90', 'x\u200Db', '\uFEFFa']

function genGlob(r, platform) {
  const segs = []
  const nSegs = 1 + r(4)
  for (let s = 0; s < nSegs; s++) {
    if (r(6) === 0) { segs.push('**'); continue }
    let seg = ''
    const parts = 1 + r(3)
    for (let p = 0; p < parts; p++) {
      const k = r(10)
      if (k < 4) seg += LITS[r(LITS.length)]
      else if (k < 7) seg += WILD[r(WILD.length)]
      else if (k < 9) seg += BRACES[r(BRACES.length)]
      else seg += platform === 'posix' ? POSIX_ONLY[r(POSIX_ONLY.length)] : '*'
    }
    segs.push(seg)
  }
  const sep = () => (platform === 'win32' && r(2) ? '\\' : '/')
  const head = platform === 'win32' ? (r(2) ? 'C:' : 'c:') : ''
  return head + segs.map((s) => sep() + s).join('')
}

function genPath(r, platform) {
  const segs = []
  const nSegs = r(6)
  for (let s = 0; s < nSegs; s++) {
    let seg = PATH_SEGS[r(PATH_SEGS.length)]
    if (r(3) === 0) seg += PATH_SEGS[r(PATH_SEGS.length)]
    segs.push(seg)
  }
  const sep = () => (platform === 'win32' && r(2) ? '\\' : '/')
  const head = platform === 'win32' ? (r(2) ? 'C:' : 'c:') : ''
  return head + (segs.length ? segs.map((s) => sep() + s).join('') : sep())
}

/** A path whose UTF-8 length is the 4096-byte limit plus `delta`, built from 1- to 4-byte characters. */
function genLongPath(r, platform, delta) {
  const head = platform === 'win32' ? 'C:\\a\\' : '/a/'
  const chars = ['a', 'é', '€', '😀']
  let p = head
  const target = MAX_PATH_BYTES + delta
  while (Buffer.byteLength(p) < target) {
    const room = target - Buffer.byteLength(p)
    const fit = chars.filter((c) => Buffer.byteLength(c) <= room)
    p += r(40) === 0 && room > 2 ? (platform === 'win32' ? '\\' : '/') + 'b' : fit[r(fit.length)]
  }
  return p
}


// ---- deny.fs (SPEC §10) -----------------------------------------------------
// A broad grant (with literal 8.3 names granted too on win32) and one
// generated deny glob. Property: whatever checkFs allows, the reference
// deny match rejects, and on win32 so does every reading of each 8.3-shaped
// segment as a long name the deny glob spells (an 8.3 name can alias any
// long name in its directory). A deny that fails to deny is a wrong allow.

/** Long names an 8.3-shaped segment may stand for: the deny glob's literal segments, and one more. */
function aliasNames(glob) {
  return [...new Set(glob.split(/[\\/]/).filter((s) => s !== '' && !/[*?[\]{}\\]/.test(s) && !/^[A-Za-z]:$/.test(s))), 'zz']
}

/**
 * A deny is never narrower than it reads (SPEC §10): a glob ending in `**`
 * also denies the directory that `**` hangs from, i.e. whatever the glob
 * without its trailing `/**` matches (repeatedly: `/a/**` of `/a/**` too).
 */
function denyCovers(deny, platform, norm) {
  if (globMatches(deny, platform, norm)) return true
  const trail = platform === 'win32' ? /[\\/]+\*\*[\\/]*$/ : /\/+\*\*\/*$/
  let g = deny
  while (trail.test(g)) {
    g = g.replace(trail, '')
    const root = platform === 'win32' ? /^[A-Za-z]:$/.test(g) : g === ''
    if (root ? norm.segs.length === 0 && norm.root === (platform === 'win32' ? g.toUpperCase() : '') : globMatches(g, platform, norm)) return true
  }
  return false
}

// posix deny folding (SPEC §10 on a case- or normalisation-insensitive
// volume): written from JS's own Unicode tables, not the checker's. Two
// spellings name one file there when their NFD forms agree after JS's full
// upper then lower case mapping.
const jsFold = (s) => s.normalize('NFD').toUpperCase().toLowerCase().normalize('NFD')

// HFS+ (Apple TN1150): names compare after each UTF-16 unit goes through
// Apple's lower-case table, the units it maps to zero skipped. The table is
// read as data from the file scripts/gen-hfsplus-fold.js derived from Apple's
// published gLowerCaseTable; the comparison below is written from TN1150,
// not from the checker. The ignorables are the SPEC's list (§16), checked
// against the table.
const HFS_TABLE = fs.readFileSync(path.join(__dirname, '../../src/hfsplus_table.rs'), 'utf8')
const hfsChars = (name) => {
  const m = new RegExp(`const ${name}: \\[[^\\]]+\\] = \\[([\\s\\S]*?)\\];`).exec(HFS_TABLE)
  return [...m[1].matchAll(/'\\u\{([0-9A-F]+)\}'/g)].map((x) => parseInt(x[1], 16))
}
const HFS_IGNORABLE = [...Array(0x10000).keys()].filter((u) => (u >= 0x200c && u <= 0x200f) || (u >= 0x202a && u <= 0x202e) || (u >= 0x206a && u <= 0x206f) || u === 0xfeff)
if (hfsChars('HFS_IGNORABLE').join() !== HFS_IGNORABLE.join()) throw new Error('src/hfsplus_table.rs ignorables differ from the SPEC list')
const HFS_LOWER = new Map()
{
  const flat = hfsChars('HFS_LOWER')
  if (flat.length < 200 || flat.length % 2) throw new Error('src/hfsplus_table.rs: no HFS_LOWER pairs')
  for (let i = 0; i < flat.length; i += 2) HFS_LOWER.set(flat[i], flat[i + 1])
}
const HFS_IGN_RE = new RegExp(`[${HFS_IGNORABLE.map((u) => `\\u${u.toString(16).padStart(4, '0')}`).join('')}]`, 'g')
/** The HFS+ comparison key of a name (TN1150 FastUnicodeCompare on its decomposed form). */
function hfsKey(s) {
  let out = ''
  for (const unit of s.normalize('NFD')) {
    for (let i = 0; i < unit.length; i++) {
      const u = unit.charCodeAt(i)
      if (HFS_IGNORABLE.includes(u)) continue
      out += String.fromCharCode(HFS_LOWER.get(u) ?? u)
    }
  }
  return out
}
/** Every character HFS+ compares equal to `c` (its lower-case table partners). */
function hfsPartners(c) {
  if (c.length !== 1) return []
  const key = HFS_LOWER.get(c.charCodeAt(0)) ?? c.charCodeAt(0)
  const out = [String.fromCharCode(key)]
  for (const [u, l] of HFS_LOWER) if (l === key) out.push(String.fromCharCode(u))
  return out
}
/** Whether two posix names are one file on some folding volume: JS's case and normalisation fold, or HFS+. */
const sameFile = (a, b) => jsFold(a.replace(HFS_IGN_RE, '')) === jsFold(b.replace(HFS_IGN_RE, '')) || hfsKey(a) === hfsKey(b)
/** Single characters a volume may treat as `c`: its cases and canonical partners. */
const PARTNERS = { k: ['\u212A'], K: ['\u212A'], s: ['\u017F'], S: ['\u017F'], å: ['\u212B'], Å: ['\u212B'], ω: ['\u2126'], Ω: ['\u2126'], ß: ['\u1E9E'], '\u1E9E': ['ß'], e: ['E'] }
function spellings(c) {
  const out = [c, c.toUpperCase(), c.toLowerCase(), ...(PARTNERS[c] || []), ...hfsPartners(c)]
  return [...new Set(out)].filter((d) => Array.from(d).length === 1 && sameFile(d, c))
}
/**
 * A spelling of posix path `p` that names the same file on a folding volume:
 * each character swapped for one of its single-character spellings (so `?`
 * and classes still see one character each), then maybe in NFD or NFC; with
 * `whole`, the whole string upper- or lower-cased as JS does (`ß` → `SS`).
 */
function respell(r, p, whole) {
  if (whole) return r(2) ? p.toUpperCase() : p.toLowerCase()
  let v = ''
  for (const c of p.normalize('NFC')) {
    const alts = spellings(c)
    v += alts[r(alts.length)]
  }
  const k = r(3)
  v = k === 0 ? v.normalize('NFD') : k === 1 ? v.normalize('NFC') : v
  // HFS+ ignorables inserted anywhere in a name (inside names a `*`, `?` or
  // class matched too). A name that is only ignorables, or `.` or `..` with
  // ignorables, is not a spelling of the empty name or a dot segment (the
  // kernel resolves `.` and `..` before the volume compares names), so none
  // is made.
  const chars = Array.from(v)
  for (let n = r(4); n > 0; n--) chars.splice(r(chars.length + 1), 0, String.fromCharCode(HFS_IGNORABLE[r(HFS_IGNORABLE.length)]))
  const w = chars.join('')
  const special = (seg) => seg === '' || seg === '.' || seg === '..'
  return w.split('/').some((seg) => !special(seg) && special(seg.replace(HFS_IGN_RE, ''))) ? v : w
}
/** Whether the deny glob has no wildcard, class or group (its text is its one match). */
const literalGlob = (g) => !/[*?[\]{}\\]/.test(g)

function denyRound(r, platform, stats) {
  const deny = genGlob(r, platform)
  const root = platform === 'win32' ? 'C:' : ''
  const grants = [{ path: `${root}/**`, mode: 'readwrite' }]
  if (platform === 'win32') for (const n of ['SECRET~1.TXT', 'AB~1', '*/AB~1', '*/SECRET~1.TXT']) grants.push({ path: `${root}/${n}/**`, mode: 'readwrite' }, { path: `${root}/${n}`, mode: 'readwrite' })
  let policy
  try {
    policy = PermissionPolicy.fromManifest({ fs: grants, deny: { fs: [deny] } }, { plugin: 'oracle-deny', platform })
  } catch (e) {
    if (e.code !== 'INVALID_MANIFEST') stats.mismatches.push({ platform, deny, error: String(e) })
    return
  }
  // win32: a deny that spells an 8.3 short name cannot deny the long name it
  // stands for (the volume's choice), so the checker must refuse it.
  if (platform === 'win32' && deny.split(/[\\/]/).some((s) => !/[*?[\]{}]/.test(s) && shortShaped(s))) {
    stats.wrongAllows.push({ platform, deny, path: '', bytes: 0, note: 'a deny glob naming an 8.3 short name was accepted: its long name is not denied' })
    return
  }
  const names = aliasNames(deny)
  for (let k = 0; k < 25; k++) {
    const p = genPath(r, platform)
    const got = policy.checkFs(p, r(2) ? 'read' : 'write')
    stats.cases++
    if (got.reason === 'explicitly_denied') stats.denied++
    if (!got.allowed) continue
    const norm = normalizePath(p, platform)
    let hit
    try {
      hit = norm !== null && denyCovers(deny, platform, norm)
      if (!hit && norm !== null && platform === 'win32') {
        norm.segs.forEach((seg, i) => {
          if (!hit && shortShaped(seg)) hit = names.some((n) => globMatches(deny, platform, { root: norm.root, segs: norm.segs.map((x, j) => (j === i ? n : x)) }))
        })
      }
    } catch (e) {
      if (!(e instanceof GlobSyntax)) throw e
      stats.mismatches.push({ platform, deny, path: p, note: 'checker accepts a deny glob the reference rejects' })
      return
    }
    if (hit) stats.wrongAllows.push({ platform, deny, path: p, bytes: Buffer.byteLength(p), got, note: 'deny failed to deny' })
  }
  if (platform === 'posix') foldRound(r, policy, deny, stats)
}

// ---- many grants and denies in one policy ------------------------------------
// Up to 150 grants and 40 deny globs over a few literal names, in random
// order (deeper literal prefixes before or after their ancestors, past the
// 64 prefixes the index scans on insert), and paths drawn along their
// literal prefixes, sometimes past 127 segments. The checker's walk over a
// path's ancestors may stop where no indexed prefix lies below; it must
// never stop before a grant or deny that matches. Reference: allowed iff no
// deny covers the path and a grant of the mode matches it.
const MANY_NAMES = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']
const MANY_TAILS = ['', '/**', '/*.x', '/*', '/**/x.x', '/?', '/{a,b}/**', '/**/**', '/[ab]*']
const MANY_MODES = ['read', 'write', 'readwrite']
function manyRound(r, platform, stats) {
  const root = platform === 'win32' ? 'C:' : ''
  const lits = []
  const glob = () => {
    const lit = Array.from({ length: 1 + r(5) }, () => MANY_NAMES[r(MANY_NAMES.length)])
    lits.push(lit)
    return `${root}/${lit.join('/')}${MANY_TAILS[r(MANY_TAILS.length)]}`
  }
  const grants = Array.from({ length: 1 + r(150) }, () => ({ path: glob(), mode: MANY_MODES[r(3)] }))
  const deny = Array.from({ length: r(40) }, glob)
  let policy
  try {
    policy = PermissionPolicy.fromManifest({ fs: grants, deny: { fs: deny } }, { plugin: 'oracle-many', platform })
  } catch (e) {
    stats.mismatches.push({ platform, grants: grants.length, deny: deny.length, error: String(e) })
    return
  }
  for (let k = 0; k < 20; k++) {
    const lit = lits[r(lits.length)].slice(0, r(6))
    const extra = Array.from({ length: 1 + r(3) }, () => ['a', 'b', 'c', 'x.x', 'zz'][r(5)])
    if (r(10) === 0) for (let d = 0; d < 130; d++) extra.unshift(MANY_NAMES[r(2)])
    let p = `${root}/${[...lit, ...extra].join('/')}`
    if (platform === 'win32' && r(2)) p = p.toUpperCase().replaceAll('/', '\\')
    const norm = normalizePath(p, platform)
    for (const mode of ['read', 'write']) {
      const got = policy.checkFs(p, mode)
      stats.cases++
      const want = !deny.some((d) => denyCovers(d, platform, norm)) && grants.some((g) => g.mode.includes(mode) && globMatches(g.path, platform, norm))
      if (got.allowed && !want) stats.wrongAllows.push({ platform, path: p, bytes: Buffer.byteLength(p), mode, grants, deny, note: 'many globs: allowed what the reference denies' })
      else if (!got.allowed && want) stats.mismatches.push({ platform, path: p, mode, got: got.reason, note: 'many globs: denied what the reference allows' })
    }
  }
}

/**
 * The two documented limits of the posix deny fold (docs/rules.md), kept
 * apart from wrong allows and counted: a covered spelling in which a
 * wildcard of the deny stood on an HFS+ ignorable (the checker compares
 * names with every ignorable dropped, so a `?` or class that matched one
 * matches nothing there), or on a character Unicode never composes
 * (`क़` U+0958: its NFC is two characters, so no normalised spelling of
 * the path holds the one character the class matched).
 */
function knownFoldLimit(deny, covered) {
  const wild = /[*?[]/.test(deny)
  const ignorable = new RegExp(HFS_IGN_RE.source).test(covered)
  const uncomposed = Array.from(covered).some((c) => Array.from(c.normalize('NFC')).length > 1)
  return wild && (ignorable || uncomposed)
}

/** Characters a `?`, a `*` or a class may stand on in an instantiated path: multi-character folds among them. */
const INSTANCE_CHARS = ['a', 'b', 'c', 'B', 'x', 'é', 'k', 'K', '\u212A', 'ß', '\u1E9E', 'ſ', 'ﬁ', 'İ', 'ŉ', 'և', 'Σ', 'ς', 'å', '\u212B', 'ж', '€']

/**
 * posix: a path the deny glob `g` matches as written, built from its tokens
 * (a literal as itself, `?` and a class on one character, `*` on a few, `**`
 * on up to two names, one alternative of a group); `null` when the glob does
 * not parse or no character was found for a class. The reference decides
 * afterwards whether it is covered.
 */
function instantiate(r, g) {
  let tree
  try {
    tree = parseGlob(g, true)
  } catch (e) {
    if (e instanceof GlobSyntax) return null
    throw e
  }
  const name = () => Array.from({ length: 1 + r(3) }, () => INSTANCE_CHARS[r(INSTANCE_CHARS.length)]).join('')
  const inClass = (node, c) => node.ranges.some(([lo, hi]) => lo <= c && c <= hi) !== node.neg
  const walk = (tokens) => {
    let out = ''
    for (const t of tokens) {
      if (t.t === 'lit') out += String.fromCodePoint(t.cp)
      else if (t.t === 'sep') out += '/'
      else if (t.t === 'any') out += INSTANCE_CHARS[r(INSTANCE_CHARS.length)]
      else if (t.t === 'star') out += r(3) === 0 ? '' : name()
      else if (t.t === 'rec') out += Array.from({ length: 1 + r(2) }, name).join('/')
      else if (t.t === 'group') {
        const alt = walk(t.alts[r(t.alts.length)])
        if (alt === null) return null
        out += alt
      } else if (t.t === 'class') {
        const cands = [...INSTANCE_CHARS.map((c) => c.codePointAt(0)), ...t.ranges.flat(), ...t.ranges.map(([lo, hi]) => lo + r(hi - lo + 1))]
        const hits = cands.filter((c) => c > 0x2f && inClass(t, c))
        if (hits.length === 0) return null
        out += String.fromCodePoint(hits[r(hits.length)])
      }
    }
    return out
  }
  return walk(tree)
}

/**
 * posix: paths the deny covers as written (the reference), respelled in
 * case and normalisation; every respelling the JS fold says names the same
 * file must be denied too. Half the paths are drawn from the deny glob
 * itself (so a literal `ß` and a `?` after it are covered together), half
 * at random.
 */
function foldRound(r, policy, deny, stats) {
  for (let k = 0; k < 25; k++) {
    const p = (k & 1 ? instantiate(r, deny) : null) ?? genPath(r, 'posix')
    const norm = normalizePath(p, 'posix')
    let covered
    try {
      covered = norm !== null && denyCovers(deny, 'posix', norm)
    } catch (e) {
      if (!(e instanceof GlobSyntax)) throw e
      return
    }
    if (!covered) continue
    for (let j = 0; j < 4; j++) {
      const v = respell(r, p, j === 3 && literalGlob(deny))
      if (!sameFile(v, p)) continue
      const got = policy.checkFs(v, r(2) ? 'read' : 'write')
      stats.cases++
      stats.folded++
      if (got.reason === 'explicitly_denied') stats.denied++
      else if (got.allowed && knownFoldLimit(deny, p)) stats.knownLimits++
      else if (got.allowed) stats.wrongAllows.push({ platform: 'posix', deny, path: v, of: p, bytes: Buffer.byteLength(v), got, note: 'deny failed to deny a case or normalisation spelling' })
    }
  }
}

async function run({ seconds = 3, seed = 0x5eed, log = () => {} } = {}) {
  const r = rng(seed)
  const deadline = Date.now() + seconds * 1000
  const wrongAllows = []
  const mismatches = []
  const validity = [] // globs the checker rejects that the reference reads as valid (reported, not failed)
  let cases = 0
  let globs = 0
  let rejected = 0
  let longPaths = 0
  const counts = { posix: 0, win32: 0 }
  const denyStats = { cases: 0, denied: 0, folded: 0, knownLimits: 0, wrongAllows, mismatches }
  while (Date.now() < deadline) {
    for (const platform of ['posix', 'win32']) denyRound(r, platform, denyStats)
    manyRound(r, r(2) ? 'posix' : 'win32', denyStats)
    for (const platform of ['posix', 'win32']) {
      const glob = genGlob(r, platform)
      let policy
      try {
        policy = PermissionPolicy.fromManifest({ fs: [{ path: glob, mode: 'readwrite' }] }, { plugin: 'oracle', platform })
      } catch (e) {
        rejected++
        if (e.code !== 'INVALID_MANIFEST') mismatches.push({ platform, glob, error: String(e) })
        else if (referenceAccepts(glob, platform)) validity.push({ platform, glob, message: e.message })
        continue
      }
      globs++
      const paths = []
      for (let k = 0; k < 25; k++) paths.push(genPath(r, platform))
      if (r(8) === 0) {
        for (const delta of [-2, -1, 0, 1, 2]) paths.push(genLongPath(r, platform, delta))
        paths.push(genLongPath(r, platform, 0).slice(0, -1) + '*')
      }
      for (const p of paths) {
        const got = policy.checkFs(p, r(2) ? 'read' : 'write')
        const norm = normalizePath(p, platform)
        let want
        try {
          want = norm !== null && globMatches(glob, platform, norm)
        } catch (e) {
          if (!(e instanceof GlobSyntax)) throw e
          mismatches.push({ platform, glob, path: p, note: 'checker accepts a glob the reference rejects' })
          break
        }
        cases++
        counts[platform]++
        if (Buffer.byteLength(p) > MAX_PATH_BYTES - 8) longPaths++
        if (got.allowed && !want) wrongAllows.push({ platform, glob, path: p, bytes: Buffer.byteLength(p), got })
        else if (!got.allowed && want) mismatches.push({ platform, glob, path: p, bytes: Buffer.byteLength(p), got })
      }
    }
    await new Promise(setImmediate)
  }
  log(`glob oracle: ${cases} checks (${counts.posix} posix, ${counts.win32} win32, ${longPaths} near 4096 bytes) on ${globs} globs, ${rejected} globs rejected as manifests (${validity.length} of them valid to the reference), ${wrongAllows.length} wrong allows, ${mismatches.length} other mismatches`)
  log(`glob oracle (deny.fs): ${denyStats.cases} checks (${denyStats.folded} case/normalisation respellings of covered posix paths), ${denyStats.denied} explicitly denied, ${denyStats.knownLimits} allowed under the fold's two documented limits (a wildcard on an HFS+ ignorable or on a character Unicode never composes)`)
  if (validity.length) log(`glob oracle: rejected but valid to the reference, e.g. ${JSON.stringify(validity.slice(0, 3))}`)
  return { cases: cases + denyStats.cases, wrongAllows, mismatches, validity }
}

module.exports = { run, globMatches, normalizePath, parseGlob, shortShaped, up }
