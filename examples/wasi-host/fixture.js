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

/** wasi_snapshot_preview1 errno values the guests' expectations use. */
const E = Object.freeze({ OK: 0, ACCES: 2, BADF: 8, EXIST: 20, INVAL: 28, LOOP: 32, NOTSUP: 58, PERM: 63, NOTCAPABLE: 76 })
const all = (tags, errno) => tags.map((t) => [t, errno])

/**
 * What the symlink guest must see in both hosts (world: makeRoot + plantLinks),
 * from the SPEC: a call that follows a final symlink in the runtime is checked
 * as the path it resolves to, whatever flag the guest passed.
 */
const SYMLINK_REPORTS = [
  ['nofollow_read_link_outside', E.ACCES],
  ['nofollow_trunc_link_into_read_grant', E.ACCES],
  ['nofollow_create_through_dangling', E.ACCES],
  ['nofollow_write_link_outside', E.ACCES],
  // Resolved target allowed: what O_NOFOLLOW gives, in both hosts.
  ['nofollow_link_inside', E.LOOP],
  ['nofollow_excl_on_link', E.EXIST],
  ['nofollow_dir_link', E.LOOP],
  ['follow_link_inside', E.OK],
  ['follow_link_outside', E.ACCES],
  ['create_through_intermediate_link', E.ACCES],
  ['stat_nofollow_link', E.OK],
  ['stat_follow_link_outside', E.ACCES],
  ['set_times_nofollow_link', E.OK],
  ['set_times_follow_link_outside', E.ACCES],
  // `lk/../x`: inside the grant as the kernel reads it (out/d1/x), outside as
  // node:wasi reads it (it normalises first: out/x, a link out of the grants).
  ['normalized_unlink_through_link', E.ACCES],
  ['normalized_open_through_link', E.ACCES],
  // x-lex -> lk/../private/key.txt: node:wasi follows it lexically (out/private, denied).
  ['lexical_link_target_into_deny', E.ACCES],
  // No such link as the kernel reads it (out/d1/link-to-own), a link as node:wasi
  // reads it: not followed, so O_NOFOLLOW's errno.
  ['normalized_nofollow_final_link', E.LOOP],
  // An absolute target names a host path: never revealed (wasmtime's rule, the Node gate's too).
  ['readlink_absolute_target', E.PERM],
  ['readlink_relative_target', E.OK],
  ['unlink_link', E.OK],
  // Linking what a link points at: refused before any check, in both hosts (wasmtime's rule).
  ['link_follow_refused', E.INVAL],
  ['link_follow_refused_denied_source', E.INVAL],
]

/** What the fd-level guest must see in both hosts (world: makeRoot + plantLinks). */
const FDOPS_REPORTS = [
  // A preopen's own directory is not under `/data/**` or `/out/**`.
  ...all(['data_preopen_set_times', 'data_preopen_set_size', 'data_preopen_allocate', 'data_preopen_write', 'data_preopen_readdir', 'data_preopen_filestat', 'data_preopen_sync'], E.ACCES),
  ...all(['out_preopen_set_times', 'out_preopen_write', 'out_preopen_readdir'], E.ACCES),
  ['open_sub_dir', E.OK],
  ['sub_dir_readdir', E.OK],
  ['sub_dir_filestat', E.OK],
  ['sub_dir_set_times', E.ACCES],
  ['sub_dir_write', E.ACCES],
  ['open_own_read_only', E.OK],
  ['own_ro_read', E.OK],
  // Allowed by the grant, but the fd was opened without the right: preview1's ENOTCAPABLE.
  ['own_ro_write', E.NOTCAPABLE],
  ['own_ro_set_size', E.NOTCAPABLE],
  ['own_ro_set_times', E.NOTCAPABLE],
  ['open_input', E.OK],
  ['input_read', E.OK],
  ['input_sync', E.ACCES],
  ['input_set_times', E.ACCES],
  ['open_own_write', E.OK],
  ['own_rw_set_times', E.OK],
  ['own_rw_write', E.OK],
  ['stdout_write', E.OK],
  ['unknown_fd_write', E.BADF],
  ['sock_recv_preopen', E.NOTSUP],
  ['fdstat_preopen', E.OK],
  ['open_input_again', E.OK],
  ['renumber_onto_stdout', E.OK],
  // The fd table follows fd_renumber: fd 1 is now data/input.txt (read grant).
  ['renumbered_stdout_write', E.ACCES],
  ['renumbered_stdout_read', E.OK],
]

const guestPath = (name) => path.join(__dirname, 'guests', `${name}.wat`)

module.exports = { makeRoot, plantLinks, startServer, manifestFor, SECRETS, HOSTILE_TAGS, EDGE_REPORTS, SYMLINK_REPORTS, FDOPS_REPORTS, ERRNO: E, guestPath }
