'use strict'
// Manifest-walk oracle: random valid manifests, then hostile variants of
// them (a getter, a non-enumerable or symbol key, a number-like or named
// extra array key, a hole, a Proxy, a non-plain object, a shared list, an
// explicit `undefined`), compiled through `PermissionPolicy.fromManifest`
// while `Object.prototype` and `Array.prototype` are polluted at random
// (`value`, `get`, `set`, `writable`, `enumerable`, `toJSON`, indices,
// manifest field names). The verdict must equal a naive model written from
// the guide ("getters, symbol or non-enumerable keys, extra array
// properties, holes, cycles and non-JSON values are all rejected; an
// explicit `undefined` is an absent optional field"; a Proxy or a boxed
// primitive is not plain data), which reads the value
// with pollution off and shares no code with lib/plain.js; a valid
// manifest must compile to the policy of V8's own `JSON.stringify` of it
// (read with pollution off, after the model has checked it holds no
// getter, toJSON or Proxy).

const { PermissionPolicy, InvalidManifestError } = require('../../index.js')
const { types } = require('node:util')
const { rng } = require('./rng.js')

const OPTIONS = { plugin: 'walk', platform: 'posix' }

/** A random valid manifest as plain data (every list short, names fresh). */
function manifest(r) {
  const m = {}
  if (r.chance(0.8)) {
    m.fs = Array.from({ length: 1 + r.int(4) }, (_, i) => (r.chance(0.5) ? `/srv/w${r.int(99)}/d${i}/**` : { path: `/srv/w${r.int(99)}/o${i}/*.json`, mode: r.pick(['read', 'write', 'readwrite']) }))
  }
  if (r.chance(0.6)) m.fetch = Array.from({ length: 1 + r.int(3) }, (_, i) => r.pick([`api${i}.example.com`, `https://*.cdn${i}.example.net`, `http://10.0.0.${i + 1}:8080`]))
  if (r.chance(0.4)) m.budgets = { wallClockMs: 1 + r.int(1000), ...(r.chance(0.5) ? { memoryMb: 1 + r.int(64) } : {}) }
  if (r.chance(0.3)) m.events = { publishes: [`orders.p${r.int(9)}.*`] }
  if (r.chance(0.3)) m.deny = { fs: [`/srv/w${r.int(99)}/d0/secret/**`] }
  return m
}

/** Every container (object or array) in `v`, with its path. */
function containers(v, path = [], out = []) {
  if (v !== null && typeof v === 'object') {
    out.push({ c: v, path })
    for (const k of Object.keys(v)) containers(v[k], [...path, k], out)
  }
  return out
}

/** Applies one hostile change to `m` (in place, or returns a replacement root); returns its name. */
function mutate(r, m) {
  const all = containers(m)
  const { c } = r.pick(all)
  const arrays = all.filter((x) => Array.isArray(x.c))
  const objects = all.filter((x) => !Array.isArray(x.c))
  const anyKey = (o) => {
    const ks = Object.keys(o)
    return ks.length ? r.pick(ks) : undefined
  }
  switch (r.int(11)) {
    case 0: {
      const k = anyKey(c)
      if (k === undefined) return 'none'
      const v = c[k]
      Object.defineProperty(c, k, { get: () => v, enumerable: true, configurable: true })
      return 'getter'
    }
    case 1: {
      const o = r.pick(objects).c
      const k = anyKey(o)
      if (k === undefined) return 'none'
      Object.defineProperty(o, k, { value: o[k], enumerable: false, writable: true, configurable: true })
      return 'non-enumerable'
    }
    case 2:
      c[Symbol('s')] = 1
      return 'symbol key'
    case 3: {
      if (!arrays.length) return 'none'
      const a = r.pick(arrays).c
      a[r.pick(['-1', '0.5', '1e-7', 'Infinity', '01', 'x', '4294967295'])] = '/etc/**'
      return 'extra array key'
    }
    case 4: {
      if (!arrays.length) return 'none'
      const a = r.pick(arrays).c
      delete a[r.int(a.length)]
      return 'hole'
    }
    case 5: {
      const o = r.pick(objects).c
      const k = anyKey(o)
      if (k === undefined || o === m) return 'none'
      o[k] = new Proxy(Array.isArray(o[k]) ? [...o[k]] : { ...o[k] }, {})
      return 'proxy'
    }
    case 6: {
      const o = r.pick(objects).c
      const k = anyKey(o)
      if (k === undefined || typeof o[k] !== 'object') return 'none'
      o[k] = Object.assign(Object.create({ inherited: 1 }), o[k])
      return 'non-plain object'
    }
    case 7: {
      // The same list in two places (a host reusing one array): valid.
      if (!Array.isArray(m.fetch) || m.secrets) return 'none'
      m.secrets = [{ name: 'K', hosts: m.fetch }]
      return 'shared list'
    }
    case 8: {
      const o = r.pick(objects).c
      o[`u${r.int(9)}`] = undefined
      return 'explicit undefined'
    }
    case 9: {
      const k = anyKey(c)
      if (k === undefined) return 'none'
      c[k] = r.pick([NaN, Infinity, () => 1, 10n, new Date(0), Object.setPrototypeOf(new String('/srv/a/**'), Object.prototype), Object.setPrototypeOf(['/srv/a/**'], { toJSON: () => [] })])
      return 'non-JSON value'
    }
    default:
      return 'none'
  }
}

/**
 * The model, with pollution off: `{ valid, text }`. Written from the guide's
 * list, reading each value by its own descriptors (not the walk's code).
 */
function model(v) {
  const seen = new Set()
  const ok = (x, depth) => {
    if (x === null || typeof x === 'string' || typeof x === 'boolean') return true
    if (typeof x === 'number') return Number.isFinite(x)
    if (typeof x !== 'object' || types.isProxy(x) || types.isBoxedPrimitive(x) || depth > 16) return false
    if (seen.has(x)) return false
    seen.add(x)
    const descs = Object.getOwnPropertyDescriptors(x)
    let good
    if (Array.isArray(x)) {
      if (Object.getPrototypeOf(x) !== Array.prototype) return false
      const names = Reflect.ownKeys(x)
      good = names.every((k) => k === 'length' || (typeof k === 'string' && /^(0|[1-9][0-9]*)$/.test(k) && Number(k) < x.length))
      for (let i = 0; good && i < x.length; i++) good = descs[i] !== undefined && 'value' in descs[i] && ok(descs[i].value, depth + 1)
    } else {
      const proto = Object.getPrototypeOf(x)
      if (proto !== Object.prototype && proto !== null) return false
      good = Reflect.ownKeys(x).every((k) => typeof k === 'string' && descs[k].enumerable && 'value' in descs[k] && (descs[k].value === undefined || ok(descs[k].value, depth + 1)))
    }
    seen.delete(x)
    return good
  }
  if (!ok(v, 0)) return { valid: false }
  return { valid: true, text: JSON.stringify(v) }
}

const POLLUTIONS = [
  [Object.prototype, 'value', ['/**']],
  [Object.prototype, 'value', 'write'],
  [Object.prototype, 'get', () => '/**'],
  [Object.prototype, 'set', () => {}],
  [Object.prototype, 'writable', true],
  [Object.prototype, 'enumerable', true],
  [Object.prototype, 'enumerable', false],
  [Object.prototype, 'toJSON', () => ({ fs: ['/**'] })],
  [Object.prototype, 'fs', ['/**']],
  [Object.prototype, 'mode', 'readwrite'],
  [Object.prototype, 'deny', {}],
  [Array.prototype, '0', '/**'],
  [Array.prototype, '1', '/etc/**'],
]

/** `fromManifest(m)` with `pollution` on: `{ ok, json }` or `{ error }` (pollution always removed). */
function compileUnder(m, pollution) {
  const [target, key, value] = pollution ?? []
  const had = pollution && Object.getOwnPropertyDescriptor(target, key)
  if (pollution) Object.defineProperty(target, key, { value, writable: true, configurable: true, enumerable: true })
  let policy
  let error
  try {
    policy = PermissionPolicy.fromManifest(m, OPTIONS)
  } catch (e) {
    error = e
  } finally {
    if (pollution) {
      if (had) Object.defineProperty(target, key, had)
      else delete target[key]
    }
  }
  return error === undefined ? { ok: true, json: policy.toJSON() } : { ok: false, error }
}

/**
 * Runs for `seconds`: `{ cases, wrongAllows, mismatches, kinds }`: a
 * manifest the model refuses that compiled, or one that compiled to another
 * policy, is a wrong allow; any other disagreement a mismatch.
 */
function run({ seconds, seed }) {
  const r = rng(seed)
  const end = Date.now() + seconds * 1000
  const wrongAllows = []
  const mismatches = []
  let cases = 0
  const kinds = {}
  while (Date.now() < end && wrongAllows.length + mismatches.length < 10) {
    const m = manifest(r)
    const kind = r.chance(0.85) ? mutate(r, m) : 'none'
    kinds[kind] = (kinds[kind] ?? 0) + 1
    const want = model(m)
    const pollution = r.chance(0.7) ? r.pick(POLLUTIONS) : undefined
    const got = compileUnder(m, pollution)
    cases++
    const where = `seed ${seed} case ${cases} (${kind}, pollution ${pollution ? `${pollution[0] === Array.prototype ? 'Array' : 'Object'}.prototype.${pollution[1]}` : 'none'})`
    if (!want.valid) {
      if (got.ok) wrongAllows.push(`${where}: compiled a manifest the model refuses: ${JSON.stringify(got.json)}`)
      else if (!(got.error instanceof InvalidManifestError || got.error instanceof TypeError)) mismatches.push(`${where}: ${got.error}`)
      continue
    }
    // JSON data per the model: the verdict on V8's own JSON text of it
    // (clean): the same policy, or the same INVALID_MANIFEST (a mutation
    // can leave JSON data the schema refuses, e.g. an object for a mode).
    const expected = compileUnder(JSON.parse(want.text), undefined)
    // A Proxy may be refused as a TypeError (V8 itself throws one reading
    // through a Proxy while `Object.prototype.get` or `set` is polluted).
    if (!got.ok && kind === 'proxy' && got.error instanceof TypeError) continue
    if (expected.ok !== got.ok) (got.ok ? wrongAllows : mismatches).push(`${where}: ${got.ok ? 'compiled' : `refused (${got.error && got.error.message})`}, but its JSON text ${expected.ok ? 'compiles' : `is refused (${expected.error.message})`}`)
    else if (got.ok && JSON.stringify(got.json) !== JSON.stringify(expected.json)) wrongAllows.push(`${where}: compiled ${JSON.stringify(got.json)}, want ${JSON.stringify(expected.json)}`)
    else if (!got.ok && !(got.error instanceof InvalidManifestError && got.error.details.pointer === expected.error.details.pointer)) mismatches.push(`${where}: refused with ${got.error}, want INVALID_MANIFEST at ${expected.error.details.pointer}`)
  }
  return { cases, wrongAllows, mismatches, kinds }
}

module.exports = { run, model }
