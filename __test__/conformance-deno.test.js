'use strict'
// The shared conformance table through a live Deno broker (SPEC §15): the
// adapter's checks send the protocol lines Deno sends — `read`/`write` with
// the path, `import` with `host:port`, `env` with the name — over the Unix
// socket, and turn the broker's reply back into a decision. (One real Deno
// per case would cost ~100 ms x hundreds of cases; the real binary is
// exercised end to end in deno-real.test.js, and the lines it sends were
// recorded there.) The metric is the broker's own count, on the harness's
// meter.
//
// What Deno cannot express is skipped, with the reason (and a path on which
// this host has a symlink, e.g. macOS /etc -> /private/etc, since the broker
// resolves symlinks and the table's cases are lexical):
// - win32 paths: Deno on this host asks with native posix paths;
// - paths with `.` or `..` segments: Deno normalises them lexically before
//   it asks, and opens the normalised path (seen in deno-real.test.js); the
//   broker resolves what it gets as open(2) would, so a raw `a/../b` whose
//   `a` does not exist is `symlink_escape` there (fail closed);
// - budgets: runDeno enforces them from /proc outside the protocol (the
//   tracker is the package's BudgetTracker, run by the package adapter);
// - fetch cases under a manifest with path-scoped fetch grants or denies:
//   Deno's net and import carry no path;
// - fetch URLs that are not https, have userinfo, or do not parse: Deno's
//   `net` carries `host:port` without a scheme (checked against every
//   scheme), `import` is https; Deno never sends userinfo nor an unparseable
//   URL (the case is decided per input, not per expected answer);
// - fetch cases under a manifest with a path-scoped grant or deny rule
//   (SPEC §11): `net`/`import` carry host:port, never a path;
// - capabilities: fs.read/fs.write/fetch/secrets.get go as read/write/
//   import/env, an id no manifest knows as an unknown permission name;
//   Deno has no events, db or secrets.use permission, and a payload Deno
//   could not send (not one string field) is skipped too.
const fs = require('node:fs')
const net = require('node:net')
const path = require('node:path')
const { runPermissionsConformance, conformanceCases, Skip } = require('../testing.js')
const { PermissionPolicy, serveDenoBroker, Capability, LIMITS } = require('../index.js')
const { parseDenyText, DENO_PERMISSIONS } = require('../lib/deno-broker.js')

/** Capability ids of the table (events, db, secrets.use have no Deno permission). */
const KNOWN = new Set(Object.values(Capability))

/** One request over a fresh broker connection; the reply object. */
function ask(broker, permission, value) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(broker.path)
    let buf = ''
    sock.setEncoding('utf8')
    sock.on('connect', () => sock.write(`${JSON.stringify({ v: 1, pid: process.pid, id: 1, datetime: new Date().toISOString(), permission, value })}\n`))
    sock.on('data', (d) => {
      buf += d
      const i = buf.indexOf('\n')
      if (i >= 0) {
        sock.destroy()
        resolve(JSON.parse(buf.slice(0, i)))
      }
    })
    sock.on('error', reject)
    sock.on('close', () => reject(new Error('the broker closed the connection without a reply')))
  })
}

/** Whether the deepest existing ancestor of absolute path `p` (the case tables' paths do not exist) resolves elsewhere. */
function linkOnPath(p) {
  if (!p.startsWith('/') || p.includes('\0')) return false
  for (let at = path.posix.normalize(p).replace(/(.)\/+$/, '$1'); at !== '/'; at = path.posix.dirname(at)) {
    try {
      return fs.realpathSync(at) !== at
    } catch {}
  }
  return false
}

function denoAdapter(manifest, context) {
  const policy = PermissionPolicy.fromManifest(manifest, { plugin: context.plugin, platform: context.platform })
  const { fetch: grants = [], deny: { fetch: denies = [] } = {} } = policy.toJSON()
  // A pattern with a path after its authority (a CIDR block's `/8` is not a path).
  const pathScoped = [...grants, ...denies].some((p) => /^(?:[a-z]+:\/\/)?[^/]*\/(?!\d+$)/.test(p))
  // One broker per request: Deno is served by one broker per process, and each case makes one check.
  const once = async (permission, value) => {
    const broker = await serveDenoBroker(policy, { meter: context.meter })
    try {
      const reply = await ask(broker, permission, value)
      if (reply.result === 'allow') return { allowed: true }
      const d = parseDenyText(reply.reason)
      if (d === null) throw new Error(`unexpected deny reason ${JSON.stringify(reply.reason)}`)
      return { allowed: false, capability: d.capability, reason: d.reason }
    } finally {
      await broker.close()
    }
  }
  const checkFs = (p, mode) => {
    // Deno resolves `.` and `..` lexically before it asks (and opens that path): it never sends a `..`.
    if (typeof p === 'string' && /(^|\/)\.\.?(\/|$)/.test(p)) throw new Skip('Deno normalises . and .. before it asks')
    if (typeof p === 'string' && linkOnPath(p)) throw new Skip('a symlink on this host lies on the path (macOS /etc, /tmp, /var): the broker resolves it')
    return once(mode, p)
  }
  const checkFetch = (url) => {
    if (pathScoped) throw new Skip("Deno's net and import carry host:port, never a path: path-scoped grants and denies are not expressible (the broker denies net to a host only a path-scoped grant names, and a path-scoped deny denies the whole host)")
    let u
    try {
      u = new URL(url)
    } catch {
      throw new Skip('Deno never sends a URL it cannot parse')
    }
    if (u.protocol !== 'https:') throw new Skip("Deno's net permission carries no scheme; only https (import) is expressible")
    if (u.username !== '' || u.password !== '') throw new Skip('Deno never sends userinfo')
    return once('import', `${u.hostname}:${u.port === '' ? 443 : u.port}`)
  }
  /** The one string field Deno would send, or a Skip. */
  const field = (payload, key) => {
    const v = payload !== null && typeof payload === 'object' && !Array.isArray(payload) && Object.hasOwn(payload, key) ? payload[key] : undefined
    if (typeof v !== 'string' || Object.keys(payload).length !== 1) throw new Skip('Deno sends one string value')
    // Over the payload limit a capability call is invalid_payload; Deno asks with the value itself (checkFs: invalid_path).
    if (Buffer.byteLength(v) > LIMITS.maxPayloadStringBytes) throw new Skip('a payload over the limit has no Deno equivalent')
    return v
  }
  return {
    checkFs,
    checkFetch,
    checkCapability(id, payload) {
      if (id === 'fs.read' || id === 'fs.write') return checkFs(field(payload, 'path'), id === 'fs.read' ? 'read' : 'write')
      if (id === 'fetch') return checkFetch(field(payload, 'url'))
      if (id === 'secrets.get') return once('env', field(payload, 'name'))
      // Deno sends permission names it may add later: an id no manifest knows is one of those.
      if (typeof id === 'string' && !KNOWN.has(id) && !DENO_PERMISSIONS.includes(id) && id.length <= 64) return once(id, null)
      throw new Skip(`Deno has no permission for ${JSON.stringify(String(id)).slice(0, 40)}`)
    },
  }
}

/** Whether a manifest has a fetch grant or deny rule with a path (not a CIDR block). */
function hasPathScope(m) {
  const list = [...((m && m.fetch) || []), ...((m && m.deny && m.deny.fetch) || [])]
  return list.some((p) => {
    if (typeof p !== 'string' || /^(\d+\.\d+\.\d+\.\d+|\[[^\]]*\])\/\d+$/.test(p)) return false
    const i = p.indexOf('://')
    return (i >= 0 ? p.slice(i + 3) : p).includes('/')
  })
}

if (process.platform !== 'win32') {
  const skip = {}
  for (const c of conformanceCases()) {
    if (c.platform === 'win32') skip[c.name] = 'Deno on this host asks with native posix paths'
    else if (c.op === 'budget') skip[c.name] = 'budgets are enforced by runDeno from /proc, outside the broker protocol'
    else if ((c.op === 'fetch' || c.op === 'fetchAddress' || (c.op === 'capability' && c.args.id === 'fetch')) && hasPathScope(c.manifest)) {
      skip[c.name] = "Deno's net/import permission carries host:port, never a path: path-scoped grants and deny rules (SPEC §11) are not expressible"
    }
  }
  runPermissionsConformance('deno broker (protocol lines over the Unix socket)', denoAdapter, { skip })
}
