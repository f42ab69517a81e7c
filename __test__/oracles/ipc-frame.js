'use strict'
// Oracle for the process tier's IPC decoder (lib/ipc-frame.js; SPEC §16:
// "the parent frames IPC with a byte bound before parsing, and any
// malformed, oversized or unexpected message kills the child"). The decoder
// is the parent's first contact with an untrusted child, so it is fuzzed on
// its own: random streams of valid messages, malformed JSON, invalid UTF-8
// (overlongs, surrogates, stray continuation bytes, bytes over F4), BOMs,
// CRLF, empty lines and lines at, under and over the byte bound, cut into
// random chunks (single bytes, multi-byte characters split across chunks,
// Buffers and plain Uint8Arrays).
//
// The model shares no code with the decoder: the whole stream concatenated,
// split on '\n' after the fact, a line is UTF-8 when Node's lossy decoder
// round-trips its bytes, its shape (when the stream has one: nesting depth,
// members per level, an object at the top, all judged BEFORE JSON.parse)
// read by stripping string literals with a regular expression and walking a
// stack of levels, and a small stateful validator (sequence numbers must
// increase, a message kind that is accepted only after another).
// Invariants: push never throws; buffered bytes never exceed the bound;
// every message the model delivers is delivered once, in order, and nothing
// else; the first violation is the model's, by kind; after it nothing is
// delivered.

const { JsonLineDecoder } = require('../../lib/ipc-frame.js')

const { prng } = require('./rng.js')

/** The stateful rule both sides apply: `{ seq: n }` with n increasing, `{ open: true }` once before any `{ data }`. */
function makeValidator() {
  const st = { last: -1, open: false }
  const validate = (m) => {
    if (m === null || typeof m !== 'object' || Array.isArray(m)) return 'not an object'
    const keys = Object.keys(m)
    if (keys.length === 1 && keys[0] === 'open' && m.open === true) return st.open ? 'open twice' : null
    if (keys.length === 1 && keys[0] === 'seq' && Number.isSafeInteger(m.seq)) return m.seq > st.last ? null : 'seq not increasing'
    if (keys.length === 1 && keys[0] === 'data' && typeof m.data === 'string') return st.open ? null : 'data before open'
    return 'unknown shape'
  }
  const apply = (m) => {
    if (Object.hasOwn(m, 'open')) st.open = true
    if (Object.hasOwn(m, 'seq')) st.last = m.seq
  }
  return { validate, apply }
}

/**
 * The model's shape judgement: 'unexpected' when there is a first
 * non-whitespace character and it is not '{' (topLevel 'object'), 'oversized' when, outside string
 * literals, a level opens past maxDepth or a level holds more than
 * maxMembers members (commas + 1); null otherwise.
 */
function modelShape(text, shape) {
  const rest = text.replace(/^[ \t\r\n]*/, '')
  if (shape.topLevel === 'object' && rest !== '' && rest[0] !== '{') return 'unexpected'
  // Complete string literals out; a quote left over opens one that never
  // ends, which hides the rest of the line.
  let bare = text.replace(/"(?:[^"\\]|\\[\s\S])*"/g, 's')
  if (bare.includes('"')) bare = bare.slice(0, bare.indexOf('"'))
  const levels = [{ commas: 0 }]
  for (const ch of bare) {
    if (ch === '{' || ch === '[') {
      levels.push({ commas: 0 })
      if (levels.length - 1 > shape.maxDepth) return 'oversized'
    } else if (ch === '}' || ch === ']') {
      if (levels.length > 1) levels.pop()
    } else if (ch === ',') {
      const top = levels[levels.length - 1]
      top.commas++
      if (top.commas + 1 > shape.maxMembers) return 'oversized'
    }
  }
  return null
}

/** The naive model: the outcome of the whole stream. */
function model(bytes, max, shape) {
  const { validate, apply } = makeValidator()
  const delivered = []
  let start = 0
  for (;;) {
    const nl = bytes.indexOf(0x0a, start)
    const end = nl < 0 ? bytes.length : nl
    if (end - start > max) return { delivered, violation: 'oversized' }
    if (nl < 0) return { delivered, violation: null }
    const line = bytes.subarray(start, end)
    start = nl + 1
    const text = Buffer.from(line).toString('utf8')
    if (!Buffer.from(text, 'utf8').equals(Buffer.from(line))) return { delivered, violation: 'malformed' }
    if (shape !== undefined) {
      const wrong = modelShape(text, shape)
      if (wrong !== null) return { delivered, violation: wrong }
    }
    let m
    try {
      m = JSON.parse(text)
    } catch {
      return { delivered, violation: 'malformed' }
    }
    if (validate(m) !== null) return { delivered, violation: 'unexpected' }
    apply(m)
    delivered.push(JSON.stringify(m))
  }
}

const GOOD = [
  (r, st) => JSON.stringify({ seq: st.seq++ }),
  (r, st) => JSON.stringify({ seq: st.seq++ }),
  (r) => JSON.stringify({ data: ['x', 'é', '😀', '\u2028', '"\\', 'a'.repeat(1 + Math.floor(r() * 40))][Math.floor(r() * 6)] }),
  (r, st) => ` { "seq" : ${st.seq++} } \r`,
]
const BAD_BYTES = [
  [0xc0, 0x80],
  [0xed, 0xa0, 0x80],
  [0x80],
  [0xf5, 0x80, 0x80, 0x80],
  [0xe2, 0x82],
  [0xff],
  [0xef, 0xbb, 0xbf],
  [0x00],
]
const BAD_TEXT = ['{"seq": ', '{"call": ', '', '[1,2]', 'null', '{"seq":1,"x":2}', '{"data":1}', '{"open":true}', '{"seq":-5}', '{"__proto__":{"seq":1}}', 'nul', '{"seq":1}}', '"\\ud800"']
// Lines whose shape is judged before they are parsed: deep, wide, brackets and
// commas inside strings (escaped quotes and backslashes around them), another
// top-level kind, and deep text that is not JSON at all.
const SHAPE_TEXT = [
  (r) => '['.repeat(1 + Math.floor(r() * 6)),
  (r) => '{' + '['.repeat(Math.floor(r() * 5)),
  (r) => { const k = Math.floor(r() * 4); return '{"data":' + '['.repeat(k) + '"x"' + ']'.repeat(k) + '}' },
  (r) => '{"data":{"a":' + '{"b":'.repeat(Math.floor(r() * 3)) + '1' + '}'.repeat(Math.floor(r() * 3)) + '}}',
  (r) => '{' + Array.from({ length: 1 + Math.floor(r() * 6) }, (_, i) => `"k${i}":${i}`).join(',') + '}',
  (r) => '{"data":[' + Array.from({ length: Math.floor(r() * 6) }, () => '1').join(',') + ']}',
  () => '{"data":"[[[[,,,,{{{"}',
  () => '{"data":"\\"[[[[,,,"}',
  () => '{"data":"\\\\",",":[[[[1]]]]}',
  () => '{"data":"unterminated [[[[,,,,',
  () => ' \t{"seq":7}',
  () => ',,,,,,{"seq":1}',
  () => '"just a string"',
  () => ']]]]}}}}{"seq":1}',
]

function genStream(r, max) {
  const int = (n) => Math.floor(r() * n)
  const st = { seq: 0 }
  const parts = []
  // Mostly well-behaved streams (open first), so the clean path is fuzzed as much as the violations.
  if (int(10) < 7) parts.push(Buffer.from('{"open":true}\n'))
  const n = 1 + int(12)
  for (let k = 0; k < n; k++) {
    const roll = int(40)
    let line
    if (roll < 31) line = Buffer.from(GOOD[int(GOOD.length)](r, st))
    else if (roll < 34) line = Buffer.from(SHAPE_TEXT[int(SHAPE_TEXT.length)](r))
    else if (roll < 36) line = Buffer.from(BAD_TEXT[int(BAD_TEXT.length)])
    else if (roll < 38) {
      // A valid message with bad bytes spliced into a string.
      const good = Buffer.from(JSON.stringify({ data: 'abcdef' }))
      const at = 9 + int(6)
      line = Buffer.concat([good.subarray(0, at), Buffer.from(BAD_BYTES[int(BAD_BYTES.length)]), good.subarray(at)])
    } else {
      // A line at the bound: max - 1, max or max + 1 bytes of a valid data message.
      const target = max - 1 + int(3)
      const pre = Buffer.from('{"data":"')
      const post = Buffer.from('"}')
      const fill = Math.max(0, target - pre.length - post.length)
      line = Buffer.concat([pre, Buffer.alloc(fill, 0x61), post])
    }
    parts.push(line)
    // Most lines end with a newline; the last may not.
    if (k < n - 1 || int(3) !== 0) parts.push(Buffer.from([0x0a]))
  }
  // Sometimes a long tail without a newline, past the bound.
  if (int(20) === 0) parts.push(Buffer.alloc(max + 1 + int(max), 0x7b))
  return Buffer.concat(parts)
}

function chunked(r, bytes) {
  const int = (n) => Math.floor(r() * n)
  const out = []
  let i = 0
  const mode = int(4)
  while (i < bytes.length) {
    const len = mode === 0 ? 1 : mode === 1 ? 1 + int(4) : 1 + int(Math.max(1, bytes.length))
    const piece = bytes.subarray(i, i + len)
    out.push(int(2) ? piece : new Uint8Array(piece))
    i += len
  }
  return out
}

async function run({ seconds = 3, seed = 1, log = () => {} } = {}) {
  const r = prng(seed)
  const wrongAllows = []
  const mismatches = []
  let cases = 0
  let violations = 0
  const deadline = Date.now() + seconds * 1000
  while (Date.now() < deadline) {
    for (let k = 0; k < 100; k++) {
      cases++
      const max = [12, 24, 64, 100, 1024][Math.floor(r() * 5)]
      const bytes = genStream(r, max)
      // Half the streams judge a shape before parsing, with random bounds.
      const shape = r() < 0.5 ? undefined : { maxDepth: 1 + Math.floor(r() * 3), maxMembers: 1 + Math.floor(r() * 4), topLevel: r() < 0.7 ? 'object' : 'any' }
      const want = model(bytes, max, shape)
      const { validate, apply } = makeValidator()
      const got = []
      let violation = null
      let deliveredAfter = false
      const decoder = new JsonLineDecoder({ maxLineBytes: max, validate, ...(shape === undefined ? {} : { shape }) })
      const deliver = (m) => {
        if (violation !== null) deliveredAfter = true
        apply(m)
        got.push(JSON.stringify(m))
      }
      const show = () => ({ max, shape, stream: bytes.toString('latin1').slice(0, 300) })
      try {
        for (const c of chunked(r, bytes)) {
          const v = decoder.push(c, deliver)
          if (decoder.bufferedBytes > max) mismatches.push({ ...show(), why: `buffered ${decoder.bufferedBytes} bytes over the bound` })
          if (v !== null) {
            if (violation !== null) mismatches.push({ ...show(), why: 'a second violation reported' })
            else violation = v.kind
          }
        }
      } catch (e) {
        mismatches.push({ ...show(), why: `push threw ${e && e.message}` })
        continue
      }
      if (violation !== null) violations++
      if (deliveredAfter) wrongAllows.push({ ...show(), why: 'a message delivered after the violation' })
      const extra = got.filter((m, i) => want.delivered[i] !== m)
      if (got.length > want.delivered.length || extra.length > 0) wrongAllows.push({ ...show(), why: 'delivered what the model does not', got, want: want.delivered })
      else if (got.length < want.delivered.length) mismatches.push({ ...show(), why: 'a message the model delivers was not delivered', got, want: want.delivered })
      if (violation !== want.violation) (violation === null ? wrongAllows : mismatches).push({ ...show(), why: `violation ${violation}, model ${want.violation}` })
    }
  }
  log(`ipc-frame oracle: ${cases} streams, ${violations} with a violation, ${wrongAllows.length} wrong allows, ${mismatches.length} mismatches`)
  return { cases, violations, wrongAllows, mismatches }
}

module.exports = { run, model }
