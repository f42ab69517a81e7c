'use strict'
// Bounded framing of newline-delimited JSON from an untrusted peer (the
// process tier's child; SPEC §16 "the child is untrusted in both
// directions"). Pure and synchronous, so it can be fuzzed on its own
// (__test__/oracles/ipc-frame.js): no I/O, no timers, never throws on input.
//
// The byte bound comes BEFORE parsing: at most `maxLineBytes` bytes of a line
// are ever buffered; a line that grows past it is a violation as soon as the
// bytes that make it too long arrive, without waiting for a newline that may
// never come. Complete lines are decoded as strict UTF-8 (invalid bytes are a
// violation, never U+FFFD), their shape judged by a linear scan (nesting
// depth, members per container, the top-level kind) BEFORE JSON.parse, whose
// cost on a deeply nested line is far above linear, then parsed inside a try
// and checked by the caller's `validate`. The first violation closes the
// channel: nothing after it is ever delivered, and the caller kills the peer.

const NEWLINE = 0x0a

/** Violation kinds, a closed set: a line over the byte bound, bytes that are not UTF-8 JSON, a message of the wrong shape or at the wrong time. */
const VIOLATIONS = Object.freeze(['oversized', 'malformed', 'unexpected'])

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

function positiveInt(name, v) {
  if (!Number.isSafeInteger(v) || v < 1) throw new TypeError(`${name} must be a positive integer`)
  return v
}

/**
 * Splits a byte stream into lines ('\n'-terminated, the newline not
 * included) of at most `maxLineBytes` bytes. `push(chunk)` returns
 * `{ lines, violation }`: the complete lines in the chunk before any
 * violation, and `null` or `{ kind: 'oversized', bytes }`. After a
 * violation the decoder is closed and `push` returns no lines. Buffered
 * memory never exceeds `maxLineBytes` bytes (plus the chunk being pushed).
 */
class LineDecoder {
  #max
  // The incomplete line: its bytes copied into one buffer that doubles as it
  // fills (at most maxLineBytes). Never views of the chunks: a view keeps its
  // whole chunk alive, and a peer writing one byte at a time would pin a
  // buffer per byte (a red team's 322 MB for a 6 MiB line).
  #acc = null
  #pending = 0
  #closed = false

  constructor({ maxLineBytes }) {
    this.#max = positiveInt('maxLineBytes', maxLineBytes)
  }

  /** Bytes of an incomplete line held now. */
  get bufferedBytes() {
    return this.#pending
  }

  /** True after a violation (or `close()`): nothing more is delivered. */
  get closed() {
    return this.#closed
  }

  close() {
    this.#closed = true
    this.#acc = null
    this.#pending = 0
  }

  /** Appends `piece` to the incomplete line (the caller checked the bound). */
  #append(piece) {
    const need = this.#pending + piece.length
    if (this.#acc === null || this.#acc.length < need) {
      const grown = Buffer.allocUnsafe(Math.min(this.#max, Math.max(need, this.#acc === null ? 256 : this.#acc.length * 2)))
      if (this.#acc !== null) this.#acc.copy(grown, 0, 0, this.#pending)
      this.#acc = grown
    }
    this.#acc.set(piece, this.#pending)
    this.#pending = need
  }

  push(chunk) {
    const lines = []
    if (this.#closed) return { lines, violation: null }
    if (!(chunk instanceof Uint8Array)) {
      this.close()
      return { lines, violation: { kind: 'malformed', detail: 'a chunk that is not bytes' } }
    }
    let start = 0
    for (;;) {
      const nl = chunk.indexOf(NEWLINE, start)
      const end = nl < 0 ? chunk.length : nl
      const bytes = this.#pending + (end - start)
      if (bytes > this.#max) {
        this.close()
        return { lines, violation: { kind: 'oversized', detail: `a line over ${this.#max} bytes`, bytes } }
      }
      if (nl < 0) {
        if (end > start) this.#append(chunk.subarray(start, end))
        return { lines, violation: null }
      }
      const piece = chunk.subarray(start, end)
      if (this.#pending === 0) lines.push(Buffer.from(piece.buffer, piece.byteOffset, piece.length))
      else {
        this.#append(piece)
        lines.push(this.#acc.subarray(0, this.#pending))
        this.#acc = null
        this.#pending = 0
      }
      start = nl + 1
    }
  }
}

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACE = 0x7b
const OPEN_BRACKET = 0x5b
const CLOSE_BRACE = 0x7d
const CLOSE_BRACKET = 0x5d
// The characters that matter outside a string literal.
const STRUCTURAL = /["{}[\],]/g

/**
 * Judges a JSON text's structure in one pass, without parsing it: outside
 * string literals, `{` and `[` open a level (at most `maxDepth` levels), each
 * `,` adds a member to the current level (at most `maxMembers` per level, the
 * top level included), and with `topLevel: 'object'` the first character that
 * is not JSON whitespace, if any, must be `{`. A string literal runs from `"` to the
 * next `"` not escaped by a backslash. The text need not be valid JSON
 * (JSON.parse judges that next). Returns null, or `{ kind, detail }`:
 * `oversized` for too deep or too many members, `unexpected` for another
 * top-level kind. Linear in the text; never throws.
 */
function judgeShape(text, { maxDepth = Infinity, maxMembers = Infinity, topLevel = 'any' } = {}) {
  const n = text.length
  let i = 0
  if (topLevel === 'object') {
    while (i < n) {
      const c = text.charCodeAt(i)
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break
      i++
    }
    // A blank line is no JSON at all: JSON.parse says so (malformed).
    if (i < n && text.charCodeAt(i) !== OPEN_BRACE) return { kind: 'unexpected', detail: 'a message that is not a JSON object' }
  }
  // Commas seen at each open level; level 0 is the top.
  const commas = [0]
  let depth = 0
  for (;;) {
    STRUCTURAL.lastIndex = i
    const m = STRUCTURAL.exec(text)
    if (m === null) return null
    i = m.index
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      // The string ends at the next '"' after an even run of backslashes
      // (each run is counted once: linear).
      let from = i + 1
      for (;;) {
        const q = text.indexOf('"', from)
        if (q < 0) return null
        let b = q - 1
        while (b > i && text.charCodeAt(b) === BACKSLASH) b--
        from = q + 1
        if ((q - 1 - b) % 2 === 0) break
      }
      i = from
      continue
    }
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > maxDepth) return { kind: 'oversized', detail: `JSON nested deeper than ${maxDepth}` }
      commas[depth] = 0
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      if (depth > 0) depth--
    } else if (++commas[depth] >= maxMembers) {
      return { kind: 'oversized', detail: `a JSON level with more than ${maxMembers} members` }
    }
    i++
  }
}

/** The options of a shape for judgeShape, checked (a TypeError for anything else). */
function shapeOptions(shape) {
  if (shape === undefined) return undefined
  if (shape === null || typeof shape !== 'object') throw new TypeError('shape must be an object')
  const out = { maxDepth: Infinity, maxMembers: Infinity, topLevel: 'any' }
  for (const key of Object.keys(shape)) {
    if (key === 'maxDepth' || key === 'maxMembers') out[key] = positiveInt(`shape.${key}`, shape[key])
    else if (key === 'topLevel') {
      if (shape.topLevel !== 'object' && shape.topLevel !== 'any') throw new TypeError("shape.topLevel must be 'object' or 'any'")
      out.topLevel = shape.topLevel
    } else throw new TypeError(`shape: unknown option ${JSON.stringify(key)}`)
  }
  return out
}

/**
 * A LineDecoder whose lines are JSON messages. `push(chunk, deliver)` judges
 * the complete lines of the chunk in order: each is decoded as strict UTF-8,
 * its shape judged (`shape`: `{ maxDepth, maxMembers, topLevel }`, see
 * judgeShape; nothing when absent), parsed, checked by `validate(message)` (returns `null` when the message is
 * acceptable now, or a short reason) and handed to `deliver(message)` before
 * the next line is judged, so a validator that depends on state the
 * previous message changed sees that change. Returns `null`, or the first
 * violation `{ kind, detail }` (`kind` from VIOLATIONS), after which nothing
 * more is delivered. `validate` and `deliver` are the caller's code: if
 * `validate` throws, that is an `unexpected` violation; once `deliver` (or
 * anything) calls `close()`, the rest of the chunk is dropped.
 */
class JsonLineDecoder {
  #lines
  #validate
  #shape
  // Closed by a violation or by close(): set apart from the LineDecoder,
  // which closes itself on an oversized line while the complete lines before
  // it are still to be judged and delivered here.
  #closed = false

  constructor({ maxLineBytes, validate, shape }) {
    if (typeof validate !== 'function') throw new TypeError('validate must be a function')
    this.#lines = new LineDecoder({ maxLineBytes })
    this.#validate = validate
    this.#shape = shapeOptions(shape)
  }

  get bufferedBytes() {
    return this.#lines.bufferedBytes
  }

  get closed() {
    return this.#closed
  }

  close() {
    this.#closed = true
    this.#lines.close()
  }

  push(chunk, deliver) {
    if (this.#closed) return null
    const { lines, violation } = this.#lines.push(chunk)
    for (const line of lines) {
      const judged = this.#judge(line)
      if (judged.violation) {
        this.close()
        return judged.violation
      }
      deliver(judged.message)
      if (this.#closed) return null
    }
    if (violation !== null) this.close()
    return violation
  }

  #judge(line) {
    let text
    let message
    try {
      text = utf8.decode(line)
    } catch {
      return { violation: { kind: 'malformed', detail: 'a line that is not UTF-8' } }
    }
    if (this.#shape !== undefined) {
      const wrong = judgeShape(text, this.#shape)
      if (wrong !== null) return { violation: wrong }
    }
    try {
      message = JSON.parse(text)
    } catch {
      return { violation: { kind: 'malformed', detail: 'a line that is not JSON' } }
    }
    let why
    try {
      why = this.#validate(message)
    } catch {
      why = 'the message could not be validated'
    }
    if (why !== null) return { violation: { kind: 'unexpected', detail: typeof why === 'string' ? why.slice(0, 200) : 'unexpected message' } }
    return { message }
  }
}

/** Exactly these own keys, no more, no fewer (a parsed JSON object has no accessors). */
function hasExactKeys(o, keys) {
  if (o === null || typeof o !== 'object' || Array.isArray(o)) return false
  const own = Object.keys(o)
  return own.length === keys.length && keys.every((k) => Object.hasOwn(o, k))
}

module.exports = { LineDecoder, JsonLineDecoder, VIOLATIONS, hasExactKeys, judgeShape }
