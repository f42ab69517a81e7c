#!/usr/bin/env node
'use strict'
// api-sandbox-permissions: lint, explain and learn manifests.
// Exit codes (grep-style): 0 ok / allowed / clean, 1 invalid manifest /
// denied / warnings under --strict, 2 usage or I/O error.
const fs = require('node:fs')
const path = require('node:path')
const { PermissionPolicy, isInvalidManifest, learnManifest } = require('..')

const USAGE = `usage:
  api-sandbox-permissions lint <manifest.json> [--platform posix|win32] [--strict] [--json]
  api-sandbox-permissions explain <manifest.json> <query> [--platform posix|win32] [--json]
      query: fs:read:/path | fs:write:/path | fetch:URL | cap:<id>:<payload JSON>
  api-sandbox-permissions learn <plugin.js> [--config <config.json>] [--platform ...] [--json]
      runs the plugin in the example vm-host in AUDIT mode (every call allowed and
      recorded; only in a throwaway environment) and prints the minimal manifest
  api-sandbox-permissions learn --from <audit.jsonl>
      the same from a recorded log: one { "capability", "payload" } per line`

class UsageError extends Error {}

function parseArgs(argv) {
  const flags = { json: false, strict: false, platform: undefined, config: undefined, from: undefined }
  const rest = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--json') flags.json = true
    else if (a === '--strict') flags.strict = true
    else if (a === '--platform' || a === '--config' || a === '--from') {
      if (i + 1 >= argv.length) throw new UsageError(`${a} needs a value`)
      flags[a.slice(2)] = argv[++i]
    } else if (a === '-h' || a === '--help') throw new UsageError('')
    else if (a.startsWith('--')) throw new UsageError(`unknown option ${a}`)
    else rest.push(a)
  }
  if (flags.platform !== undefined && !['posix', 'win32'].includes(flags.platform)) throw new UsageError('--platform must be posix or win32')
  return { flags, rest }
}

function readJson(file) {
  let text
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (e) {
    throw new UsageError(`cannot read ${file}: ${e.code || e.message}`)
  }
  try {
    return JSON.parse(text)
  } catch (e) {
    throw new UsageError(`${file} is not JSON: ${e.message}`)
  }
}

function load(file, flags, out) {
  try {
    return PermissionPolicy.fromManifest(readJson(file), { plugin: path.basename(file), platform: flags.platform })
  } catch (e) {
    if (!isInvalidManifest(e)) throw e
    out.result = { valid: false, error: { code: e.code, id: e.id, pointer: e.details.pointer, expected: e.details.expected } }
    out.text.push(`${file}: INVALID_MANIFEST at ${e.details.pointer || '(root)'}: expected ${e.details.expected}`)
    return null
  }
}

function lint(args, flags, out) {
  if (args.length !== 1) throw new UsageError('lint takes one manifest file')
  const policy = load(args[0], flags, out)
  if (!policy) return 1
  const warnings = policy.lint()
  out.result = { valid: true, warnings, manifest: policy.toJSON() }
  for (const w of warnings) out.text.push(`${args[0]}: warning ${w.code} at ${w.pointer}: ${w.message}`)
  out.text.push(`${args[0]}: valid, ${warnings.length} warning${warnings.length === 1 ? '' : 's'}`)
  return flags.strict && warnings.length ? 1 : 0
}

function explain(args, flags, out) {
  if (args.length !== 2) throw new UsageError('explain takes a manifest file and a query')
  const policy = load(args[0], flags, out)
  if (!policy) return 1
  const q = args[1]
  let r
  let m
  if ((m = /^fs:(read|write):(.*)$/s.exec(q))) r = policy.explainFs(m[2], m[1])
  else if ((m = /^fetch:(.*)$/s.exec(q))) r = policy.explainFetch(m[1])
  else if ((m = /^cap:([^:]*):(.*)$/s.exec(q))) {
    let payload
    try {
      payload = JSON.parse(m[2])
    } catch {
      throw new UsageError('cap: payload must be JSON')
    }
    r = policy.explainCapability(m[1], payload)
  } else throw new UsageError(`unknown query ${JSON.stringify(q)}`)
  out.result = r
  const d = r.decision
  out.text.push(d.allowed ? 'ALLOWED' : `DENIED ${d.capability} ${d.reason}`)
  const detail = r.fs || r.fetch || r
  if (detail.normalized !== undefined) out.text.push(`normalised path: ${detail.normalized ?? '(invalid)'}`)
  if (detail.why) out.text.push(`why: ${detail.why}`)
  for (const g of detail.matchedGrants || []) out.text.push(`matches ${g.pointer} ${JSON.stringify(g.path)} (${g.mode})${g.grantsMode ? '' : ': not for this mode'}`)
  if (detail.url) out.text.push(`parsed: ${detail.url.canonical} (host ${detail.url.host}, port ${detail.url.port}${detail.url.hasCredentials ? ', has credentials' : ''})`)
  for (const h of detail.hostMatches || []) out.text.push(`host matches ${h.pointer} ${JSON.stringify(h.pattern)}: scheme ${h.schemeOk ? 'ok' : 'not granted'}, port ${h.portOk ? 'ok' : 'not granted'}`)
  if (detail.hostMatches && detail.hostMatches.length === 0 && detail.url) out.text.push('no pattern matches this host')
  for (const x of r.matched || []) out.text.push(`declared at ${x.pointer}${x.pattern ? ` (${x.pattern})` : ''}`)
  if (!d.allowed && (detail.matchedGrants || []).length === 0 && r.matched && r.matched.length === 0) out.text.push('nothing declared matches')
  return d.allowed ? 0 : 1
}

async function learn(args, flags, out) {
  let calls
  if (flags.from !== undefined) {
    if (args.length) throw new UsageError('learn --from takes no plugin')
    let text
    try {
      text = fs.readFileSync(flags.from, 'utf8')
    } catch (e) {
      throw new UsageError(`cannot read ${flags.from}: ${e.code || e.message}`)
    }
    calls = text
      .split('\n')
      .filter((l) => l.trim())
      .map((l, i) => {
        try {
          return JSON.parse(l)
        } catch {
          throw new UsageError(`${flags.from}:${i + 1}: not JSON`)
        }
      })
  } else {
    if (args.length !== 1) throw new UsageError('learn takes one plugin file (or --from <log>)')
    const { runPlugin } = require('../examples/vm-host/host.js')
    let code
    try {
      code = fs.readFileSync(args[0], 'utf8')
    } catch (e) {
      throw new UsageError(`cannot read ${args[0]}: ${e.code || e.message}`)
    }
    const config = flags.config ? readJson(flags.config) : {}
    calls = []
    const policy = PermissionPolicy.fromManifest({ budgets: { wallClockMs: 30_000 } }, { plugin: 'learn' })
    const r = await runPlugin({ name: path.basename(args[0]), code, policy, config, audit: (capability, payload) => calls.push({ capability, payload }) })
    if (!r.ok) out.text.push(`note: the plugin ended with ${r.code}${r.message ? `: ${r.message}` : ''}`)
  }
  const { manifest, unlearned } = learnManifest(calls, { platform: flags.platform })
  // The learned manifest must itself be valid and allow every learned call.
  const policy = PermissionPolicy.fromManifest(manifest, { plugin: 'learned', platform: flags.platform })
  const { createChecker } = require('..')
  const checker = createChecker(manifest, { plugin: 'learned', platform: flags.platform })
  const misses = calls.filter((c) => !unlearned.some((u) => u.capability === c.capability) && c.capability !== 'log' && !checker.checkCapability(c.capability, c.payload).allowed)
  out.result = { manifest: policy.toJSON(), calls: calls.length, unlearned, misses }
  out.text.push(JSON.stringify(manifest, null, 2))
  for (const u of unlearned) out.text.push(`not learned: ${u.capability}: ${u.why}`)
  return misses.length ? 1 : 0
}

async function main(argv) {
  const out = { text: [], result: null }
  let code
  let flags = { json: false }
  try {
    const parsed = parseArgs(argv.slice(1))
    flags = parsed.flags
    const cmd = argv[0]
    if (cmd === 'lint') code = lint(parsed.rest, flags, out)
    else if (cmd === 'explain') code = explain(parsed.rest, flags, out)
    else if (cmd === 'learn') code = await learn(parsed.rest, flags, out)
    else throw new UsageError(cmd === undefined ? '' : `unknown command ${cmd}`)
  } catch (e) {
    if (!(e instanceof UsageError)) throw e
    if (e.message) process.stderr.write(`api-sandbox-permissions: ${e.message}\n`)
    process.stderr.write(`${USAGE}\n`)
    return 2
  }
  if (flags.json) process.stdout.write(`${JSON.stringify(out.result)}\n`)
  else process.stdout.write(`${out.text.join('\n')}\n`)
  return code
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
  },
  (e) => {
    process.stderr.write(`api-sandbox-permissions: ${e && e.stack ? e.stack : e}\n`)
    process.exitCode = 2
  },
)
