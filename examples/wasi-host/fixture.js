'use strict'
// The world the example guests run in (shared by the demo, the tests and the
// Rust host's test): real files in a temp directory, one real HTTP server on
// 127.0.0.1, the manifest and the secrets.
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const http = require('node:http')

function makeRoot(prefix = 'wasi-host-') {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)))
  fs.mkdirSync(path.join(root, 'data', 'sub'), { recursive: true })
  fs.mkdirSync(path.join(root, 'out'))
  fs.writeFileSync(path.join(root, 'data', 'input.txt'), 'hello from a file\n')
  fs.writeFileSync(path.join(root, 'data', 'sub', 'inner.txt'), 'inside sub\n')
  fs.writeFileSync(path.join(root, 'out', 'own.txt'), 'the guest may change this\n')
  fs.writeFileSync(path.join(root, 'secret-outside.txt'), 'TOP SECRET\n')
  // Links planted before the guest runs: one to a file outside the grants, and
  // `here -> .` in both, so that `data/here/..` is /data lexically but the root
  // for the kernel (and `out/here/..` the same for operations on a name).
  fs.symlinkSync(path.join(root, 'secret-outside.txt'), path.join(root, 'data', 'link-to-secret'))
  fs.symlinkSync('.', path.join(root, 'data', 'here'))
  fs.symlinkSync('.', path.join(root, 'out', 'here'))
  return root
}

/**
 * More links, for the symlink and fd guests of the differential test: into the
 * grants (relative), out of them (absolute), dangling out of them, a directory
 * outside reached through an intermediate link, a link to a directory two
 * levels down (so `lk/..` reads differently for the kernel and for node:wasi).
 */
function plantLinks(root) {
  fs.mkdirSync(path.join(root, 'outside-dir'))
  fs.symlinkSync('sub/inner.txt', path.join(root, 'data', 'link-to-inner'))
  fs.symlinkSync('sub', path.join(root, 'data', 'link-sub'))
  fs.symlinkSync(path.join(root, 'data', 'input.txt'), path.join(root, 'out', 'link-to-input'))
  fs.symlinkSync(path.join(root, 'secret-outside.txt'), path.join(root, 'out', 'link-out'))
  fs.symlinkSync(path.join(root, 'created-outside.txt'), path.join(root, 'out', 'dang'))
  fs.symlinkSync('own.txt', path.join(root, 'out', 'link-to-own'))
  fs.symlinkSync(path.join(root, 'outside-dir'), path.join(root, 'out', 'link-dir'))
  // `lk/../x` is out/d1/x for the kernel, out/x for a runtime that normalises first.
  fs.mkdirSync(path.join(root, 'out', 'd1', 'd2'), { recursive: true })
  fs.symlinkSync(path.join(root, 'out', 'd1', 'd2'), path.join(root, 'out', 'lk'))
  fs.writeFileSync(path.join(root, 'outside-dir', 'victim'), 'VICTIM\n')
  // Inside the /out preopen but denied (manifestFor's deny), reached by a link
  // whose target node:wasi reads lexically (out/private/key.txt) and the kernel
  // from lk's target (out/d1/private/key.txt, no such file).
  fs.mkdirSync(path.join(root, 'out', 'private'))
  fs.writeFileSync(path.join(root, 'out', 'private', 'key.txt'), 'PRIVATE\n')
  fs.symlinkSync('lk/../private/key.txt', path.join(root, 'out', 'x-lex'))
  return root
}

async function startServer() {
  const server = http.createServer((req, res) => {
    if (req.url.startsWith('/hello')) return res.end('hello from 127.0.0.1')
    res.writeHead(404).end()
  })
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  return { server, port: server.address().port }
}

/** `/data` read-only, `/out` read-write but `/out/private` denied; the API host by IP literal (needed for a loopback address). */
function manifestFor(root, port, budgets = { wallClockMs: 3000, cpuPercent: 80 }) {
  return {
    fs: [`${root}/data/**`, { path: `${root}/out/**`, mode: 'readwrite' }],
    deny: { fs: [`${root}/out/private/**`] },
    fetch: [`127.0.0.1:${port}`],
    secrets: ['GREETING'],
    events: { publishes: ['demo.*'] },
    budgets,
  }
}

const SECRETS = [
  ['GREETING', 'hi there'],
  ['AWS_SECRET_ACCESS_KEY', 'must never be read'],
]

/** Every tag the hostile guest reports, in order; each must come back EACCES (2). */
const HOSTILE_TAGS = [
  'traversal',
  'absolute',
  'write_right_on_read_grant',
  'trunc_on_read_grant',
  'create_in_read_grant',
  'open_through_symlink',
  'dotdot_after_symlink',
  'stat_traversal',
  'set_times_read_grant',
  'mkdir_read_grant',
  'unlink_read_grant',
  'rmdir_read_grant',
  'rename_out_of_grant',
  'rename_read_into_write',
  'link_out_of_grant',
  'link_read_into_write',
  'symlink_plant_relative',
  'symlink_plant_absolute',
  'readlink_traversal',
  'unlink_dotdot_after_symlink',
  'secret_undeclared',
  'fetch_metadata',
  'fetch_undeclared_host',
  'publish_undeclared',
]

/** What the edge guest must see, in order (errnos of wasi_snapshot_preview1). */
const EDGE_REPORTS = [
  ['ilseq', 25],
  ['efault', 21],
  ['ebadf', 8],
  ['nul', 2],
  ['open_dir', 0],
  ['dir_traversal', 2],
  ['dir_relative', 0],
  ['closed_dir', 8],
]

/**
 * What the symlink and fd-level guests must see in both hosts (world: makeRoot
 * + plantLinks, manifestFor), from the SPEC: `guests/expect.json`, shared with
 * the Rust host's tests (its `why` says why for the notable rows).
 */
const EXPECT = JSON.parse(fs.readFileSync(path.join(__dirname, 'guests', 'expect.json'), 'utf8'))
const E = Object.freeze(EXPECT.errno)
const SYMLINK_REPORTS = EXPECT.symlink.map(([tag, name]) => [tag, E[name]])
const FDOPS_REPORTS = EXPECT.fdops.map(([tag, name]) => [tag, E[name]])

const guestPath = (name) => path.join(__dirname, 'guests', `${name}.wat`)

module.exports = { makeRoot, plantLinks, startServer, manifestFor, SECRETS, HOSTILE_TAGS, EDGE_REPORTS, SYMLINK_REPORTS, FDOPS_REPORTS, ERRNO: E, guestPath }
