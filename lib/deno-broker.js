'use strict'
// Deno's permission broker (SPEC §15), served from a manifest. Deno 2.9
// connects once, at startup, to the Unix socket named by
// DENO_PERMISSION_BROKER_PATH and, for every permission check, writes one
// JSON line `{ "v": 1, "pid", "id", "datetime", "permission", "value" }` and
// waits for `{ "id", "result": "allow" | "deny", "reason"? }` (one request
// at a time; a reply it cannot parse, or whose id differs, ends Deno with
// exit code 87, as does a broker it cannot reach). `reason` becomes the
// message of the script's `Deno.errors.NotCapable`.
//
// Everything a client sends is untrusted: an over-long line, invalid JSON or
// UTF-8, an unknown version, a reused id, a client that never reads, a
// second client: each gets a deny or a closed connection, never an allow and
// never a crash.
const net = require('node:net')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { createNoopMeter, metrics } = require('@opentelemetry/api')

const { Capability, ErrorCode, ERROR_REGISTRY, METER_NAME, PERMISSION_SHADOW_DENIED_TOTAL: SHADOW_DENIED_TOTAL } = require('./native.js')
const { LineDecoder } = require('./ipc-frame.js')
const { ownOptions } = require('./options.js')
const { checkNet } = require('./checker.js')

/** The registry id and code every deny reason starts with (`SAND_PERM_001 PERMISSION_DENIED`), from the table Rust exports. */
const DENIED_PREFIX = `${ERROR_REGISTRY.find((e) => e.code === ErrorCode.PERMISSION_DENIED).id} ${ErrorCode.PERMISSION_DENIED}`
const PROTOCOL_VERSION = 1
/** Default cap on one request line (bytes, newline excluded). */
const MAX_LINE_BYTES = 64 * 1024
/** Default cap on replies queued to a client that does not read (bytes). */
const MAX_QUEUE_BYTES = 256 * 1024
/** Not a capability id of the table: `checkCapability` counts it once as `unknown` / `unknown_capability`. */
const UNKNOWN_ID = 'deno.permission'
/** The options of `serveDenoBroker` and of `runDeno` (any other key is a TypeError). */
const BROKER_OPTION_KEYS = Object.freeze(['meter', 'shadow', 'onDecision', 'tmpDir', 'maxLineBytes', 'maxQueueBytes'])
const RUN_OPTION_KEYS = Object.freeze(['args', 'deno', 'env', 'cwd', 'stdio', 'meter', 'shadow', 'onDecision', 'tmpDir', 'sampleEveryMs', 'cpuGraceMs', 'forwardSignals', 'log'])
/** Permissions Deno 2.9 sends; anything else is counted as `unknown` too. */
const DENO_PERMISSIONS = Object.freeze(['read', 'write', 'net', 'env', 'run', 'ffi', 'sys', 'import'])

const pkg = () => require('../index.js')
/** Strict UTF-8: invalid bytes throw (a malformed request), never become U+FFFD. */
const UTF8 = new TextDecoder('utf-8', { fatal: true })

/**
 * The verdict of one Deno permission check under a policy, SPEC §15:
 * read/write → fs with symlinks resolved; net and import → the core's
 * raw-connection rule (`PermissionPolicy::check_net`: a grant without a
 * path scope admits the host and port, no deny rule of the host denies it;
 * import over https); env → readable secrets; the rest → unknown. The
 * checker counts the one denial. Returns `{ decision, capability, payload }`
 * (the latter two for the audit log, in the `{ capability, payload }` shape
 * `learn --from` reads).
 */
function decide(counting, permission, value) {
  const unknown = () => counting.checkCapability(UNKNOWN_ID, {})
  if (value !== null && typeof value !== 'string') return { decision: unknown(), capability: Capability.UNKNOWN, payload: { permission } }
  switch (permission) {
    case 'read':
    case 'write': {
      const capability = permission === 'read' ? Capability.FS_READ : Capability.FS_WRITE
      // A null value asks for the whole permission: no manifest grants that. The empty path is invalid_path.
      const decision = counting.checkFs(value === null ? '' : value, permission, { resolveSymlinks: true })
      return { decision, capability, payload: { path: value } }
    }
    case 'net':
    case 'import': {
      // A null value asks for the whole permission: the empty target, invalid_url.
      const { decision, url } = checkNet(counting, value === null ? '' : value, permission)
      return { decision, capability: Capability.FETCH, payload: url === null ? { url: null, target: value } : { url } }
    }
    case 'env':
      return { decision: counting.checkCapability(Capability.SECRETS_GET, { name: value === null ? '' : value }), capability: Capability.SECRETS_GET, payload: { name: value } }
    default:
      return { decision: unknown(), capability: Capability.UNKNOWN, payload: { permission: DENO_PERMISSIONS.includes(permission) ? permission : 'other', value } }
  }
}

/** The `reason` Deno shows in `NotCapable`: registry id, code, capability, reason and the (redacted) plugin id; nothing from the request. */
const denyText = (d, plugin) => `${DENIED_PREFIX} ${d.capability} ${d.reason} (manifest of plugin "${require('./errors.js').redact(plugin).replaceAll('"', '\\u{22}')}")`

const DENIED_TEXT = new RegExp(`^${DENIED_PREFIX} (\\S+) (\\S+)`)

/** Parses `denyText` back: `{ capability, reason }` or null. */
function parseDenyText(text) {
  const m = DENIED_TEXT.exec(String(text))
  return m ? { capability: m[1], reason: m[2] } : null
}

function newStats() {
  return {
    connections: 0,
    rejectedConnections: 0,
    requests: 0,
    allowed: 0,
    denied: 0,
    malformed: 0,
    closedForLineLength: 0,
    closedForBackpressure: 0,
    byPermission: {},
    /** `capability reason` -> count */
    denials: {},
    /** `capability reason` -> count the shadow policy would deny */
    shadowDenials: {},
  }
}

function bump(obj, key) {
  obj[key] = (obj[key] || 0) + 1
}

/**
 * Serves Deno's permission broker protocol for `policy` on a fresh Unix
 * socket (mode 0600, in a new mkdtemp directory of mode 0700). Resolves to
 * `{ path, env, stats, expectPid(pid), close() }`: start Deno with
 * `env` (`DENO_PERMISSION_BROKER_PATH`) merged into its environment.
 * Exactly one client is served (Deno connects once); later connections are
 * closed at once. Options: `meter`, `shadow` (a candidate PermissionPolicy:
 * evaluated and reported, never enforced), `onDecision(entry)` (every
 * request and verdict, for an audit log), `maxLineBytes` (64 KiB),
 * `maxQueueBytes` (256 KiB), `tmpDir`.
 */
async function serveDenoBroker(policy, rawOptions) {
  const { PermissionChecker, PermissionPolicy, UnsupportedPlatformError } = pkg()
  if (!(policy instanceof PermissionPolicy)) throw new TypeError('policy must be a PermissionPolicy (from PermissionPolicy.fromManifest)')
  // Own data properties only: an option polluted onto Object.prototype is never read.
  const options = ownOptions(rawOptions, 'options', BROKER_OPTION_KEYS)
  if (process.platform === 'win32') throw new UnsupportedPlatformError({ feature: 'deno broker (Unix socket)', platform: `${process.platform}-${process.arch}` })
  const { meter, shadow, onDecision } = options
  if (shadow !== undefined && !(shadow instanceof PermissionPolicy)) throw new TypeError('options.shadow must be a PermissionPolicy')
  if (onDecision !== undefined && typeof onDecision !== 'function') throw new TypeError('options.onDecision must be a function')
  const intOpt = (name, dflt) => {
    const v = options[name] === undefined ? dflt : options[name]
    if (!Number.isSafeInteger(v) || v < 64) throw new TypeError(`options.${name} must be an integer >= 64`)
    return v
  }
  const maxLine = intOpt('maxLineBytes', MAX_LINE_BYTES)
  const maxQueue = intOpt('maxQueueBytes', MAX_QUEUE_BYTES)

  const noop = createNoopMeter()
  const counting = new PermissionChecker(policy, meter === undefined ? undefined : { meter })
  const shadowChecker = shadow === undefined ? null : new PermissionChecker(shadow, { meter: noop })
  const shadowCounter = shadow === undefined ? null : (meter || metrics.getMeter(METER_NAME)).createCounter(SHADOW_DENIED_TOTAL.name, { description: SHADOW_DENIED_TOTAL.description, unit: SHADOW_DENIED_TOTAL.unit })
  const plugin = policy.plugin
  const stats = newStats()
  let expectedPid = null

  const dir = fs.mkdtempSync(path.join(options.tmpDir === undefined ? os.tmpdir() : options.tmpDir, 'deno-broker-'))
  fs.chmodSync(dir, 0o700)
  const sockPath = path.join(dir, 'broker.sock')
  if (Buffer.byteLength(sockPath) > 100) {
    fs.rmSync(dir, { recursive: true, force: true })
    throw new RangeError(`socket path ${sockPath} is too long for a Unix socket; pass a shorter options.tmpDir`)
  }

  const emit = (entry) => {
    if (onDecision === undefined) return
    try {
      const r = onDecision(entry)
      // An async hook's rejection is isolated too (an unhandled rejection would end the host).
      if (r !== null && typeof r === 'object' && typeof r.then === 'function') Promise.resolve(r).catch(() => {})
    } catch {
      // An audit hook never changes a verdict nor stops the broker.
    }
  }

  /** One request → the reply object. Never throws. */
  const answer = (buf, state) => {
    stats.requests++
    let msg
    let id = null
    let why = null
    try {
      msg = JSON.parse(UTF8.decode(buf))
    } catch {
      why = 'not a JSON line in UTF-8'
    }
    if (why === null) {
      if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) why = 'not a JSON object'
      else {
        if (Number.isSafeInteger(msg.id) && msg.id >= 0) id = msg.id
        if (msg.v !== PROTOCOL_VERSION) why = `unsupported protocol version (this broker speaks v${PROTOCOL_VERSION})`
        else if (id === null) why = 'id must be a non-negative integer'
        else if (id <= state.lastId) why = 'id reused or not increasing'
        else if (typeof msg.permission !== 'string' || msg.permission.length > 64) why = 'permission must be a short string'
        else if (msg.value !== null && typeof msg.value !== 'string') why = 'value must be a string or null'
        else if (!Number.isSafeInteger(msg.pid) || msg.pid <= 0) why = 'pid must be a positive integer'
        else if (typeof msg.datetime !== 'string' || msg.datetime.length > 64) why = 'datetime must be a short string'
        else if (expectedPid !== null && msg.pid !== expectedPid) why = 'pid is not the process this broker serves'
      }
    }
    if (why !== null) {
      stats.malformed++
      const d = counting.checkCapability(UNKNOWN_ID, {})
      stats.denied++
      bump(stats.denials, `${d.capability} ${d.reason}`)
      emit({ time: new Date().toISOString(), malformed: why, capability: Capability.UNKNOWN, payload: { malformed: why }, allowed: false, reason: d.reason })
      return { id, result: 'deny', reason: `${DENIED_PREFIX} ${d.capability} ${d.reason} (malformed request: ${why})` }
    }
    state.lastId = id
    const { permission, value } = msg
    const { decision, capability, payload } = decide(counting, permission, value)
    const per = stats.byPermission[DENO_PERMISSIONS.includes(permission) ? permission : 'other'] || (stats.byPermission[DENO_PERMISSIONS.includes(permission) ? permission : 'other'] = { allowed: 0, denied: 0 })
    let shadowEntry
    if (shadowChecker !== null) {
      const s = decide(shadowChecker, permission, value).decision
      shadowEntry = s.allowed ? { allowed: true } : { allowed: false, capability: s.capability, reason: s.reason }
      if (!s.allowed) {
        bump(stats.shadowDenials, `${s.capability} ${s.reason}`)
        shadowCounter.add(1, { plugin, capability: s.capability, reason: s.reason })
      }
    }
    if (onDecision !== undefined) {
      const entry = { time: new Date().toISOString(), pid: msg.pid, id, permission, value, capability, payload, allowed: decision.allowed }
      if (!decision.allowed) entry.reason = decision.reason
      if (shadowEntry !== undefined) entry.shadow = shadowEntry
      emit(entry)
    }
    if (decision.allowed) {
      stats.allowed++
      per.allowed++
      return { id, result: 'allow' }
    }
    stats.denied++
    per.denied++
    bump(stats.denials, `${decision.capability} ${decision.reason}`)
    return { id, result: 'deny', reason: denyText(decision, plugin) }
  }

  let client = null
  let closed = false
  const server = net.createServer((sock) => {
    if (client !== null || closed) {
      stats.rejectedConnections++
      sock.destroy()
      return
    }
    client = sock
    stats.connections++
    const state = { lastId: -1, dead: false }
    const send = (reply) => {
      if (state.dead) return
      sock.write(`${JSON.stringify(reply)}\n`)
      if (sock.writableLength > maxQueue) {
        // A client that does not read: stop, rather than queue without bound.
        stats.closedForBackpressure++
        state.dead = true
        sock.destroy()
      } else if (sock.writableNeedDrain && !sock.isPaused()) {
        sock.pause()
        sock.once('drain', () => {
          if (!state.dead) sock.resume()
        })
      }
    }
    const tooLong = () => {
      stats.requests++
      stats.malformed++
      stats.closedForLineLength++
      const d = counting.checkCapability(UNKNOWN_ID, {})
      stats.denied++
      bump(stats.denials, `${d.capability} ${d.reason}`)
      emit({ time: new Date().toISOString(), malformed: `line over ${maxLine} bytes`, capability: Capability.UNKNOWN, payload: { malformed: 'line too long' }, allowed: false, reason: d.reason })
      send({ id: null, result: 'deny', reason: `${DENIED_PREFIX} ${d.capability} ${d.reason} (malformed request: line over ${maxLine} bytes)` })
      state.dead = true
      sock.end()
      setTimeout(() => sock.destroy(), 1000).unref()
    }
    // The shared bounded framing (lib/ipc-frame.js): at most maxLine bytes of
    // a line are buffered, the lines before an over-long one are answered,
    // then the connection is closed.
    const frames = new LineDecoder({ maxLineBytes: maxLine })
    sock.on('data', (buf) => {
      if (state.dead) return
      const { lines, violation } = frames.push(buf)
      for (const line of lines) {
        if (state.dead) return
        send(answer(line, state))
      }
      if (violation !== null && !state.dead) tooLong()
    })
    sock.on('error', () => {})
    sock.on('close', () => {
      state.dead = true
    })
  })
  server.on('error', () => {})
  await new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(sockPath, () => {
      server.off('error', reject)
      resolve()
    })
  })
  fs.chmodSync(sockPath, 0o600)

  const close = () =>
    new Promise((resolve) => {
      if (closed) return resolve()
      closed = true
      if (client !== null) client.destroy()
      server.close(() => {
        fs.rmSync(dir, { recursive: true, force: true })
        resolve()
      })
    })

  return {
    path: sockPath,
    env: Object.freeze({ DENO_PERMISSION_BROKER_PATH: sockPath }),
    stats,
    /** Deny every request whose `pid` is not `pid` (the Deno child this broker serves). */
    expectPid(pid) {
      if (!Number.isSafeInteger(pid) || pid <= 0) throw new TypeError('pid must be a positive integer')
      expectedPid = pid
    },
    close,
  }
}

/** A short summary of a broker's stats for stderr. */
function formatSummary(stats, budget) {
  const lines = [`deno broker: ${stats.requests} check${stats.requests === 1 ? '' : 's'}, ${stats.allowed} allowed, ${stats.denied} denied`]
  for (const [k, n] of Object.entries(stats.denials).sort()) lines.push(`  denied ${k} x${n}`)
  for (const [k, n] of Object.entries(stats.shadowDenials).sort()) lines.push(`  shadow would deny ${k} x${n}`)
  if (stats.malformed) lines.push(`  malformed requests: ${stats.malformed}`)
  if (stats.rejectedConnections) lines.push(`  extra connections refused: ${stats.rejectedConnections}`)
  if (budget) lines.push(`  BUDGET_EXCEEDED ${budget.budget}: observed ${Number(budget.observed).toFixed(1)} > limit ${budget.limit}; deno killed`)
  return lines.join('\n')
}

// ---- running Deno as a child under the broker -----------------------------

const CLK_TCK = 100 // USER_HZ on Linux

/**
 * `pid` and its descendants (from /proc/<pid>/task/<pid>/children, bounded):
 * a wrapper (the npm package's Node shim) runs deno as a grandchild, and a
 * budget must count deno, not the wrapper.
 */
function procTree(pid) {
  const out = [pid]
  for (let i = 0; i < out.length && out.length < 64; i++) {
    let kids = ''
    try {
      kids = fs.readFileSync(`/proc/${out[i]}/task/${out[i]}/children`, 'utf8')
    } catch {}
    for (const k of kids.split(' ')) if (/^\d+$/.test(k)) out.push(Number(k))
  }
  return out
}

/** CPU ms of the tree: utime + stime of each process, plus what the root reaped (cutime + cstime). */
function procCpuMs(pid) {
  let ticks = 0
  for (const p of procTree(pid)) {
    let stat
    try {
      stat = fs.readFileSync(`/proc/${p}/stat`, 'utf8')
    } catch (e) {
      if (p === pid) throw e
      continue
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    ticks += Number(fields[11]) + Number(fields[12]) + (p === pid ? Number(fields[13]) + Number(fields[14]) : 0)
  }
  return (ticks * 1000) / CLK_TCK
}

/** Resident MB of the tree (VmRSS summed). */
function procRssMb(pid) {
  let kb = 0
  for (const p of procTree(pid)) {
    let status
    try {
      status = fs.readFileSync(`/proc/${p}/status`, 'utf8')
    } catch (e) {
      if (p === pid) throw e
      continue
    }
    const m = /VmRSS:\s+(\d+) kB/.exec(status)
    if (m) kb += Number(m[1])
  }
  return kb / 1024
}

function isExecutable(p) {
  try {
    fs.accessSync(p, fs.constants.X_OK)
    return fs.statSync(p).isFile()
  } catch {
    return false
  }
}

/** Whether `file` starts with `#!` (a wrapper that runs deno as a grandchild). */
function isScript(file) {
  let fd
  try {
    fd = fs.openSync(file, 'r')
    const b = Buffer.alloc(2)
    return fs.readSync(fd, b, 0, 2, 0) === 2 && b.toString('latin1') === '#!'
  } catch {
    return false
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
  }
}

/**
 * The deno executable: `$DENO`; else the platform package's binary that
 * npm's `deno` package wraps (`@deno/<os>-<arch>[-glibc]`: the real
 * process, so /proc samples and signals reach Deno itself, not a Node
 * wrapper); else `node_modules/.bin/deno`; else `deno` on PATH. Searched
 * from `cwd`, then from this package.
 */
function resolveDeno(options) {
  const { env = process.env, cwd = process.cwd() } = Object.assign(Object.create(null), options)
  const own = (k) => (Object.hasOwn(env, k) ? env[k] : undefined)
  if (own('DENO')) {
    if (!isExecutable(env.DENO)) throw new Error(`$DENO is ${env.DENO}, which is not an executable file`)
    return env.DENO
  }
  const libc = process.platform === 'linux' ? '-glibc' : ''
  const platformPkg = `@deno/${process.platform}-${process.arch}${libc}`
  for (const from of [cwd, __dirname]) {
    try {
      const dir = path.dirname(require.resolve(`${platformPkg}/package.json`, { paths: [from] }))
      const exe = path.join(dir, 'deno')
      if (isExecutable(exe)) return exe
    } catch {}
  }
  for (const from of [cwd, path.join(__dirname, '..')]) {
    const exe = path.join(from, 'node_modules', '.bin', 'deno')
    if (isExecutable(exe)) return exe
  }
  for (const d of (own('PATH') || '').split(path.delimiter)) {
    if (d && isExecutable(path.join(d, 'deno'))) return path.join(d, 'deno')
  }
  throw new Error('deno not found: install the `deno` npm package, put deno on PATH, or set $DENO')
}

/**
 * Runs `deno <args>` under a broker for `policy`, enforcing the policy's
 * budgets from outside (wall clock; CPU from /proc/<pid>/stat and RSS from
 * /proc/<pid>/status on Linux), killing Deno on BUDGET_EXCEEDED. Resolves
 * `{ code, signal, exitCode, budget, stats }`; `exitCode` is Deno's, or
 * 128 + signal number when it was killed. Options: `args`, `deno` (the
 * binary), `env` (default `process.env`), `cwd`, `stdio` (default
 * 'inherit'), `meter`, `shadow`, `onDecision`, `tmpDir`, `sampleEveryMs`
 * (20), `cpuGraceMs`, `forwardSignals`, `log`.
 */
async function runDeno(policy, rawOptions) {
  const { spawn } = require('node:child_process')
  // Own data properties only: a polluted `deno` or `env` must never choose what runs.
  const options = ownOptions(rawOptions, 'options', RUN_OPTION_KEYS)
  const { BudgetTracker, isBudgetExceeded } = pkg()
  const args = options.args || []
  const deno = options.deno || resolveDeno({ env: options.env || process.env, cwd: options.cwd })
  const budgets = policy.budgets
  const onLinux = process.platform === 'linux'
  if (!onLinux && (Object.hasOwn(budgets, 'cpuPercent') || Object.hasOwn(budgets, 'memoryMb'))) {
    throw new Error('cpuPercent and memoryMb budgets are sampled from /proc: Linux only (a budget is never silently unenforced)')
  }
  const broker = await serveDenoBroker(policy, { meter: options.meter, shadow: options.shadow, onDecision: options.onDecision, tmpDir: options.tmpDir })
  const env = { ...(options.env || process.env), DENO_NO_UPDATE_CHECK: '1', ...broker.env }
  let child
  try {
    child = spawn(deno, args, { cwd: options.cwd, env, stdio: options.stdio || 'inherit' })
  } catch (e) {
    await broker.close()
    throw e
  }
  // Deno reports its own pid; a wrapper script (node_modules/.bin/deno is a Node shim) starts deno as its child.
  if (child.pid !== undefined && !isScript(deno)) broker.expectPid(child.pid)
  const log = options.log || (() => {})
  // The child and (Linux) its descendants: a wrapper's deno dies with it.
  const killTree = () => {
    const pids = onLinux && child.pid !== undefined ? procTree(child.pid) : []
    child.kill('SIGKILL')
    for (const p of pids.slice(1)) {
      try {
        process.kill(p, 'SIGKILL')
      } catch {}
    }
  }
  let budget = null
  let timer = null
  const sampleEvery = options.sampleEveryMs || 20
  // A reading that fails (the child is exiting) repeats the last one: the exit event ends the run.
  const lastOf = (read) => {
    let last = 0
    return () => {
      try {
        last = read(child.pid)
      } catch {}
      return last
    }
  }
  const startSampling = () => {
    if (Object.keys(budgets).length === 0) return
    let tracker
    try {
      tracker = new BudgetTracker(policy, {
        meter: options.meter,
        capability: 'deno',
        cpuGraceMs: options.cpuGraceMs,
        hooks: onLinux ? { now: () => performance.now(), cpuTimeMs: lastOf(procCpuMs), rssMb: lastOf(procRssMb) } : { now: () => performance.now() },
      })
    } catch (e) {
      killTree()
      throw e
    }
    timer = setInterval(() => {
      try {
        tracker.sample()
        tracker.assertWithin()
      } catch (e) {
        if (isBudgetExceeded(e)) {
          budget = { budget: e.details.budget, limit: e.details.limit, observed: e.details.observed }
          log(`BUDGET_EXCEEDED ${e.details.budget}: observed ${Number(e.details.observed).toFixed(1)} > limit ${e.details.limit}; killing deno ${child.pid}`)
          clearInterval(timer)
          killTree()
        }
      }
    }, sampleEvery)
  }
  const forward = (sig) => () => child.kill(sig)
  const handlers = options.forwardSignals ? ['SIGINT', 'SIGTERM', 'SIGHUP'].map((s) => [s, forward(s)]) : []
  for (const [s, h] of handlers) process.on(s, h)
  try {
    const exited = new Promise((resolve, reject) => {
      child.once('error', reject)
      child.once('exit', (code, signal) => resolve({ code, signal }))
    })
    if (child.pid !== undefined) startSampling()
    const { code, signal } = await exited
    const signals = os.constants.signals
    const exitCode = code !== null ? code : 128 + (signals[signal] || 9)
    return { code, signal, exitCode, budget, stats: broker.stats }
  } finally {
    clearInterval(timer)
    for (const [s, h] of handlers) process.off(s, h)
    await broker.close()
  }
}

module.exports = { serveDenoBroker, runDeno, resolveDeno, formatSummary, parseDenyText, DENO_PERMISSIONS, SHADOW_DENIED_TOTAL, MAX_LINE_BYTES, MAX_QUEUE_BYTES }
