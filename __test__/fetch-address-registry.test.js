'use strict'
// checkFetchAddress against the IANA IPv4 and IPv6 special-purpose address
// registries (SPEC §3, DNS rebinding). The ORACLE is the registry CSV in
// __test__/fixtures/iana/ (provenance in its README), read here with a CSV
// parser of its own; the checker's table is never consulted.
//
// Reading of the registry (the checker follows it; documented in src/fetch.rs):
// - a row whose "Globally Reachable" cell is anything but `True` (False, N/A,
//   blank for terminated rows) is not globally reachable;
// - fail closed: an address inside such a row is denied even when a smaller
//   row inside it says `True` (192.0.0.9/32 in 192.0.0.0/24, 2001:1::1/128 in
//   2001::/23);
// - IPv4-mapped `::ffff:0:0/96` and NAT64 `64:ff9b::/96` are the IPv4 address
//   they carry (SPEC §3: mapped compared as its IPv4), judged by the IPv4 registry;
// - every IPv6 form that embeds an IPv4 address (SPEC §3, §16: compatible,
//   translated, local-use NAT64 at each RFC 6052 position, 6to4, Teredo server
//   and client, ISATAP ids 00-00-5E-FE with any u/g bits under any /64) is
//   also judged by the IPv4 registry: not global when the IPv4 address is not;
// - beyond the registries: multicast (224.0.0.0/4, ff00::/8, own registries)
//   is denied, and IPv6 outside global unicast 2000::/3 is denied.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { createChecker } = require('..')

const DIR = path.join(__dirname, 'fixtures', 'iana')

/** RFC 4180 CSV: quoted cells may hold commas, doubled quotes and newlines. */
function parseCsv(text) {
  const rows = []
  let row = []
  let cell = ''
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"'
        i++
      } else if (ch === '"') quoted = false
      else cell += ch
    } else if (ch === '"') quoted = true
    else if (ch === ',') {
      row.push(cell)
      cell = ''
    } else if (ch === '\n' || ch === '\r') {
      if (ch === '\r' && text[i + 1] === '\n') i++
      row.push(cell)
      cell = ''
      if (row.some((c) => c !== '')) rows.push(row)
      row = []
    } else cell += ch
  }
  if (cell !== '' || row.length) {
    row.push(cell)
    rows.push(row)
  }
  const [header, ...body] = rows
  return body.map((r) => Object.fromEntries(header.map((h, i) => [h, (r[i] ?? '').trim()])))
}

// Addresses as BigInt, width 32 or 128.
function v4ToBig(s) {
  const o = s.split('.').map(Number)
  assert.equal(o.length, 4, s)
  return o.reduce((a, x) => (a << 8n) | BigInt(x), 0n)
}
function v6ToBig(s) {
  let [head, tail] = s.includes('::') ? s.split('::') : [s, null]
  const parts = (x) => (x === '' || x === null ? [] : x.split(':'))
  let h = parts(head)
  let t = parts(tail)
  const expand = (a) => a.flatMap((p) => (p.includes('.') ? [((v4ToBig(p) >> 16n) & 0xffffn).toString(16), (v4ToBig(p) & 0xffffn).toString(16)] : [p]))
  h = expand(h)
  t = expand(t)
  const groups = tail === null ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t]
  assert.equal(groups.length, 8, s)
  return groups.reduce((a, g) => (a << 16n) | BigInt(parseInt(g, 16)), 0n)
}
const v4Str = (x) => [24n, 16n, 8n, 0n].map((s) => String((x >> s) & 0xffn)).join('.')
const v6Str = (x) => [...Array(8)].map((_, i) => ((x >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(':')

function blocks(cell, family) {
  return cell
    .split(',')
    .map((b) => b.replace(/\[\d+\]/g, '').trim())
    .filter(Boolean)
    .map((b) => {
      const [addr, len] = b.split('/')
      const bits = family === 4 ? 32 : 128
      const net = family === 4 ? v4ToBig(addr) : v6ToBig(addr)
      const size = 1n << BigInt(bits - Number(len))
      return { family, text: b, start: net, end: net + size - 1n, bits }
    })
}

function registry(file, family) {
  const rows = parseCsv(fs.readFileSync(path.join(DIR, file), 'utf8'))
  return rows.flatMap((r) => {
    const global = r['Globally Reachable'].replace(/\[\d+\]/g, '').trim() === 'True'
    return blocks(r['Address Block'], family).map((b) => ({ ...b, name: r.Name, global }))
  })
}

const V4 = registry('iana-ipv4-special-registry-1.csv', 4)
const V6 = registry('iana-ipv6-special-registry-1.csv', 6)
const MAPPED = V6.find((b) => b.text === '::ffff:0:0/96')
const NAT64 = V6.find((b) => b.text === '64:ff9b::/96')

const covers = (rows, x) => rows.filter((b) => x >= b.start && x <= b.end)
/** The oracle: not globally reachable per the registries (as read above). */
function notGlobal4(x) {
  if (x >> 28n === 0xen) return true // multicast 224.0.0.0/4
  return covers(V4, x).some((b) => !b.global)
}
function notGlobal6(x) {
  if (x >= MAPPED.start && x <= MAPPED.end) return notGlobal4(x & 0xffffffffn)
  if (x >= NAT64.start && x <= NAT64.end) return notGlobal4(x & 0xffffffffn)
  if (x >> 125n !== 1n) return true // outside 2000::/3 (includes ff00::/8 multicast)
  return covers(V6, x).some((b) => !b.global)
}

let seed = 0x5eed1234
const rnd = () => {
  seed ^= seed << 13
  seed ^= seed >>> 17
  seed ^= seed << 5
  return (seed >>> 0) / 2 ** 32
}
const randBig = (lo, hi) => {
  const span = hi - lo + 1n
  let r = 0n
  for (let i = 0; i < 5; i++) r = (r << 32n) | BigInt(Math.floor(rnd() * 2 ** 32))
  return lo + (r % span)
}

const checker = createChecker({ fetch: ['api.example.com', '*.corp.example', 'localhost:3000', '10.0.0.1', '[fd00::1]', '192.0.0.9'] }, { plugin: 'registry-test' })
const verdict = (ip) => checker.checkFetchAddress('https://api.example.com/', ip)

function expectFor(b, x) {
  const ip = b.family === 4 ? v4Str(x) : v6Str(x)
  const deny = b.family === 4 ? notGlobal4(x) : notGlobal6(x)
  return { ip, deny }
}

test('every not-globally-reachable registry row: start, end and inside are denied', () => {
  let cases = 0
  for (const b of [...V4, ...V6].filter((r) => !r.global && r !== MAPPED)) {
    const points = [b.start, b.end, ...[0, 1, 2, 3, 4].map(() => randBig(b.start, b.end))]
    for (const x of points) {
      const ip = b.family === 4 ? v4Str(x) : v6Str(x)
      const d = verdict(ip)
      assert.equal(d.allowed, false, `${ip} in ${b.text} (${b.name}) must be denied`)
      assert.equal(d.reason, 'address_not_allowed', ip)
      cases++
    }
  }
  console.log(`registry rows not globally reachable: ${cases} addresses denied`)
  assert.ok(cases > 150)
})

test('every registry row, and just outside it, decides as the registry reads', () => {
  let cases = 0
  let allowed = 0
  for (const b of [...V4, ...V6]) {
    const max = (1n << BigInt(b.bits)) - 1n
    const points = [b.start, b.end, randBig(b.start, b.end), randBig(b.start, b.end)]
    if (b.start > 0n) points.push(b.start - 1n)
    if (b.end < max) points.push(b.end + 1n)
    for (const x of points) {
      const { ip, deny } = expectFor(b, x)
      const d = verdict(ip)
      assert.equal(d.allowed, !deny, `${ip} (near ${b.text}, ${b.name}): registry says ${deny ? 'not ' : ''}globally reachable`)
      cases++
      if (d.allowed) allowed++
    }
  }
  console.log(`registry rows and neighbours: ${cases} addresses, ${allowed} allowed`)
  assert.ok(allowed > 10, 'neighbours of special blocks include global addresses')
})

test('IPv6 forms that embed a not-globally-reachable IPv4 address are denied', () => {
  let cases = 0
  const hex = (x) => `${((x >> 16n) & 0xffffn).toString(16)}:${(x & 0xffffn).toString(16)}`
  for (const b of V4.filter((r) => !r.global)) {
    for (const x of [b.start, b.end, randBig(b.start, b.end)]) {
      const forms = [
        `::ffff:${v4Str(x)}`, // mapped
        `::ffff:${hex(x)}`,
        `::${hex(x)}`, // compatible (deprecated)
        `::ffff:0:${hex(x)}`, // translated ::ffff:0:0/96
        `64:ff9b::${hex(x)}`, // NAT64 global
        `64:ff9b:1::${hex(x)}`, // NAT64 local-use
        `2002:${hex(x)}::1`, // 6to4
        `2001:0:${hex(x)}::1`, // Teredo server
        `2001:0:4136:e378:8000:63bf:${hex(x ^ 0xffffffffn)}`, // Teredo client (XOR)
        `2001:0:${hex(x)}:8000:63bf:${hex(x ^ 0xffffffffn)}`, // Teredo, both
        // Local-use NAT64 at the other RFC 6052 positions: /64 (bits 72-103), /56 (56-63, 72-95), /48 (48-63, 72-87).
        v6Str((0x64ff9b0001n << 80n) | (x << 24n)),
        v6Str((0x64ff9b0001n << 80n) | ((x >> 24n) << 64n) | ((x & 0xffffffn) << 32n)),
        v6Str((0x64ff9b0001n << 80n) | ((x >> 16n) << 64n) | ((x & 0xffffn) << 40n)),
        // ISATAP (RFC 5214): interface id 00-00-5E-FE with the u/g bits, under any /64, global ones included.
        ...['2606:4700:10:20', '2a00:1450:4001:81c', '2620:4f:8000:0', '0:0:0:0'].flatMap((p) => ['0', '100', '200', '300'].map((u) => `${p}:${u}:5efe:${hex(x)}`)),
      ]
      for (const ip of forms) {
        const d = verdict(ip)
        assert.equal(d.allowed, false, `${ip} embeds ${v4Str(x)} (${b.text})`)
        cases++
      }
    }
  }
  console.log(`embedded IPv4 forms: ${cases} addresses denied`)
})

test('ISATAP and tunnel forms of globally reachable IPv4 addresses under a global /64 decide as the registries read them', () => {
  let cases = 0
  const hex = (x) => `${((x >> 16n) & 0xffffn).toString(16)}:${(x & 0xffffn).toString(16)}`
  for (const b of V4.filter((r) => r.global)) {
    for (const x of [b.start, b.end]) {
      if (notGlobal4(x)) continue
      for (const ip of ['2606:4700:10:20', '2a00:1450:4001:81c'].flatMap((p) => ['0', '200'].map((u) => `${p}:${u}:5efe:${hex(x)}`))) {
        // The /64 is global unicast outside every registry row: only the embedded IPv4 decides.
        assert.equal(notGlobal6(v6ToBig(ip)), false, ip)
        assert.deepEqual(verdict(ip), { allowed: true }, `${ip} carries the global ${v4Str(x)} (${b.text})`)
        cases++
      }
    }
  }
  for (const x of [0x08080808n, 0x01010101n]) {
    for (const ip of [`2606:4700:10:20::5efe:${hex(x)}`, `2606:4700:10:20:200:5efe:${hex(x)}`, `64:ff9b::${hex(x)}`, `::ffff:${hex(x)}`]) {
      assert.deepEqual(verdict(ip), { allowed: true }, ip)
      cases++
    }
  }
  console.log(`global embedded IPv4 forms: ${cases} addresses allowed`)
  assert.ok(cases > 4)
})

test('the issue examples, global addresses, and explicit grants', () => {
  for (const ip of ['64:ff9b:1::a9fe:a9fe', '2001:0:4136:e378:8000:63bf:80ff:fffe', '255.255.255.255', '0.0.0.0', '192.0.0.9', '192.0.0.10', '2001:1::1', '3fff::1', '5f00::1', '100::1', '100:0:0:1::1', 'fe80::1', 'ff0e::1', '224.0.0.1', '::', '::1']) {
    assert.equal(verdict(ip).reason, 'address_not_allowed', ip)
  }
  for (const ip of ['8.8.8.8', '1.1.1.1', '::ffff:8.8.8.8', '64:ff9b::808:808', '2606:4700::1111', '2a00:1450:4001::1', '192.31.196.1', '2620:4f:8000::1']) {
    assert.deepEqual(verdict(ip), { allowed: true }, ip)
  }
  // A grant that names the IP literal or localhost is the only way to a special address.
  assert.deepEqual(checker.checkFetchAddress('https://10.0.0.1/', '10.0.0.1'), { allowed: true })
  assert.deepEqual(checker.checkFetchAddress('https://[fd00::1]/', 'fd00::1'), { allowed: true })
  assert.deepEqual(checker.checkFetchAddress('https://192.0.0.9/', '192.0.0.9'), { allowed: true })
  assert.deepEqual(checker.checkFetchAddress('http://localhost:3000/', '127.0.0.1'), { allowed: true })
  assert.equal(checker.checkFetchAddress('http://localhost:3000/', '10.0.0.2').reason, 'address_not_allowed')
  assert.equal(checker.checkFetchAddress('https://a.corp.example/', '192.168.1.1').reason, 'address_not_allowed')
  assert.throws(() => checker.assertFetchAddress('https://api.example.com/', '2002:a9fe:a9fe::1'), (e) => e.code === 'PERMISSION_DENIED' && e.details.reason === 'address_not_allowed')
})

test('second oracle: Python ipaddress is_global agrees on the registry samples (where python3 exists)', (t) => {
  const { spawnSync } = require('node:child_process')
  const probe = spawnSync('python3', ['-c', 'import ipaddress'], { encoding: 'utf8' })
  if (probe.status !== 0) return t.skip('python3 not available')
  const samples = []
  for (const b of [...V4, ...V6]) samples.push(b.family === 4 ? v4Str(randBig(b.start, b.end)) : v6Str(randBig(b.start, b.end)))
  const script = 'import ipaddress,sys,json\nprint(json.dumps([ipaddress.ip_address(a).is_global for a in json.load(sys.stdin)]))'
  const r = spawnSync('python3', ['-c', script], { input: JSON.stringify(samples), encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  const pyGlobal = JSON.parse(r.stdout)
  let checked = 0
  for (let i = 0; i < samples.length; i++) {
    // Python may call an address global that the checker denies fail-closed
    // (its tables are older or registry-exact); never the other way round:
    // an address Python knows as non-global must be denied.
    if (!pyGlobal[i]) {
      assert.equal(verdict(samples[i]).allowed, false, `${samples[i]}: Python says not global`)
      checked++
    }
  }
  console.log(`python ipaddress: ${samples.length} samples, ${checked} non-global ones denied`)
})
