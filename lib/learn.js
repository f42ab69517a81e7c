'use strict'
// `learn`: the minimal manifest that allows exactly the calls recorded in
// audit mode (allow and record). Exact grants only: no wildcard is invented.

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

/**
 * calls: `[{ capability, payload }]`. Returns `{ manifest, unlearned }` where
 * `unlearned` lists calls no manifest entry can express.
 */
function learnManifest(calls, { platform = process.platform === 'win32' ? 'win32' : 'posix' } = {}) {
  const fsModes = new Map()
  const fetch = new Set()
  const secrets = new Set()
  const publishes = new Set()
  const subscribes = new Set()
  const databases = new Set()
  const unlearned = []
  for (const { capability, payload } of calls) {
    const field = (k) => (payload !== null && typeof payload === 'object' && typeof payload[k] === 'string' ? payload[k] : null)
    switch (capability) {
      case 'fs.read':
      case 'fs.write': {
        const p = field('path')
        if (p === null) {
          unlearned.push({ capability, why: 'no path' })
          break
        }
        const m = fsModes.get(p) || new Set()
        m.add(capability === 'fs.read' ? 'read' : 'write')
        fsModes.set(p, m)
        break
      }
      case 'fetch': {
        let u
        try {
          u = new URL(field('url'))
        } catch {
          unlearned.push({ capability, why: 'not a URL' })
          break
        }
        if (!(u.protocol in DEFAULT_PORTS) || u.username || u.password) {
          unlearned.push({ capability, why: 'scheme or credentials no grant allows' })
          break
        }
        const port = u.port && u.port !== DEFAULT_PORTS[u.protocol] ? `:${u.port}` : ''
        fetch.add(`${u.protocol}//${u.hostname}${port}`)
        break
      }
      case 'secrets.get':
        if (field('name')) secrets.add(field('name'))
        break
      case 'events.publish':
        if (field('topic')) publishes.add(field('topic'))
        break
      case 'events.subscribe':
        if (field('topic')) subscribes.add(field('topic'))
        break
      case 'db.query':
        if (field('database')) databases.add(field('database'))
        break
      default:
        unlearned.push({ capability: String(capability), why: 'unknown capability' })
    }
  }
  const manifest = {}
  if (fsModes.size) {
    manifest.fs = [...fsModes].map(([p, modes]) => {
      const glob = literalGlob(p, platform)
      if (modes.size === 2) return { path: glob, mode: 'readwrite' }
      return modes.has('write') ? { path: glob, mode: 'write' } : glob
    })
  }
  if (fetch.size) manifest.fetch = [...fetch]
  if (secrets.size) manifest.secrets = [...secrets]
  if (publishes.size || subscribes.size) {
    manifest.events = {}
    if (publishes.size) manifest.events.publishes = [...publishes]
    if (subscribes.size) manifest.events.subscribes = [...subscribes]
  }
  if (databases.size === 1) manifest.db = { database: [...databases][0] }
  else if (databases.size > 1) unlearned.push({ capability: 'db.query', why: `${databases.size} databases; a manifest declares one` })
  return { manifest, unlearned }
}

module.exports = { learnManifest, literalGlob }
