'use strict'
// Policies compiled from the same short manifest text share one compile
// (lib/policy.js `SHARED`, issue K). Sharing must be invisible: each policy
// keeps its own plugin id (errors, metrics, shadows), a text compiles anew
// once it changes, on another platform, or after every policy of it is gone,
// and nothing that failed to compile is ever shared. The plugin id rule the
// shared path judges in JS is held to Rust's by Rust itself (`compilePolicy`
// throws its own TypeError), never by a copy of the rule.
const test = require('node:test')
const assert = require('node:assert/strict')
const v8 = require('node:v8')
const vm = require('node:vm')
const { PermissionPolicy, PermissionChecker, PermissionDeniedError, InvalidManifestError } = require('../index.js')
const { handleOf } = require('../lib/policy.js')
const { binding } = require('../lib/native.js')
const { meterHarness } = require('./helpers.js')

const fm = (m, plugin, platform = 'posix') => PermissionPolicy.fromManifest(m, { plugin, platform })

/** Rust's verdict on a plugin id: `compilePolicy` (the wire path, no JS rule in front of it). */
function rustAccepts(id) {
  try {
    binding.rawRelease(binding.compilePolicy('{}', id, 'posix'))
    return true
  } catch (e) {
    assert.ok(e instanceof TypeError, `${JSON.stringify(id)}: ${e}`)
    return false
  }
}

function jsAccepts(id) {
  try {
    fm({}, id)
    return true
  } catch (e) {
    assert.ok(e instanceof TypeError, `${JSON.stringify(id)}: ${e}`)
    return false
  }
}

test('the plugin id rule of the shared path is Rust’s: every control character, byte lengths around 256, random ids', () => {
  // Warm the shared `{}` so every call below takes the path that does not compile.
  const keep = fm({}, 'warm')
  const ids = ['', 'a', 'a'.repeat(256), 'a'.repeat(257), 'é'.repeat(128), 'é'.repeat(129), '€'.repeat(85), '€'.repeat(86), '𝄞'.repeat(64), '𝄞'.repeat(65), `${'a'.repeat(254)}é`, `${'a'.repeat(255)}é`]
  for (let c = 0; c <= 0xff; c++) ids.push(`p${String.fromCharCode(c)}q`)
  for (const c of [0x2028, 0x2029, 0x200b, 0xfeff, 0xfff9, 0xe000, 0x061c, 0x180e]) ids.push(`p${String.fromCharCode(c)}`)
  let seed = 12345
  const rnd = (n) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n)
  const alphabet = ['a', 'Z', '-', '.', '/', ' ', '\t', '\n', '\x7f', '\x85', '\x9f', '\xa0', 'é', '€', '𝄞', '\u2028', '\u0000']
  for (let i = 0; i < 3000; i++) {
    const len = [0, 1, 2, 5, 40, 84, 85, 86, 127, 128, 129, 200, 255, 256, 257][rnd(15)]
    let s = ''
    const fill = alphabet[rnd(alphabet.length)]
    for (let k = 0; k < len; k++) s += rnd(8) === 0 ? alphabet[rnd(alphabet.length)] : fill
    ids.push(s)
  }
  let accepted = 0
  for (const id of ids) {
    const rust = rustAccepts(id)
    assert.equal(jsAccepts(id), rust, JSON.stringify(id))
    accepted += rust
  }
  assert.ok(accepted > 100 && accepted < ids.length - 100, `both verdicts occur (${accepted} of ${ids.length})`)
  // Not a plugin id whatever Rust would read: a lone surrogate (Rust would see U+FFFD), a non-string.
  for (const bad of ['p\uD800', 'p\uDC00q', 1, null, undefined, {}, ['p']]) assert.throws(() => fm({}, bad), TypeError)
  assert.equal(keep.plugin, 'warm')
})

test('policies of one short text share a compile; another text, platform or a longer text does not', () => {
  const m = { fs: ['/data/**'], budgets: { wallClockMs: 50 } }
  const a = fm(m, 'a')
  const b = fm(m, 'b')
  assert.equal(handleOf(a), handleOf(b))
  const budgets = { budgets: { wallClockMs: 50 } }
  assert.equal(handleOf(fm(budgets, 'c')), handleOf(fm(budgets, 'd')))
  assert.notEqual(handleOf(fm(budgets, 'c', 'win32')), handleOf(fm(budgets, 'c')))
  // Each keeps its own id and platform, and answers alike.
  assert.deepEqual([a.plugin, b.plugin, a.platform], ['a', 'b', 'posix'])
  assert.deepEqual(a.toJSON(), b.toJSON())
  assert.deepEqual(a.budgets, b.budgets)
  assert.notEqual(a.toJSON(), b.toJSON(), 'each policy has its own frozen copy')
  // The key is the text as written: the same grants in another key order is another text.
  assert.notEqual(handleOf(fm({ budgets: { wallClockMs: 50 }, fs: ['/data/**'] }, 'a')), handleOf(a))
  // The manifest object is read again each time: a change is a new text and a new compile.
  const live = { fs: ['/one/**'] }
  const before = fm(live, 'p')
  live.fs.push('/two/**')
  const after = fm(live, 'p')
  assert.notEqual(handleOf(after), handleOf(before))
  assert.equal(before.checkFs('/two/x', 'read').allowed, false)
  assert.equal(after.checkFs('/two/x', 'read').allowed, true)
  // Past the shared length, every compile owns its handle.
  const long = { fs: Array.from({ length: 12 }, (_, i) => `/srv/plugins/long-${i}/**`) }
  assert.ok(JSON.stringify(long).length > 128)
  const l1 = fm(long, 'a')
  const l2 = fm(long, 'b')
  assert.notEqual(handleOf(l1), handleOf(l2))
  assert.deepEqual(l1.toJSON(), l2.toJSON())
})

test('a shared compile still counts and reports each policy under its own plugin id', async (t) => {
  const h = meterHarness()
  t.after(() => h.shutdown())
  const m = { fs: ['/data/**'] }
  const a = new PermissionChecker(fm(m, 'plugin-a'), { meter: h.meter })
  const b = new PermissionChecker(fm(m, 'plugin-b'), { meter: h.meter })
  assert.equal(handleOf(fm(m, 'x')), handleOf(fm(m, 'y')))
  a.checkFs('/etc/passwd', 'read')
  b.checkFs('/etc/passwd', 'read')
  b.checkFs('/etc/shadow', 'read')
  for (const [c, id] of [[a, 'plugin-a'], [b, 'plugin-b']]) {
    assert.throws(
      () => c.assertFs('/etc/x', 'read'),
      (e) => e instanceof PermissionDeniedError && e.details.plugin === id,
    )
  }
  const counts = await h.counts()
  assert.equal(counts['plugin.permission_denied_total|plugin-a|fs.read|not_allowlisted'], 2)
  assert.equal(counts['plugin.permission_denied_total|plugin-b|fs.read|not_allowlisted'], 3)
  // The shadow of a checker must be a policy of the same plugin id, shared compile or not.
  assert.ok(new PermissionChecker(fm(m, 'plugin-a'), { shadow: fm(m, 'plugin-a'), meter: h.meter }))
  assert.throws(() => new PermissionChecker(fm(m, 'plugin-a'), { shadow: fm(m, 'plugin-b') }), /same plugin id/)
})

test('nothing that failed is shared: an invalid manifest, a parity refusal, a bad plugin id', () => {
  for (let i = 0; i < 3; i++) {
    assert.throws(() => fm({ fs: ['relative/**'] }, 'p'), InvalidManifestError)
    // A host Node's URL parser reads otherwise than the core (SPEC §3): refused every time.
    assert.throws(() => fm({ fetch: ['Ӏ.com'] }, 'p'), (e) => e instanceof InvalidManifestError && e.details.pointer === '/fetch/0' && /Node's URL parser/.test(e.details.expected))
    assert.throws(() => fm({ fs: ['/data/**'] }, ''), TypeError)
  }
  // The same text with a good id compiles afterwards.
  assert.equal(fm({ fs: ['/data/**'] }, 'p').checkFs('/data/x', 'read').allowed, true)
})

test('the table holds 1,024 texts: then it is emptied, and a text no policy holds any more is released', async () => {
  v8.setFlagsFromString('--expose-gc')
  const gc = vm.runInNewContext('gc')
  const m = { fs: [`/collect-${process.pid}/**`] }
  let handle
  ;(() => {
    const ps = [fm(m, 'a'), fm(m, 'b')]
    handle = handleOf(ps[0])
    assert.equal(handleOf(ps[1]), handle)
  })()
  // Its policies are gone, but the table still holds it: still shared.
  gc()
  await new Promise((r) => setImmediate(r))
  assert.equal(handleOf(fm(m, 'c')), handle)
  // 1,024 other short texts empty the table; then the collector releases the slot.
  for (let i = 0; i < 1100; i++) fm({ budgets: { wallClockMs: 2e6 + i } }, 'fill')
  for (let i = 0; i < 50; i++) {
    gc()
    await new Promise((r) => setImmediate(r))
    try {
      binding.policyBudgets(handle)
    } catch (e) {
      assert.ok(e instanceof TypeError)
      break
    }
    if (i === 49) assert.fail('the shared slot was never released')
  }
  const again = fm(m, 'd')
  assert.notEqual(handleOf(again), handle)
  assert.equal(again.checkFs(`/collect-${process.pid}/x`, 'read').allowed, true)
  assert.equal(handleOf(fm(m, 'e')), handleOf(again))
})

test('no binding function reads a compiled policy’s plugin id (a shared compile stands for several)', () => {
  const fs = require('node:fs')
  const path = require('node:path')
  const dir = path.join(__dirname, '..', 'src', 'binding')
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.rs'))
  assert.ok(files.length >= 3)
  for (const f of files) assert.doesNotMatch(fs.readFileSync(path.join(dir, f), 'utf8'), /\.plugin\(\)/, f)
})

test('a text compiled again after the table was emptied decides alike, while its earlier policies live', () => {
  const m = { fs: ['/full/**'], budgets: { memoryMb: 7 } }
  const a = fm(m, 'a')
  const keep = []
  for (let i = 0; i < 1100; i++) keep.push(fm({ budgets: { wallClockMs: 1e6 + i } }, 'fill'))
  const b = fm(m, 'b')
  assert.notEqual(handleOf(a), handleOf(b))
  for (const p of [a, b]) {
    assert.equal(p.checkFs('/full/x', 'read').allowed, true)
    assert.equal(p.checkFs('/fuller/x', 'read').allowed, false)
    assert.deepEqual(p.budgets, { memoryMb: 7 })
  }
  // The new compile is the shared one now.
  assert.equal(handleOf(fm(m, 'c')), handleOf(b))
  assert.equal(handleOf(a), handleOf(a))
})
