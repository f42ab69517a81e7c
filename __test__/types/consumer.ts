// A TypeScript consumer of every public export, compiled with `tsc --strict`
// (module node16) by __test__/types.test.js: it fails when index.d.ts drifts.
import {
  VERSION,
  PermissionPolicy,
  PermissionChecker,
  BudgetTracker,
  createChecker,
  learnManifest,
  diffPolicies,
  lockdown,
  serveDenoBroker,
  ERROR_REGISTRY,
  ErrorCode,
  DenyReason,
  DENY_REASONS,
  Capability,
  INSTRUMENTS,
  PERMISSION_DENIED_TOTAL,
  BUDGET_EXCEEDED_TOTAL,
  METER_NAME,
  LIMITS,
  SandboxPermissionError,
  PermissionDeniedError,
  BudgetExceededError,
  InvalidManifestError,
  InvalidSampleError,
  UnsupportedPlatformError,
  isPermissionDenied,
  isBudgetExceeded,
  isInvalidManifest,
  isInvalidSample,
  isSandboxPermissionError,
  serializeError,
  reviveError,
  errorReviverSource,
  type PermissionsManifest,
  type PolicyDiff,
  type DiffWitness,
  type Decision,
  type DenyReason as DenyReasonT,
  type BudgetStatus,
  type BudgetHooks,
  type BudgetName,
  type SerializedError,
} from '@suaveplan/api-sandbox-permissions'
import { runPermissionsConformance, conformanceCases, packageChecker, type MakeChecker } from '@suaveplan/api-sandbox-permissions/testing'
import { metrics } from '@opentelemetry/api'

const manifest: PermissionsManifest = {
  fs: ['/data/**', { path: '/out/*.json', mode: 'write' }],
  fetch: ['api.example.com'],
  budgets: { cpuPercent: 50, memoryMb: 128, wallClockMs: 5000 },
  secrets: ['API_KEY'],
  events: { publishes: ['a.b'], subscribes: ['a.*'] },
  db: { database: 'd' },
}
const policy: PermissionPolicy = PermissionPolicy.fromManifest(manifest, { plugin: 'p', platform: 'posix' })
const checker = new PermissionChecker(policy, { meter: metrics.getMeter('x') })
const d: Decision = checker.checkFs('/data/x', 'read', { resolveSymlinks: true })
if (!d.allowed) {
  const r: DenyReasonT = d.reason
  const c: string = d.capability
  void r, c
}
checker.assertFs('/data/x', 'read')
const toOpen: string = checker.authorizeFs('/data/x', 'read', { resolveSymlinks: true })
const toOpenOnPolicy: string = policy.authorizeFs('/data/x', 'write')
void toOpen, toOpenOnPolicy
const href: string = checker.authorizeFetch(new URL('https://api.example.com/'))
checker.assertFetch('https://api.example.com/')
const d2: Decision = checker.checkFetchAddress('https://api.example.com/', '93.184.216.34')
const href2: string = checker.assertFetchAddress('https://api.example.com/', '93.184.216.34')
const d3: Decision = checker.checkCapability('secrets.get', { name: 'API_KEY' })
checker.assertCapability('db.query', { database: 'd', sql: 'select 1' })
checker.checkCapability('anything', { whatever: 1 })
const c2: PermissionChecker = createChecker(manifest, { plugin: 'p', meter: metrics.getMeter('y') })
const json: Readonly<PermissionsManifest> = policy.toJSON()
const plugin: string = policy.plugin
const platform: 'posix' | 'win32' = policy.platform
const wall: number | undefined = policy.budgets.wallClockMs
const why: string = policy.explainFs('/data/x', 'read').why
const direct: Decision = policy.checkFs('/data/x', 'read')
policy.assertCapability('secrets.get', { name: 'API_KEY' })
const canonical: string | undefined = policy.explainFetch('https://api.example.com').url?.canonical
const capMatched = policy.explainCapability('secrets.get', { name: 'API_KEY' }).matched
const warnings: string[] = policy.lint().map((w) => `${w.pointer} ${w.code} ${w.message}`)
async function denoBroker(policy: PermissionPolicy): Promise<string> {
  const broker = await serveDenoBroker(policy, { maxLineBytes: 4096, onDecision: (e) => void (e.allowed ? e.capability : e.reason) })
  broker.expectPid(process.pid)
  const denied: number = broker.stats.denied + (broker.stats.denials['fs.read not_allowlisted'] ?? 0)
  await broker.close()
  return `${broker.env.DENO_PERMISSION_BROKER_PATH}${denied}`
}
const lockdownFn: (o?: { onDenied?: 'eperm' | 'kill'; landlock?: 'report' | 'strict' }) => { allowed: readonly string[]; landlock: { abi: number } | null } = lockdown
const diffed: PolicyDiff = diffPolicies(policy, policy)
const exit: 0 | 1 | 2 = diffed.exitCode
for (const c of diffed.widens) {
  const w: DiffWitness = c.witness
  if (w.capability === 'fetch') {
    const u: string = w.url
    const ip: string | undefined = w.resolvedIp
    void u, ip
  } else if (w.capability === 'fs.read' || w.capability === 'fs.write') {
    const p: string = w.path
    void p
  }
}
const unknownWhy: string[] = diffed.unknown.map((u) => `${u.section} ${u.pointer} ${u.why}`)
void exit, unknownWhy
const learned: PermissionsManifest = learnManifest([{ capability: 'fs.read', payload: { path: '/x' } }], { platform: 'posix' }).manifest

const tracker = new BudgetTracker(policy, { hooks: { now: () => 0, cpuTimeMs: () => 0, rssMb: () => 1 }, capability: 'request', cpuGraceMs: 100 })
const st: BudgetStatus = tracker.sample()
if (!st.ok) {
  const which: 'cpuPercent' | 'memoryMb' | 'wallClockMs' = st.budget
  void which
}
tracker.record({ rssMb: 5 })
// Optional settings passed on as they are (undefined where unset): the
// runtime reads an own undefined as absent, and so do the types, also under
// exactOptionalPropertyTypes.
function trackerFor(p: PermissionPolicy, s: { capability?: string; unmeasured?: BudgetName[]; hooks?: BudgetHooks; grace?: number }): BudgetTracker {
  return new BudgetTracker(p, { capability: s.capability, unmeasured: s.unmeasured, hooks: s.hooks, cpuGraceMs: s.grace })
}
tracker.check()
tracker.assertWithin()
const elapsed: number = tracker.elapsedMs

try {
  checker.assertFs('/etc/passwd', 'read')
} catch (e) {
  if (isPermissionDenied(e)) {
    const reason: DenyReasonT = e.details.reason
    const s: SerializedError = serializeError(e)
    const back: SandboxPermissionError = reviveError(s)
    void reason, back
  }
  if (isBudgetExceeded(e)) void e.details.budget
  if (isInvalidManifest(e)) void e.details.pointer
  if (isInvalidSample(e)) void e.details.field
  if (isSandboxPermissionError(e)) void e.code
  if (e instanceof PermissionDeniedError) void e.details.target
}
const errs: SandboxPermissionError[] = [
  new PermissionDeniedError({ plugin: 'p', capability: 'fetch', reason: 'invalid_url' }),
  new BudgetExceededError({ plugin: 'p', capability: 'request', budget: 'memoryMb', reason: 'memory', limit: 1, observed: 2, elapsedMs: 3 }),
  new InvalidManifestError({ pointer: '/fs/0', expected: 'x' }),
  new InvalidSampleError({ field: 'now' }),
  new UnsupportedPlatformError({ feature: 'lockdown', platform: 'darwin' }),
]
const ids: string[] = ERROR_REGISTRY.map((e) => e.id)
const code: 'PERMISSION_DENIED' = ErrorCode.PERMISSION_DENIED
const reason: 'path_traversal' = DenyReason.PATH_TRAVERSAL
const reasons: readonly DenyReasonT[] = DENY_REASONS
const cap: 'fs.read' = Capability.FS_READ
const names: string[] = INSTRUMENTS.map((i) => i.name)
const keys: readonly string[] = PERMISSION_DENIED_TOTAL.attributeKeys
const unit: string = BUDGET_EXCEEDED_TOTAL.unit
const meterName: string = METER_NAME
const max: number = LIMITS.maxPatterns
const src: string = errorReviverSource
const v: string = VERSION

const make: MakeChecker = packageChecker()
const count: number = conformanceCases().length
runPermissionsConformance('types', make, { filter: 'fs - ', skip: { 'budget - ': 'not here' } })
const gaps: readonly string[] = ['fs - write to a read grant']
runPermissionsConformance('types-gaps', make, { filter: 'fs - write', expectedFailures: gaps })
// @ts-expect-error: expectedFailures lists case names, not a map
runPermissionsConformance('types-gaps', make, { expectedFailures: { 'fs - write to a read grant': 'reason' } })
runPermissionsConformance('types-async', async (m, ctx) => {
  const p = PermissionPolicy.fromManifest(m, { plugin: ctx.plugin, platform: ctx.platform })
  const ch = new PermissionChecker(p, { meter: ctx.meter })
  return { checkFs: (a, b) => ch.checkFs(a, b), checkFetch: (u) => ch.checkFetch(u), checkCapability: (i, pl) => ch.checkCapability(i, pl) }
})
// An adapter with the optional methods, withShadow included.
const full: MakeChecker = (m, ctx) => {
  const p = PermissionPolicy.fromManifest(m, { plugin: ctx.plugin, platform: ctx.platform })
  const ch = new PermissionChecker(p, { meter: ctx.meter })
  return {
    checkFs: (a, b) => ch.checkFs(a, b),
    checkFetch: (u) => ch.checkFetch(u),
    checkCapability: (i, pl) => ch.checkCapability(i, pl),
    checkFetchAddress: (u, ip) => ch.checkFetchAddress(u, ip),
    assertFs: (a, b) => ch.assertFs(a, b),
    assertFetch: undefined,
    createBudgetTracker: (hooks, o) => new BudgetTracker(p, { hooks, cpuGraceMs: o.cpuGraceMs, unmeasured: o.unmeasured, meter: ctx.meter }),
    withShadow: async (shadowManifest) => {
      const shadow = PermissionPolicy.fromManifest(shadowManifest, { plugin: ctx.plugin, platform: ctx.platform })
      const sc = new PermissionChecker(p, { meter: ctx.meter, shadow })
      return { checkFs: (a, b) => sc.checkFs(a, b), checkFetch: (u) => sc.checkFetch(u), checkCapability: (i, pl) => sc.checkCapability(i, pl), assertCapability: (i, pl) => sc.assertCapability(i, pl) }
    },
  }
}
runPermissionsConformance('types-full', full, { filter: 'fs - ' })
// @ts-expect-error: withShadow returns the check methods, not a decision
const badShadow: MakeChecker = () => ({ checkFs: () => d, checkFetch: () => d, checkCapability: () => d, withShadow: () => d })

// @ts-expect-error: mode must be 'read' | 'write'
checker.checkFs('/x', 'readwrite')
// @ts-expect-error: a policy has no public constructor
new PermissionPolicy()
// @ts-expect-error: plugin is required
PermissionPolicy.fromManifest({}, {})
// @ts-expect-error: unknown manifest key
PermissionPolicy.fromManifest({ network: [] }, { plugin: 'p' })

export { trackerFor, badShadow, denoBroker, direct, lockdownFn, why, canonical, capMatched, warnings, learned, d, d2, d3, href, href2, c2, json, plugin, platform, wall, elapsed, errs, ids, code, reason, reasons, cap, names, keys, unit, meterName, max, src, v, count }
