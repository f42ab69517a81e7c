'use strict'
// JSON as the CLI reads files: `JSON.parse` decides what is valid; this
// scanner only says WHERE. For a text JSON.parse rejects, it finds the
// line and column of the first error and what was expected there (V8's own
// message has no position for most errors and quotes the raw text, newlines
// included). For a valid text, it gives the line and column of every value
// by its JSON pointer, so an error at `/fs/3` can point into the file.

/** `~` and `/` escaped as in a JSON pointer (RFC 6901). */
const escapeToken = (t) => t.replace(/~/g, '~0').replace(/\//g, '~1')

/** Line and column (1-based, UTF-16 units) of `offset` in `text`. */
function lineColumn(text, offset) {
  let line = 1
  let last = -1
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++
    last = i
  }
  return { line, column: offset - last }
}

/**
 * Scans `text`: `{ offsets }` (pointer -> offset of the value) when it is
 * JSON, else `{ offset, expected }` of the first error.
 */
function scan(text) {
  let i = 0
  const offsets = new Map()
  const fail = (expected) => {
    throw Object.assign(new Error(expected), { scanOffset: i, expected })
  }
  const ws = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++
  }
  const string = () => {
    const start = i++
    for (;;) {
      if (i >= text.length) fail('a closing " (the string is not terminated)')
      const c = text.charCodeAt(i)
      if (c === 0x22) break
      if (c < 0x20) fail('an escape (\\n, \\t, \\u0000, ...) instead of a raw control character in a string')
      if (c === 0x5c) {
        i++
        if (text[i] === 'u') {
          for (let k = 1; k <= 4; k++) {
            if (!/[0-9a-fA-F]/.test(text[i + k] ?? '')) {
              i += k
              fail('four hex digits after \\u')
            }
          }
          i += 4
        } else if (!'"\\/bfnrt'.includes(text[i] ?? 'x')) fail('an escape: \\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX')
      }
      i++
    }
    i++
    return JSON.parse(text.slice(start, i))
  }
  const digits = (what) => {
    if (!(text[i] >= '0' && text[i] <= '9')) fail(what)
    while (text[i] >= '0' && text[i] <= '9') i++
  }
  const number = () => {
    if (text[i] === '-') i++
    if (text[i] === '0') i++
    else digits('a digit after the minus sign')
    if (text[i] === '.') {
      i++
      digits('a digit after the decimal point')
    }
    if (text[i] === 'e' || text[i] === 'E') {
      i++
      if (text[i] === '+' || text[i] === '-') i++
      digits('a digit in the exponent')
    }
  }
  const value = (pointer) => {
    ws()
    offsets.set(pointer, i)
    const c = text[i]
    if (c === '{' || c === '[') {
      const object = c === '{'
      const close = object ? '}' : ']'
      i++
      ws()
      if (text[i] === close) return void i++
      for (let n = 0; ; n++) {
        ws()
        let token = String(n)
        if (object) {
          if (text[i] !== '"') fail(n === 0 ? "a property name in double quotes or '}'" : 'a property name in double quotes (no trailing comma before })')
          token = string()
          ws()
          if (text[i] !== ':') fail("':' after the property name")
          i++
        }
        value(`${pointer}/${escapeToken(token)}`)
        ws()
        if (text[i] === ',') {
          i++
          continue
        }
        if (text[i] === close) return void i++
        fail(`',' or '${close}' after ${object ? 'a property value' : 'an array element'}`)
      }
    }
    if (c === '"') return void string()
    if (c === '-' || (c >= '0' && c <= '9')) return void number()
    const literal = { t: 'true', f: 'false', n: 'null' }[c]
    if (literal) {
      for (let k = 1; k < literal.length; k++) {
        if (text[i + k] !== literal[k]) {
          i += k
          fail(`the literal ${literal}`)
        }
      }
      return void (i += literal.length)
    }
    fail(c === '\uFEFF' ? 'a value, not a byte order mark (U+FEFF): save the file as UTF-8 without BOM' : 'a value: an object, array, string, number, true, false or null')
  }
  try {
    value('')
    ws()
    if (i < text.length) fail('the end of the file after the JSON value')
    return { offsets }
  } catch (e) {
    if (e.scanOffset === undefined) return { offsets: null } // too deep to scan: no positions
    return { offset: e.scanOffset, expected: e.expected }
  }
}

/** What is at `offset`, printable on one line. */
function found(text, offset) {
  if (offset >= text.length) return 'the end of the file'
  const cp = text.codePointAt(offset)
  const ch = String.fromCodePoint(cp)
  if (cp > 0x20 && /[\p{C}\p{Z}]/u.test(ch)) return `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`
  return JSON.stringify(ch)
}

/**
 * Parses JSON read from `file`: the value, with `locate(pointer)` giving
 * `{ line, column }` of the value at a pointer (or of its nearest existing
 * ancestor); or throws an Error whose message is one line,
 * `file:line:column: not JSON: expected ..., found ...`, with `line`,
 * `column` and `expected` set.
 */
function parseJsonSource(text, file) {
  let value
  try {
    value = JSON.parse(text)
  } catch (err) {
    const s = scan(text)
    if (s.expected === undefined) throw Object.assign(new Error(`${file} is not JSON: ${String(err.message).split('\n')[0]}`), { line: undefined, column: undefined })
    const { line, column } = lineColumn(text, s.offset)
    throw Object.assign(new Error(`${file}:${line}:${column}: is not JSON: expected ${s.expected}, found ${found(text, s.offset)}`), { line, column, expected: s.expected })
  }
  let offsets
  const locate = (pointer) => {
    offsets ??= scan(text).offsets ?? new Map()
    for (let p = pointer; ; p = p.slice(0, p.lastIndexOf('/'))) {
      if (offsets.has(p)) return lineColumn(text, offsets.get(p))
      if (p === '') return undefined
    }
  }
  return { value, locate }
}

module.exports = { parseJsonSource, lineColumn, escapeToken }
