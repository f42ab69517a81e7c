'use strict'
// The manifest crosses into Rust as JSON text that lib/plain.js writes while
// it reads the manifest's own data properties. Oracle: V8's JSON.stringify
// of the same value (for JSON data, the text Rust must parse), over seeded
// random values with the keys and strings JSON gets wrong most easily.
const test = require('node:test')
const assert = require('node:assert/strict')
const { manifestJson } = require('../lib/plain.js')
const { PermissionPolicy, PermissionChecker } = require('..')

const seed0 = Number(process.env.FUZZ_SEED || Date.now() % 0x7fffffff)

function rng(seed) {
  let s = seed >>> 0 || 1
  return (n) => {
    s ^= s << 13
    s ^= s >>> 17
    s ^= s << 5
    return (s >>> 0) % n
  }
}

const KEYS = ['fs', 'fetch', 'deny', 'path', 'mode', '0', '1', '2', '10', '01', '-1', '4294967294', '4294967295', '', 'a/b', 'x~y', 'é', '\u2028', '"', '\\', 'constructor', 'toString', 'hasOwnProperty']
const STRINGS = ['', 'a', '"q"', '\\', '\n\t\r\b\f', '\u2028\u2029', '\u0000\u001f\u007f', 'é', '😀', '</script>', '/srv/**', 'https://a.example']
const NUMBERS = [0, -0, 1, -1, 0.1, 1.5, 1e21, 1e-7, 123456789012345680000, Number.MAX_VALUE, Number.MIN_VALUE, Number.MAX_SAFE_INTEGER + 2]

function value(r, depth) {
  switch (r(depth > 4 ? 3 : 5)) {
    case 0:
      return STRINGS[r(STRINGS.length)]
    case 1:
      return NUMBERS[r(NUMBERS.length)]
    case 2:
      return [true, false, null][r(3)]
    case 3: {
      const a = []
      for (let i = r(5); i > 0; i--) a.push(value(r, depth + 1))
      return a
    }
    default: {
      const o = r(2) ? {} : Object.create(null)
      for (let i = r(6); i > 0; i--) o[KEYS[r(KEYS.length)]] = value(r, depth + 1)
      return o
    }
  }
}

test('manifest text is exactly JSON.stringify of the same JSON data (seeded)', () => {
  const r = rng(seed0)
  for (let i = 0; i < 20000; i++) {
    const v = value(r, 0)
    assert.equal(manifestJson(v), JSON.stringify(v), `seed ${seed0} case ${i}`)
  }
})

test('an own __proto__ key and explicit undefined fields are written as JSON.parse/TypeScript mean them', () => {
  const parsed = JSON.parse('{"__proto__":{"fs":["/x"]},"fs":["/a"],"1":0,"0":1}')
  assert.equal(manifestJson(parsed), '{"0":1,"1":0,"__proto__":{"fs":["/x"]},"fs":["/a"]}')
  assert.equal(manifestJson({ fs: undefined, fetch: ['https://a.example'] }), '{"fetch":["https://a.example"]}')
  // A literal's __proto__ sets the prototype: not data, so not a plain object.
  assert.throws(() => manifestJson({ __proto__: { fs: ['/'] } }), { code: 'INVALID_MANIFEST' })
})

test('setters and toJSON on the prototypes take no part in the text', (t) => {
  const saved = Object.getOwnPropertyDescriptor(Object.prototype, 'deny')
  const hits = []
  Object.defineProperty(Object.prototype, 'deny', { configurable: true, set: () => hits.push('set'), get: () => undefined })
  Object.prototype.toJSON = () => ({})
  Array.prototype.toJSON = () => []
  String.prototype.toJSON = () => 'x'
  t.after(() => {
    delete Object.prototype.toJSON
    delete Array.prototype.toJSON
    delete String.prototype.toJSON
    delete Object.prototype.deny
    if (saved) Object.defineProperty(Object.prototype, 'deny', saved)
  })
  const manifest = JSON.parse('{"fs":["/srv/**"],"deny":{"fs":["/srv/secret/**"]}}')
  assert.equal(manifestJson(manifest), '{"fs":["/srv/**"],"deny":{"fs":["/srv/secret/**"]}}')
  assert.deepEqual(hits, [])
  const c = new PermissionChecker(PermissionPolicy.fromManifest(manifest, { plugin: 'p', platform: 'posix' }))
  assert.equal(c.checkFs('/srv/secret/key', 'read').reason, 'explicitly_denied')
  assert.equal(c.checkFs('/srv/app/key', 'read').allowed, true)
})
