'use strict'
// Oracle for destination-bound secrets (SPEC §13): `secrets.use { name, url }`
// is allowed only when the name is bound, the URL passes the fetch grants and
// deny rules, and it matches one of the secret's hosts patterns. The model is
// the naive SPEC §3/§10/§11 fetch model of the fetch oracle (Node's `URL`,
// segment matching written from the SPEC), applied once to the manifest's
// grants and deny rules and once to the secret's hosts; it shares no code with
// the checker. Inputs: path segments that confuse servers (encoded slashes,
// dots, case, params), look-alike hosts, userinfo, ports, and URLs of 1- to
// 4-byte characters across the 4096-byte payload limit. `secrets.get` on a
// bound name must never be allowed.

const { createChecker } = require('../../index.js')
const { naiveRule, naiveDecide } = require('./fetch.js')

const MANIFEST = {
  fetch: ['https://api.example.com/v1/**', 'api.example.com/public/**', '*.example.org', 'https://static.example.net', 'https://other.example.com'],
  deny: { fetch: ['evil.example.org', 'api.example.com/v1/admin/**', 'https://static.example.net/private/**'] },
  secrets: [
    'READABLE',
    { name: 'T', hosts: ['https://api.example.com/v1/repos/*/issues', 'https://api.example.com/v1/user'] },
    { name: 'U', hosts: ['*.example.org/hooks/**', 'https://static.example.net'] },
    { name: 'W', hosts: ['https://nowhere.example.com'] },
  ],
}
const BOUND = new Map(MANIFEST.secrets.filter((s) => typeof s !== 'string').map((s) => [s.name, s.hosts]))
const NAMES = ['T', 'T', 'U', 'U', 'W', 'READABLE', 'NOPE', 't', 'T ', 'Т']
const HOSTS = ['api.example.com', 'API.example.com.', 'apі.example.com', 'a.example.org', 'evil.example.org', 'x.evil.example.org', 'example.org', 'static.example.net', 'other.example.com', 'nowhere.example.com', '127.0.0.1']
const SEGS = ['v1', 'repos', 'acme', 'issues', 'user', 'admin', 'ADMIN', 'hooks', 'public', 'private', 'x', '', '.', '..', '%2e', '%2e%2e', '%2f', 'a%2fb', '%5c', 'a\\b', '%00', '%ff', '%C3%A9', 'é', '%252f', 'a;b', 'admin;x=1', '%69ssues', '*', '😀']
const WIDE = ['a', 'é', '€', '😀']
const MAX = 4096

const { prng } = require('./rng.js')

async function run({ seconds = 3, seed = 1, log = () => {} } = {}) {
  const rules = MANIFEST.fetch.map((p) => naiveRule(p, false))
  const denies = MANIFEST.deny.fetch.map((p) => naiveRule(p, true))
  const hostRules = new Map([...BOUND].map(([n, hs]) => [n, hs.map((p) => naiveRule(p, false))]))
  const checker = createChecker(MANIFEST, { plugin: 'oracle-secrets', platform: 'posix' })
  const r = prng(seed)
  const int = (n) => Math.floor(r() * n)
  const pick = (a) => a[int(a.length)]
  const wrongAllows = []
  const mismatches = []
  let cases = 0
  let allowed = 0
  const deadline = Date.now() + seconds * 1000
  while (Date.now() < deadline) {
    for (let k = 0; k < 200; k++) {
      cases++
      const name = pick(NAMES)
      let url
      if (int(10) === 0) {
        // Across the byte limit: a granted prefix, then wide characters.
        const target = MAX - 8 + int(16)
        url = 'https://api.example.com/v1/user?'
        while (Buffer.byteLength(url) < target) url += pick(WIDE)
      } else if (int(3) === 0) {
        // Near the bound destinations: one segment varied.
        const near = pick([
          () => `https://api.example.com/v1/repos/${pick(SEGS)}/issues`,
          () => `https://api.example.com/v1/${pick(['user', 'User', 'user/', 'user;x', '%75ser', pick(SEGS)])}`,
          () => `https://${pick(['a.example.org', 'b.a.example.org', 'example.org', 'evil.example.org'])}/hooks/${pick(SEGS)}/${pick(SEGS)}`,
          () => `https://static.example.net/${pick(['private', 'public', 'PRIVATE', '%70rivate'])}/${pick(SEGS)}`,
        ])
        url = near()
      } else {
        const segs = [...Array(1 + int(5))].map(() => pick(SEGS))
        const sep = () => pick(['/', '/', '/', '\\', '//'])
        url = `${pick(['https', 'https', 'http', 'HTTPS', 'ws'])}://${int(15) === 0 ? 'u:p@' : ''}${pick(HOSTS)}${int(8) === 0 ? pick([':443', ':8443', ':80']) : ''}${segs.map((s) => sep() + s).join('')}${int(5) === 0 ? '?q=/v1/user#/x' : ''}`
      }
      const d = checker.checkCapability('secrets.use', { name, url })
      if (d.allowed) allowed++
      const within = Buffer.byteLength(url) <= MAX && Buffer.byteLength(name) <= MAX
      const f = naiveDecide(rules, denies, url)
      const h = hostRules.has(name) ? naiveDecide(hostRules.get(name), [], url) : { granted: false }
      const modelAllows = within && hostRules.has(name) && f.granted && !f.denied && h.granted
      if (d.allowed && !modelAllows) {
        if (wrongAllows.length < 50) wrongAllows.push({ name, url: url.length > 160 ? `${url.slice(0, 80)}…(${Buffer.byteLength(url)} bytes)` : url, fetch: f, hosts: h })
      } else if (!d.allowed && modelAllows && mismatches.length < 50) {
        mismatches.push({ name, url, reason: d.reason })
      }
      const expectReason = !within ? 'invalid_payload' : !BOUND.has(name) && name !== 'READABLE' ? 'secret_not_declared' : null
      if (!d.allowed && expectReason !== null && d.reason !== expectReason && mismatches.length < 50) mismatches.push({ name, url: url.slice(0, 120), reason: d.reason, expected: expectReason })
      if (BOUND.has(name) && checker.checkCapability('secrets.get', { name }).allowed) wrongAllows.push({ name, why: 'secrets.get on a bound secret' })
    }
  }
  log(`secrets oracle: ${cases} cases, ${allowed} allowed, ${wrongAllows.length} wrong allows, ${mismatches.length} mismatches`)
  return { cases, wrongAllows, mismatches }
}

module.exports = { run }
