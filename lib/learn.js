'use strict'
// `learn`: the minimal manifest that allows exactly the calls recorded in
// audit mode (allow and record). Exact grants only: no wildcard is invented.
// What cannot become a valid grant (a relative path, an unknown capability,
// a value the manifest rejects) is reported in `unlearned`, never thrown.
// Every learned grant is verified: it holds no wildcard (a literal `*` host
// or topic would become one), and the checker under the learned manifest
// allows each recorded call it came from; anything else is unlearned.

const { types } = require('node:util')
const { Capability, CAPABILITY_FIELDS, PLATFORMS } = require('./native.js')

/** Escapes glob metacharacters so a recorded path is granted literally. */
function literalGlob(path, platform) {
  let out = ''
  for (const ch of path) {
    if ('*?[]{}'.includes(ch)) out += `[${ch}]`
    else if (ch === '\\' && platform === 'posix') out += '\\\\'
    else out += ch
  }
  return out
}

/**
 * Whether a learned fs glob has a metacharacter that is not escaped: an
 * independent scan of what `literalGlob` must produce (`[c]` for one
 * metacharacter, `\\\\` for a posix backslash).
 */
function hasUnescapedWildcard(glob, platform) {
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i]
    if (ch === '\\' && platform === 'posix') {
      i++
      continue
    }
    if (ch === '[' && glob[i + 2] === ']' && '*?[]{}'.includes(glob[i + 1])) {
      i += 2
      continue
    }
    if ('*?[]{}'.includes(ch)) return true
  }
  return false
}

/** An own data property of a plain (non-Proxy) object; `undefined` for a getter or anything else. */
function own(obj, key) {
  if (obj === null || typeof obj !== 'object' || types.isProxy(obj)) return undefined
  const d = Object.getOwnPropertyDescriptor(obj, key)
  return d !== undefined && Object.hasOwn(d, 'value') ? d.value : undefined
}

const DEFAULT_PORTS = { 'http:': '80', 'https:': '443', 'ws:': '80', 'wss:': '443', 'ftp:': '21' }

/** Absolute for the platform: `/x` on posix; `C:\x` or `C:/x` on win32. */
const isAbsolute = (p, platform) => (platform === 'win32' ? /^[A-Za-z]:[\\/]/.test(p) : p.startsWith('/'))

/**
 * calls: `[{ capability, payload }]`. Returns `{ manifest, unlearned }`:
 * a manifest that `PermissionPolicy.fromManifest` accepts, and
 * `[{ capability, why, call }]` for recorded calls no valid entry expresses
 * (`call` is the index in `calls`).
 */
function learnManifest(calls, options) {
  // Read without running a getter or Proxy trap: a throwing trap is a TypeError, never the caller's error.
  if (types.isProxy(calls) || !Array.isArray(calls)) throw new TypeError('calls must be a plain array of { capability, payload }')
  if (options !== undefined && (options === null || typeof options !== 'object' || types.isProxy(options))) throw new TypeError('options must be a plain object')
  const platformOpt = options === undefined ? undefined : Object.getOwnPropertyDescriptor(options, 'platform')
  if (platformOpt !== undefined && !Object.hasOwn(platformOpt, 'value')) throw new TypeError('options.platform must be a data property')
  const platform = platformOpt === undefined || platformOpt.value === undefined ? (process.platform === 'win32' ? 'win32' : 'posix') : platformOpt.value
  if (!PLATFORMS.includes(platform)) throw new TypeError("options.platform must be 'posix' or 'win32'")
  // What each call asked for, so every learned grant is checked against it.
  const asked = []
  // Each learned entry remembers the calls it came from, so a rejected entry reports them.
  const fsModes = new Map() // path -> { modes, calls }
  const bound = new Map() // secret name -> { hosts: Set of origins, calls } (secrets.use, SPEC §13)
  const lists = { fetch: new Map(), secrets: new Map(), publishes: new Map(), subscribes: new Map(), databases: new Map() }
  const add = (list, key, i) => {
    const at = list.get(key)
    if (at) at.push(i)
    else list.set(key, [i])
  }
  const unlearned = []
  const miss = (i, capability, why) => unlearned.push({ capability: String(capability), why, call: i })
  const length = calls.length
  for (let i = 0; i < length; i++) learnOne(own(calls, i), i)
  function learnOne(call, i) {
    if (call === null || typeof call !== 'object' || types.isProxy(call)) return miss(i, Capability.UNKNOWN, 'not a { capability, payload } object (a plain object, not a Proxy)')
    const capability = own(call, 'capability')
    const payload = own(call, 'payload')
    if (types.isProxy(payload)) return miss(i, capability, 'the payload is a Proxy: it could show one value here and another to the host')
    const field = (k) => {
      const v = own(payload, k)
      return typeof v === 'string' ? v : null
    }
    switch (capability) {
      case Capability.FS_READ:
      case Capability.FS_WRITE: {
        const p = field('path')
        if (p === null) return miss(i, capability, 'no path')
        if (!isAbsolute(p, platform)) return miss(i, capability, `relative path ${JSON.stringify(p.slice(0, 200))}: a grant must be an absolute path`)
        const e = fsModes.get(p) || { modes: new Set(), calls: [] }
        e.modes.add(capability === Capability.FS_READ ? 'read' : 'write')
        asked[i] = { kind: 'fs', path: p, mode: capability === Capability.FS_READ ? 'read' : 'write' }
        e.calls.push(i)
        fsModes.set(p, e)
        return
      }
      case Capability.FETCH:
      case Capability.SECRETS_USE: {
        const name = capability === Capability.SECRETS_USE ? field('name') : null
        if (capability === Capability.SECRETS_USE && !name) return miss(i, capability, 'no name')
        let u
        try {
          u = new URL(field('url'))
        } catch {
          return miss(i, capability, 'not a URL')
        }
        if (!(u.protocol in DEFAULT_PORTS) || u.username || u.password) return miss(i, capability, 'scheme or credentials no grant allows')
        if (u.hostname.includes('*')) return miss(i, capability, `host ${JSON.stringify(u.hostname.slice(0, 200))} has a literal '*', which a grant reads as a wildcard`)
        const port = u.port && u.port !== DEFAULT_PORTS[u.protocol] ? `:${u.port}` : ''
        const origin = `${u.protocol}//${u.hostname}${port}`
        if (capability === Capability.SECRETS_USE) {
          // A bound secret sent to this origin: the origin is a fetch grant and one of its hosts.
          asked[i] = { kind: 'cap', id: capability, payload: { name, url: field('url') } }
          const e = bound.get(name) || { hosts: new Set(), calls: [] }
          e.hosts.add(origin)
          e.calls.push(i)
          bound.set(name, e)
        } else asked[i] = { kind: 'fetch', url: field('url') }
        return add(lists.fetch, origin, i)
      }
      case Capability.SECRETS_GET:
      case Capability.EVENTS_PUBLISH:
      case Capability.EVENTS_SUBSCRIBE:
      case Capability.DB_QUERY: {
        const key = CAPABILITY_FIELDS.get(capability)
        const list = { [Capability.SECRETS_GET]: lists.secrets, [Capability.EVENTS_PUBLISH]: lists.publishes, [Capability.EVENTS_SUBSCRIBE]: lists.subscribes, [Capability.DB_QUERY]: lists.databases }[capability]
        const v = field(key)
        if (!v) return miss(i, capability, `no ${key}`)
        if (key === 'topic' && v.split('.').some((seg) => seg.includes('*'))) return miss(i, capability, `topic ${JSON.stringify(v.slice(0, 200))} has a '*' segment, which a grant reads as a wildcard`)
        asked[i] = { kind: 'cap', id: capability, payload: { [key]: v } }
        return add(list, v, i)
      }
      default:
        return miss(i, capability, 'unknown capability')
    }
  }
  if (lists.databases.size > 1) {
    for (const idx of [...lists.databases.values()].flat()) miss(idx, Capability.DB_QUERY, `${lists.databases.size} databases; a manifest declares one`)
    lists.databases.clear()
  }

  // Entries by manifest pointer, so a rejected one can be dropped and reported.
  let entries = [
    ...[...fsModes].map(([p, { modes, calls: from }]) => {
      const glob = literalGlob(p, platform)
      const value = modes.size === 2 ? { path: glob, mode: 'readwrite' } : modes.has('write') ? { path: glob, mode: 'write' } : glob
      return { list: 'fs', value, calls: from, capability: modes.has('read') ? Capability.FS_READ : Capability.FS_WRITE }
    }),
    ...[...lists.fetch].map(([v, from]) => ({ list: 'fetch', value: v, calls: from, capability: Capability.FETCH })),
    ...[...lists.secrets].map(([v, from]) => ({ list: 'secrets', value: v, calls: from, capability: Capability.SECRETS_GET })),
    ...[...bound].map(([name, { hosts, calls: from }]) => ({ list: 'secrets', value: { name, hosts: [...hosts] }, calls: from, capability: Capability.SECRETS_USE })),
    ...[...lists.publishes].map(([v, from]) => ({ list: 'publishes', value: v, calls: from, capability: Capability.EVENTS_PUBLISH })),
    ...[...lists.subscribes].map(([v, from]) => ({ list: 'subscribes', value: v, calls: from, capability: Capability.EVENTS_SUBSCRIBE })),
    ...[...lists.databases].map(([v, from]) => ({ list: 'db', value: v, calls: from, capability: Capability.DB_QUERY })),
  ]
  const build = () => {
    const m = {}
    const of = (list) => entries.filter((e) => e.list === list)
    const pointers = new Map()
    const put = (key, list, at) => {
      const es = of(list)
      if (es.length === 0) return
      at[key] = es.map((e) => e.value)
      es.forEach((e, n) => pointers.set(`${key === 'publishes' || key === 'subscribes' ? `events/${key}` : key}/${n}`, e))
    }
    put('fs', 'fs', m)
    put('fetch', 'fetch', m)
    put('secrets', 'secrets', m)
    if (of('publishes').length || of('subscribes').length) {
      m.events = {}
      put('publishes', 'publishes', m.events)
      put('subscribes', 'subscribes', m.events)
    }
    const db = of('db')[0]
    if (db) {
      m.db = { database: db.value }
      pointers.set('db/database', db)
    }
    return { manifest: m, pointers }
  }
  // The manifest must be valid: drop what the validator rejects, and say why.
  const { PermissionPolicy, isInvalidManifest } = require('../index.js')
  // Why a learned entry does not admit exactly its calls, or null. Uses the
  // explain views, which count no metric.
  const inexact = (policy, entry) => {
    if (entry.list === 'fs') {
      const glob = typeof entry.value === 'string' ? entry.value : entry.value.path
      if (hasUnescapedWildcard(glob, platform)) return `${JSON.stringify(glob.slice(0, 200))} has an unescaped wildcard`
    }
    for (const i of entry.calls) {
      const a = asked[i]
      const d =
        a.kind === 'fs' ? policy.explainFs(a.path, a.mode).decision : a.kind === 'fetch' ? policy.explainFetch(a.url).decision : policy.explainCapability(a.id, a.payload).decision
      if (!d.allowed) return `the learned manifest's checker denies the recorded call (${d.reason})`
    }
    return null
  }
  for (;;) {
    const { manifest, pointers } = build()
    try {
      const policy = PermissionPolicy.fromManifest(manifest, { plugin: 'learned', platform })
      const bad = []
      for (const entry of entries) {
        const why = inexact(policy, entry)
        if (why !== null) bad.push([entry, why])
      }
      if (bad.length === 0) return { manifest, unlearned: unlearned.sort((a, b) => a.call - b.call) }
      for (const [entry, why] of bad) {
        entries = entries.filter((x) => x !== entry)
        for (const i of entry.calls) miss(i, entry.capability, `${JSON.stringify(entry.value).slice(0, 200)} is not learned: ${why}`)
      }
    } catch (e) {
      if (!isInvalidManifest(e)) throw e
      const ptr = String(e.details.pointer)
      const hit = [...pointers].find(([k]) => ptr === `/${k}` || ptr.startsWith(`/${k}/`))
      const bad = hit && hit[1]
      if (bad === undefined) throw e
      entries = entries.filter((x) => x !== bad)
      for (const i of bad.calls) miss(i, bad.capability, `${JSON.stringify(bad.value).slice(0, 200)} is not a valid grant (${e.details.pointer}: expected ${e.details.expected})`)
    }
  }
}

const VERB = { read: 'read', write: 'write', readwrite: 'read/write' }

/**
 * `learn --generalize`: proposes a glob for each cluster of at least `min`
 * exact fs grants with the same mode, directory and extension
 * (`/srv/x/cache/a.json`, `b.json`, ... -> `/srv/x/cache/*.json`), each with
 * a note of what it widens. Grants holding an escaped metacharacter or a
 * backslash are left exact. Returns `{ manifest, proposals }`: the manifest
 * with each cluster replaced by its glob (the input is not changed), and
 * `[{ glob, mode, count, replaces, note, widens }]`.
 */
function generalizeManifest(manifest, options = {}) {
  const platform = options.platform === 'win32' ? 'win32' : 'posix'
  const min = options.min === undefined ? 3 : options.min
  const fsList = Array.isArray(manifest.fs) ? manifest.fs : []
  const clusters = new Map()
  fsList.forEach((g, i) => {
    const glob = typeof g === 'string' ? g : g.path
    const mode = typeof g === 'string' ? 'read' : g.mode || 'read'
    // Escaped metacharacters (`[c]`) and posix backslashes (escapes) stay exact.
    if (glob.includes('[') || (platform === 'posix' && glob.includes('\\'))) return
    const sep = platform === 'win32' ? Math.max(glob.lastIndexOf('/'), glob.lastIndexOf('\\')) : glob.lastIndexOf('/')
    if (sep <= 0) return
    const dir = glob.slice(0, sep)
    const base = glob.slice(sep + 1)
    const dot = base.lastIndexOf('.')
    const ext = dot > 0 ? base.slice(dot) : ''
    const key = `${mode}\0${dir}\0${ext}`
    if (!clusters.has(key)) clusters.set(key, { dir, ext, mode, sep: glob[sep], members: [] })
    clusters.get(key).members.push(i)
  })
  const proposals = []
  const replaced = new Map()
  for (const c of clusters.values()) {
    if (c.members.length < min) continue
    const glob = `${c.dir}${c.sep}*${c.ext}`
    const replaces = c.members.map((i) => (typeof fsList[i] === 'string' ? fsList[i] : fsList[i].path))
    const what = c.ext ? `any other ${c.ext} file` : 'any other file or directory name'
    proposals.push({
      glob,
      mode: c.mode,
      count: c.members.length,
      replaces,
      note: `${c.members.length} ${VERB[c.mode]}s under ${glob}`,
      widens: `${what} directly in ${c.dir} (not below it), ${VERB[c.mode]}, including files created later`,
    })
    c.members.forEach((i, n) => replaced.set(i, n === 0 ? (c.mode === 'read' ? glob : { path: glob, mode: c.mode }) : null))
  }
  const out = { ...manifest }
  if (Array.isArray(manifest.fs)) out.fs = fsList.map((g, i) => (replaced.has(i) ? replaced.get(i) : g)).filter((g) => g !== null)
  return { manifest: out, proposals }
}

module.exports = { learnManifest, literalGlob, hasUnescapedWildcard, generalizeManifest }
