'use strict'
// Third red team (SPEC §10, §11), through the public JS API: a request
// segment a server may read as `..`, `.` or a separator (`..%20`, `...`,
// `..:`, `..;x`, `..` + an ignorable, `..／`) never matches a path-scoped
// grant and is denied by every path-scoped deny of its host; a deny drops
// every default-ignorable code point. The ignorable set comes from the
// running Node's ICU (`\p{Default_Ignorable_Code_Point}`), not from the core.
const test = require('node:test')
const assert = require('node:assert/strict')
const { PermissionPolicy } = require('../index.js')

const R = (d) => (d.allowed ? 'allow' : d.reason)
const policy = PermissionPolicy.fromManifest(
  {
    fetch: ['api.example.com/public/**', 'api.example.com/v1/repos/*/issues', 'docs.example.com', 'files.example.com'],
    deny: { fetch: ['docs.example.com/admin/**'] },
  },
  { plugin: 'path-scope-dots', platform: 'posix' },
)
const check = (url) => R(policy.checkFetch(url))

/** The inclusive [lo, hi] ranges of a code point predicate, from Node's Unicode data. */
function ranges(re) {
  const out = []
  let start = -1
  for (let c = 0; c <= 0x110000; c++) {
    const yes = c < 0x110000 && (c < 0xd800 || c > 0xdfff) && re.test(String.fromCodePoint(c))
    if (yes && start < 0) start = c
    if (!yes && start >= 0) {
      out.push([start, c - 1])
      start = -1
    }
  }
  return out
}
const IGNORABLE = ranges(/^\p{Default_Ignorable_Code_Point}$/u)
const enc = (s) => encodeURIComponent(s)
// Characters read as '/' or '\': Windows best fit (src/bestfit_table.rs,
// generated from Microsoft's published tables: full-width solidus and reverse
// solidus, division slash, set minus, fraction slash, yen on 932, won on 949
// and 1361, acute accent on 1253) and NFKC (the running Node's: U+FE68,
// U+2100, U+2101, U+2105, U+2106, ...). Both computed, not listed.
const { BEST_FIT } = require('./oracles/fetch.js')
const SLASH_LIKE = [...BEST_FIT].filter(([, b]) => b === '/' || b === '\\').map(([c]) => c)
for (let c = 0x80; c < 0x110000; c++) {
  if ((c < 0xd800 || c > 0xdfff) && !SLASH_LIKE.includes(c) && /[/\\]/.test(String.fromCodePoint(c).normalize('NFKC'))) SLASH_LIKE.push(c)
}
SLASH_LIKE.sort((a, b) => a - b)

/** Asserts a segment leaves every grant scope and is denied before a denied path. */
function refused(seg, cases) {
  for (const url of [`https://api.example.com/public/${seg}/admin`, `https://api.example.com/public/x/${seg}`, `https://api.example.com/v1/repos/${seg}/issues`]) {
    assert.equal(check(url), 'path_not_allowed', url)
    cases.n++
  }
  const url = `https://docs.example.com/x/${seg}/admin`
  assert.equal(check(url), 'explicitly_denied', url)
  // A host-only grant has no path scope: the same segment is allowed there.
  assert.equal(check(`https://files.example.com/x/${seg}/y`), 'allow', seg)
  cases.n += 2
}

test('the red-team inputs never match a grant scope', () => {
  const cases = { n: 0 }
  for (const seg of ['..%20', '...', '..:', '..%EF%BC%8F', '%2e%2e%20', '%2E%2E%2E', '.%2e.', '%2e%2e:', '%2e%2e%3A', '..%3a$DATA', '..::$DATA', '..%E2%80%8B', '..%09']) refused(seg, cases)
  assert.equal(check('https://api.example.com/public/a./x'), 'allow')
  assert.equal(check('https://api.example.com/public/.well-known/x'), 'allow')
  assert.equal(check('https://api.example.com/public/a:b;c/x'), 'allow')
  assert.equal(check('https://api.example.com/v1/repos/acme:v2/issues'), 'allow')
  console.log(`red-team inputs: ${cases.n + 4} cases`)
})

test('every slash-like character, raw and percent-encoded, never matches a grant scope', () => {
  for (const c of [0xff0f, 0xff3c, 0x2215, 0x2216, 0xfe68, 0x2044, 0xa5, 0x20a9, 0x2100, 0x2101, 0x2105, 0x2106]) assert.ok(SLASH_LIKE.includes(c), c.toString(16))
  const cases = { n: 0 }
  for (const cp of SLASH_LIKE) {
    const c = String.fromCodePoint(cp)
    for (const seg of [`..${c}`, `a${c}b`, `${c}`, enc(`..${c}`), enc(`a${c}b`)]) refused(seg, cases)
  }
  console.log(`slash-like characters: ${cases.n} cases`)
})

test('every default-ignorable range boundary: part of a dot segment for grants, dropped by denies', () => {
  assert.ok(IGNORABLE.length >= 17, `Node reports ${IGNORABLE.length} ignorable ranges`)
  const cases = { n: 0 }
  for (const [lo, hi] of IGNORABLE) {
    for (const cp of new Set([lo, hi])) {
      const c = String.fromCodePoint(cp)
      for (const seg of [`..${c}`, `.${c}.`, `${c}`, enc(`..${c}`), `..${enc(c)}%20`]) refused(seg, cases)
      for (const name of [`admin${c}`, `adm${c}in`, `${c}admin`, enc(`ad${c}min`)]) {
        const url = `https://docs.example.com/${name}/x`
        assert.equal(check(url), 'explicitly_denied', `${url} U+${cp.toString(16)}`)
        cases.n++
      }
    }
    // The code points just outside a range are kept: inside a name they make another name.
    for (const cp of [lo - 1, hi + 1]) {
      const c = String.fromCodePoint(cp)
      if (/[\p{Cc}\p{White_Space}]/u.test(c) || SLASH_LIKE.includes(cp)) continue
      const url = `https://docs.example.com/adm${enc(c)}in/x`
      assert.equal(check(url), 'allow', `${url} U+${cp.toString(16)}`)
      cases.n++
    }
  }
  console.log(`ignorable boundaries (${IGNORABLE.length} ranges from Node's Unicode ${process.versions.unicode}): ${cases.n} cases`)
})

test('dot runs of length 1 to 4 with trailing spaces, ignorables, ":" and ";" suffixes', () => {
  const cases = { n: 0 }
  const suffixes = ['', '%20', '.%20', '%20.', '%E2%80%8B', '%C2%AD', '%E2%80%8E', '%F3%A0%80%81', '%EF%B8%8F', '%C2%A0', '%E3%80%80', ':', ':x', '::$DATA', '%3A', ';', ';x', '%3B', '%3Bx', ':;', '%20:x', '%E2%80%8B;x']
  for (let n = 1; n <= 4; n++) {
    for (const dot of ['.', '%2e', '%2E']) {
      for (const suffix of suffixes) {
        // `.` and `..` alone are removed by the URL parser itself.
        if (suffix === '' && n <= 2) continue
        refused(dot.repeat(n) + suffix, cases)
      }
    }
  }
  // A name before the suffix keeps the segment a name.
  for (const suffix of suffixes) {
    assert.equal(check(`https://api.example.com/public/a${suffix}/x`), 'allow', suffix)
    cases.n++
  }
  console.log(`dot runs: ${cases.n} cases`)
})

test('a manifest literal that reads as dots or holds a slash-like character is refused', () => {
  for (const lit of ['...', '..%20', '..%3A', '%3Ax', '%E2%80%8B', 'a%EF%BC%8Fb', 'a%E2%88%95b', '.%E2%80%8E.']) {
    assert.throws(() => PermissionPolicy.fromManifest({ fetch: [`api.example.com/p/${lit}`] }, { plugin: 'x', platform: 'posix' }), { code: 'INVALID_MANIFEST' }, lit)
  }
  assert.doesNotThrow(() => PermissionPolicy.fromManifest({ fetch: ['api.example.com/p/a.', 'api.example.com/p/.well-known', 'api.example.com/p/a%3Ab'] }, { plugin: 'x', platform: 'posix' }))
})
