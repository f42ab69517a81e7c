'use strict'
// Oracle for shadow policies (SPEC §12): a checker with a shadow must decide
// exactly as the same checker without one. Random small manifests (fs, fetch
// with path scopes, deny rules, readable and bound secrets, topics, db) and
// random calls (fs, fetch, fetch-address, every capability, including
// secrets.use and 2-, 3- and 4-byte UTF-8 characters around the 4096-byte
// payload limit) go to three checkers on three real in-memory MeterProviders:
//   A: the enforced policy alone,
//   B: the enforced policy with the candidate as shadow,
//   C: the candidate alone.
// Every decision and thrown error of B must equal A's; B's enforced counter
// must equal A's; B's shadow counter must equal C's enforced counter; each
// onShadow event must agree with C's decision and never carry a path.
// Shares no code with the checker: the references are the checker without a
// shadow and the candidate checked on its own.

const { PermissionPolicy, PermissionChecker } = require('../../index.js')
const { meterHarness } = require('../helpers.js')

function rng(seed) {
  let s = seed >>> 0 || 1
  return () => {
    s ^= s << 13
    s >>>= 0
    s ^= s >>> 17
    s ^= s << 5
    s >>>= 0
    return s / 2 ** 32
  }
}

const WIDE = ['é', '€', '😀', 'a']
const HOSTS = ['api.example.com', 'cdn.example.com', 'evil.example.org', 'x.example.org']
const DIRS = ['/srv/data', '/srv/data/cache', '/etc', '/tmp/x']

function gen(r) {
  const pick = (a) => a[Math.floor(r() * a.length)]
  const some = (a, n) => Array.from({ length: Math.floor(r() * (n + 1)) }, () => pick(a))
  const manifest = () => {
    const m = {}
    if (r() < 0.8) m.fs = some([...DIRS.map((d) => `${d}/**`), ...DIRS.map((d) => ({ path: `${d}/*`, mode: pick(['read', 'write', 'readwrite']) }))], 3)
    if (r() < 0.8) m.fetch = some(['https://api.example.com', 'api.example.com/v1/**', '*.example.org', 'https://cdn.example.com:8443', 'https://api.example.com/v2/*/x'], 3)
    if (r() < 0.4) m.deny = { fs: some(['/srv/data/cache/**', '/etc/**'], 1), fetch: some(['evil.example.org', 'api.example.com/v1/admin/**'], 1) }
    if (r() < 0.7) {
      const names = new Set()
      m.secrets = []
      for (const s of some(['A', 'B', 'T', 'U'], 3)) {
        if (names.has(s)) continue
        names.add(s)
        m.secrets.push(r() < 0.5 ? s : { name: s, hosts: [pick(['https://api.example.com/v1/**', 'api.example.com', '*.example.org', 'https://cdn.example.com:8443'])] })
      }
    }
    if (r() < 0.5) m.events = { publishes: some(['a.b', 'a.*', 'x.**'], 2), subscribes: some(['a.*', 'x.**'], 2) }
    if (r() < 0.3) m.db = { database: pick(['db1', 'db2']) }
    return m
  }
  const wide = (max) => {
    // A string around `max` UTF-8 bytes, of 1- to 4-byte characters.
    const target = max - 6 + Math.floor(r() * 12)
    let s = ''
    let bytes = 0
    while (bytes < target) {
      const c = pick(WIDE)
      s += c
      bytes += Buffer.byteLength(c)
    }
    return s
  }
  const path = () => (r() < 0.1 ? `/srv/data/${wide(4096)}` : `${pick(DIRS)}/${pick(['x.json', '..', 'a/b', pick(WIDE)])}`)
  const url = () => {
    if (r() < 0.08) return `https://api.example.com/v1/${wide(4096 - 28)}`
    const scheme = pick(['https', 'http', 'https', 'ftp'])
    const port = r() < 0.2 ? `:${pick(['8443', '443', '80'])}` : ''
    const cred = r() < 0.05 ? 'u:p@' : ''
    return `${scheme}://${cred}${pick(HOSTS)}${port}/${pick(['v1/a', 'v1/admin/x', 'v2/y/x', '', `v1/${pick(WIDE)}`])}${r() < 0.2 ? '?q=1' : ''}`
  }
  const call = () => {
    const k = r()
    if (k < 0.2) return { kind: 'fs', args: [path(), pick(['read', 'write']), r() < 0.1 ? { resolveSymlinks: false } : undefined] }
    if (k < 0.4) return { kind: 'fetch', args: [url()] }
    if (k < 0.45) return { kind: 'fetchAddress', args: [url(), pick(['93.184.216.34', '10.0.0.1', '127.0.0.1'])] }
    const id = pick(['fs.read', 'fetch', 'secrets.get', 'secrets.use', 'secrets.use', 'events.publish', 'events.subscribe', 'db.query', 'nope', '__proto__'])
    const payloads = {
      'fs.read': () => ({ path: path() }),
      fetch: () => ({ url: url() }),
      'secrets.get': () => ({ name: pick(['A', 'B', 'T', 'U', 'Z']) }),
      'secrets.use': () => (r() < 0.1 ? { name: pick(['T', 'U']) } : { name: r() < 0.05 ? wide(4096) : pick(['A', 'B', 'T', 'U', 'Z']), url: url() }),
      'events.publish': () => ({ topic: pick(['a.b', 'a.c', 'x.y.z', 'a.*']) }),
      'events.subscribe': () => ({ topic: pick(['a.b', 'a.*', 'x.**', 'y']) }),
      'db.query': () => ({ database: pick(['db1', 'db2', '']) }),
    }
    return { kind: 'capability', args: [id, Object.hasOwn(payloads, id) ? payloads[id]() : {}] }
  }
  return { manifest, call }
}

const METHODS = {
  fs: ['checkFs', 'assertFs', 'authorizeFs'],
  fetch: ['checkFetch', 'assertFetch', 'authorizeFetch'],
  fetchAddress: ['checkFetchAddress', 'assertFetchAddress'],
  capability: ['checkCapability', 'assertCapability'],
}

function outcome(checker, method, args) {
  try {
    return { value: checker[method](...args) }
  } catch (e) {
    return { thrown: { name: e && e.name, code: e && e.code, details: e && e.details, message: e && e.message } }
  }
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b)

async function run({ seconds = 3, seed = 1, log = () => {} } = {}) {
  const r = rng(seed)
  const g = gen(r)
  const deadline = Date.now() + seconds * 1000
  let cases = 0
  const wrongAllows = []
  const mismatches = []
  while (Date.now() < deadline) {
    let enforced, candidate
    try {
      enforced = PermissionPolicy.fromManifest(g.manifest(), { plugin: 'p', platform: 'posix' })
      candidate = PermissionPolicy.fromManifest(g.manifest(), { plugin: 'p', platform: 'posix' })
    } catch (e) {
      if (e && e.code === 'INVALID_MANIFEST') continue
      throw e
    }
    const [ha, hb, hc] = [meterHarness(), meterHarness(), meterHarness()]
    const events = []
    const a = new PermissionChecker(enforced, { meter: ha.meter })
    const b = new PermissionChecker(enforced, {
      meter: hb.meter,
      shadow: candidate,
      onShadow: (e) => {
        events.push(e)
        if (r() < 0.1) throw new Error('a throwing onShadow is isolated')
      },
    })
    const c = new PermissionChecker(candidate, { meter: hc.meter })
    let shadowDenials = 0
    for (let i = 0; i < 40; i++) {
      const { kind, args } = g.call()
      const method = METHODS[kind][Math.floor(r() * METHODS[kind].length)]
      const before = events.length
      const oa = outcome(a, method, args)
      const ob = outcome(b, method, args)
      const check = kind === 'fs' ? 'checkFs' : kind === 'fetch' ? 'checkFetch' : kind === 'fetchAddress' ? 'checkFetchAddress' : 'checkCapability'
      const oc = outcome(c, check, args)
      cases++
      if (!same(oa, ob)) {
        const allowedB = ob.thrown === undefined && (ob.value === undefined || typeof ob.value === 'string' || ob.value.allowed)
        const allowedA = oa.thrown === undefined && (oa.value === undefined || typeof oa.value === 'string' || oa.value.allowed)
        ;(allowedB && !allowedA ? wrongAllows : mismatches).push({ method, args: JSON.stringify(args).slice(0, 200), a: oa, b: ob })
        continue
      }
      const shadowDenied = oc.value !== undefined && oc.value.allowed === false
      if (shadowDenied) shadowDenials++
      const got = events.slice(before)
      if (got.length !== (shadowDenied ? 1 : 0)) {
        mismatches.push({ method, args: JSON.stringify(args).slice(0, 200), why: `onShadow called ${got.length} times, shadow alone ${shadowDenied ? 'denies' : 'allows'}` })
        continue
      }
      if (shadowDenied) {
        const e = got[0]
        const enforcedAllowed = oa.thrown === undefined && (oa.value === undefined || typeof oa.value === 'string' || oa.value.allowed)
        if (e.capability !== oc.value.capability || e.reason !== oc.value.reason || e.enforced !== (enforcedAllowed ? 'allowed' : 'denied')) {
          mismatches.push({ method, args: JSON.stringify(args).slice(0, 200), why: 'event disagrees', event: e, shadowAlone: oc.value })
        }
        if (e.target !== undefined && !/^[a-z][a-z0-9+.-]*:\/\/[^/?#@]+:\d+$/.test(e.target)) mismatches.push({ why: 'event target is not scheme://host:port', target: e.target })
      }
    }
    const [ta, tb, tc] = [await ha.counts(), await hb.counts(), await hc.counts()]
    const enforcedOf = (t) => Object.entries(t).filter(([k]) => k.startsWith('plugin.permission_denied_total|'))
    const shadowOf = (t) => Object.entries(t).filter(([k]) => k.startsWith('plugin.permission_shadow_denied_total|')).map(([k, v]) => [k.replace('shadow_', ''), v])
    if (!same(enforcedOf(ta).sort(), enforcedOf(tb).sort())) mismatches.push({ why: 'enforced counters differ', a: enforcedOf(ta), b: enforcedOf(tb) })
    // Every shadow evaluation counts once; C saw only the `check*` calls,
    // one per case: the same number and labels.
    if (!same(shadowOf(tb).sort(), enforcedOf(tc).sort())) mismatches.push({ why: 'shadow counter differs from the candidate alone', b: shadowOf(tb), c: enforcedOf(tc) })
    if (shadowOf(tb).reduce((n, [, v]) => n + v, 0) !== shadowDenials) mismatches.push({ why: 'shadow counter total differs from shadow denials', shadowDenials })
    await Promise.all([ha.shutdown(), hb.shutdown(), hc.shutdown()])
  }
  log(`shadow oracle: ${cases} cases, ${wrongAllows.length} wrong allows, ${mismatches.length} mismatches`)
  return { cases, wrongAllows, mismatches }
}

module.exports = { run }
