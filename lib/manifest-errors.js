'use strict'
// Every error of a manifest, not only the first: the validator stops at the
// first INVALID_MANIFEST, so the parts are validated apart and what an error
// names is taken away before validating again. Pointers are reported as in
// the manifest given (indices after a removed element are mapped back). An
// error at an ancestor of something removed may be a consequence of the
// removal (`{ path }` without its mode, `db` without its `database`), so it
// is not reported.
//
// The cost is bounded whatever the manifest: list entries (`fs`, `fetch`,
// `secrets`, topics, deny rules) are validated in chunks of CHUNK, each error
// costing one validation of its chunk; the rest of the manifest (with its
// lists emptied) costs little to validate; errors that only show on the whole
// manifest (a policy-wide cap, a name declared twice) cost one validation of
// the whole each, at most WHOLE_ROUNDS of them. Nothing is deep-copied: a
// removal copies the containers on its path only (at most 17 deep, the walk's
// own limit), so a 20,000-deep document costs no more than a flat one.

const { escapeToken } = require('./json-source.js')

const unescapeToken = (t) => t.replace(/~1/g, '/').replace(/~0/g, '~')
const tokensOf = (pointer) => (pointer === '' ? [] : pointer.slice(1).split('/').map(unescapeToken))
const pointerOf = (tokens) => tokens.map((t) => `/${escapeToken(String(t))}`).join('')

/** The manifest lists whose entries are validated on their own. */
const LISTS = [['fs'], ['fetch'], ['secrets'], ['events', 'publishes'], ['events', 'subscribes'], ['deny', 'fs'], ['deny', 'fetch']]
/** List entries validated together; an error costs one validation of its chunk. */
const CHUNK = 256
/** Validations of the whole manifest for errors that only the whole shows. */
const WHOLE_ROUNDS = 8

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype
const isIndex = (t, length) => /^(0|[1-9]\d*)$/.test(t) && Number(t) < length

/** An own data value (never a getter, never inherited). */
function own(node, key) {
  if (node === null || typeof node !== 'object') return undefined
  const d = Object.getOwnPropertyDescriptor(node, key)
  return d && Object.hasOwn(d, 'value') ? d.value : undefined
}

/** Sets an own data property (a `__proto__` key stays a key, never the prototype). */
function put(obj, key, value) {
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true })
}

/**
 * `[{ pointer, expected, code, id }]`, empty when `manifest` is valid; the
 * first is the error `PermissionPolicy.fromManifest` throws. At most `max`
 * (default 100) errors; `incomplete` is set on the array when more errors
 * between entries may follow the ones listed (WHOLE_ROUNDS of them were).
 */
function manifestErrors(manifest, { plugin = 'manifest', platform, max = 100 } = {}) {
  const { PermissionPolicy, isInvalidManifest } = require('../index.js')
  const errorOf = (m) => {
    try {
      PermissionPolicy.fromManifest(m, { plugin, platform })
      return null
    } catch (e) {
      if (!isInvalidManifest(e)) throw e
      return e
    }
  }
  const first = errorOf(manifest)
  if (first === null) return []
  const errors = []
  const seen = new Set()
  const report = (pointer, e) => {
    if (seen.has(pointer) || errors.length >= max) return
    seen.add(pointer)
    errors.push({ pointer, expected: e.details.expected, code: e.code, id: e.id })
  }
  report(first.details.pointer, first)
  // Anything but a plain object has no parts to validate apart.
  if (!isObject(manifest)) return errors

  // 1. List entries, in chunks: one error per entry (its first), then the entry is left out.
  const bad = new Map() // list key -> Set of original indices left out
  for (const path of LISTS) {
    const list = listAt(manifest, path)
    if (list === undefined) continue
    const dropped = new Set()
    bad.set(path.join('/'), dropped)
    for (let start = 0; start < list.length && errors.length < max; start += CHUNK) {
      const idx = []
      for (let i = start; i < Math.min(list.length, start + CHUNK); i++) idx.push(i)
      while (idx.length && errors.length < max) {
        const e = errorOf(nest(path, idx.map((i) => own(list, i))))
        if (e === null) break
        const t = tokensOf(e.details.pointer)
        const entry = t.length > path.length && path.every((p, j) => t[j] === p) && isIndex(t[path.length], idx.length)
        // Not about one entry (the list itself): the whole manifest shows it below.
        if (!entry) break
        const k = Number(t[path.length])
        report(pointerOf([...path, idx[k], ...t.slice(path.length + 1)]), e)
        dropped.add(idx[k])
        idx.splice(k, 1)
      }
    }
  }

  // The manifest without the entries in error, each list's kept entries
  // remembering their original index.
  const origin = new Map() // array (of `work`) -> original index of each element
  let work = manifest
  for (const path of LISTS) {
    const dropped = bad.get(path.join('/'))
    if (dropped === undefined) continue
    const list = listAt(manifest, path)
    const keptIdx = []
    for (let i = 0; i < list.length; i++) if (!dropped.has(i)) keptIdx.push(i)
    const kept = keptIdx.map((i) => own(list, i))
    origin.set(kept, keptIdx)
    work = replaceAt(work, path, kept, origin)
  }
  const removed = []
  // Whether the copy is valid within `rounds` validations.
  const loop = (state, rounds) => {
    for (let round = 0; round < rounds && errors.length < max; round++) {
      const e = errorOf(state.work)
      if (e === null) return true
      const t = tokensOf(e.details.pointer)
      // Walk the copy: the original pointer, and where to cut (the deepest
      // array element on the path, else the deepest own property).
      const original = []
      let node = state.work
      let cut = -1
      let inArray = false
      for (const tok of t) {
        if (Array.isArray(node) && isIndex(tok, node.length)) {
          const map = origin.get(node)
          original.push(String(map ? map[Number(tok)] : Number(tok)))
          cut = original.length
          inArray = true
        } else {
          original.push(tok)
          if (isObject(node) && Object.hasOwn(node, tok) && !inArray) cut = original.length
        }
        node = node !== null && typeof node === 'object' && Object.hasOwn(node, tok) ? own(node, tok) : undefined
      }
      const pointer = pointerOf(original)
      if (!removed.some((r) => r === pointer || r.startsWith(`${pointer}/`))) report(pointer, e)
      if (cut <= 0) return true // the root itself: nothing to take away
      removed.push(pointerOf(original.slice(0, cut)))
      state.work = removeAt(state.work, t.slice(0, cut), origin)
      if (state.also) state.also.work = removeAt(state.also.work, t.slice(0, cut), origin)
    }
    return false
  }
  // 2. The rest, with the lists emptied: cheap to validate, so every error of it.
  let skeleton = work
  for (const path of LISTS) if (listAt(work, path) !== undefined) skeleton = replaceAt(skeleton, path, [], origin)
  const whole = { work }
  loop({ work: skeleton, also: whole }, max * 4)
  // 3. The whole manifest, for errors between entries (a policy-wide cap, a
  // name declared twice); past WHOLE_ROUNDS the list says it may go on.
  if (!loop(whole, WHOLE_ROUNDS) && errors.length < max) errors.incomplete = true
  return errors
}

/** The array at `path`, through plain objects only; else undefined. */
function listAt(root, path) {
  let node = root
  for (const key of path) {
    if (!isObject(node)) return undefined
    node = own(node, key)
  }
  return Array.isArray(node) ? node : undefined
}

/** `{ a: { b: value } }` for the path `['a', 'b']`. */
function nest(path, value) {
  let out = value
  for (let i = path.length - 1; i >= 0; i--) {
    const o = {}
    put(o, path[i], out)
    out = o
  }
  return out
}

/** A shallow copy of a container; an array keeps its original indices. */
function copyOf(node, origin) {
  if (Array.isArray(node)) {
    const copy = node.slice()
    origin.set(copy, (origin.get(node) || node.map((_, i) => i)).slice())
    return copy
  }
  const copy = {}
  for (const k of Object.keys(node)) put(copy, k, own(node, k))
  return copy
}

/** `root` with `value` at `path` (through plain objects), the containers on the path copied. */
function replaceAt(root, path, value, origin) {
  if (path.length === 0) return value
  const copy = copyOf(root, origin)
  put(copy, path[0], replaceAt(own(root, path[0]), path.slice(1), value, origin))
  return copy
}

/** `root` without what `tokens` names (an array element spliced out), the containers on the path copied. */
function removeAt(root, tokens, origin) {
  const copy = copyOf(root, origin)
  const [key, ...rest] = tokens
  if (rest.length === 0) {
    if (Array.isArray(copy)) {
      copy.splice(Number(key), 1)
      origin.get(copy).splice(Number(key), 1)
    } else delete copy[key]
    return copy
  }
  const child = removeAt(own(root, key), rest, origin)
  if (Array.isArray(copy)) copy[Number(key)] = child
  else put(copy, key, child)
  return copy
}

module.exports = { manifestErrors }
