'use strict'
// Soundness oracle for the semantic `diff` (src/diff.rs, `diffPolicies`):
// generated manifest pairs (a random manifest, then a random one or a
// mutation of it: widen a glob, drop a deny, add a port, add a host, raise a
// budget, grant write, bind or unbind a secret, ...) and a sampler that runs
// both policies' checkers on many requests (paths in both modes, URLs with
// and without a resolved address, capability payloads, budget samples). It
// shares no code with the engine: it only knows the manifest grammar and
// asks the public checkers.
//
// In runs of 10 s or more, one pair in 50 is of the step-budget class: an old policy of hundreds of
// long literal-plus-wildcard grants under one directory (non-ASCII
// literals, so their bytes outnumber their characters), near the point
// where a check gives up at the matcher's step budget and denies what its
// globs allow; the new policy is one of its grants. Sampled with long
// names the literals' first byte matches, so every pattern is tried.
//
// Failures:
// - wrongAllows: the diff said 0 (no new authority) and a sampled request
//   is allowed by the new policy and denied by the old one;
// - mismatches: a widening witness the checkers do not confirm (new allows,
//   old denies), or a narrowing witness likewise (old allows, new denies),
//   or an exit code 1 without a widening.

const { PermissionPolicy, diffPolicies } = require('../../index.js')

const { prng } = require('./rng.js')

const LIT = ['srv', 'app', 'data', 'a', 'b', 'c', 'x.json', 'Secret', 'logs', 'é', 'PROGRA~1']
const WILD = ['*', '*.json', 'x*', '[a-m]*', '[!a]*', '{a,b}', '?', 'a?', '*a*', '{srv,data}', '**']
const PATH_SEGS = [...LIT, 'SRV', 'secret', 'SECRET', 'A', 'B', 'x', 'y.json', 'aa', 'ab', 'ba', 'zz', 'e\u0301', 'É', 'a\u200c', 'm', 'n', '~', 'x.jsonx', 'SECRET~1', 'APP~1.JSO']
// Hostile spellings too: fullwidth letters and dots (the same hosts to
// IDNA), IPv4 in other WHATWG forms, IPv4-mapped IPv6, and the fullwidth and
// small-form `*` (IDNA maps them to `*`: such a manifest is refused, and a
// pair holding one is skipped).
const HOSTS = ['api.example.com', '*.example.com', 'example.org', '*.cdn.example.net', 'cdn.example.net', '127.0.0.1', 'localhost', '\uff21\uff30\uff29.example.com', 'api\u3002example.com', '*.EXAMPLE.com', '0x7f.1', '[::ffff:127.0.0.1]', '\uff0a.example.com', '\ufe61.example.com']
const URL_HOSTS = ['api.example.com', 'w.example.com', 'a.b.example.com', 'example.com', 'example.org', 'x.cdn.example.net', 'cdn.example.net', 'evil.example.org', '127.0.0.1', 'localhost', '8.8.8.8', '*.example.com', '%2A.example.com', '\uff41pi.example.com', '[::ffff:7f00:1]']
const SCHEMES = ['', '', 'https://', 'http://', 'wss://']
const PORTS = ['', '', '', ':8443', ':*', ':443']
// Path scopes and URL paths with empty segments too (a trailing `/`, `//`):
// `*` is one non-empty segment, `**` one or more (a red team's class).
const FPATHS = ['', '', '/v1/**', '/v1/*', '/v1/x', '/admin/**', '/v1/', '/', '/*', '/v1/*/', '/v1/*/*']
const URL_PATHS = ['/', '/v1/x', '/v1/y', '/v1/x/y', '/admin/a', '/other', '/v1/%2e%2e/admin/a', '/v1/', '/v1/x/', '/v1//x', '//']
const DENY_FETCH = ['api.example.com/admin/**', 'evil.example.org', '8.8.8.0/24', '10.0.0.0/8', 'https://*.example.com:8443', 'x.cdn.example.net', '*.example.com', '[::ffff:808:800]/120']
/**
 * Other spellings of a deny rule: the same rule (case, fullwidth letters,
 * the IDNA full stop, the IPv4-mapped CIDR), a different one that reads
 * alike (a path in fullwidth letters, a `*` that is a mapped `\uff0a`).
 */
const RESPELL = {
  'api.example.com/admin/**': ['API.example.com/admin/**', '\uff21\uff30\uff29.example.com/admin/**', 'api\u3002example.com/admin/**', 'api.example.com/\uff41dmin/**', 'api.example.com/ADMIN/**'],
  'evil.example.org': ['EVIL.example.org', 'evil.example.org.', 'evil\u3002example\u3002org'],
  '8.8.8.0/24': ['[::ffff:808:800]/120', '[::808:800]/120'],
  '[::ffff:808:800]/120': ['8.8.8.0/24'],
  '*.example.com': ['\uff0a.example.com', '\ufe61.example.com', '*.EXAMPLE.COM', '*.\uff25xample.com'],
  'https://*.example.com:8443': ['HTTPS://*.example.com:8443', 'https://\uff0a.example.com:8443'],
}
const TOPICS = ['orders.created', 'orders.*', 'orders.**', 'audit.**', 'a.b.c', 'a.*.c']
const TOPIC_REQ = ['orders.created', 'orders.x', 'orders.x.y', 'audit.log', 'audit.a.b', 'a.b.c', 'a.x.c', 'orders.*', 'orders.**', 'audit.*', 'a.*.c']
const SECRETS = ['A', 'B', 'T']
const DBS = ['main', 'other']
const IPS = ['8.8.8.8', '8.8.8.9', '10.1.2.3', '93.184.216.34', '127.0.0.1']

function generator(r) {
  const int = (n) => Math.floor(r() * n)
  const pick = (a) => a[int(a.length)]
  const chance = (p) => r() < p
  const glob = () => {
    const n = 1 + int(4)
    const segs = []
    for (let i = 0; i < n; i++) {
      let s = chance(0.55) ? pick(LIT) : pick(WILD)
      if (s === '**' && segs.includes('**')) s = pick(LIT)
      segs.push(s)
    }
    return `/${segs.join('/')}`
  }
  const fsGrant = () => (chance(0.5) ? glob() : { path: glob(), mode: pick(['read', 'write', 'readwrite']) })
  const fetchPattern = () => {
    const host = pick(HOSTS)
    const path = host === '127.0.0.1' ? '' : pick(FPATHS)
    return `${pick(SCHEMES)}${host}${pick(PORTS)}${path}`
  }
  const secret = (name) => (chance(0.5) ? name : { name, hosts: [fetchPattern()] })
  const some = (make, max) => Array.from({ length: int(max + 1) }, make)
  const manifest = () => {
    const m = { fs: some(fsGrant, 3), fetch: some(fetchPattern, 3) }
    const names = SECRETS.filter(() => chance(0.4))
    if (names.length) m.secrets = names.map(secret)
    if (chance(0.5)) m.events = { publishes: some(() => pick(TOPICS), 2), subscribes: some(() => pick(TOPICS), 2) }
    if (chance(0.4)) m.db = { database: pick(DBS) }
    if (chance(0.5)) m.budgets = Object.fromEntries(['wallClockMs', 'memoryMb', 'cpuPercent'].filter(() => chance(0.5)).map((k) => [k, 10 * (1 + int(10))]))
    if (chance(0.6)) m.deny = { fs: some(glob, 2), fetch: some(() => pick(DENY_FETCH), 2) }
    return m
  }
  const clone = (m) => JSON.parse(JSON.stringify(m))
  // One mutation of `m`: mostly widening ones, some narrowing, some neutral.
  const mutate = (m0) => {
    const m = clone(m0)
    const k = int(17)
    const fsList = (m.fs ||= [])
    const at = (a) => int(Math.max(a.length, 1))
    switch (k) {
      case 0: // widen a glob: a literal segment becomes a wildcard
      case 1: {
        if (!fsList.length) fsList.push(glob())
        const i = at(fsList)
        const g = typeof fsList[i] === 'string' ? fsList[i] : fsList[i].path
        const segs = g.split('/')
        const j = 1 + int(segs.length - 1)
        segs[j] = pick(WILD.filter((w) => w !== '**' || !segs.includes('**')))
        const ng = segs.join('/')
        fsList[i] = typeof fsList[i] === 'string' ? ng : { ...fsList[i], path: ng }
        break
      }
      case 2: // narrow a glob: one more literal segment
        if (fsList.length) {
          const i = at(fsList)
          const g = typeof fsList[i] === 'string' ? fsList[i] : fsList[i].path
          if (!g.endsWith('**')) fsList[i] = typeof fsList[i] === 'string' ? `${g}/${pick(LIT)}` : { ...fsList[i], path: `${g}/${pick(LIT)}` }
        }
        break
      case 3: // drop a deny
        if (m.deny && m.deny.fs && m.deny.fs.length) m.deny.fs.splice(at(m.deny.fs), 1)
        else if (m.deny && m.deny.fetch && m.deny.fetch.length) m.deny.fetch.splice(at(m.deny.fetch), 1)
        break
      case 4: // grant write
        if (fsList.length) {
          const i = at(fsList)
          fsList[i] = { path: typeof fsList[i] === 'string' ? fsList[i] : fsList[i].path, mode: 'readwrite' }
        }
        break
      case 5: {
        // add a port
        const f = (m.fetch ||= [])
        if (f.length) {
          const i = at(f)
          const p = f[i]
          if (!/:(\d+|\*)(\/|$)/.test(p) && !p.startsWith('[')) f[i] = p.replace(/^((?:[a-z]+:\/\/)?[^/:]+)/, `$1${pick([':8443', ':*'])}`)
        } else f.push(fetchPattern())
        break
      }
      case 6: // add a host / pattern
        ;(m.fetch ||= []).push(fetchPattern())
        break
      case 7: // raise or drop a budget
        if (m.budgets && Object.keys(m.budgets).length) {
          const key = pick(Object.keys(m.budgets))
          if (chance(0.5)) m.budgets[key] *= 2
          else delete m.budgets[key]
        } else m.budgets = { wallClockMs: 100 }
        break
      case 8: // a secret readable / bound / added
        m.secrets = (m.secrets || []).filter((s) => (typeof s === 'string' ? s : s.name) !== 'T')
        m.secrets.push(secret('T'))
        break
      case 9: // topics
        m.events = { publishes: [pick(TOPICS)], subscribes: [pick(TOPICS)] }
        break
      case 10:
        m.db = { database: pick(DBS) }
        break
      case 11: // add an fs grant
        fsList.push(fsGrant())
        break
      case 12: // drop a grant
        if (fsList.length) fsList.splice(at(fsList), 1)
        break
      case 13: // add a deny
        ;(m.deny ||= {}).fs = [...((m.deny && m.deny.fs) || []), glob()]
        break
      case 15: {
        // a deny rule respelled: the same rule, or one that only reads alike
        const d = m.deny && m.deny.fetch
        if (d && d.length) {
          const i = at(d)
          if (RESPELL[d[i]]) d[i] = pick(RESPELL[d[i]])
        } else (m.deny ||= {}).fetch = [pick(DENY_FETCH)]
        break
      }
      case 14: // a path scope widened
        if (m.fetch && m.fetch.length) {
          const i = at(m.fetch)
          m.fetch[i] = m.fetch[i].replace(/\/v1\/x$/, '/v1/*').replace(/\/v1\/\*$/, '/v1/**').replace(/\/v1\/\*\*$/, '')
          // Or `*` rewritten as the empty segment it never matched.
          if (chance(0.3)) m.fetch[i] = m.fetch[i].replace(/\/\*$/, '/')
        }
        break
      default:
        return manifest()
    }
    return m
  }
  const pair = () => {
    const a = manifest()
    let b = a
    const steps = 1 + int(3)
    for (let i = 0; i < steps; i++) b = mutate(b)
    // A tenth of the pairs: only deny rules respelled (the one change a
    // comparison of printed text cannot see).
    if (chance(0.1)) {
      b = clone(a)
      if (!(b.deny && b.deny.fetch && b.deny.fetch.length)) (b.deny ||= {}).fetch = [pick(Object.keys(RESPELL))]
      b.fetch = [...(b.fetch || []), pick(HOSTS.slice(0, 2))]
      b.deny.fetch = b.deny.fetch.map((d) => (RESPELL[d] && chance(0.7) ? pick(RESPELL[d]) : d))
      const base = clone(b)
      base.deny.fetch = b.deny.fetch.map((d) => Object.keys(RESPELL).find((k) => k === d || RESPELL[k].includes(d)) || d)
      return chance(0.5) ? [base, b] : [b, base]
    }
    return chance(0.5) ? [a, b] : [b, a]
  }
  // Requests drawn from the pools and from the globs of both manifests.
  const instantiate = (g) =>
    g
      .split('/')
      .map((s) => (s === '' ? '' : s === '**' ? Array.from({ length: 1 + int(2) }, () => pick(PATH_SEGS)).join('/') : /[*?[{]/.test(s) ? pick(PATH_SEGS) : chance(0.1) ? s.toUpperCase() : s))
      .join('/')
  const requests = (a, b, n) => {
    const globs = [...(a.fs || []), ...(b.fs || []), ...((a.deny && a.deny.fs) || []), ...((b.deny && b.deny.fs) || [])].map((g) => (typeof g === 'string' ? g : g.path))
    const out = []
    for (let i = 0; i < n; i++) {
      const k = int(10)
      if (k < 4) {
        const path = globs.length && chance(0.7) ? instantiate(pick(globs)) : `/${Array.from({ length: int(5) }, () => pick(PATH_SEGS)).join('/')}`
        out.push({ kind: 'fs', path: path || '/', mode: pick(['read', 'write']) })
      } else if (k < 7) {
        const url = `${pick(['https://', 'http://', 'wss://', 'ftp://'])}${pick(URL_HOSTS)}${pick(['', '', ':8443', ':443', ':80', ':9'])}${pick(URL_PATHS)}`
        out.push(chance(0.7) ? { kind: 'fetch', url } : { kind: 'address', url, ip: pick(IPS) })
      } else if (k < 8) {
        out.push(chance(0.5) ? { kind: 'cap', id: 'secrets.get', payload: { name: pick(SECRETS) } } : { kind: 'cap', id: 'secrets.use', payload: { name: pick(SECRETS), url: `https://${pick(URL_HOSTS)}${pick(URL_PATHS)}` } })
      } else if (k < 9) {
        out.push({ kind: 'cap', id: pick(['events.publish', 'events.subscribe']), payload: { topic: pick(TOPIC_REQ) } })
      } else out.push(chance(0.5) ? { kind: 'cap', id: 'db.query', payload: { database: pick(DBS) } } : { kind: 'budget', budget: pick(['wallClockMs', 'memoryMb', 'cpuPercent']), observed: 5 * int(60) })
    }
    return out
  }
  /** An old policy near the step budget, a new one within it, and the requests that make checks work hardest. */
  const stepBudgetPair = (fixed = {}) => {
    const c = fixed.c ?? pick(['\u{1D160}', '\u20AC', '\u00E9', 'q'])
    const bytes = Buffer.byteLength(c)
    const n = fixed.n ?? 600 + int(500)
    // Within the glob byte limit (4096) and the policy-wide cap of compiled elements.
    const k = Math.min(Math.floor((4096 - 16) / bytes) - 1, Math.floor(1_040_000 / n) - 8)
    const fs = Array.from({ length: n }, (_, i) => `/a/*/${c.repeat(k)}${String.fromCodePoint(0x10000 + i)}*`)
    const victim = pick(['/a/b/*z', '/a/b/?*z', `/a/b/${c}*z`])
    const old = { fs: [...fs, victim] }
    const neu = { fs: [chance(0.5) ? victim : `/a/b/${c}*z`] }
    const name = (m) => `/a/b/${c.repeat(m)}z`
    const longest = Math.floor((4096 - 8) / bytes)
    const extra = [longest, k + 1, k, 1].map((m) => ({ kind: 'fs', path: name(m), mode: 'read' }))
    return [old, neu, extra]
  }
  return { pair, requests, stepBudgetPair }
}

/** Whether `policy`'s checker allows the sampled request. */
function allows(policy, q) {
  switch (q.kind) {
    case 'fs':
      return policy.checkFs(q.path, q.mode).allowed
    case 'fetch':
      return policy.checkFetch(q.url).allowed
    case 'address':
      return policy.checkFetchAddress(q.url, q.ip).allowed
    case 'cap':
      return policy.checkCapability(q.id, q.payload).allowed
    case 'budget': {
      const limit = policy.budgets[q.budget]
      return limit === undefined || q.observed <= limit
    }
  }
  throw new Error(`unknown request kind ${q.kind}`)
}

/** A witness of the report as a sampled request. */
function asRequest(w) {
  if (w.capability === 'fs.read' || w.capability === 'fs.write') return { kind: 'fs', path: w.path, mode: w.mode }
  if (w.capability === 'fetch') return w.resolvedIp === undefined ? { kind: 'fetch', url: w.url } : { kind: 'address', url: w.url, ip: w.resolvedIp }
  if (w.capability === 'budget') return { kind: 'budget', budget: w.budget, observed: w.observed }
  return { kind: 'cap', id: w.capability, payload: w.payload }
}

async function run({ seconds = 3, seed = 1, log = () => {}, requestsPerPair = 400 } = {}) {
  const r = prng(seed)
  const gen = generator(r)
  const wrongAllows = []
  const mismatches = []
  const exits = [0, 0, 0]
  let cases = 0
  let pairs = 0
  let widenFound = 0
  let budgetPairs = 0
  let attempts = 0
  const deadline = Date.now() + seconds * 1000
  // A quarter of the pairs on win32: every fs glob and path under `C:`.
  const onDrive = (m) => {
    const c = JSON.parse(JSON.stringify(m))
    const drive = (g) => (typeof g === 'string' ? `C:${g}` : { ...g, path: `C:${g.path}` })
    if (c.fs) c.fs = c.fs.map(drive)
    if (c.deny && c.deny.fs) c.deny.fs = c.deny.fs.map(drive)
    return c
  }
  while (Date.now() < deadline) {
    // One pair in 50 in runs of 10 s or more (each costs about a second:
    // thousands of kilobyte globs); __test__/oracle-diff.test.js runs the
    // class on its own in every run.
    const budgetClass = seconds >= 10 && ++attempts % 50 === 0
    const platform = !budgetClass && r() < 0.25 ? 'win32' : 'posix'
    const build = (m) => PermissionPolicy.fromManifest(platform === 'win32' ? onDrive(m) : m, { plugin: 'oracle-diff', platform })
    const [a, b, extra] = budgetClass ? gen.stepBudgetPair() : [...gen.pair(), []]
    let oldP
    let newP
    try {
      oldP = build(a)
      newP = build(b)
    } catch {
      continue // an invalid manifest (a generated glob the grammar refuses): no pair
    }
    pairs++
    const d = diffPolicies(oldP, newP)
    exits[d.exitCode]++
    if (d.exitCode === 1 && d.widens.length === 0) mismatches.push({ why: 'exit 1 without a widening', old: a, new: b })
    for (const c of d.widens) {
      const q = asRequest(c.witness)
      if (!allows(newP, q) || allows(oldP, q)) mismatches.push({ why: 'widening witness not confirmed', witness: c.witness, old: a, new: b })
    }
    for (const c of d.narrows) {
      const q = asRequest(c.witness)
      if (allows(newP, q) || !allows(oldP, q)) mismatches.push({ why: 'narrowing witness not confirmed', witness: c.witness, old: a, new: b })
    }
    if (budgetClass) budgetPairs++
    for (const q0 of [...extra, ...gen.requests(a, b, budgetClass ? 20 : requestsPerPair)]) {
      const q = platform === 'win32' && q0.kind === 'fs' ? { ...q0, path: `C:${q0.path}` } : q0
      cases++
      if (allows(newP, q) && !allows(oldP, q)) {
        if (d.exitCode === 0) wrongAllows.push({ platform, request: q, old: budgetClass ? `(step-budget class, ${a.fs.length} grants)` : a, new: b })
        else widenFound++
      }
    }
  }
  log(`${pairs} manifest pairs (posix and win32; ${budgetPairs} of the step-budget class) (exit 0: ${exits[0]}, 1: ${exits[1]}, 2: ${exits[2]}); ${cases} requests; ${widenFound} sampled widenings, all under exit 1 or 2`)
  return { cases, pairs, exits, wrongAllows, mismatches, budgetPairs }
}

module.exports = { run, generator, prng }
