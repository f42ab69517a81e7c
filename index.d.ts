// Public types of @suaveplan/api-sandbox-permissions.
import type { Meter } from '@opentelemetry/api'

/** Access a grant gives. Default: `'read'`. */
export type FsGrantMode = 'read' | 'write' | 'readwrite'
/** An absolute glob (`/data/**`), or a glob with a mode. */
export type FsGrant = string | { path: string; mode?: FsGrantMode }

export interface Budgets {
  /** CPU time over wall time, percent of one core. Finite, > 0. */
  cpuPercent?: number
  /** Resident memory, MB. Finite, > 0. */
  memoryMb?: number
  /** Wall clock since the request started, ms. Finite, > 0. */
  wallClockMs?: number
}

export interface PermissionsManifest {
  /** Absolute globs; default grant mode `read`. */
  fs?: FsGrant[]
  /** Host patterns `[scheme://]host[:port]`. */
  fetch?: string[]
  budgets?: Budgets
  /** Secret names the plugin may read (exact, case-sensitive). */
  secrets?: string[]
  /** Dot-separated topic patterns: `*` one segment, final `**` one or more. */
  events?: { publishes?: string[]; subscribes?: string[] }
  /** The one database the plugin may query. */
  db?: { database: string }
}

export type Platform = 'posix' | 'win32'

export interface PolicyOptions {
  /** Plugin id: the `plugin` metric label. 1-256 characters, no control characters. */
  plugin: string
  /** Path flavour of fs checks. Default: from `process.platform`. */
  platform?: Platform
}

export type FsMode = 'read' | 'write'

export type DenyReason =
  | 'invalid_path'
  | 'path_traversal'
  | 'not_allowlisted'
  | 'mode_not_granted'
  | 'symlink_escape'
  | 'invalid_url'
  | 'scheme_not_allowed'
  | 'port_not_allowed'
  | 'host_not_allowlisted'
  | 'credentials_in_url'
  | 'address_not_allowed'
  | 'secret_not_declared'
  | 'topic_not_declared'
  | 'database_not_declared'
  | 'unknown_capability'
  | 'invalid_payload'

/** Known capability ids. */
export type CapabilityId = 'fs.read' | 'fs.write' | 'fetch' | 'secrets.get' | 'events.publish' | 'events.subscribe' | 'db.query'
/** Capability labels: the ids, and `unknown` for calls with an unknown id. */
export type CapabilityLabel = CapabilityId | 'unknown'

export type Decision =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly capability: CapabilityLabel; readonly reason: DenyReason }

export type ErrorCodeName = 'PERMISSION_DENIED' | 'BUDGET_EXCEEDED' | 'INVALID_MANIFEST' | 'INVALID_SAMPLE' | 'ERR_UNSUPPORTED_PLATFORM' | 'LOCKDOWN_REFUSED' | 'LOCKDOWN_FAILED'

export interface ErrorSpec {
  readonly code: ErrorCodeName
  /** `SAND_PERM_*`, stable forever. */
  readonly id: string
  /** Template; `{name}` placeholders are filled from `details`. */
  readonly message: string
  /** Set when the code is retired. */
  readonly deprecated: string | null
}

export declare const VERSION: string
export declare const ERROR_REGISTRY: readonly ErrorSpec[]
export declare const ErrorCode: { readonly [K in ErrorCodeName]: K }
export declare const DenyReason: {
  readonly INVALID_PATH: 'invalid_path'
  readonly PATH_TRAVERSAL: 'path_traversal'
  readonly NOT_ALLOWLISTED: 'not_allowlisted'
  readonly MODE_NOT_GRANTED: 'mode_not_granted'
  readonly SYMLINK_ESCAPE: 'symlink_escape'
  readonly INVALID_URL: 'invalid_url'
  readonly SCHEME_NOT_ALLOWED: 'scheme_not_allowed'
  readonly PORT_NOT_ALLOWED: 'port_not_allowed'
  readonly HOST_NOT_ALLOWLISTED: 'host_not_allowlisted'
  readonly CREDENTIALS_IN_URL: 'credentials_in_url'
  readonly ADDRESS_NOT_ALLOWED: 'address_not_allowed'
  readonly SECRET_NOT_DECLARED: 'secret_not_declared'
  readonly TOPIC_NOT_DECLARED: 'topic_not_declared'
  readonly DATABASE_NOT_DECLARED: 'database_not_declared'
  readonly UNKNOWN_CAPABILITY: 'unknown_capability'
  readonly INVALID_PAYLOAD: 'invalid_payload'
}
export declare const DENY_REASONS: readonly DenyReason[]
export declare const Capability: {
  readonly FS_READ: 'fs.read'
  readonly FS_WRITE: 'fs.write'
  readonly FETCH: 'fetch'
  readonly SECRETS_GET: 'secrets.get'
  readonly EVENTS_PUBLISH: 'events.publish'
  readonly EVENTS_SUBSCRIBE: 'events.subscribe'
  readonly DB_QUERY: 'db.query'
  readonly UNKNOWN: 'unknown'
}

export interface InstrumentDescriptor {
  readonly name: 'plugin.permission_denied_total' | 'plugin.budget_exceeded_total'
  readonly kind: 'counter'
  readonly unit: string
  readonly description: string
  readonly attributeKeys: readonly ['plugin', 'capability', 'reason']
}
export declare const INSTRUMENTS: readonly [InstrumentDescriptor, InstrumentDescriptor]
export declare const PERMISSION_DENIED_TOTAL: InstrumentDescriptor & { readonly name: 'plugin.permission_denied_total' }
export declare const BUDGET_EXCEEDED_TOTAL: InstrumentDescriptor & { readonly name: 'plugin.budget_exceeded_total' }
/** Instrumentation scope name the package records under. */
export declare const METER_NAME: string

/** Documented caps; past them a manifest is INVALID_MANIFEST and a payload `invalid_payload`. */
export declare const LIMITS: {
  readonly maxPatterns: number
  readonly maxPathBytes: number
  readonly maxHostPatternBytes: number
  readonly maxPayloadStringBytes: number
  readonly maxNameBytes: number
  readonly maxBraceGroups: number
  readonly maxBraceAlternatives: number
  readonly maxUrlBytes: number
  readonly defaultCpuGraceMs: number
}

export interface PermissionDeniedDetails {
  readonly plugin: string
  readonly capability: CapabilityLabel
  readonly reason: DenyReason
  /** fetch only: `scheme://host:port`, never userinfo, path, query or fragment. */
  readonly target?: string
}
export type BudgetName = 'cpuPercent' | 'memoryMb' | 'wallClockMs'
export type BudgetReason = 'cpu' | 'memory' | 'wall_clock'
export interface BudgetExceededDetails {
  readonly plugin: string
  readonly capability: string
  readonly budget: BudgetName
  readonly reason: BudgetReason
  readonly limit: number
  readonly observed: number
  readonly elapsedMs: number
}
export interface InvalidManifestDetails {
  /** RFC 6901 JSON pointer of the bad field; `""` is the whole manifest. */
  readonly pointer: string
  /** What would be valid there. */
  readonly expected: string
}
export interface InvalidSampleDetails {
  readonly field: 'now' | 'cpuTimeMs' | 'rssMb' | 'cpuGraceMs'
}

/** The details of any package error. */
export type ErrorDetails = PermissionDeniedDetails | BudgetExceededDetails | InvalidManifestDetails | InvalidSampleDetails | UnsupportedPlatformDetails | { readonly reason: string }
export interface UnsupportedPlatformDetails {
  readonly feature: string
  readonly platform: string
}

export declare class SandboxPermissionError<C extends ErrorCodeName = ErrorCodeName, D extends object = ErrorDetails> extends Error {
  constructor(code: C, details: D, message?: string)
  readonly code: C
  /** Registry id, `SAND_PERM_*`. */
  readonly id: string
  readonly details: D
}
export declare class PermissionDeniedError extends SandboxPermissionError<'PERMISSION_DENIED', PermissionDeniedDetails> {
  constructor(details: PermissionDeniedDetails)
}
export declare class BudgetExceededError extends SandboxPermissionError<'BUDGET_EXCEEDED', BudgetExceededDetails> {
  constructor(details: BudgetExceededDetails)
}
export declare class InvalidManifestError extends SandboxPermissionError<'INVALID_MANIFEST', InvalidManifestDetails> {
  constructor(details: InvalidManifestDetails)
}
export declare class InvalidSampleError extends SandboxPermissionError<'INVALID_SAMPLE', InvalidSampleDetails> {
  constructor(details: InvalidSampleDetails)
}
export declare class UnsupportedPlatformError extends SandboxPermissionError<'ERR_UNSUPPORTED_PLATFORM', UnsupportedPlatformDetails> {
  constructor(details: { feature: string; platform: string })
}

/** Guards by `code` (an own data property): work across realms and on revived errors. */
export declare function isPermissionDenied(e: unknown): e is { code: 'PERMISSION_DENIED'; id: string; details: PermissionDeniedDetails; message: string }
export declare function isBudgetExceeded(e: unknown): e is { code: 'BUDGET_EXCEEDED'; id: string; details: BudgetExceededDetails; message: string }
export declare function isInvalidManifest(e: unknown): e is { code: 'INVALID_MANIFEST'; id: string; details: InvalidManifestDetails; message: string }
export declare function isInvalidSample(e: unknown): e is { code: 'INVALID_SAMPLE'; id: string; details: InvalidSampleDetails; message: string }
export declare function isSandboxPermissionError(e: unknown): e is { code: ErrorCodeName; id: string; details: ErrorDetails; message: string }

/** The plain form of a package error, safe for `postMessage` and JSON. */
export interface SerializedError {
  $sandboxPermissionError: 1
  code: ErrorCodeName
  id: string
  message: string
  details: Record<string, string | number | boolean | null | string[]>
}
export declare function serializeError(e: unknown): SerializedError
/** Rebuilds the error with this realm's classes, from `serializeError` output or its JSON text. */
export declare function reviveError(serialized: SerializedError | string): SandboxPermissionError
/**
 * Source of a function expression `(json: string) => Error`. Evaluate it
 * inside a `vm.Context` and pass it `JSON.stringify(serializeError(e))`, so the
 * error thrown to plugin code is built from the context's own `Error`.
 */
export declare const errorReviverSource: string

/** The validated, compiled permissions of one plugin. Immutable. */
export declare class PermissionPolicy {
  private constructor()
  /** Throws `INVALID_MANIFEST` (with `details.pointer`) for any invalid field; a TypeError for bad options. */
  static fromManifest(manifest: PermissionsManifest, options: PolicyOptions): PermissionPolicy
  readonly plugin: string
  readonly platform: Platform
  /** Budgets from the manifest; absent ones omitted. */
  readonly budgets: Readonly<Budgets>
  /** The normalised manifest (fs grants as `{ path, mode }`, fetch patterns canonical). */
  toJSON(): Readonly<PermissionsManifest>
  /** The decision, the normalised path, and every grant matching it. Counts no metric. */
  explainFs(path: string, mode: FsMode): FsExplanation
  /** The decision, the parsed URL, and every pattern whose host matches. Counts no metric. */
  explainFetch(url: string | URL): FetchExplanation
  /** The decision and the declarations that decided it. Counts no metric. */
  explainCapability(capabilityId: string, payload: unknown): CapabilityExplanation
  /** Warnings for grants broader than they likely mean to be. */
  lint(): LintWarning[]
}
/**
 * The checks of `PermissionChecker`, straight on the policy, counting on the
 * global meter provider (resolved at the first check). For another meter use
 * `new PermissionChecker(policy, { meter })`.
 */
export interface PermissionPolicy extends PermissionChecks {}

export interface FsExplanation {
  query: { kind: 'fs'; mode: FsMode }
  decision: Decision
  /** The lexically normalised path (`/`-separated), or null when invalid. */
  normalized: string | null
  matchedGrants: { index: number; pointer: string; path: string; mode: FsGrantMode; grantsMode: boolean }[]
  why: string
}
export interface FetchExplanation {
  query: { kind: 'fetch' }
  decision: Decision
  url: { canonical: string; scheme: string; host: string | null; port: number | null; hasCredentials: boolean } | null
  hostMatches: { index: number; pointer: string; pattern: string; schemeOk: boolean; portOk: boolean }[]
}
export interface CapabilityExplanation {
  query: { kind: 'capability'; id: string }
  decision: Decision
  matched?: { pointer: string; pattern?: string }[]
  fs?: FsExplanation
  fetch?: FetchExplanation
}
export interface LintWarning {
  /** JSON pointer of the grant. */
  pointer: string
  code: 'fs-root-wildcard' | 'fs-top-level-recursive' | 'fs-write-near-root' | 'fetch-public-suffix' | 'fetch-any-port' | 'fetch-plain-http' | 'fetch-internal-address' | 'events-wildcard-only' | 'budget-missing'
  message: string
}

/** The minimal manifest (exact grants only) allowing the recorded calls; `unlearned` lists calls none can express. */
export declare function learnManifest(
  calls: readonly { capability: string; payload: unknown }[],
  options?: { platform?: Platform },
): { manifest: PermissionsManifest; unlearned: { capability: string; why: string }[] }

export interface CheckerOptions {
  /** Where denials are counted. Default: the global meter provider's meter, resolved when the checker is created. */
  meter?: Meter
}
export interface FsCheckOptions {
  /** Also check the real path (symlinks resolved); `symlink_escape` when it leaves the grants. Default: `false`. */
  resolveSymlinks?: boolean
}

/** Capability payloads by id. Fields are read as own data properties only. */
export interface CapabilityPayloads {
  'fs.read': { path: string }
  'fs.write': { path: string; [extra: string]: unknown }
  fetch: { url: string }
  'secrets.get': { name: string }
  'events.publish': { topic: string; [extra: string]: unknown }
  'events.subscribe': { topic: string }
  'db.query': { database: string; [extra: string]: unknown }
}

/** The check and assert methods, on a `PermissionChecker` and on a `PermissionPolicy`. */
export interface PermissionChecks {
  checkFs(path: string, mode: FsMode, options?: FsCheckOptions): Decision
  assertFs(path: string, mode: FsMode, options?: FsCheckOptions): void
  checkFetch(url: string | URL): Decision
  assertFetch(url: string | URL): void
  /** Asserts, then returns the canonical URL to fetch (exactly what was checked). */
  authorizeFetch(url: string | URL): string
  /** DNS-rebinding defence: the fetch check, then the resolved address. */
  checkFetchAddress(url: string | URL, resolvedIp: string): Decision
  /** Asserts `checkFetchAddress`, then returns the canonical URL. */
  assertFetchAddress(url: string | URL, resolvedIp: string): string
  checkCapability<K extends CapabilityId>(capabilityId: K, payload: CapabilityPayloads[K]): Decision
  checkCapability(capabilityId: string, payload: unknown): Decision
  assertCapability<K extends CapabilityId>(capabilityId: K, payload: CapabilityPayloads[K]): void
  assertCapability(capabilityId: string, payload: unknown): void
}

/** Checks capability calls; counts each denial once in `plugin.permission_denied_total`. */
export declare class PermissionChecker {
  constructor(policy: PermissionPolicy, options?: CheckerOptions)
  readonly policy: PermissionPolicy
}
export interface PermissionChecker extends PermissionChecks {}

/** What `lockdown()` installed. */
export interface LockdownReport {
  readonly arch: 'x86_64' | 'aarch64'
  readonly action: 'EPERM'
  readonly tsync: true
  readonly noNewPrivs: true
  /** Denied syscall names. */
  readonly denied: readonly string[]
  readonly clone: string
  readonly clone3: string
  readonly foreignArch: string
  /** Descriptors open at lockdown (they stay usable). */
  readonly openFds: readonly { readonly fd: number; readonly target: string }[]
}
/**
 * Process tier (Linux x64/arm64): a TSYNC seccomp filter so this process can no
 * longer open files, create sockets or start processes. Irreversible. Throws
 * `LOCKDOWN_REFUSED` unless started with `UV_USE_IO_URING=0`, `LOCKDOWN_FAILED`
 * when seccomp/TSYNC is unavailable, `ERR_UNSUPPORTED_PLATFORM` elsewhere.
 */
export declare function lockdown(options?: Record<string, never>): LockdownReport

/** `new PermissionChecker(PermissionPolicy.fromManifest(manifest, options), options)`. */
export declare function createChecker(manifest: PermissionsManifest, options: PolicyOptions & CheckerOptions): PermissionChecker

export interface BudgetHooks {
  /** Monotonic clock, ms. Default: `performance.now`. */
  now?: () => number
  /** Cumulative CPU time, ms. */
  cpuTimeMs?: () => number
  /** Resident memory, MB. */
  rssMb?: () => number
}
export interface BudgetTrackerOptions {
  hooks?: BudgetHooks
  /** `capability` label of breach metrics. Default: `'request'`. */
  capability?: string
  /** Default: the global meter provider's meter. */
  meter?: Meter
  /** Wall-clock ms before the CPU budget is enforced. Default: `LIMITS.defaultCpuGraceMs` (250). */
  cpuGraceMs?: number
  /**
   * Budgets the host measures elsewhere although this tracker has no
   * sampler for them: pushed with `record()`, or enforced by other means
   * (e.g. a Worker's `resourceLimits` for `memoryMb`). Without it, a
   * `cpuPercent` budget with no `hooks.cpuTimeMs`, or a `memoryMb` budget
   * with no `hooks.rssMb`, makes the constructor throw a `TypeError` naming
   * the budget: a budget is never silently unenforced. Must be an own data
   * property holding an array of distinct budget names (else a `TypeError`).
   */
  unmeasured?: readonly BudgetName[]
}
export interface BudgetSample {
  /** Default: the `now` hook. */
  now?: number
  cpuTimeMs?: number
  rssMb?: number
}
export type BudgetStatus =
  | { ok: true; elapsedMs: number; cpuPercent?: number; memoryMb?: number }
  | { ok: false; budget: BudgetName; limit: number; observed: number; reason: BudgetReason; elapsedMs: number }

/** Tracks one request against a policy's budgets. Each breach counts once in `plugin.budget_exceeded_total`. */
export declare class BudgetTracker {
  /**
   * Throws a `TypeError` for invalid options and for a budget it cannot
   * measure (see `BudgetTrackerOptions.unmeasured`), `INVALID_SAMPLE` for an
   * invalid first reading.
   */
  constructor(policy: PermissionPolicy, options?: BudgetTrackerOptions)
  /** Wall-clock ms since start; never decreases. */
  readonly elapsedMs: number
  /** Reads every hook, records, evaluates. Throws `INVALID_SAMPLE` for NaN, infinite or negative readings. */
  sample(): BudgetStatus
  /** Records pushed readings and evaluates. */
  record(sample: BudgetSample): BudgetStatus
  /** Reads the clock only and evaluates. */
  check(): BudgetStatus
  /** `check()`, throwing `BUDGET_EXCEEDED` when over budget. */
  assertWithin(): void
}
