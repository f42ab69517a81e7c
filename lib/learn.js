'use strict'
// `learn`: the minimal manifest that allows exactly the calls recorded in
// audit mode (allow and record). Exact grants only: no wildcard is invented.
// What cannot become a valid grant (a relative path, an unknown capability,
// a value the manifest rejects) is reported in `unlearned`, never thrown.

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

const DEFAULT_PORTS = { 'http:': '80', 'https:': '443', 'ws:': '80', 'wss:': '443', 'ftp:': '21' }

/** Absolute for the platform: `/x` on posix; `C:\x` or `C:/x` on win32. */
const isAbsolute = (p, platform) => (platform === 'win32' ? /^[A-Za-z]:[\\/]/.test(p) : p.startsWith('/'))

/**
 * calls: `[{ capability, payload }]`. Returns `{ manifest, unlearned }`:
 * a manifest that `PermissionPolicy.fromManifest` accepts, and
 * `[{ capability, why, call }]` for recorded calls no valid entry expresses
 * (`call` is the index in `calls`).
 */
function learnManifest(calls, { platform = process.platform === 'win32' ? 'win32' : 'posix' } = {}) {
  if (!Array.isArray(calls)) throw new TypeError('calls must be an array of { capability, payload }')
  if (platform !== 'posix' && platform !== 'win32') throw new TypeError("options.platform must be 'posix' or 'win32'")
  // Each learned entry remembers the calls it came from, so a rejected entry reports them.
  const fsModes = new Map() // path -> { modes, calls }
  const lists = { fetch: new Map(), secrets: new Map(), publishes: new Map(), subscribes: new Map(), databases: new Map() }
  const add = (list, key, i) => {
    const at = list.get(key)
    if (at) at.push(i)
    else list.set(key, [i])
  }
  const unlearned = []
  const miss = (i, capability, why) => unlearned.push({ capability: String(capability), why, call: i })
  calls.forEach((call, i) => {
    if (call === null || typeof call !== 'object') return miss(i, 'unknown', 'not a { capability, payload } object')
    const { capability, payload } = call
    const field = (k) => (payload !== null && typeof payload === 'object' && typeof payload[k] === 'string' ? payload[k] : null)
    switch (capability) {
      case 'fs.read':
      case 'fs.write': {
        const p = field('path')
        if (p === null) return miss(i, capability, 'no path')
        if (!isAbsolute(p, platform)) return miss(i, capability, `relative path ${JSON.stringify(p.slice(0, 200))}: a grant must be an absolute path`)
        const e = fsModes.get(p) || { modes: new Set(), calls: [] }
        e.modes.add(capability === 'fs.read' ? 'read' : 'write')
        e.calls.push(i)
        fsModes.set(p, e)
        return
      }
      case 'fetch': {
        let u
        try {
          u = new URL(field('url'))
        } catch {
          return miss(i, capability, 'not a URL')
        }
        if (!(u.protocol in DEFAULT_PORTS) || u.username || u.password) return miss(i, capability, 'scheme or credentials no grant allows')
        const port = u.port && u.port !== DEFAULT_PORTS[u.protocol] ? `:${u.port}` : ''
        return add(lists.fetch, `${u.protocol}//${u.hostname}${port}`, i)
      }
      case 'secrets.get':
        return field('name') ? add(lists.secrets, field('name'), i) : miss(i, capability, 'no name')
      case 'events.publish':
        return field('topic') ? add(lists.publishes, field('topic'), i) : miss(i, capability, 'no topic')
      case 'events.subscribe':
        return field('topic') ? add(lists.subscribes, field('topic'), i) : miss(i, capability, 'no topic')
      case 'db.query':
        return field('database') ? add(lists.databases, field('database'), i) : miss(i, capability, 'no database')
      default:
        return miss(i, capability, 'unknown capability')
    }
  })
  if (lists.databases.size > 1) {
    for (const idx of [...lists.databases.values()].flat()) miss(idx, 'db.query', `${lists.databases.size} databases; a manifest declares one`)
    lists.databases.clear()
  }

  // Entries by manifest pointer, so a rejected one can be dropped and reported.
  let entries = [
    ...[...fsModes].map(([p, { modes, calls: from }]) => {
      const glob = literalGlob(p, platform)
      const value = modes.size === 2 ? { path: glob, mode: 'readwrite' } : modes.has('write') ? { path: glob, mode: 'write' } : glob
      return { list: 'fs', value, calls: from, capability: modes.has('read') ? 'fs.read' : 'fs.write' }
    }),
    ...[...lists.fetch].map(([v, from]) => ({ list: 'fetch', value: v, calls: from, capability: 'fetch' })),
    ...[...lists.secrets].map(([v, from]) => ({ list: 'secrets', value: v, calls: from, capability: 'secrets.get' })),
    ...[...lists.publishes].map(([v, from]) => ({ list: 'publishes', value: v, calls: from, capability: 'events.publish' })),
    ...[...lists.subscribes].map(([v, from]) => ({ list: 'subscribes', value: v, calls: from, capability: 'events.subscribe' })),
    ...[...lists.databases].map(([v, from]) => ({ list: 'db', value: v, calls: from, capability: 'db.query' })),
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
  for (;;) {
    const { manifest, pointers } = build()
    try {
      PermissionPolicy.fromManifest(manifest, { plugin: 'learned', platform })
      return { manifest, unlearned: unlearned.sort((a, b) => a.call - b.call) }
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

module.exports = { learnManifest, literalGlob }
