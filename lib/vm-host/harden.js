'use strict'
// Hardening of the realm that hosts plugin contexts (a Worker's or a child
// process's own realm). Nothing of this realm is handed to plugin code, but
// Node runs some of its own JavaScript on the plugin's behalf (formatting an
// error's `stack`, answering a dynamic `import()`), and a stack overflow
// inside that code is a RangeError of THIS realm, which the plugin can catch.
// So this realm is made worthless to hold: no constructor compiles a string
// into it (its global scope is where `process` is), and its intrinsics are
// frozen, so a plugin holding one of its objects cannot change how the host's
// code behaves. Call it once, after every module the thread needs is loaded.

const ES_GLOBALS = [
  'AggregateError', 'Array', 'ArrayBuffer', 'Atomics', 'BigInt', 'BigInt64Array', 'BigUint64Array', 'Boolean',
  'DataView', 'Date', 'decodeURI', 'decodeURIComponent', 'encodeURI', 'encodeURIComponent', 'Error', 'escape',
  'eval', 'EvalError', 'FinalizationRegistry', 'Float32Array', 'Float64Array', 'Function', 'Int16Array', 'Int32Array',
  'Int8Array', 'Intl', 'isFinite', 'isNaN', 'JSON', 'Map', 'Math', 'Number', 'Object', 'parseFloat', 'parseInt',
  'Promise', 'Proxy', 'RangeError', 'ReferenceError', 'Reflect', 'RegExp', 'Set', 'SharedArrayBuffer', 'String',
  'Symbol', 'SyntaxError', 'TypeError', 'Uint16Array', 'Uint32Array', 'Uint8Array', 'Uint8ClampedArray', 'unescape',
  'URIError', 'WeakMap', 'WeakRef', 'WeakSet', 'WebAssembly',
]

const { defineProperty, freeze, getOwnPropertyDescriptor, getPrototypeOf, isFrozen } = Object
const { ownKeys } = Reflect

let hardened = false

/** The function prototypes whose `constructor` compiles source text in this realm. */
function functionPrototypes() {
  return [Function.prototype, getPrototypeOf(async function () {}), getPrototypeOf(function* () {}), getPrototypeOf(async function* () {})]
}

/** Prototypes reachable only from instances (iterators, %TypedArray%, generators). */
function hiddenIntrinsics() {
  const iter = (o) => getPrototypeOf(o[Symbol.iterator]())
  const gen = getPrototypeOf(function* () {}).prototype
  const agen = getPrototypeOf(async function* () {}).prototype
  return [
    getPrototypeOf(Int8Array),
    getPrototypeOf(getPrototypeOf([][Symbol.iterator]())),
    iter([]),
    iter(new Map()),
    iter(new Set()),
    iter(''),
    getPrototypeOf(/x/[Symbol.matchAll]('')),
    gen,
    agen,
    getPrototypeOf(agen),
    getOwnPropertyDescriptor(Function.prototype, 'caller').get,
  ]
}

/**
 * A frozen prototype's data property cannot be overridden by assignment on
 * an object that inherits it (`err.name = 'X'` throws in strict code, the
 * "override mistake"), and Node's own code assigns such names. Each writable
 * data property of a prototype becomes an accessor whose setter defines the
 * property on the derived object instead, as Node's --frozen-intrinsics does.
 */
function enableOverrides(proto) {
  for (const key of ownKeys(proto)) {
    const d = getOwnPropertyDescriptor(proto, key)
    // `constructor` stays a data property: Node's inspect reads class names from it.
    if (key === 'constructor' || !d || !('value' in d) || !d.writable || !d.configurable) continue
    const value = d.value
    defineProperty(proto, key, {
      get: function getter() {
        return value
      },
      set: function setter(v) {
        if (this === proto) throw new TypeError(`Cannot assign to read only property '${String(key)}' of a frozen intrinsic`)
        defineProperty(this, key, { value: v, writable: true, enumerable: true, configurable: true })
      },
      enumerable: d.enumerable,
      configurable: false,
    })
  }
}

/** Freezes every object reachable from `roots` through own properties (values and accessors) and prototypes. */
function deepFreeze(roots) {
  const seen = new Set()
  const stack = [...roots]
  while (stack.length > 0) {
    const o = stack.pop()
    if (o === null || (typeof o !== 'object' && typeof o !== 'function') || seen.has(o)) continue
    seen.add(o)
    freeze(o)
    stack.push(getPrototypeOf(o))
    for (const key of ownKeys(o)) {
      const d = getOwnPropertyDescriptor(o, key)
      if (d === undefined) continue
      stack.push(d.value, d.get, d.set)
    }
  }
  return seen.size
}

/**
 * Hardens this realm (idempotent): the function constructors are cut off
 * from every function (`f.constructor` is undefined) and the ECMAScript
 * intrinsics are frozen. Returns the number of objects frozen (0 when
 * already done).
 */
function hardenRealm() {
  if (hardened) return 0
  const fnProtos = functionPrototypes()
  for (const p of fnProtos) defineProperty(p, 'constructor', { value: undefined, writable: false, enumerable: false, configurable: false })
  const roots = [...fnProtos, ...hiddenIntrinsics()]
  for (const name of ES_GLOBALS) {
    const d = getOwnPropertyDescriptor(globalThis, name)
    if (d && 'value' in d) roots.push(d.value)
  }
  // Every prototype among the intrinsics keeps overriding by assignment working.
  const protos = new Set([Object.prototype, ...fnProtos, ...hiddenIntrinsics()])
  for (const r of roots) {
    if (typeof r === 'function' && r.prototype !== null && typeof r.prototype === 'object') protos.add(r.prototype)
  }
  for (const p of protos) enableOverrides(p)
  const n = deepFreeze(roots)
  hardened = true
  return n
}

/** True once hardenRealm() has run in this realm (and its work still holds). */
function isRealmHardened() {
  return hardened && isFrozen(Object.prototype) && isFrozen(Function.prototype) && Function.prototype.constructor === undefined
}

module.exports = { hardenRealm, isRealmHardened }
