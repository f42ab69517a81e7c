'use strict'
// IPv6 forms that embed an IPv4 address (SPEC §3, §10, §16), through the
// public API: checkFetch on IP-literal URLs, checkFetchAddress under a name
// grant, explainFetch, lint, toJSON, and a live Deno broker on its socket.
//
// - every IPv6 form that embeds an IPv4 address is judged as that address
//   (mapped, compatible, translated, NAT64 /96 and local-use /48 at each
//   RFC 6052 position, 6to4, Teredo server and client, ISATAP under any /64
//   with interface id 0000:5efe / 0200:5efe and the u/g bits);
// - a CIDR deny is never narrower than it reads: an IPv6 block denies the
//   IPv4 address `a` when an IPv6 form of `a` lies in it (`[::ffff:808:800]/120`
//   is `8.8.8.0/24`), except through ISATAP ids for blocks of /64 or shorter
//   (those name links).
//
// The forms are written out here by hand from the RFCs (hex strings), not
// taken from the checker.
const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const net = require('node:net')
const path = require('node:path')
const { PermissionPolicy, serveDenoBroker } = require('../index.js')

const posix = (m) => PermissionPolicy.fromManifest(m, { plugin: 'embedded-ipv4-test', platform: 'posix' })

const h16 = (n) => (n & 0xffff).toString(16)
const hi = (v) => h16(v >>> 16)
const lo = (v) => h16(v)
const v4 = (s) => s.split('.').reduce((a, x) => ((a << 8) | Number(x)) >>> 0, 0)
const v4s = (v) => [24, 16, 8, 0].map((s) => (v >>> s) & 255).join('.')
const inv = (v) => ~v >>> 0

/** Every IPv6 form of the IPv4 address `v` (a uint32), with its name. */
function forms(v) {
  return [
    ['mapped', `::ffff:${v4s(v)}`],
    ['mapped hex', `::ffff:${hi(v)}:${lo(v)}`],
    ['compatible', `::${hi(v)}:${lo(v)}`],
    ['translated', `::ffff:0:${hi(v)}:${lo(v)}`],
    ['nat64', `64:ff9b::${hi(v)}:${lo(v)}`],
    ['nat64-local /96', `64:ff9b:1:abcd::${hi(v)}:${lo(v)}`],
    // /64: IPv4 at bits 72-103 (after the u-octet).
    ['nat64-local /64', `64:ff9b:1:0:${h16(v >>> 24)}:${h16((v >>> 8) & 0xffff)}:${h16((v & 0xff) << 8)}:0`],
    // /56: bits 56-63 and 72-95.
    ['nat64-local /56', `64:ff9b:1:${h16(v >>> 24)}:${h16((v >>> 16) & 0xff)}:${h16(v & 0xffff)}::`],
    // /48: bits 48-63 and 72-87.
    ['nat64-local /48', `64:ff9b:1:${hi(v)}:${h16((v >>> 8) & 0xff)}:${h16((v & 0xff) << 8)}::`],
    ['6to4', `2002:${hi(v)}:${lo(v)}::1`],
    ['teredo server', `2001:0:${hi(v)}:${lo(v)}:8000:63bf:0:1`],
    ['teredo client', `2001:0:4136:e378:8000:63bf:${hi(inv(v))}:${lo(inv(v))}`],
    ['isatap', `2606:4700:10:20::5efe:${hi(v)}:${lo(v)}`],
    ['isatap u', `2606:4700:10:20:200:5efe:${hi(v)}:${lo(v)}`],
    ['isatap g', `2606:4700:10:20:100:5efe:${hi(v)}:${lo(v)}`],
    ['isatap ug', `2606:4700:10:20:300:5efe:${hi(v)}:${lo(v)}`],
    ['isatap ::/64', `::200:5efe:${v4s(v)}`],
  ]
}

/** The IPv4 block `net/k` written as an IPv6 block in each form whose IPv4 sits in one run. */
function writtenAs(net, k) {
  const mask = k === 0 ? 0 : (0xffffffff << (32 - k)) >>> 0
  const n = (net & mask) >>> 0
  const c = (inv(net) & mask) >>> 0
  return [
    ['ipv4', `${v4s(n)}/${k}`],
    ['mapped', `[::ffff:${hi(n)}:${lo(n)}]/${96 + k}`],
    ['compatible', `[::${hi(n)}:${lo(n)}]/${96 + k}`],
    ['translated', `[::ffff:0:${hi(n)}:${lo(n)}]/${96 + k}`],
    ['nat64', `[64:ff9b::${hi(n)}:${lo(n)}]/${96 + k}`],
    ['6to4', `[2002:${hi(n)}:${lo(n)}::]/${16 + k}`],
    ['teredo client', `[2001:0:4136:e378:8000:63bf:${hi(c)}:${lo(c)}]/${96 + k}`],
    ['isatap', `[2606:4700:10:20::5efe:${hi(n)}:${lo(n)}]/${96 + k}`],
    ['isatap u', `[2606:4700:10:20:200:5efe:${hi(n)}:${lo(n)}]/${96 + k}`],
  ]
}

test('the review example: a deny written as [::ffff:808:800]/120 is 8.8.8.0/24, in every entry point', () => {
  const grants = ['*.example.org', '8.8.8.8', '8.8.4.4', '[64:ff9b::808:808]', '[2002:808:808::1]', '[2606:4700:10:20::5efe:808:808]']
  const p = posix({ fetch: grants, deny: { fetch: ['[::ffff:808:800]/120'] } })
  const q = posix({ fetch: grants, deny: { fetch: ['8.8.8.0/24'] } })
  assert.deepEqual(p.toJSON().deny.fetch, ['8.8.8.0/24'])
  for (const [name, ip] of forms(v4('8.8.8.8'))) {
    for (const pol of [p, q]) {
      assert.equal(pol.checkFetch(`http://[${ip}]/`).reason, 'explicitly_denied', `${name} ${ip}`)
      assert.equal(pol.checkFetchAddress('https://a.example.org/', ip).reason, 'explicitly_denied', `${name} ${ip}`)
      assert.deepEqual(pol.explainFetch(`http://[${ip}]/`).deniedBy, { index: 0, pointer: '/deny/fetch/0', pattern: '8.8.8.0/24' }, ip)
    }
  }
  assert.equal(p.checkFetch('http://8.8.8.8/').reason, 'explicitly_denied')
  assert.deepEqual(p.checkFetch('http://8.8.4.4/'), { allowed: true })
  assert.deepEqual(p.checkFetchAddress('https://a.example.org/', '64:ff9b::808:404'), { allowed: true })
  assert.deepEqual(p.lint().filter((w) => w.code === 'deny-unreachable'), [])
})

test('a CIDR deny written in any embedding form denies its IPv4 block in every form, and nothing outside it', () => {
  const blocks = [
    ['8.8.8.0', 24],
    ['10.0.0.0', 8],
    ['169.254.169.254', 32],
    ['100.64.0.0', 10],
    ['203.0.113.128', 25],
    ['1.1.1.1', 32],
    ['172.16.0.0', 12],
  ]
  let cases = 0
  for (const [netStr, k] of blocks) {
    const net = v4(netStr)
    const size = 2 ** (32 - k)
    const inside = [net, net + size - 1, net + Math.floor(size / 3)].map((x) => x >>> 0)
    const outside = [net - 1, net + size].filter((x) => x >= 0 && x <= 0xffffffff).map((x) => x >>> 0)
    for (const [form, rule] of writtenAs(net, k)) {
      const p = posix({ fetch: ['*.example.org', ...inside.map(v4s), ...outside.map(v4s)], deny: { fetch: [rule] } })
      for (const a of inside) {
        assert.equal(p.checkFetch(`http://${v4s(a)}/`).reason, 'explicitly_denied', `${rule} (${form}) ${v4s(a)}`)
        for (const [name, ip] of forms(a)) {
          assert.equal(p.checkFetch(`http://[${ip}]/`).reason, 'explicitly_denied', `${rule} (${form}) ${name} ${ip}`)
          assert.equal(p.checkFetchAddress('https://a.example.org/', ip).reason, 'explicitly_denied', `${rule} ${name} ${ip}`)
          cases += 2
        }
      }
      for (const a of outside) {
        assert.notEqual(p.checkFetch(`http://${v4s(a)}/`).reason, 'explicitly_denied', `${rule} (${form}) ${v4s(a)}`)
        for (const [name, ip] of forms(a)) {
          // Forms that carry a second address (a Teredo server, the other
          // RFC 6052 readings of a local-use NAT64 address) may be denied for it.
          if (name.startsWith('teredo') || name.startsWith('nat64-local')) continue
          assert.notEqual(p.checkFetchAddress('https://a.example.org/', ip).reason, 'explicitly_denied', `${rule} (${form}) ${name} ${ip}`)
          cases++
        }
      }
      // lint: an IP grant inside the block reaches the deny.
      assert.deepEqual(p.lint().filter((w) => w.code === 'deny-unreachable'), [], rule)
    }
  }
  assert.ok(cases > 2000, `${cases}`)
})

test('blocks that hold whole embedding regions deny all of IPv4; /64 and shorter never through ISATAP ids', () => {
  for (const rule of ['[::]/0', '[::]/64', '[::]/96', '[::ffff:0:0]/96', '[64:ff9b::]/96', '[2002::]/16', '[2001::]/32', '[64:ff9b:1::]/48']) {
    const p = posix({ fetch: ['8.8.4.4', '*.example.org'], deny: { fetch: [rule] } })
    assert.equal(p.checkFetch('http://8.8.4.4/').reason, 'explicitly_denied', rule)
    assert.equal(p.checkFetchAddress('https://a.example.org/', '93.184.216.34').reason, 'explicitly_denied', rule)
  }
  for (const rule of ['[fd00::]/8', '[2606:4700:10:20::]/64', '[fe80::]/10', '[2001:db8::]/32']) {
    const p = posix({ fetch: ['8.8.4.4', '*.example.org'], deny: { fetch: [rule] } })
    assert.deepEqual(p.checkFetch('http://8.8.4.4/'), { allowed: true }, rule)
    assert.deepEqual(p.checkFetchAddress('https://a.example.org/', '93.184.216.34'), { allowed: true }, rule)
    assert.deepEqual(p.checkFetchAddress('https://a.example.org/', '64:ff9b::808:404'), { allowed: true }, rule)
  }
  // Longer than /64: the ISATAP ids it holds are their IPv4 addresses.
  const p = posix({ fetch: ['8.8.4.4'], deny: { fetch: ['[2606:4700:10:20::]/72'] } })
  assert.equal(p.checkFetch('http://8.8.4.4/').reason, 'explicitly_denied')
})

test('an exact IPv6 deny in an embedding form denies its IPv4 address in every form', () => {
  for (const [, ip] of forms(v4('8.8.8.8'))) {
    const p = posix({ fetch: ['8.8.8.8', '8.8.4.4', '*.example.org'], deny: { fetch: [`[${ip}]`] } })
    assert.equal(p.checkFetch('http://8.8.8.8/').reason, 'explicitly_denied', ip)
    assert.equal(p.checkFetchAddress('https://a.example.org/', '64:ff9b::808:808').reason, 'explicitly_denied', ip)
    assert.equal(p.checkFetchAddress('https://a.example.org/', '2606:4700:10:20:200:5efe:808:808').reason, 'explicitly_denied', ip)
    // lint: the deny reaches the 8.8.8.8 grant and the name grant.
    assert.deepEqual(p.lint().filter((w) => w.code === 'deny-unreachable'), [], ip)
    assert.deepEqual(p.checkFetch('http://8.8.4.4/'), { allowed: true }, ip)
  }
  // An IP deny reaches a name grant: the name may resolve to it.
  const q = posix({ fetch: ['*.example.org'], deny: { fetch: ['10.0.0.1', '[64:ff9b::a00:2]'] } })
  assert.equal(q.checkFetchAddress('https://a.example.org/', '10.0.0.2').reason, 'explicitly_denied')
  assert.deepEqual(q.lint().filter((w) => w.code === 'deny-unreachable'), [])
})

test('ISATAP under any /64 carrying a loopback, private, link-local or metadata address is address_not_allowed under a name grant', () => {
  const p = posix({ fetch: ['*.example.org'] })
  let cases = 0
  for (const a of ['127.0.0.1', '127.255.255.254', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '192.0.2.1', '198.18.0.1', '224.0.0.1', '255.255.255.255']) {
    for (const prefix of ['2606:4700:10:20', '2a00:1450:4001:81c', '2001:4860:4860:0', '0:0:0:0']) {
      for (const iid of ['0', '100', '200', '300']) {
        const ip = `${prefix}:${iid}:5efe:${v4s(v4(a))}`
        assert.equal(p.checkFetchAddress('https://a.example.org/', ip).reason, 'address_not_allowed', ip)
        cases++
      }
    }
    for (const [name, ip] of forms(v4(a))) {
      assert.equal(p.checkFetchAddress('https://a.example.org/', ip).reason, 'address_not_allowed', `${name} ${ip}`)
      cases++
    }
  }
  // A global IPv4 address in an ISATAP id under a global /64 is global.
  for (const ip of ['2606:4700:10:20::5efe:808:808', '2606:4700:10:20:200:5efe:101:101', '2606:4700:10:20:400:5efe:7f00:1']) {
    assert.deepEqual(p.checkFetchAddress('https://a.example.org/', ip), { allowed: true }, ip)
  }
  assert.ok(cases > 200)
})

/** One request line to a live broker, its reply. */
async function ask(sockPath, lines) {
  const sock = net.connect(sockPath)
  await new Promise((r, j) => {
    sock.once('connect', r)
    sock.once('error', j)
  })
  sock.setEncoding('utf8')
  let buf = ''
  const replies = []
  const done = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`broker replied to ${replies.length} of ${lines.length}`)), 10000)
    sock.on('data', (d) => {
      buf += d
      let i
      while ((i = buf.indexOf('\n')) >= 0) {
        replies.push(JSON.parse(buf.slice(0, i)))
        buf = buf.slice(i + 1)
      }
      if (replies.length === lines.length) {
        clearTimeout(timer)
        resolve()
      }
    })
  })
  lines.forEach((value, id) => sock.write(`${JSON.stringify({ v: 1, pid: 77, id: id + 1, datetime: new Date().toISOString(), permission: 'net', value })}\n`))
  await done
  sock.destroy()
  return replies
}

test('the Deno broker judges net targets in every form against a deny written in any form', { skip: process.platform === 'win32' && 'Unix socket' }, async (t) => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'embedded-ipv4-'))
  t.after(() => fs.rmSync(tmp, { recursive: true, force: true }))
  const targets = [...forms(v4('8.8.8.8')).map(([, ip]) => `[${ip}]:443`), '8.8.8.8:443']
  for (const rule of ['[::ffff:808:800]/120', '[64:ff9b::808:800]/120', '[2606:4700:10:20::5efe:808:800]/120', '8.8.8.0/24']) {
    const grants = ['https://8.8.8.8', 'https://8.8.4.4', ...forms(v4('8.8.8.8')).map(([, ip]) => `https://[${ip}]`)]
    const policy = posix({ fetch: grants, deny: { fetch: [rule] } })
    const broker = await serveDenoBroker(policy, { tmpDir: tmp })
    try {
      const replies = await ask(broker.path, [...targets, '8.8.4.4:443'])
      replies.slice(0, -1).forEach((r, i) => {
        assert.equal(r.result, 'deny', `${rule} ${targets[i]}`)
        assert.match(r.reason, /explicitly_denied/, `${rule} ${targets[i]}`)
      })
      assert.equal(replies.at(-1).result, 'allow', `${rule} 8.8.4.4:443`)
    } finally {
      await broker.close()
    }
  }
})

test('CLI: diff and explain read a mapped CIDR deny as its IPv4 CIDR; lint finds it reached', (t) => {
  const { spawnSync } = require('node:child_process')
  const BIN = path.join(__dirname, '..', 'bin', 'api-sandbox-permissions.js')
  const cli = (args) => spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8' })
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'embedded-ipv4-cli-'))
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const write = (name, deny) => {
    const f = path.join(dir, name)
    fs.writeFileSync(f, JSON.stringify({ fetch: ['*.example.org', '8.8.8.8'], deny: { fetch: deny }, budgets: { wallClockMs: 1000, memoryMb: 64, cpuPercent: 50 } }))
    return f
  }
  const v4 = write('v4.json', ['8.8.8.0/24'])
  const mapped = write('mapped.json', ['[::ffff:808:800]/120'])
  const narrower = write('narrower.json', ['[::ffff:808:800]/124'])
  // The same deny, written two ways: nothing widens either way.
  for (const [a, b] of [[v4, mapped], [mapped, v4]]) {
    const r = cli(['diff', a, b, '--json'])
    assert.equal(r.status, 0, r.stdout + r.stderr)
  }
  // A narrower deny widens.
  const r = cli(['diff', mapped, narrower, '--json'])
  assert.equal(r.status, 1, r.stdout + r.stderr)
  assert.ok(JSON.parse(r.stdout).widens.some((w) => w.section === 'fetch' && w.pointer === '/deny/fetch/0'), r.stdout)
  const e = cli(['explain', mapped, 'fetch:http://[64:ff9b::808:808]/', '--json'])
  assert.match(e.stdout, /\/deny\/fetch\/0/, e.stdout + e.stderr)
  assert.match(e.stdout, /explicitly_denied/, e.stdout)
  const l = cli(['lint', mapped, '--json'])
  assert.doesNotMatch(l.stdout, /deny-unreachable/, l.stdout + l.stderr)
})
