'use strict'
// `api-sandbox-permissions diff old.json new.json`: what a manifest change
// widens and narrows, compared on the normalised manifests (`toJSON()` of
// both policies: canonical hosts, fs grants as { path, mode }). Conservative:
// a changed grant is an added one (widens) plus a removed one (narrows); glob
// containment between different patterns is not computed, so a rewrite that
// grants the same is still reported as widening.

const { BUDGET_KIND_LIST } = require('./native.js')

const MODES = { read: ['read'], write: ['write'], readwrite: ['read', 'write'] }

/** `[scheme://]host[:port][/path]` into its parts (the normalised pattern grammar). */
function fetchParts(p) {
  const m = /^(?:([a-z][a-z0-9+.-]*):\/\/)?(\[[^\]]+\]|[^/:]+)(?::(\d+|\*))?(\/.*)?$/.exec(p)
  return m ? { scheme: m[1] || null, host: m[2], port: m[3] || null, path: m[4] || null } : { scheme: null, host: p, port: null, path: null }
}

/** Why an added fetch pattern widens: the nearest old pattern on the same host, if any. */
function fetchKind(added, old) {
  const a = fetchParts(added)
  const same = old.map(fetchParts).filter((o) => o.host === a.host)
  if (same.length === 0) return 'host'
  if (same.some((o) => o.scheme === a.scheme && o.port === a.port)) return 'path'
  if (same.some((o) => o.scheme === a.scheme)) return 'port'
  return 'scheme'
}

function secretsMap(list) {
  const m = new Map()
  for (const s of list || []) m.set(typeof s === 'string' ? s : s.name, typeof s === 'string' ? null : s.hosts)
  return m
}

/**
 * `{ widens: [{ kind, pointer, what }], narrows: [...] }` between two
 * normalised manifests. Kinds: fs, mode, host, port, path, scheme, secret,
 * secret-host, topic, db, budget, deny.
 */
function diffManifests(a, b) {
  const widens = []
  const narrows = []
  const w = (kind, pointer, what) => widens.push({ kind, pointer, what })
  const n = (kind, pointer, what) => narrows.push({ kind, pointer, what })

  // fs: per path, the modes granted.
  const fsModes = (list) => {
    const m = new Map()
    for (const g of list || []) m.set(g.path, new Set([...(m.get(g.path) || []), ...MODES[g.mode]]))
    return m
  }
  const fa = fsModes(a.fs)
  const fb = fsModes(b.fs)
  ;(b.fs || []).forEach((g, i) => {
    const old = fa.get(g.path)
    if (old === undefined) w('fs', `/fs/${i}`, `fs grant added: ${g.path} (${g.mode})`)
    else for (const mode of MODES[g.mode]) if (!old.has(mode)) w('mode', `/fs/${i}`, `${mode} granted on ${g.path}`)
  })
  ;(a.fs || []).forEach((g, i) => {
    const now = fb.get(g.path)
    if (now === undefined) n('fs', `/fs/${i}`, `fs grant removed: ${g.path} (${g.mode})`)
    else for (const mode of MODES[g.mode]) if (!now.has(mode)) n('mode', `/fs/${i}`, `${mode} no longer granted on ${g.path}`)
  })

  // fetch patterns.
  const pa = new Set(a.fetch || [])
  const pb = new Set(b.fetch || [])
  ;(b.fetch || []).forEach((p, i) => {
    if (!pa.has(p)) w(fetchKind(p, a.fetch || []), `/fetch/${i}`, `fetch grant added: ${p}`)
  })
  ;(a.fetch || []).forEach((p, i) => {
    if (!pb.has(p)) n(fetchKind(p, b.fetch || []), `/fetch/${i}`, `fetch grant removed: ${p}`)
  })

  // secrets: readable, bound (with hosts).
  const sa = secretsMap(a.secrets)
  const sb = secretsMap(b.secrets)
  let i = 0
  for (const [name, hosts] of sb) {
    const ptr = `/secrets/${i++}`
    if (!sa.has(name)) w('secret', ptr, `secret ${name} added (${hosts === null ? 'readable' : `bound to ${hosts.join(', ')}`})`)
    else if (hosts === null && sa.get(name) !== null) w('secret', ptr, `secret ${name} is now readable (was bound)`)
    else if (hosts !== null && sa.get(name) === null) n('secret', ptr, `secret ${name} is now bound (was readable)`)
    else if (hosts !== null) {
      for (const h of hosts) if (!sa.get(name).includes(h)) w('secret-host', ptr, `secret ${name} may be sent to ${h}`)
      for (const h of sa.get(name)) if (!hosts.includes(h)) n('secret-host', ptr, `secret ${name} no longer sent to ${h}`)
    }
  }
  i = 0
  for (const [name] of sa) {
    const ptr = `/secrets/${i++}`
    if (!sb.has(name)) n('secret', ptr, `secret ${name} removed`)
  }

  // events.
  for (const key of ['publishes', 'subscribes']) {
    const ea = (a.events && a.events[key]) || []
    const eb = (b.events && b.events[key]) || []
    eb.forEach((t, j) => ea.includes(t) || w('topic', `/events/${key}/${j}`, `${key} ${t} added`))
    ea.forEach((t, j) => eb.includes(t) || n('topic', `/events/${key}/${j}`, `${key} ${t} removed`))
  }

  // db.
  const da = a.db ? a.db.database : null
  const db = b.db ? b.db.database : null
  if (da !== db) {
    if (db !== null) w('db', '/db/database', `database ${db} granted`)
    if (da !== null) n('db', '/db/database', `database ${da} no longer granted`)
  }

  // budgets: higher or removed widens; lower or added narrows.
  for (const k of BUDGET_KIND_LIST) {
    const x = a.budgets ? a.budgets[k] : undefined
    const y = b.budgets ? b.budgets[k] : undefined
    if (x === y) continue
    if (y === undefined) w('budget', `/budgets/${k}`, `${k} budget removed (was ${x})`)
    else if (x === undefined) n('budget', `/budgets/${k}`, `${k} budget added (${y})`)
    else if (y > x) w('budget', `/budgets/${k}`, `${k} budget raised ${x} -> ${y}`)
    else n('budget', `/budgets/${k}`, `${k} budget lowered ${x} -> ${y}`)
  }

  // deny rules: removing one widens.
  for (const key of ['fs', 'fetch']) {
    const xa = (a.deny && a.deny[key]) || []
    const xb = (b.deny && b.deny[key]) || []
    xa.forEach((r, j) => xb.includes(r) || w('deny', `/deny/${key}/${j}`, `deny.${key} rule removed: ${r}`))
    xb.forEach((r, j) => xa.includes(r) || n('deny', `/deny/${key}/${j}`, `deny.${key} rule added: ${r}`))
  }
  return { widens, narrows }
}

module.exports = { diffManifests }
