'use strict'
// `learn`: the minimal manifest that allows exactly the calls recorded in
// audit mode (allow and record). Exact grants only: no wildcard is invented.
// What cannot become a valid grant (a relative path, an unknown capability,
// a value the manifest rejects) is reported in `unlearned`, never thrown.
// Every learned grant is verified: it holds no wildcard it was not asked for
// (a literal `*` host or publish topic would become one; a subscribe topic
// may itself be a pattern, SPEC §4, and is learned as written), and the
// checker under the learned manifest allows each recorded call it came
// from; anything else is unlearned. Values the caller names as secret are
// never learned and never quoted in `unlearned`.

const { types } = require('node:util')
const { Capability, CAPABILITY_FIELDS, PLATFORMS, LIMITS } = require('./native.js')

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

/** A Map, so a scheme is looked up among these only (never through a prototype). */
const DEFAULT_PORTS = new Map([
  ['http:', '80'],
  ['https:', '443'],
  ['ws:', '80'],
  ['wss:', '443'],
  ['ftp:', '21'],
])

/**
 * The longest value each field can have and still become a grant; a longer
 * one is not learned before any work is done on it (a 256 MiB path would
 * otherwise be escaped, copied and compiled before the validator refused it).
 */
const MAX_FIELD = { path: LIMITS.maxPathBytes, url: LIMITS.maxUrlBytes, name: LIMITS.maxNameBytes, topic: LIMITS.maxPayloadStringBytes, database: LIMITS.maxNameBytes }

/** The payload fields a grant is learned from: a recorder may keep these alone (never a body, data or headers). */
const LEARNED_FIELDS = Object.freeze(Object.keys(MAX_FIELD))

/**
 * The most secret values one call of learnManifest takes: each field is
 * searched for every value (once per distinct field text), so their number
 * bounds the work per call.
 */
const MAX_SECRET_VALUES = 256

/** An own data property set on `obj`, whatever any prototype holds under `key`. */
function put(obj, key, value) {
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true })
}

/** Absolute for the platform: `/x` on posix; `C:\x` or `C:/x` on win32. */
const isAbsolute = (p, platform) => (platform === 'win32' ? /^[A-Za-z]:[\\/]/.test(p) : p.startsWith('/'))

/**
 * `options.secretValues` (its property descriptor) as tests "does this
 * text hold one of the values" (`holds`; `holdsFolded` in any case): own data only, a plain array of at most
 * MAX_SECRET_VALUES strings (empty ones hold nothing and are skipped). Each
 * text is searched once; the verdict is kept for the next call with it.
 */
function secretMatcher(desc) {
  const none = { holds: () => false, holdsFolded: () => false }
  if (desc === undefined || (Object.hasOwn(desc, 'value') && desc.value === undefined)) return none
  const list = Object.hasOwn(desc, 'value') ? desc.value : null
  if (list === null || types.isProxy(list) || !Array.isArray(list)) throw new TypeError('options.secretValues must be a plain array of strings')
  if (list.length > MAX_SECRET_VALUES) throw new TypeError(`options.secretValues holds at most ${MAX_SECRET_VALUES} values`)
  const values = []
  for (let i = 0; i < list.length; i++) {
    const d = Object.getOwnPropertyDescriptor(list, i)
    if (d === undefined || !Object.hasOwn(d, 'value') || typeof d.value !== 'string') throw new TypeError('options.secretValues must be a plain array of strings')
    if (d.value.length > 0) values.push(d.value)
  }
  if (values.length === 0) return none
  const lower = values.map((v) => v.toLowerCase())
  const seen = new Map()
  const holds = (text) => {
    let held = seen.get(text)
    if (held === undefined) {
      held = values.some((v) => text.includes(v))
      seen.set(text, held)
    }
    return held
  }
  // For a text the learner derived by lower-casing (a URL's origin): each value in any case.
  const holdsFolded = (text) => {
    const t = text.toLowerCase()
    return lower.some((v) => t.includes(v))
  }
  return { holds, holdsFolded }
}

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
  const { holds: holdsSecret, holdsFolded: holdsSecretFolded } = secretMatcher(options === undefined ? undefined : Object.getOwnPropertyDescriptor(options, 'secretValues'))
  // What each call asked for, so every learned grant is checked against it.
  const asked = new Map()
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
  // A capability id holding a secret value is not quoted either.
  const miss = (i, capability, why) => unlearned.push({ capability: typeof capability === 'string' && holdsSecret(capability) ? Capability.UNKNOWN : String(capability), why, call: i })
  const length = calls.length
  for (let i = 0; i < length; i++) learnOne(own(calls, i), i)
  function learnOne(call, i) {
    if (call === null || typeof call !== 'object' || types.isProxy(call)) return miss(i, Capability.UNKNOWN, 'not a { capability, payload } object (a plain object, not a Proxy)')
    const capability = own(call, 'capability')
    const payload = own(call, 'payload')
    if (typeof capability === 'string' && holdsSecret(capability)) return miss(i, capability, 'the capability id holds a secret value')
    if (types.isProxy(payload)) return miss(i, capability, 'the payload is a Proxy: it could show one value here and another to the host')
    // A string field, or null; `tooLong` says why a string is not used: past
    // what any grant holds, or holding a secret value (never quoted).
    let tooLong = null
    const field = (k) => {
      const v = own(payload, k)
      if (typeof v !== 'string') return null
      // UTF-8 is at least one byte per UTF-16 unit.
      if (v.length > MAX_FIELD[k]) {
        tooLong = `${k} of ${v.length} characters, longer than any grant holds (${MAX_FIELD[k]} bytes)`
        return null
      }
      if (holdsSecret(v)) {
        tooLong = `the ${k} holds a secret value`
        return null
      }
      return v
    }
    switch (capability) {
      case Capability.FS_READ:
      case Capability.FS_WRITE: {
        const p = field('path')
        if (p === null) return miss(i, capability, tooLong || 'no path')
        if (!isAbsolute(p, platform)) return miss(i, capability, `relative path ${JSON.stringify(p.slice(0, 200))}: a grant must be an absolute path`)
        const e = fsModes.get(p) || { modes: new Set(), calls: [] }
        e.modes.add(capability === Capability.FS_READ ? 'read' : 'write')
        asked.set(i, { kind: 'fs', path: p, mode: capability === Capability.FS_READ ? 'read' : 'write' })
        e.calls.push(i)
        fsModes.set(p, e)
        return
      }
      case Capability.FETCH:
      case Capability.SECRETS_USE: {
        const name = capability === Capability.SECRETS_USE ? field('name') : null
        if (capability === Capability.SECRETS_USE && !name) return miss(i, capability, tooLong || 'no name')
        const href = field('url')
        if (href === null) return miss(i, capability, tooLong || 'not a URL')
        let u
        try {
          u = new URL(href)
        } catch {
          return miss(i, capability, 'not a URL')
        }
        if (!DEFAULT_PORTS.has(u.protocol) || u.username || u.password) return miss(i, capability, 'scheme or credentials no grant allows')
        if (u.hostname.includes('*')) return miss(i, capability, `host ${JSON.stringify(u.hostname.slice(0, 200))} has a literal '*', which a grant reads as a wildcard`)
        const port = u.port && u.port !== DEFAULT_PORTS.get(u.protocol) ? `:${u.port}` : ''
        const origin = `${u.protocol}//${u.hostname}${port}`
        // The origin as parsed (lower-cased, IDNA-mapped) may spell a secret the URL spelled otherwise.
        if (holdsSecretFolded(origin)) return miss(i, capability, 'the url holds a secret value')
        if (capability === Capability.SECRETS_USE) {
          // A bound secret sent to this origin: the origin is a fetch grant and one of its hosts.
          asked.set(i, { kind: 'cap', id: capability, payload: { name, url: href } })
          const e = bound.get(name) || { hosts: new Set(), calls: [] }
          e.hosts.add(origin)
          e.calls.push(i)
          bound.set(name, e)
        } else asked.set(i, { kind: 'fetch', url: href })
        return add(lists.fetch, origin, i)
      }
      case Capability.SECRETS_GET:
      case Capability.EVENTS_PUBLISH:
      case Capability.EVENTS_SUBSCRIBE:
      case Capability.DB_QUERY: {
        const key = CAPABILITY_FIELDS.get(capability)
        const list = new Map([
          [Capability.SECRETS_GET, lists.secrets],
          [Capability.EVENTS_PUBLISH, lists.publishes],
          [Capability.EVENTS_SUBSCRIBE, lists.subscribes],
          [Capability.DB_QUERY, lists.databases],
        ]).get(capability)
        const v = field(key)
        if (!v) return miss(i, capability, tooLong || `no ${key}`)
        // A published topic is one topic: a '*' in it would be granted as a wildcard. A
        // subscription may itself be a pattern (SPEC §4): granted as written,
        // then validated and checked like every entry.
        if (capability === Capability.EVENTS_PUBLISH && v.split('.').some((seg) => seg.includes('*'))) return miss(i, capability, `topic ${JSON.stringify(v.slice(0, 200))} has a '*' segment, which a grant reads as a wildcard`)
        const payloadOut = {}
        put(payloadOut, key, v)
        asked.set(i, { kind: 'cap', id: capability, payload: payloadOut })
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

  // The learned entries, in manifest order per list.
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
  const drop = (entry, why) => {
    for (const i of entry.calls) miss(i, entry.capability, `${JSON.stringify(entry.value).slice(0, 200)} is not learned: ${why}`)
  }
  // A list holds at most maxPatterns entries: the rest are not learned.
  const counts = new Map()
  entries = entries.filter((e) => {
    const key = e.list === 'publishes' || e.list === 'subscribes' ? e.list : e.list === 'secrets' ? 'secrets' : e.list
    const n = (counts.get(key) || 0) + 1
    counts.set(key, n)
    if (n <= LIMITS.maxPatterns) return true
    drop(e, `more than ${LIMITS.maxPatterns} entries in one list`)
    return false
  })
  // The manifest of some entries, and the entry each list pointer names.
  const build = (list) => {
    const m = {}
    const pointers = new Map()
    const of = (name) => list.filter((e) => e.list === name)
    const put2 = (key, name, at, prefix) => {
      const es = of(name)
      if (es.length === 0) return
      put(at, key, es.map((e) => e.value))
      es.forEach((e, n) => pointers.set(`${prefix}${key}/${n}`, e))
    }
    put2('fs', 'fs', m, '/')
    put2('fetch', 'fetch', m, '/')
    put2('secrets', 'secrets', m, '/')
    if (of('publishes').length || of('subscribes').length) {
      const events = {}
      put(m, 'events', events)
      put2('publishes', 'publishes', events, '/events/')
      put2('subscribes', 'subscribes', events, '/events/')
    }
    const dbs = of('db')
    if (dbs.length) {
      const db = {}
      put(db, 'database', dbs[0].value)
      put(m, 'db', db)
      pointers.set('/db/database', dbs[0])
    }
    return { manifest: m, pointers }
  }
  const { PermissionPolicy, isInvalidManifest } = require('../index.js')
  const { PermissionChecker } = require('./checker.js')
  const compileError = (manifest) => {
    try {
      return { policy: PermissionPolicy.fromManifest(manifest, { plugin: 'learned', platform }) }
    } catch (e) {
      if (!isInvalidManifest(e)) throw e
      return { error: e }
    }
  }
  // 1. Each entry alone: what the validator refuses is not learned (one
  // small compile each); the pointer is the entry's place in its list.
  const place = new Map()
  const seenIn = new Map()
  for (const e of entries) {
    const n = seenIn.get(e.list) || 0
    seenIn.set(e.list, n + 1)
    place.set(e, n)
  }
  const invalid = (entry, why) => {
    for (const i of entry.calls) miss(i, entry.capability, `${JSON.stringify(entry.value).slice(0, 200)} is not a valid grant (${why})`)
  }
  entries = entries.filter((entry) => {
    const { error } = compileError(build([entry]).manifest)
    if (error === undefined) return true
    const pointer = String(error.details.pointer).replace(/^(\/(?:events\/)?[a-z]+\/)0(?=\/|$)/, (_, list) => `${list}${place.get(entry)}`)
    invalid(entry, `${pointer}: expected ${error.details.expected}`)
    return false
  })
  // 2. Together: what only the whole refuses is a policy-wide cap ("this one
  // takes it past"), so the entry named and the later ones of its list are
  // not learned; each round drops at least one entry of a list.
  let policy
  for (;;) {
    const { manifest, pointers } = build(entries)
    const r = compileError(manifest)
    if (r.policy) {
      policy = r.policy
      break
    }
    const ptr = String(r.error.details.pointer)
    const named = [...pointers].find(([k]) => ptr === k || ptr.startsWith(`${k}/`))
    const list = named
      ? named[1].list
      : new Map([
          ['/fs', 'fs'],
          ['/fetch', 'fetch'],
          ['/secrets', 'secrets'],
          ['/events/publishes', 'publishes'],
          ['/events/subscribes', 'subscribes'],
        ]).get(ptr)
    if (list === undefined) throw r.error
    const from = named ? entries.indexOf(named[1]) : entries.findIndex((e) => e.list === list)
    const why = `past a policy-wide limit (${ptr}: expected ${r.error.details.expected})`
    entries = entries.filter((e, k) => {
      if (k < from || e.list !== list) return true
      drop(e, why)
      return false
    })
  }
  // 3. Every entry admits exactly its calls: a checker (counting no metric)
  // under the learned manifest allows each, one check per call.
  const checker = new PermissionChecker(policy, { meter: require('@opentelemetry/api').createNoopMeter() })
  const bad = new Set()
  for (const entry of entries) {
    let why = null
    if (entry.list === 'fs') {
      const glob = typeof entry.value === 'string' ? entry.value : entry.value.path
      if (hasUnescapedWildcard(glob, platform)) why = `${JSON.stringify(glob.slice(0, 200))} has an unescaped wildcard`
    }
    for (const i of entry.calls) {
      if (why !== null) break
      const a = asked.get(i)
      const d = a.kind === 'fs' ? checker.checkFs(a.path, a.mode) : a.kind === 'fetch' ? checker.checkFetch(a.url) : checker.checkCapability(a.id, a.payload)
      if (!d.allowed) why = `the learned manifest's checker denies the recorded call (${d.reason})`
    }
    if (why !== null) {
      bad.add(entry)
      drop(entry, why)
    }
  }
  if (bad.size) entries = entries.filter((e) => !bad.has(e))
  return { manifest: build(entries).manifest, unlearned: unlearned.sort((a, b) => a.call - b.call) }
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
  const platform = own(options, 'platform') === 'win32' ? 'win32' : 'posix'
  const min = own(options, 'min') === undefined ? 3 : own(options, 'min')
  const fsList = Array.isArray(own(manifest, 'fs')) ? own(manifest, 'fs') : []
  const clusters = new Map()
  fsList.forEach((g, i) => {
    const glob = typeof g === 'string' ? g : own(g, 'path')
    const mode = typeof g === 'string' ? 'read' : own(g, 'mode') || 'read'
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
    const replaces = c.members.map((i) => (typeof fsList[i] === 'string' ? fsList[i] : own(fsList[i], 'path')))
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
  if (Array.isArray(own(manifest, 'fs'))) put(out, 'fs', fsList.map((g, i) => (replaced.has(i) ? replaced.get(i) : g)).filter((g) => g !== null))
  return { manifest: out, proposals }
}

module.exports = { learnManifest, literalGlob, hasUnescapedWildcard, generalizeManifest, LEARNED_FIELDS, MAX_SECRET_VALUES }
