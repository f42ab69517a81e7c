'use strict'
// `learn <plugin.js>`: one run of a plugin in the vm-host in audit mode
// (every call allowed, performed and recorded), for learnManifest. What the
// run keeps is bounded: the fields a grant is learned from (never a body,
// data or headers), at most MAX_RECORDED_CALLS calls and MAX_RECORDED_CHARS
// of them; past that the run counts as failed (a manifest from part of the
// calls would be missing grants). The secrets the run is given are the
// plugin's to read (`secrets.get`) or to send (a bound secret's
// placeholder, `config.secretPlaceholders`); their values are never printed:
// everything learn prints of the plugin's (console lines, its error) goes
// through `redactor`.

const { LEARNED_FIELDS } = require('./learn.js')

const MAX_RECORDED_CALLS = 100_000
const MAX_RECORDED_CHARS = 32 << 20

/** Console lines passed through, their characters (escaped) together, and one line's. */
const MAX_CONSOLE_LINES = 1000
const MAX_CONSOLE_CHARS = 64 << 10
const MAX_CONSOLE_LINE = 1000

/**
 * The longest console line the vm-host hands on (it cuts each at this
 * many characters): a line this long may end in the first part of a secret.
 */
const HOST_LOG_LINE = 200

/**
 * A text as one printable line: a backslash, every control, format,
 * surrogate, private-use or unassigned code point and the line and
 * paragraph separators escaped (`\\`, `\x1b`, `\u{202e}`), so a plugin's
 * line can neither move the terminal's cursor, reorder what follows
 * (bidi controls) nor pass for a line of learn's own.
 */
function escapeLine(text) {
  return text.replace(/[\\\p{C}\p{Zl}\p{Zp}]/gu, (c) => {
    if (c === '\\') return '\\\\'
    const cp = c.codePointAt(0)
    return cp < 0x100 ? `\\x${cp.toString(16).padStart(2, '0')}` : `\\u{${cp.toString(16)}}`
  })
}

/**
 * `redact(text, { cut })` for `secrets` (a Map name -> value): every
 * occurrence of a value, as written or as JSON writes it inside a string,
 * becomes `[secret NAME]`, in one pass (a marker is never searched again).
 * With `cut` (the text may have been cut short), an end that begins a value
 * becomes `[secret NAME, cut]`. Empty values are never given (the CLI
 * refuses them).
 */
function redactor(secrets) {
  const forms = []
  for (const [name, value] of secrets) {
    if (value.length === 0) continue
    forms.push({ name, text: value })
    const json = JSON.stringify(value).slice(1, -1)
    if (json !== value) forms.push({ name, text: json })
  }
  if (forms.length === 0) return (text) => text
  forms.sort((a, b) => b.text.length - a.text.length)
  const byText = new Map(forms.map((f) => [f.text, f.name]))
  const re = new RegExp(forms.map((f) => f.text.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&')).join('|'), 'g')
  return (text, { cut = false } = {}) => {
    let out = text.replace(re, (m) => `[secret ${byText.get(m)}]`)
    if (cut) {
      // The longest end of the text that a value starts with.
      let best = null
      for (const f of forms) {
        for (let k = Math.min(f.text.length - 1, out.length); k > (best ? best.k : 0); k--) {
          if (out.endsWith(f.text.slice(0, k))) {
            best = { k, name: f.name }
            break
          }
        }
      }
      if (best) out = `${out.slice(0, out.length - best.k)}[secret ${best.name}, cut]`
    }
    return out
  }
}

/**
 * The plugin's console for learn's stderr: each line redacted, escaped,
 * prefixed `[plugin] `, cut at MAX_CONSOLE_LINE characters; at most
 * MAX_CONSOLE_LINES lines and MAX_CONSOLE_CHARS characters in all, then one
 * line saying how many were not shown. `write(text)` receives whole lines.
 */
function consolePrinter(write, redact) {
  let lines = 0
  let chars = 0
  let dropped = 0
  return {
    line(text) {
      const line = escapeLine(redact(text, { cut: text.length >= HOST_LOG_LINE }))
      const shown = line.length > MAX_CONSOLE_LINE ? `${line.slice(0, MAX_CONSOLE_LINE)}... (cut)` : line
      if (lines >= MAX_CONSOLE_LINES || chars + shown.length > MAX_CONSOLE_CHARS) {
        dropped++
        return
      }
      lines++
      chars += shown.length
      write(`[plugin] ${shown}\n`)
    },
    end() {
      if (dropped > 0) write(`[plugin] (${dropped} more console line${dropped === 1 ? '' : 's'} not shown: at most ${MAX_CONSOLE_LINES} lines or ${MAX_CONSOLE_CHARS} characters are)\n`)
    },
  }
}

/**
 * The calls of one run as learnManifest reads them, `{ capability, payload }`
 * with the payload's learned fields alone. `record` throws past the bounds
 * (the host answers that call with an error) and `overflow` says so.
 */
function recorder() {
  const calls = []
  let chars = 0
  const state = { calls, overflow: false }
  state.record = (capability, payload) => {
    const kept = {}
    let size = typeof capability === 'string' ? capability.length : 0
    if (payload !== null && typeof payload === 'object' && !Array.isArray(payload)) {
      for (const k of LEARNED_FIELDS) {
        if (!Object.hasOwn(payload, k)) continue
        const v = payload[k]
        if (typeof v !== 'string') continue
        Object.defineProperty(kept, k, { value: v, writable: true, enumerable: true, configurable: true })
        size += v.length
      }
    }
    if (state.overflow || calls.length >= MAX_RECORDED_CALLS || chars + size > MAX_RECORDED_CHARS) {
      state.overflow = true
      throw new Error(`learn records at most ${MAX_RECORDED_CALLS} calls`)
    }
    chars += size
    calls.push({ capability, payload: kept })
  }
  return state
}

/**
 * Runs `code` once in audit mode. `secrets`: Map name -> value (each also
 * gets a bound secret's placeholder); `budgets`: the run's budgets;
 * `onConsole(line)`: each console line the plugin prints, as the host hands
 * it on (unescaped, unredacted). Resolves to `{ ok, code, message, budget,
 * calls, overflow }`: `ok` false when the plugin threw, its worker failed,
 * a budget stopped it, or it made more calls than are recorded.
 */
async function runForLearn({ name, code, config, secrets, budgets, onConsole }) {
  const { PermissionPolicy } = require('../index.js')
  const { runPlugin } = require('./vm-host/host.js')
  // The run's own policy only carries budgets and the names that get a
  // placeholder: audit mode allows every call whatever it declares, so a
  // bound secret's hosts are never consulted (a name no URL can be).
  const manifest = { budgets }
  if (secrets.size > 0) manifest.secrets = [...secrets.keys()].map((n) => ({ name: n, hosts: ['secret-placeholder.invalid'] }))
  const policy = PermissionPolicy.fromManifest(manifest, { plugin: 'learn' })
  const rec = recorder()
  // The vm-host hands a console line on as `[name] log: <line>` through its log; every other line is its trace.
  const prefix = `[${name}] log: `
  const log = (line) => {
    if (typeof line === 'string' && line.startsWith(prefix)) onConsole(line.slice(prefix.length))
  }
  const r = await runPlugin({ name, code, policy, config, secrets, log, audit: rec.record })
  const failed = !r.ok || rec.overflow
  return {
    ok: !failed,
    code: r.ok ? null : typeof r.code === 'string' ? r.code : null,
    message: r.ok ? null : typeof r.message === 'string' ? r.message : null,
    budget: r.ok ? null : typeof r.budget === 'string' ? r.budget : null,
    calls: rec.calls,
    overflow: rec.overflow,
  }
}

module.exports = { runForLearn, redactor, escapeLine, consolePrinter, recorder, MAX_RECORDED_CALLS, MAX_RECORDED_CHARS, MAX_CONSOLE_LINES, MAX_CONSOLE_CHARS, MAX_CONSOLE_LINE }
