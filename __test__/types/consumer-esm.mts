// An ES module consumer (module node16, .mts): default and named imports of
// both entry points resolve to the generated .d.mts types. Compiled with
// `tsc --strict` by __test__/types.test.js (and by the package test).
import pkg, { Capability, PermissionPolicy, createChecker, type CapabilityId, type CapabilityPayload, type Decision, type PermissionsManifest } from '@suaveplan/api-sandbox-permissions'
import testing, { runPermissionsConformance, packageChecker } from '@suaveplan/api-sandbox-permissions/testing'
import checkedFs, { openChecked, CheckedFile, type OpenCheckedOptions } from '@suaveplan/api-sandbox-permissions/fs'

const manifest: PermissionsManifest = { fs: ['/data/**'], secrets: ['KEY'] }
const policy: PermissionPolicy = pkg.PermissionPolicy.fromManifest(manifest, { plugin: 'p' })
const same: typeof PermissionPolicy = pkg.PermissionPolicy
const checker = createChecker(manifest, { plugin: 'p', platform: 'posix' })
const d: Decision = checker.checkCapability('secrets.get', { name: 'KEY' })
const d2: Decision = pkg.createChecker(manifest, { plugin: 'q' }).checkFs('/data/x', 'read')
const version: string = pkg.VERSION
const viaDefault: typeof runPermissionsConformance = testing.runPermissionsConformance
const count: number = testing.conformanceCases().length
const make = packageChecker(pkg)

// The checked open (`./fs`): options, the handle and its methods.
const openOptions: OpenCheckedOptions = { mode: 'readwrite', create: true, truncate: undefined, permissions: 0o600 }
async function readChecked(): Promise<string> {
  const file: CheckedFile = await openChecked(checker, '/data/x', openOptions)
  const { bytesRead }: { bytesRead: number } = await file.read(new Uint8Array(16), 0, 16, 0)
  const text: string = await file.readFile({ encoding: 'utf8' })
  const bytes: Uint8Array = await (await checkedFs.openChecked(checker, '/data/y')).readFile()
  const { bytesWritten }: { bytesWritten: number } = await file.write('x', null, 'utf8')
  const size: number = (await file.stat()).size
  await file.close()
  return `${text}${bytesRead}${bytes.length}${bytesWritten}${size}${file.path}${file.fd}`
}
// @ts-expect-error: mode is 'read' | 'write' | 'readwrite'
openChecked(checker, '/data/x', { mode: 'append' })

// A typo in a payload is a type error under both the named and the default import.
// @ts-expect-error at payload: 'nam' is not a field of the secrets.get payload
checker.checkCapability('secrets.get', { nam: 'X' })
// @ts-expect-error at payload: the same through the default export
pkg.createChecker(manifest, { plugin: 'p' }).assertCapability('secrets.get', { nam: 'X' })
// @ts-expect-error at payload: 'databse' is not 'database'
policy.checkCapability('db.query', { databse: 'main', sql: 'select 1' })
// @ts-expect-error at payload: a path, not a url
checker.checkCapability('fetch', { path: '/x' })
// @ts-expect-error at payload: secrets.use needs the name too
checker.checkCapability('secrets.use', { url: 'https://api.example.com/' })
// @ts-expect-error at payload: the id from the Capability table is as typed as its literal
checker.checkCapability(Capability.SECRETS_GET, { nam: 'X' })
// @ts-expect-error: no default export member of that name
pkg.NoSuchExport

// Ids that are not known literals take any payload: the check denies at run time.
const fromPlugin: string = String(Math.random())
checker.checkCapability(fromPlugin, { anything: 1 })
checker.checkCapability('net.raw', { host: 'x' })
const untrusted: unknown = JSON.parse('{}')
checker.assertCapability(fromPlugin, untrusted)
// A known id from the Capability table types its payload like the literal.
const d3: Decision = checker.checkCapability(Capability.SECRETS_GET, { name: 'KEY' })
// An id typed as any known capability takes one of their payloads.
const anyKnown = 'fetch' as CapabilityId
checker.checkCapability(anyKnown, { url: 'https://api.example.com/' })
// A host's generic pass-through keeps the (id, payload) pairing.
const forward = <C extends CapabilityId>(id: C, payload: CapabilityPayload<C>): Decision => checker.checkCapability(id, payload)
forward('events.subscribe', { topic: 'a.*' })

export { d, d2, d3, version, viaDefault, count, make, same, readChecked }

// The WASI gate (subpath ./wasi): default and named imports, the call's
// arguments typed by its name, the answers discriminated by errno.
import wasi, { WasiGate, WASI_CALLS, ERRNO, openMode, type WasiPathAnswer } from '@suaveplan/api-sandbox-permissions/wasi'
const gate = new WasiGate(new pkg.PermissionChecker(policy))
const renamed: WasiPathAnswer = gate.pathCall('path_rename', { oldPath: '/out/a', newPath: '/out/b' }, { timeLeftMs: 100 })
if (renamed.errno === 0 && renamed.outOfBudget === undefined && renamed.capability === undefined) {
  const first: string | undefined = renamed.paths[0]
}
if (renamed.outOfBudget === true) {
  const io: 29 = renamed.errno
}
const opened = gate.pathCall('path_open', { path: '/out/f', oflags: 1, rightsBase: 64n, fdflags: 0, dirflags: 1 })
// @ts-expect-error: path_rename takes oldPath and newPath
gate.pathCall('path_rename', { path: '/out/a' })
// @ts-expect-error: not a gated path call
gate.pathCall('fd_write', { path: '/out/a' })
const fdAnswer = gate.fdCall('/out/f', 'write', { capable: true, reread: false, timeLeftMs: undefined })
const mode: 'read' | 'write' = openMode(1, '2', 0)
const spec = WASI_CALLS['fd_write']
if (spec !== undefined && spec.gate === 'fd') {
  const right: number = spec.right
}
const acces: 2 = ERRNO.ACCES
const sameGate: typeof WasiGate = wasi.WasiGate
const checked = gate.checkPath('/out/f', 'read', { follow: true })
