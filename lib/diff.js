'use strict'
// `diffPolicies(old, new)` (and the CLI `diff`): the semantic diff of two
// compiled policies, decided in Rust (src/diff.rs): every request the new
// policy allows, is it allowed by the old one? Each widening and narrowing
// carries a witness request; this module runs both policies' checkers on
// each witness once more through the JS API before handing it out, so a
// witness printed is one the public checkers confirm.
//
// `diffManifests(a, b)` below is the older textual comparison of two
// normalised manifests (kept for bench/manifest-scaling.mjs): a changed grant
// is an added one plus a removed one, glob containment is not computed.

const { BUDGET_KIND_LIST, Capability } = require('./native.js')

const MODES = { read: ['read'], write: ['write'], readwrite: ['read', 'write'] }

/** `[scheme://]host[:port][/path]` into its parts (the normalised pattern grammar). */
function fetchParts(p) {
  const m = /^(?:([a-z][a-z0-9+.-]*):\/\/)?(\[[^\]]+\]|[^/:]+)(?::(\d+|\*))?(\/.*)?$/.exec(p)
  return m ? { scheme: m[1] || null, host: m[2], port: m[3] || null, path: m[4] || null } : { scheme: null, host: p, port: null, path: null }
}

/**
 * Every pattern of one side parsed once, indexed by host: per host, the
 * schemes and the (scheme, port) pairs its patterns name. Built once per
 * side, so a diff is one parse per pattern and one map lookup per changed
 * one (linear, not changed × old).
 */
function fetchIndex(list) {
  const byHost = new Map()
  for (const p of list) {
    const o = fetchParts(p)
    let e = byHost.get(o.host)
    if (e === undefined) byHost.set(o.host, (e = { schemes: new Set(), schemePorts: new Set() }))
    e.schemes.add(o.scheme)
    e.schemePorts.add(`${o.scheme}\u0000${o.port}`)
  }
  return byHost
}

/** Why an added fetch pattern widens: the nearest old pattern on the same host, if any. */
function fetchKind(added, oldIndex) {
  const a = fetchParts(added)
  const same = oldIndex.get(a.host)
  if (same === undefined) return 'host'
  if (same.schemePorts.has(`${a.scheme}\u0000${a.port}`)) return 'path'
  if (same.schemes.has(a.scheme)) return 'port'
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
  const ia = fetchIndex(a.fetch || [])
  const ib = fetchIndex(b.fetch || [])
  ;(b.fetch || []).forEach((p, i) => {
    if (!pa.has(p)) w(fetchKind(p, ia), `/fetch/${i}`, `fetch grant added: ${p}`)
  })
  ;(a.fetch || []).forEach((p, i) => {
    if (!pb.has(p)) n(fetchKind(p, ib), `/fetch/${i}`, `fetch grant removed: ${p}`)
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
      const was = new Set(sa.get(name))
      const now = new Set(hosts)
      for (const h of hosts) if (!was.has(h)) w('secret-host', ptr, `secret ${name} may be sent to ${h}`)
      for (const h of sa.get(name)) if (!now.has(h)) n('secret-host', ptr, `secret ${name} no longer sent to ${h}`)
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
    const sea = new Set(ea)
    const seb = new Set(eb)
    eb.forEach((t, j) => sea.has(t) || w('topic', `/events/${key}/${j}`, `${key} ${t} added`))
    ea.forEach((t, j) => seb.has(t) || n('topic', `/events/${key}/${j}`, `${key} ${t} removed`))
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
    const sxa = new Set(xa)
    const sxb = new Set(xb)
    xa.forEach((r, j) => sxb.has(r) || w('deny', `/deny/${key}/${j}`, `deny.${key} rule removed: ${r}`))
    xb.forEach((r, j) => sxa.has(r) || n('deny', `/deny/${key}/${j}`, `deny.${key} rule added: ${r}`))
  }
  return { widens, narrows }
}

/** Whether `checker` allows the witness request `w` (through the public JS API; it counts nothing). */
function witnessAllowed(checker, w) {
  const policy = checker.policy
  switch (w.capability) {
    case Capability.FS_READ:
    case Capability.FS_WRITE:
      return checker.checkFs(w.path, w.mode).allowed
    case Capability.FETCH:
      if (w.resolvedIp === undefined) return checker.checkFetch(w.url).allowed
      return checker.checkFetchAddress(w.url, w.resolvedIp).allowed
    case 'budget': {
      const limit = policy.budgets[w.budget]
      return limit === undefined || w.observed <= limit
    }
    default:
      return checker.checkCapability(w.capability, w.payload).allowed
  }
}

/**
 * `diffPolicies(old, new)`: `{ exitCode, verdict, widens, narrows, unknown }`
 * (see index.d.ts `PolicyDiff`). Throws a TypeError unless both are
 * PermissionPolicy objects.
 */
function diffPolicies(oldPolicy, newPolicy) {
  const { binding } = require('./native.js')
  const { handleOf } = require('./policy.js')
  const report = JSON.parse(binding.policyDiff(handleOf(oldPolicy), handleOf(newPolicy)))
  const { PermissionChecker } = require('./checker.js')
  const meter = require('@opentelemetry/api').createNoopMeter()
  const quiet = (policy) => new PermissionChecker(policy, { meter })
  // A widening the JS checkers do not confirm is not reported as one: the
  // answer becomes "unknown" (fail closed, never a false 0 or a false witness).
  const confirmed = (list, allows, denies) =>
    list.filter((c) => {
      const ok = witnessAllowed(allows, c.witness) && !witnessAllowed(denies, c.witness)
      if (!ok && list === report.widens) report.unknown.push({ section: c.section, pointer: c.pointer, why: `${c.what}: the witness was not confirmed by the JS checkers` })
      return ok
    })
  const [o, n] = [quiet(oldPolicy), quiet(newPolicy)]
  report.widens = confirmed(report.widens, n, o)
  report.narrows = confirmed(report.narrows, o, n)
  report.exitCode = report.widens.length ? 1 : report.unknown.length ? 2 : 0
  report.verdict = ['no-new-authority', 'widens', 'unknown'][report.exitCode]
  return report
}

module.exports = { diffManifests, diffPolicies }
