'use strict'
// Round-trip oracle for `toJSON()` (SPEC §17): a policy reloaded from its own
// printed form, `fromManifest(p.toJSON(), same options)`, must decide every
// request exactly as `p`, print the same again, and `diffPolicies` must find
// nothing between the two either way. Random and hostile manifests: Unicode
// and IDNA hosts (fullwidth letters and dots, the fullwidth and small-form
// `*` that Node's host parser maps to `*`), IPv4 in every WHATWG form, IPv6
// and its IPv4-mapped form, path scopes with percent-escapes, fs globs with
// braces, classes and escapes on posix and win32, denies, CIDR blocks,
// secrets bound and plain, topics, db, budgets with odd doubles. The oracle
// is the policy itself: it shares nothing with how the printed form is made
// or read, and asks only the public API.
//
// Failures:
// - wrongAllows: the reload allows a sampled request the policy denies;
// - mismatches: any other difference (a denial the policy does not make, a
//   reason or canonical URL that differs, a printed form that does not
//   compile or prints otherwise, a diff that does not exit 0).

const { PermissionPolicy, diffPolicies } = require('../../index.js')
const { rng } = require('./rng.js')

const STAR = ['\uff0a', '\ufe61']
const HOSTS = [
  'api.example.com',
  'API.Example.COM',
  'a.b.example.com',
  'example.com.',
  'bücher.example',
  'xn--bcher-kva.example',
  '\uff21\uff30\uff29.example.com', // ＡＰＩ
  'api\u3002example.com', // 。
  'exa\u00admple.com', // soft hyphen, dropped by IDNA
  'faß.de',
  'xn--fa-hia.de',
  '_acme.example.com',
  "a!$&'()+,;=.example.com",
  'localhost',
  'sub.localhost',
  '127.0.0.1',
  '0x7f.1',
  '127.1',
  '2130706433',
  '\uff11\uff12\uff17.0.0.1', // １２７.0.0.1
  '10.1.2.3',
  '[::1]',
  '[::ffff:127.0.0.1]',
  '[::ffff:10.1.2.3]',
  '[64:ff9b::808:808]',
  '[fe80::1]',
  '8.8.8.8',
  // Refused (a host that maps to one holding `*`): the manifest is invalid.
  `${STAR[0]}.example.com`,
  `${STAR[1]}.example.com`,
  `a${STAR[0]}b.example.com`,
]
const SCHEMES = ['', '', 'http://', 'https://', 'HTTPS://', 'ws://', 'wss://', 'ftp://']
const PORTS = ['', '', ':*', ':8443', ':443', ':80', ':1']
const FPATHS = ['', '', '', '/', '/**', '/v1/*/x', '/v1/', '/caf%C3%A9', '/café', '/%2A', '/%2A%2A', '/*', '/a;b', '/%41', '/admin/**', '/\uff41dmin']
const CIDRS = ['10.0.0.0/8', '[fd00::]/8', '[::ffff:808:800]/120', '127.0.0.0/8', '0.0.0.0/0', '[64:ff9b::]/96', '8.8.8.8/32']
const GLOBS = {
  posix: ['/srv/**', '/srv/{a,b}/*.txt', '/srv/[abc]x', '/srv/\\*lit', '/srv//x/', '/srv/a/**/z', '/srv/caf\u00e9/*', '/srv/[!a]*', '/srv/\\{x\\}', '/Srv/\u1e9e/**', '/srv/x?y', '/srv/*.{json,txt}', '/srv/[a-c][!x]?'],
  win32: ['C:\\Users\\**', 'C:/a/{b,c}', 'c:\\x\\[!a]', 'C:\\srv\\\\x\\', 'D:\\data\\*.txt', 'C:\\a\\**\\z', 'C:\\Srv\\\u1e9e\\**', 'C:\\', 'c:/Mixed\\seps/*.{json,txt}'],
}
const FS_REQ = {
  posix: ['/srv/a/x.txt', '/srv/b/y.txt', '/srv/ax', '/srv/*lit', '/srv/\\*lit', '/srv/x/', '/srv/x', '/srv/a/q/z', '/srv/café/k', '/srv/cafe\u0301/k', '/srv/{x}', '/Srv/ß/k', '/Srv/ss/k', '/srv/xzy', '/srv/r.json', '/srv/cbq', '/etc/passwd', '/srv/../etc/passwd', '/tmp'],
  win32: ['C:\\Users\\me\\x', 'c:\\users\\me\\x', 'C:\\a\\b', 'C:\\a\\c', 'C:\\x\\b', 'C:\\x\\a', 'C:\\srv\\x', 'D:\\data\\f.txt', 'D:\\DATA\\F.TXT', 'C:\\a\\q\\z', 'C:\\Srv\\ß\\k', 'C:\\Srv\\SS\\k', 'C:\\Windows\\x', 'C:\\Users\\..\\Windows', 'C:\\Mixed\\seps\\a.json'],
}
const URL_HOSTS = ['api.example.com', 'x.api.example.com', '*.example.com', '%2A.example.com', 'a.example.com', 'a*b.example.com', 'x.a.b.example.com', 'xn--bcher-kva.example', 'bücher.example', 'x.bücher.example', 'fass.de', 'xn--fa-hia.de', 'x.localhost', 'localhost', '127.0.0.1', '127.0.0.2', '10.9.9.9', '[::1]', '[::ffff:a01:203]', '[64:ff9b::808:808]', '8.8.8.8', '_acme.example.com', '\uff41pi.example.com']
const URL_PATHS = ['/', '/v1/a/x', '/café', '/caf%C3%A9', '/*', '/%2A', '/a%2Fb', '/v1/', '/..;/x', '/admin/x', '/ADMIN/x', '/\uff41dmin/x', '/a;b']
const IPS = ['93.184.216.34', '127.0.0.1', '10.1.2.3', '::1', '::ffff:127.0.0.1', '8.8.8.8', 'fe80::1']
const TOPICS = ['orders.*', 'orders.**', 'orders.created', 'é.x', 'a.b.c', '**', '*']
const TOPIC_REQ = ['orders.created', 'orders.x.y', 'é.x', 'a.b.c', 'orders.*', 'orders.**', 'x']
const NAMES = ['API_KEY', 'K', 'ПАРОЛЬ', 'k', 'a b', '\u202ex']
const ODD_DOUBLES = [5e-324, Number.MAX_VALUE, 0.1 + 0.2, 1e21, 123456789.12345679, 2 ** -1074 * 3, 1 / 3, 4.35, 0.000001]

function generator(r) {
  const { int, pick, chance, next } = r
  const some = (make, max) => Array.from({ length: int(max + 1) }, make)
  const fetchPattern = () => `${pick(SCHEMES)}${chance(0.3) ? '*.' : ''}${pick(HOSTS)}${pick(PORTS)}${pick(FPATHS)}`
  const denyRule = () => (chance(0.25) ? pick(CIDRS) : fetchPattern())
  const budget = () => {
    if (chance(0.5)) return pick(ODD_DOUBLES)
    // A random positive finite double from random bits.
    const b = new DataView(new ArrayBuffer(8))
    b.setUint32(0, int(0x7ff00000))
    b.setUint32(4, int(2 ** 32))
    const v = b.getFloat64(0)
    return v > 0 && Number.isFinite(v) ? v : 1
  }
  /** A manifest whose entries are each valid alone with probability about 0.9 (a refused host left in now and then). */
  const manifest = (platform) => {
    const valid = (m) => {
      try {
        PermissionPolicy.fromManifest(m, { plugin: 'rt', platform })
        return true
      } catch {
        return false
      }
    }
    const keep = (wrap) => (x) => chance(0.05) || valid(wrap(x))
    const m = {}
    if (chance(0.7)) m.fs = some(() => (chance(0.4) ? pick(GLOBS[platform]) : { path: pick(GLOBS[platform]), mode: pick(['read', 'write', 'readwrite']) }), 4).filter(keep((g) => ({ fs: [g] })))
    if (chance(0.8)) m.fetch = some(fetchPattern, 6).filter(keep((p) => ({ fetch: [p] })))
    if (chance(0.6)) {
      m.deny = {}
      if (chance(0.8)) m.deny.fetch = some(denyRule, 4).filter(keep((p) => ({ deny: { fetch: [p] } })))
      if (chance(0.5)) m.deny.fs = some(() => pick(GLOBS[platform]), 2).filter(keep((g) => ({ deny: { fs: [g] } })))
    }
    if (chance(0.6)) {
      const names = [...new Set(some(() => pick(NAMES), 3))]
      m.secrets = names.map((name) => {
        if (chance(0.5)) return name
        const hosts = some(fetchPattern, 3).filter(keep((p) => ({ fetch: [p] })))
        return hosts.length ? { name, hosts } : name
      })
    }
    if (chance(0.5)) {
      m.events = {}
      if (chance(0.8)) m.events.publishes = some(() => pick(TOPICS), 3)
      if (chance(0.8)) m.events.subscribes = some(() => pick(TOPICS), 3)
    }
    if (chance(0.3)) m.db = { database: pick(NAMES) }
    if (chance(0.5)) m.budgets = Object.fromEntries(['cpuPercent', 'memoryMb', 'wallClockMs'].filter(() => chance(0.6)).map((k) => [k, budget()]))
    return m
  }
  const urls = (n) =>
    Array.from({ length: n }, () => `${pick(['http', 'https', 'ws', 'wss', 'ftp', 'HTTPS'])}://${pick(URL_HOSTS)}${pick(['', ':8443', ':1', ':443', ':80'])}${pick(URL_PATHS)}${chance(0.1) ? '?q#f' : ''}`)
  return { manifest, urls, next }
}

/** Every sampled decision of `p` and `q`: `{ d, n }`, the first difference `{ what, a, b }` or null, and the decisions sampled. */
function firstDifference(p, q, gen, r, platform) {
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b)
  const attempt = (f) => {
    try {
      return { ok: f() }
    } catch (e) {
      return { code: e && e.code, reason: e && e.details && e.details.reason }
    }
  }
  const cmp = (what, f) => {
    const a = attempt(() => f(p))
    const b = attempt(() => f(q))
    return same(a, b) ? null : { what, a, b }
  }
  const checks = []
  for (const path of FS_REQ[platform]) {
    for (const mode of ['read', 'write']) {
      checks.push([`checkFs(${path}, ${mode})`, (x) => x.checkFs(path, mode)])
      checks.push([`checkFs(${path}, ${mode}, resolved)`, (x) => x.checkFs(path, mode, { resolveSymlinks: true })])
    }
  }
  for (const url of gen.urls(24)) {
    checks.push([`checkFetch(${url})`, (x) => x.checkFetch(url)])
    checks.push([`authorizeFetch(${url})`, (x) => x.authorizeFetch(url)])
    const ip = r.pick(IPS)
    checks.push([`checkFetchAddress(${url}, ${ip})`, (x) => x.checkFetchAddress(url, ip)])
    const name = r.pick(NAMES)
    checks.push([`secrets.use(${name}, ${url})`, (x) => x.checkCapability('secrets.use', { name, url })])
    checks.push([`fetch {url} ${url}`, (x) => x.checkCapability('fetch', { url })])
  }
  for (const name of NAMES) {
    checks.push([`secrets.get(${name})`, (x) => x.checkCapability('secrets.get', { name })])
    checks.push([`db.query(${name})`, (x) => x.checkCapability('db.query', { database: name })])
  }
  for (const topic of TOPIC_REQ) {
    for (const id of ['events.publish', 'events.subscribe']) checks.push([`${id}(${topic})`, (x) => x.checkCapability(id, { topic })])
  }
  checks.push(['budgets', (x) => Object.entries(x.budgets).map(([k, v]) => [k, Object.is(v, -0) ? '-0' : v.toString()])])
  for (const [what, f] of checks) {
    const d = cmp(what, f)
    if (d !== null) return { d, n: checks.length }
  }
  return { d: null, n: checks.length }
}

async function run({ seconds = 3, seed = 1, log = () => {} } = {}) {
  const r = rng(seed)
  const gen = generator(r)
  const wrongAllows = []
  const mismatches = []
  let cases = 0
  let policies = 0
  let refused = 0
  const deadline = Date.now() + seconds * 1000
  while (Date.now() < deadline) {
    const platform = r.chance(0.3) ? 'win32' : 'posix'
    const options = { plugin: 'roundtrip', platform }
    const m = gen.manifest(platform)
    let p
    try {
      p = PermissionPolicy.fromManifest(m, options)
    } catch (e) {
      if (e.code !== 'INVALID_MANIFEST') mismatches.push({ why: `fromManifest threw ${e.code}: ${e.message}`, manifest: m })
      refused++
      continue
    }
    policies++
    const printed = p.toJSON()
    let q
    try {
      q = PermissionPolicy.fromManifest(printed, options)
    } catch (e) {
      mismatches.push({ why: `the printed form does not compile: ${e.code} ${e.details ? JSON.stringify(e.details) : e.message}`, manifest: m, printed })
      continue
    }
    if (JSON.stringify(q.toJSON()) !== JSON.stringify(printed)) mismatches.push({ why: 'printing is not idempotent', manifest: m, printed, again: q.toJSON() })
    const { d, n } = firstDifference(p, q, gen, r, platform)
    cases += n
    if (d !== null) {
      const entry = { platform, ...d, manifest: m, printed }
      if (d.b.ok && d.b.ok.allowed === true && !(d.a.ok && d.a.ok.allowed === true)) wrongAllows.push(entry)
      else if (d.b.ok !== undefined && typeof d.b.ok === 'string' && d.a.ok === undefined) wrongAllows.push(entry)
      else mismatches.push(entry)
    }
    for (const [a, b, dir] of [[p, q, 'policy → reload'], [q, p, 'reload → policy']]) {
      const report = diffPolicies(a, b)
      if (report.exitCode !== 0) mismatches.push({ why: `diff ${dir} exits ${report.exitCode}`, report, manifest: m, printed })
    }
  }
  log(`${policies} policies (${refused} manifests refused) reloaded from toJSON() and compared on ${cases} decisions, ${wrongAllows.length} wrong allows, ${mismatches.length} mismatches`)
  return { cases, policies, refused, wrongAllows, mismatches }
}

module.exports = { run }
