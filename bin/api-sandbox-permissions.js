#!/usr/bin/env node
'use strict'
// api-sandbox-permissions: lint, explain and learn manifests; run Deno under one.
// Exit codes (grep-style): 0 ok / allowed / clean, 1 invalid manifest /
// denied / warnings under --strict, 2 usage or I/O error, or no answer
// (diff could not prove; learn's plugin run failed).
const fs = require('node:fs')
const path = require('node:path')
const util = require('node:util')
const { parseJsonSource } = require('../lib/json-source.js')

const NAME = 'api-sandbox-permissions'

/** The wall-clock budget of a `learn` run unless --timeout says otherwise. */
const LEARN_TIMEOUT_MS = 30_000

const COMMON = {
  platform: { type: 'string', help: '--platform <posix|win32>  path flavour of fs checks (default: this host)' },
  json: { type: 'boolean', help: '--json                     machine-readable output on stdout (errors too)' },
  help: { type: 'boolean', short: 'h', help: '-h, --help                 this help' },
}

const COMMANDS = {
  lint: {
    usage: `${NAME} lint <manifest.json> [--platform posix|win32] [--strict] [--json]`,
    about: 'Validates a manifest (INVALID_MANIFEST with its JSON pointer) and warns about grants that widen authority.',
    positionals: 1,
    options: { ...COMMON, strict: { type: 'boolean', help: '--strict                   exit 1 when there are warnings' } },
  },
  explain: {
    usage: `${NAME} explain <manifest.json> <query> [--platform posix|win32] [--json]`,
    about: 'Shows the decision for one call and which grant matched (or why none did).\n  query: fs:read:/path | fs:write:/path | fetch:URL | cap:<id>:<payload JSON>',
    positionals: 2,
    options: { ...COMMON },
  },
  learn: {
    usage:
      `${NAME} learn <plugin.js> [--config <config.json>] [--secret NAME[=VALUE]]... [--secrets-file <secrets.json>]\n` +
      `      [--timeout <ms>] [--memory-mb <MB>] [--partial] [--generalize] [--platform posix|win32] [--json]\n` +
      `  ${NAME} learn --from <audit.jsonl> [--generalize] [--platform posix|win32] [--json]`,
    about:
      'Prints the minimal manifest (exact grants only) for the calls a plugin makes. With <plugin.js> it runs\n' +
      '  the plugin in the example vm-host in AUDIT mode: every call allowed, performed and recorded, so only\n' +
      '  in a throwaway environment. With --from it reads a log of one { "capability", "payload" } per line.\n' +
      '  Calls that cannot become a valid grant (relative paths, unknown capabilities) are listed, not learned;\n' +
      '  calls are numbered from 1 in the order made (text and --json alike).\n' +
      '\n' +
      '  A run that fails (the plugin throws, its worker fails, it goes over --timeout or --memory-mb) exits 2\n' +
      '  and says why on stderr, with no manifest on stdout: it may have stopped before calls it would make.\n' +
      '  --partial prints the manifest of the calls made until then (still exit 2). The plugin\'s console lines\n' +
      '  go to stderr as they are printed, prefixed [plugin], control characters escaped.\n' +
      '  Secrets: --secret NAME=VALUE, --secret NAME (the value of the environment variable NAME) or a JSON\n' +
      '  file { "NAME": "value" }. The plugin reads one with secrets.get(NAME) (learned as a readable secret)\n' +
      '  or sends config.secretPlaceholders.NAME in a fetch header (learned as { name, hosts }). Values are\n' +
      '  never printed: in console lines and errors each shows as [secret NAME], and a call that holds one is\n' +
      '  not learned.\n' +
      '\n' +
      '  plugin.js is a script body run as an async function inside a vm.Context: top-level await and return\n' +
      '  work; there is no require, import or process. Its globals (each returns a Promise):\n' +
      '    fs.readFile(path) -> string            fs.writeFile(path, data)\n' +
      '    fetch(url, { method, headers, body }) -> { status, body }\n' +
      '    secrets.get(name) -> string            events.publish(topic, data)\n' +
      '    capability(id, payload)                any other capability call, e.g. capability(\'db.query\', { database }),\n' +
      '                                           capability(\'events.subscribe\', { topic: \'orders.*\' })\n' +
      '    console.log(...args)                   config: the --config object (frozen)\n' +
      '  e.g.  const input = await fs.readFile(`${config.root}/input.txt`)\n' +
      '        await fetch(\'https://api.example.com/v1/items\', { method: \'POST\', body: input })\n' +
      '  --from: one JSON object per line, { "capability": <id>, "payload": <object> }, e.g. the id fs.read with\n' +
      '  the payload { "path": "/srv/a" }' +
      ' (what `deno --audit` writes).',
    positionals: 1,
    options: {
      ...COMMON,
      config: { type: 'string', help: '--config <config.json>     the plugin\'s config object' },
      from: { type: 'string', help: '--from <audit.jsonl>       learn from a recorded log instead of running a plugin' },
      generalize: { type: 'boolean', help: '--generalize               propose globs for clusters of 3+ exact fs grants (dir/*.ext), each with what it widens' },
      secret: { type: 'string', multiple: true, help: '--secret NAME[=VALUE]      a secret for the run (without =VALUE: the environment variable NAME); repeatable' },
      'secrets-file': { type: 'string', help: '--secrets-file <file.json> secrets for the run, a JSON object { "NAME": "value" }' },
      timeout: { type: 'string', help: `--timeout <ms>             the run's wall-clock budget (default ${LEARN_TIMEOUT_MS})` },
      'memory-mb': { type: 'string', help: "--memory-mb <MB>           the run's memory budget (default: none)" },
      partial: { type: 'boolean', help: '--partial                  when the run fails, print the manifest of the calls made until then' },
    },
  },
  diff: {
    usage: `${NAME} diff <old.json> <new.json> [--platform posix|win32] [--json]`,
    about:
      'Answers whether every request the new manifest allows is allowed by the old one, decided on the compiled\n' +
      '  policies (fs globs per mode as automata, fetch schemes, hosts, ports and paths, deny rules, secrets,\n' +
      '  topics, db, budgets). Each widening and narrowing comes with a request both checkers were run on.\n' +
      '  Exit 0: nothing widens; 1: something widens; 2: could not prove it within the bound (or bad input).',
    positionals: 2,
    options: { ...COMMON },
  },
  deno: {
    usage: `${NAME} deno <manifest.json> [--plugin <id>] [--shadow <candidate.json>] [--audit <log.jsonl>] [--json] -- <deno args>`,
    about:
      'Runs deno as a child with its permission broker (DENO_PERMISSION_BROKER_PATH) served from the manifest:\n' +
      '  every read/write/net/import/env check is decided by the manifest (run, ffi, sys: denied), budgets are\n' +
      '  enforced from /proc (deno is killed on BUDGET_EXCEEDED), and a denial summary goes to stderr at exit.\n' +
      "  Exits with deno's exit code (128 + signal when killed). deno: $DENO, the npm `deno` package, or PATH.\n" +
      '  --audit writes every request and verdict as JSONL (readable by `learn --from`); --shadow reports what a\n' +
      '  candidate manifest would deny without enforcing it; --json prints the summary as JSON on stdout at exit.',
    positionals: 1,
    options: {
      ...COMMON,
      plugin: { type: 'string', help: '--plugin <id>              plugin id for metrics and messages (default: the manifest file name)' },
      shadow: { type: 'string', help: '--shadow <candidate.json>  report what this manifest would deny (never enforced)' },
      audit: { type: 'string', help: '--audit <log.jsonl>        append every request and verdict as JSON lines' },
    },
  },
}

const version = () => require('../package.json').version

function usage() {
  return [
    `usage: ${NAME} <command> [options]`,
    '',
    'commands:',
    '  lint      validate a manifest and warn about broad grants',
    '  explain   show the decision for one call, and why',
    '  learn     print the minimal manifest for the calls a plugin makes',
    '  diff      prove a manifest change grants no new authority (exit 1 widens, 2 unproven)',
    '  deno      run deno under the manifest (its permission broker)',
    '',
    `${NAME} <command> --help    help for one command`,
    `${NAME} --version           the package version`,
    '',
    'exit codes: 0 valid / allowed, 1 invalid manifest / denied / warnings under --strict, 2 usage or I/O error',
    '  (diff: 2 could not prove; learn: 2 the plugin run failed)',
  ].join('\n')
}

function commandHelp(name) {
  const c = COMMANDS[name]
  return [`usage: ${c.usage}`, '', `  ${c.about}`, '', 'options:', ...Object.values(c.options).map((o) => `  ${o.help}`)].join('\n')
}

/** A command-line mistake: message plus the command's usage line. */
class UsageError extends Error {
  constructor(message, command) {
    super(message)
    this.command = command
  }
}
/** A file that cannot be read or parsed: the message alone (`line`/`column` for JSON). */
class InputError extends Error {
  constructor(message, where = {}) {
    super(message)
    if (where.line !== undefined) Object.assign(this, { line: where.line, column: where.column })
  }
}

/** Edit distance with adjacent transpositions (optimal string alignment), for "did you mean". */
function distance(a, b) {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)])
  for (let j = 1; j <= b.length; j++) d[0][j] = j
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1))
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1)
    }
  }
  return d[a.length][b.length]
}
/** ` (did you mean X?)` for the nearest of `names` within a third of its length, else ''. */
function didYouMean(word, names) {
  let best = null
  for (const n of names) {
    const d = distance(word, n)
    if (d <= Math.max(1, Math.floor(n.length / 3)) && (best === null || d < best.d)) best = { n, d }
  }
  return best ? ` (did you mean ${best.n}?)` : ''
}
/** A string for a one-line message: quoted when it holds a control or invisible character. */
const printable = (s) => (/[\p{C}]/u.test(s) ? JSON.stringify(s) : s)

function parse(name, argv) {
  const spec = COMMANDS[name]
  const options = {}
  for (const [k, o] of Object.entries(spec.options)) options[k] = { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) }
  let parsed
  try {
    parsed = util.parseArgs({ args: argv, options, allowPositionals: true, strict: true })
  } catch (e) {
    let message = String(e.message).split('\n')[0].replace(/\. To specify a positional argument.*$/, '')
    const unknown = e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && /'(-{1,2}[^'=]*)/.exec(message)
    if (unknown) {
      const flag = unknown[1]
      const hint = didYouMean(flag, Object.keys(spec.options).map((k) => `--${k}`))
      const elsewhere = Object.keys(COMMANDS).filter((c) => c !== name && Object.hasOwn(COMMANDS[c].options, flag.replace(/^-+/, '')))
      message += hint || (elsewhere.length ? ` (${flag} is an option of ${elsewhere.join(', ')})` : '')
    }
    throw new UsageError(message, name)
  }
  const flags = parsed.values
  if (flags.platform !== undefined && !require('../lib/native.js').PLATFORMS.includes(flags.platform)) throw new UsageError(`--platform must be posix or win32, got ${JSON.stringify(flags.platform)}`, name)
  return { flags, rest: parsed.positionals }
}

function readText(file) {
  try {
    return fs.readFileSync(file, 'utf8')
  } catch (e) {
    const why = e.code === 'ENOENT' ? 'no such file' : e.code === 'EISDIR' ? 'is a directory' : e.code === 'ERR_STRING_TOO_LONG' ? 'larger than one JS string can hold (about 512 MiB)' : e.code || e.message
    throw new InputError(`cannot read ${file}: ${why}`)
  }
}

/** `{ value, locate(pointer) -> { line, column } }`; malformed JSON is an InputError with its line and column. */
function readJsonSource(file) {
  const text = readText(file)
  try {
    return parseJsonSource(text, file)
  } catch (e) {
    throw new InputError(e.message, e)
  }
}
const readJson = (file) => readJsonSource(file).value
/** `file:line:column` of a pointer's value, or `file` alone. */
function at(file, source, pointer) {
  const where = source.locate(pointer)
  return where ? `${file}:${where.line}:${where.column}` : file
}

/**
 * Longest line of a `learn --from` log that is read as a call: a URL is at
 * most 64 KiB, every other field 4 KiB, so a longer line holds nothing a
 * grant can express (and is not parsed).
 */
const MAX_AUDIT_LINE = 1 << 20

/** At most this many errors per lint run. */
const MAX_LINT_ERRORS = 100
const pluginName = (file) => path.basename(file).slice(0, 256) || 'manifest'

/**
 * The one place a command reads a manifest file: `{ source, policy }`, or
 * `{ source, errors }` when it is INVALID_MANIFEST (the first error, or with
 * `all` every error lib/manifest-errors.js finds), each error with its
 * `line` and `column`. Unreadable or malformed files are an InputError.
 */
function readManifest(file, flags, { all = false, plugin = pluginName(file) } = {}) {
  const { PermissionPolicy, isInvalidManifest } = require('..')
  const source = readJsonSource(file)
  const opts = { plugin, platform: flags.platform }
  try {
    return { source, policy: PermissionPolicy.fromManifest(source.value, opts) }
  } catch (e) {
    if (!isInvalidManifest(e)) throw e
    const found = all ? require('../lib/manifest-errors.js').manifestErrors(source.value, { ...opts, max: MAX_LINT_ERRORS }) : [{ pointer: e.details.pointer, expected: e.details.expected, code: e.code, id: e.id }]
    const errors = found.map((x) => ({ ...x, ...source.locate(x.pointer) }))
    return { source, errors, incomplete: found.incomplete === true }
  }
}

/** The line of one manifest error: `file:line:column: INVALID_MANIFEST at <pointer>: expected ...`. */
const errorLine = (file, source, e) => `${at(file, source, e.pointer)}: INVALID_MANIFEST at ${printable(e.pointer) || '(root)'}: expected ${e.expected}`

function load(file, flags, out) {
  const m = readManifest(file, flags)
  if (m.policy) return m.policy
  const e = m.errors[0]
  out.result = { valid: false, error: e }
  out.text.push(errorLine(file, m.source, e))
  return null
}

function lint(args, flags, out) {
  if (args.length !== 1) throw new UsageError('lint takes one manifest file', 'lint')
  const file = args[0]
  const m = readManifest(file, flags, { all: true })
  if (!m.policy) {
    // Every error, in file order, each with its pointer and line:column.
    const errors = m.errors.sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0))
    out.result = { valid: false, error: errors[0], errors }
    for (const e of errors) out.text.push(errorLine(file, m.source, e))
    const more =
      errors.length >= MAX_LINT_ERRORS
        ? ` shown (the first ${MAX_LINT_ERRORS}; fix these and lint again for the rest)`
        : m.incomplete
          ? ' shown (more may follow between entries; fix these and lint again)'
          : ''
    out.text.push(`${file}: invalid, ${errors.length} error${errors.length === 1 ? '' : 's'}${more}`)
    return 1
  }
  const policy = m.policy
  const warnings = policy.lint()
  out.result = { valid: true, warnings, manifest: policy.toJSON() }
  for (const w of warnings) out.text.push(`${args[0]}: warning ${w.code} at ${w.pointer}: ${w.message}`)
  out.text.push(`${args[0]}: valid, ${warnings.length} warning${warnings.length === 1 ? '' : 's'}`)
  return flags.strict && warnings.length ? 1 : 0
}

function explain(args, flags, out) {
  if (args.length !== 2) throw new UsageError('explain takes a manifest file and a query', 'explain')
  const q = args[1]
  const m0 = /^(fs:(read|write):|fetch:|cap:([^:]*):)/s.exec(q)
  if (!m0) throw new UsageError(`unknown query ${JSON.stringify(q)}: expected fs:read:/path, fs:write:/path, fetch:URL or cap:<id>:<payload JSON>`, 'explain')
  let payload
  if (q.startsWith('cap:')) {
    try {
      payload = JSON.parse(q.slice(m0[0].length))
    } catch {
      throw new UsageError('cap: payload must be JSON, e.g. cap:secrets.get:{"name":"KEY"}', 'explain')
    }
  }
  const policy = load(args[0], flags, out)
  if (!policy) return 1
  let r
  if (q.startsWith('fs:')) r = policy.explainFs(q.slice(m0[0].length), m0[2])
  else if (q.startsWith('fetch:')) r = policy.explainFetch(q.slice(m0[0].length))
  else r = policy.explainCapability(m0[3], payload)
  out.result = r
  const d = r.decision
  out.text.push(d.allowed ? 'ALLOWED' : `DENIED ${d.capability} ${d.reason}`)
  const detail = r.fs || r.fetch || r
  if (detail.normalized !== undefined) out.text.push(`normalised path: ${detail.normalized ?? '(invalid)'}`)
  const deniedBy = detail.deniedBy
  if (deniedBy) out.text.push(`denied by ${deniedBy.pointer} ${JSON.stringify(deniedBy.path ?? deniedBy.pattern)}`)
  const why = r.why ?? detail.why
  if (why) out.text.push(`why: ${why}`)
  for (const g of detail.matchedGrants || []) out.text.push(`matches ${g.pointer} ${JSON.stringify(g.path)} (${g.mode})${g.grantsMode ? '' : ': not for this mode'}`)
  if (detail.incomplete) out.text.push(`(matching grants and deny rules not all listed: ${detail.incomplete})`)
  if (detail.url) out.text.push(`parsed: ${detail.url.canonical} (host ${detail.url.host}, port ${detail.url.port}${detail.url.hasCredentials ? ', has credentials' : ''})`)
  for (const h of detail.hostMatches || []) out.text.push(`host matches ${h.pointer} ${JSON.stringify(h.pattern)}: scheme ${h.schemeOk ? 'ok' : 'not granted'}, port ${h.portOk ? 'ok' : 'not granted'}, path ${h.pathOk ? 'ok' : 'not granted'}`)
  if (detail.hostMatches && detail.hostMatches.length === 0 && detail.url) out.text.push('no pattern matches this host')
  for (const x of r.matched || []) out.text.push(`declared at ${x.pointer}${x.pattern ? ` (${x.pattern})` : ''}`)
  if (!d.allowed && (detail.matchedGrants || []).length === 0 && r.matched && r.matched.length === 0) out.text.push('nothing declared matches')
  return d.allowed ? 0 : 1
}

/**
 * The secrets of a `learn` run: a Map name -> value from --secrets-file and
 * every --secret. No message quotes what was given (a value typed where a
 * name belongs must not be echoed): each names the option and its position.
 */
function readSecrets(flags) {
  const { PermissionPolicy, isInvalidManifest } = require('..')
  const { MAX_SECRET_VALUES } = require('../lib/learn.js')
  const secrets = new Map()
  // A mistake on the command line is a usage error; one in the file, an input error.
  const add = (name, value, where, inFile) => {
    const fail = (why) => (inFile ? new InputError(`${where}: ${why}`) : new UsageError(`${where}: ${why}`, 'learn'))
    if (name.length === 0) throw fail('no name')
    if (typeof value !== 'string' || value.length === 0) throw fail(`the value is ${typeof value === 'string' ? 'empty' : 'not a string'}`)
    if (secrets.has(name)) throw fail('the name is given twice')
    try {
      PermissionPolicy.fromManifest({ secrets: [name] }, { plugin: 'learn' })
    } catch (e) {
      if (!isInvalidManifest(e)) throw e
      throw fail(`not a secret name (expected ${e.details.expected})`)
    }
    secrets.set(name, value)
    if (secrets.size > MAX_SECRET_VALUES) throw fail(`more than ${MAX_SECRET_VALUES} secrets`)
  }
  if (flags['secrets-file'] !== undefined) {
    const file = flags['secrets-file']
    const text = readText(file)
    let value
    try {
      value = parseJsonSource(text, file).value
    } catch (e) {
      // The position and what was expected, never the text found there.
      throw new InputError(e.line !== undefined ? `${file}:${e.line}:${e.column}: is not JSON: expected ${e.expected}` : `${file} is not JSON`, e)
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new InputError(`${file}: expected an object { "NAME": "value" }`)
    Object.keys(value).forEach((name, i) => add(name, value[name], `${file}: secret ${i + 1}`, true))
  }
  ;(flags.secret || []).forEach((arg, i) => {
    const eq = arg.indexOf('=')
    const where = `--secret (the ${ordinal(i + 1)})`
    if (eq >= 0) return add(arg.slice(0, eq), arg.slice(eq + 1), where, false)
    if (!Object.hasOwn(process.env, arg)) throw new UsageError(`${where}: give NAME=VALUE, or NAME alone with an environment variable of that name set`, 'learn')
    return add(arg, process.env[arg], where, false)
  })
  return secrets
}

const ordinal = (n) => `${n}${n % 100 >= 11 && n % 100 <= 13 ? 'th' : ['th', 'st', 'nd', 'rd'][n % 10] || 'th'}`

/** A positive whole number of an option, or a UsageError. */
function positiveInt(flags, key) {
  const v = flags[key]
  if (v === undefined) return undefined
  if (!/^[1-9][0-9]{0,9}$/.test(v)) throw new UsageError(`--${key} must be a whole number above 0`, 'learn')
  return Number(v)
}

/** Why a learn run failed, one line of the plugin's words redacted, escaped and bounded. */
function runFailure(r, budgets, redact) {
  const { escapeLine, MAX_RECORDED_CALLS } = require('../lib/learn-run.js')
  if (r.overflow) return `the plugin made more calls than learn records (at most ${MAX_RECORDED_CALLS})`
  // A budget the host stopped the run for (a plugin's own error may carry this code, never a budget).
  if (r.code === 'BUDGET_EXCEEDED' && r.budget !== null) {
    if (r.budget === 'wallClockMs') return `the plugin ran longer than ${budgets.wallClockMs} ms (--timeout)`
    if (r.budget === 'memoryMb') return `the plugin used more than ${budgets.memoryMb} MB (--memory-mb)`
    return `the plugin went over its ${escapeLine(String(r.budget))} budget`
  }
  const words = (text, max) => escapeLine(redact(text.length > max ? text.slice(0, max) : text, { cut: text.length > max })) + (text.length > max ? '...' : '')
  return `the plugin failed${r.code ? ` with ${words(r.code, 64)}` : ''}${r.message ? `: ${words(r.message, 1000)}` : ''}`
}

async function learn(args, flags, out) {
  const { PermissionPolicy, createChecker, learnManifest } = require('..')
  let calls
  // Lines of the log too long to hold any call a grant can express (their indices).
  const tooLong = new Set()
  let secrets = new Map()
  let failure = null
  let redact = (text) => text
  // The failure of a plugin run, when `--partial` still prints what was learned.
  let partial = null
  if (flags.from !== undefined) {
    if (args.length) throw new UsageError('learn --from takes no plugin file', 'learn')
    for (const k of ['config', 'secret', 'secrets-file', 'timeout', 'memory-mb', 'partial']) if (flags[k] !== undefined) throw new UsageError(`--${k} is for a plugin run, not --from`, 'learn')
    calls = []
    let n = 0
    for (const l of readText(flags.from).split('\n')) {
      n++
      if (!l.trim()) continue
      if (l.length > MAX_AUDIT_LINE) {
        tooLong.add(calls.length)
        calls.push(null)
        continue
      }
      let call
      try {
        call = JSON.parse(l)
      } catch {
        throw new InputError(`${flags.from}:${n}: not JSON`)
      }
      // Own data only: a key the line lacks is never read through a prototype.
      if (call === null || typeof call !== 'object' || Array.isArray(call) || !Object.hasOwn(call, 'capability') || typeof call.capability !== 'string') {
        throw new InputError(`${flags.from}:${n}: expected an object { "capability": string, "payload": object }`)
      }
      calls.push(call)
    }
  } else {
    if (args.length !== 1) throw new UsageError('learn takes one plugin file (or --from <audit.jsonl>)', 'learn')
    const timeout = positiveInt(flags, 'timeout')
    const memoryMb = positiveInt(flags, 'memory-mb')
    const budgets = { wallClockMs: timeout === undefined ? LEARN_TIMEOUT_MS : timeout, ...(memoryMb === undefined ? {} : { memoryMb }) }
    const code = readText(args[0])
    const config = flags.config !== undefined ? readJson(flags.config) : {}
    secrets = readSecrets(flags)
    const { runForLearn, redactor, consolePrinter } = require('../lib/learn-run.js')
    redact = redactor(secrets)
    // The plugin's console as it prints, whatever the output mode (stdout is the manifest's).
    const printer = consolePrinter((text) => process.stderr.write(text), redact)
    const r = await runForLearn({ name: path.basename(args[0]), code, config, secrets, budgets, onConsole: printer.line })
    printer.end()
    calls = r.calls
    // The code is the plugin's when it threw: redacted and cut like its message.
    const failedWith = r.overflow ? 'ERR_LEARN_CALLS' : r.code === null ? null : redact(r.code.slice(0, 64), { cut: r.code.length > 64 })
    if (!r.ok) failure = { code: failedWith, ...(r.budget ? { budget: r.budget } : {}), message: runFailure(r, budgets, redact) }
  }
  // learnManifest only returns a manifest the validator accepts; what it could not learn is listed.
  const { manifest, unlearned: byIndex } = learnManifest(calls, { platform: flags.platform, secretValues: [...secrets.values()] })
  for (const u of byIndex) if (tooLong.has(u.call)) u.why = `the line is longer than ${MAX_AUDIT_LINE} characters (no call a grant expresses is)`
  // Calls are numbered from 1 in the order made, in the text and the JSON alike.
  const unlearned = byIndex.map((u) => ({ ...u, call: u.call + 1 }))
  const notLearned = new Set(byIndex.map((u) => u.call))
  const summary = `${calls.length} call${calls.length === 1 ? '' : 's'} recorded, ${notLearned.size} not learned`
  if (failure !== null) {
    const error = { kind: 'plugin', code: failure.code, message: failure.message, ...(failure.budget ? { budget: failure.budget } : {}) }
    out.notes.push(`${NAME} learn: ${failure.message}`)
    if (!flags.partial) {
      // Fail closed: a run that stopped early may miss grants it needs, so no manifest is printed.
      out.result = { error, calls: calls.length, unlearned }
      for (const u of unlearned) out.notes.push(`not learned: call ${u.call} ${u.capability}: ${u.why}`)
      out.notes.push(`${summary}; no manifest printed (--partial prints the one learned until the failure)`)
      return 2
    }
    out.notes.push('the manifest printed is PARTIAL: learned from the calls made until the failure (--partial)')
    partial = error
  }
  const policy = PermissionPolicy.fromManifest(manifest, { plugin: 'learned', platform: flags.platform })
  const checker = createChecker(manifest, { plugin: 'learned', platform: flags.platform })
  // Every learned call must be allowed by the learned manifest.
  const ownOf = (c, k) => (c !== null && typeof c === 'object' && Object.hasOwn(c, k) ? c[k] : undefined)
  const missed = (ch) => (c, i) => !notLearned.has(i) && !ch.checkCapability(ownOf(c, 'capability'), ownOf(c, 'payload')).allowed
  // A miss as printed, secret values redacted (a run's calls keep their learned string fields alone).
  const shown = (c) => {
    if (secrets.size === 0) return c
    const payload = ownOf(c, 'payload')
    const fields = Object.entries(payload !== null && typeof payload === 'object' ? payload : {}).map(([k, v]) => [k, typeof v === 'string' ? redact(v) : v])
    return { capability: redact(String(ownOf(c, 'capability'))), payload: Object.fromEntries(fields) }
  }
  const misses = calls.filter(missed(checker)).map(shown)
  out.result = { manifest: policy.toJSON(), calls: calls.length, unlearned, misses, ...(partial ? { partial: true, error: partial } : {}) }
  for (const u of unlearned) out.notes.push(`not learned: call ${u.call} ${u.capability}: ${u.why}`)
  // Learned as asked, yet wider than one topic: worth a reviewer's look.
  const subscribes = ownOf(ownOf(manifest, 'events'), 'subscribes') || []
  for (const t of subscribes) if (t.split('.').some((seg) => seg === '*' || seg === '**')) out.notes.push(`learned pattern: events.subscribes ${JSON.stringify(t)}, as the plugin subscribed (it admits every topic it covers)`)
  if (flags.generalize) {
    const { generalizeManifest } = require('../lib/learn.js')
    const g = generalizeManifest(manifest, { platform: flags.platform || (process.platform === 'win32' ? 'win32' : 'posix') })
    // The proposal is a manifest too: validated, and it still allows every learned call.
    const gChecker = createChecker(g.manifest, { plugin: 'learned', platform: flags.platform })
    const gMisses = calls.filter(missed(gChecker)).map(shown)
    out.result.generalized = { manifest: gChecker.policy.toJSON(), proposals: g.proposals }
    out.text.push(JSON.stringify(g.manifest, null, 2))
    for (const p of g.proposals) out.notes.push(`proposed: ${p.note} (replaces ${p.count} exact grants); widens: ${p.widens}`)
    if (g.proposals.length === 0) out.notes.push('proposed: nothing (no 3 or more exact fs grants share a directory, extension and mode)')
    for (const m of gMisses) out.notes.push(`not allowed by the generalized manifest: ${m.capability} ${JSON.stringify(m.payload)}`)
    out.notes.push(summary)
    return partial ? 2 : misses.length || gMisses.length ? 1 : 0
  }
  out.text.push(JSON.stringify(manifest, null, 2))
  for (const m of misses) out.notes.push(`not allowed by the learned manifest: ${m.capability} ${JSON.stringify(m.payload)}`)
  out.notes.push(summary)
  return partial ? 2 : misses.length ? 1 : 0
}

function diff(args, flags, out) {
  if (args.length !== 2) throw new UsageError('diff takes the old and the new manifest file', 'diff')
  const sub = { text: [], notes: [], result: null }
  const a = load(args[0], flags, sub)
  const b = a && load(args[1], flags, sub)
  if (!a || !b) {
    out.result = sub.result
    out.text.push(...sub.text)
    return 2
  }
  const { diffPolicies } = require('../lib/diff.js')
  const r = diffPolicies(a, b)
  out.result = r
  const shown = (w) =>
    w.capability === 'fetch'
      ? `fetch ${w.url}${w.resolvedIp !== undefined ? ` resolved to ${w.resolvedIp}` : ''}`
      : w.capability === 'budget'
        ? `a request using ${w.observed} of ${w.budget}`
        : w.path !== undefined
          ? `${w.capability} ${w.path}`
          : `${w.capability} ${JSON.stringify(w.payload)}`
  for (const x of r.widens) out.text.push(`+ widens  ${x.section.padEnd(8)} ${x.pointer}: ${x.what}`, `    new allows, old denies: ${shown(x.witness)}`)
  for (const x of r.narrows) out.text.push(`- narrows ${x.section.padEnd(8)} ${x.pointer}: ${x.what}`, `    old allowed, new denies: ${shown(x.witness)}`)
  for (const x of r.unknown) out.text.push(`? unknown  ${x.section.padEnd(8)} ${x.pointer}: ${x.why}`)
  const n = (k, what) => `${k} ${what}${k === 1 ? '' : 's'}`
  const verdict = { 0: 'no new authority', 1: 'widens', 2: 'could not prove that nothing widens' }[r.exitCode]
  out.text.push(`${verdict}: ${n(r.widens.length, 'widening')}, ${n(r.narrows.length, 'narrowing')}, ${n(r.unknown.length, 'unknown')}`)
  return r.exitCode
}

async function deno(args, flags, out, denoArgs) {
  if (args.length !== 1) throw new UsageError('deno takes one manifest file, then -- and the deno arguments', 'deno')
  if (denoArgs === null || denoArgs.length === 0) throw new UsageError('give the deno arguments after --, e.g. -- run script.ts', 'deno')
  if (flags.platform === 'win32') throw new UsageError('deno asks with the paths of the host it runs on: --platform win32 does not apply', 'deno')
  const { runDeno, formatSummary } = require('../lib/deno-broker.js')
  const plugin = flags.plugin !== undefined ? flags.plugin : path.basename(args[0]).replace(/\.json$/, '').slice(0, 256) || 'manifest'
  const build = (file, what) => {
    let m
    try {
      m = readManifest(file, flags, { plugin })
    } catch (e) {
      if (e instanceof TypeError) throw new UsageError(e.message, 'deno')
      throw e
    }
    if (m.policy) return m.policy
    const e = m.errors[0]
    throw new InputError(`${what} ${file}: INVALID_MANIFEST at ${e.pointer || '(root)'}: expected ${e.expected}`)
  }
  const policy = build(args[0], 'manifest')
  const shadow = flags.shadow !== undefined ? build(flags.shadow, 'shadow manifest') : undefined
  let auditFd = null
  if (flags.audit !== undefined) {
    try {
      auditFd = fs.openSync(flags.audit, 'a', 0o600)
    } catch (e) {
      throw new InputError(`cannot open ${flags.audit}: ${e.code || e.message}`)
    }
  }
  const onDecision = auditFd === null ? undefined : (entry) => fs.writeSync(auditFd, `${JSON.stringify(entry)}\n`)
  let r
  try {
    r = await runDeno(policy, { args: denoArgs, shadow, onDecision, forwardSignals: true, log: (l) => process.stderr.write(`${NAME} deno: ${l}\n`) })
  } catch (e) {
    if (/deno not found|\$DENO is/.test(String(e.message))) throw new InputError(e.message)
    throw e
  } finally {
    if (auditFd !== null) fs.closeSync(auditFd)
  }
  out.result = { exitCode: r.exitCode, signal: r.signal, budget: r.budget, stats: r.stats }
  out.notes.push(formatSummary(r.stats, r.budget))
  out.quiet = true
  return r.exitCode
}

function emitError(e, json) {
  const kind = e instanceof UsageError ? 'usage' : e instanceof InputError ? 'input' : 'internal'
  if (json) {
    const where = e.line !== undefined ? { line: e.line, column: e.column } : {}
    process.stdout.write(`${JSON.stringify({ error: { kind, message: e.message, ...where, ...(e.command ? { usage: COMMANDS[e.command].usage } : {}) } })}\n`)
    return
  }
  process.stderr.write(`${NAME}: ${kind === 'internal' ? `internal error: ${e && e.stack ? e.stack : e}` : e.message}\n`)
  if (kind === 'usage') process.stderr.write(e.command ? `usage: ${COMMANDS[e.command].usage}\n(${NAME} ${e.command} --help for more)\n` : `${usage()}\n`)
}

async function main(argv) {
  const out = { text: [], notes: [], result: null }
  const [cmd, ...all] = argv
  // `deno ... -- <deno args>`: what follows `--` belongs to deno, never to this CLI.
  const dash = cmd === 'deno' ? all.indexOf('--') : -1
  const rest = dash >= 0 ? all.slice(0, dash) : all
  const denoArgs = dash >= 0 ? all.slice(dash + 1) : null
  // --json anywhere asks for JSON errors too, even when the rest does not parse.
  let json = rest.includes('--json') || cmd === '--json'
  try {
    if (cmd === undefined) throw new UsageError('no command given')
    if (cmd === '--help' || cmd === '-h' || (cmd === 'help' && rest.length === 0)) {
      process.stdout.write(`${usage()}\n`)
      return 0
    }
    if (cmd === 'help') {
      if (!Object.hasOwn(COMMANDS, rest[0])) throw new UsageError(`no command ${JSON.stringify(rest[0])}${didYouMean(String(rest[0]), Object.keys(COMMANDS))}`)
      process.stdout.write(`${commandHelp(rest[0])}\n`)
      return 0
    }
    if (cmd === '--version' || cmd === '-V') {
      process.stdout.write(`${version()}\n`)
      return 0
    }
    if (!Object.hasOwn(COMMANDS, cmd)) throw new UsageError(cmd.startsWith('-') ? `unknown option ${cmd} (options come after the command)` : `unknown command ${JSON.stringify(cmd)}${didYouMean(cmd, Object.keys(COMMANDS))}`)
    const { flags, rest: args } = parse(cmd, rest)
    json = flags.json === true
    if (flags.help) {
      process.stdout.write(`${commandHelp(cmd)}\n`)
      return 0
    }
    const code = cmd === 'lint' ? lint(args, flags, out) : cmd === 'explain' ? explain(args, flags, out) : cmd === 'diff' ? diff(args, flags, out) : cmd === 'deno' ? await deno(args, flags, out, denoArgs) : await learn(args, flags, out)
    if (json) process.stdout.write(`${JSON.stringify(out.result)}\n`)
    else {
      if (!out.quiet && out.text.length) process.stdout.write(`${out.text.join('\n')}\n`)
      if (out.notes.length) process.stderr.write(`${out.notes.join('\n')}\n`)
    }
    return code
  } catch (e) {
    emitError(e, json)
    return 2
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
  },
  (e) => {
    process.stderr.write(`${NAME}: internal error: ${e && e.stack ? e.stack : e}\n`)
    process.exitCode = 2
  },
)
