// Public types of @suaveplan/api-sandbox-permissions.
import type { Meter } from '@opentelemetry/api'

/** Access a grant gives. Default: `'read'`. */
export type FsGrantMode = 'read' | 'write' | 'readwrite'
/** An absolute glob (`/data/**`), or a glob with a mode. */
export type FsGrant = string | { path: string; mode?: FsGrantMode | undefined }

/** Per-request limits; a reading strictly above a limit is a breach. Absent budgets are not enforced. */
export interface Budgets {
  /** CPU time over wall time, percent of one core. Finite, > 0. */
  cpuPercent?: number | undefined
  /** Resident memory, MB. Finite, > 0. */
  memoryMb?: number | undefined
  /** Wall clock since the request started, ms. Finite, > 0. */
  wallClockMs?: number | undefined
}

/** What a plugin may do. Everything is denied unless granted here; an empty manifest grants nothing. Unknown keys are `INVALID_MANIFEST`. */
export interface PermissionsManifest {
  /** Absolute globs; default grant mode `read`. */
  fs?: FsGrant[] | undefined
  /**
   * Fetch patterns `[scheme://]host[:port][/path]`. A path scope is `/`-separated
   * segments, each a literal, `*` (one whole non-empty segment) or, last, `**`
   * (one or more segments): `'https://api.example.com/v1/repos/* /issues'`
   * (without the space), `'api.example.com/public/**'`. No path covers every path.
   */
  fetch?: string[] | undefined
  /** Per-request CPU, memory and wall-clock limits, enforced by `BudgetTracker`. */
  budgets?: Budgets | undefined
  /**
   * Secrets (exact, case-sensitive names). A string is readable
   * (`secrets.get`). `{ name, hosts }` is destination-bound: never
   * readable (`secret_not_readable`); the plugin sends it with `secrets.use`
   * `{ name, url }`, allowed only when `url` passes `checkFetch` and matches
   * one of `hosts` (fetch pattern grammar, path scopes included).
   */
  secrets?: (string | BoundSecret)[] | undefined
  /** Dot-separated topic patterns: `*` one segment, final `**` one or more. */
  events?: { publishes?: string[] | undefined; subscribes?: string[] | undefined } | undefined
  /** The one database the plugin may query. */
  db?: { database: string } | undefined
  /**
   * Deny rules: a request one of them matches is denied `explicitly_denied`,
   * whatever the grants say.
   * - `fs`: absolute globs (the `fs` grammar), every mode; matched against the
   *   normalised path and, with `resolveSymlinks`, the real path too. A deny
   *   is never narrower than it reads: a glob ending in `/**` also denies the
   *   directory it hangs from (`/a/secrets/**` denies `/a/secrets`, so it
   *   cannot be renamed, removed or swapped for a symlink); on `'posix'` a
   *   deny matches case- and normalisation-insensitively (Unicode NFC and a
   *   full case fold on both sides; `?` and classes match one NFC character,
   *   a class whatever folds like a character it holds), for volumes such
   *   as APFS or CIFS. Grants stay exact.
   * - `fetch`: fetch patterns (a missing scheme means every scheme, a missing
   *   port every port; a path scope matches broadly: case-insensitive, `//`
   *   collapsed, `;params` cut, a final `**` also covers the directory), or
   *   CIDR blocks `'10.0.0.0/8'`, `'[fd00::]/8'` that apply to IP-literal hosts,
   *   to every IPv6 form embedding such an IPv4 address, and to the address
   *   `checkFetchAddress` is given.
   */
  deny?: { fs?: string[] | undefined; fetch?: string[] | undefined } | undefined
}

/** Path flavour: `'posix'` (`/`, case-sensitive) or `'win32'` (`\` and `/`, drive letters, case-insensitive). */
export type Platform = 'posix' | 'win32'

/** Options of `PermissionPolicy.fromManifest`. */
export interface PolicyOptions {
  /** Plugin id: the `plugin` metric label. 1-256 characters, no control characters. */
  plugin: string
  /** Path flavour of fs checks. Default: from `process.platform`. */
  platform?: Platform | undefined
}

/** The access a filesystem call asks for. */
export type FsMode = 'read' | 'write'

/** A destination-bound secret of a manifest. */
export interface BoundSecret {
  /** The secret name (exact, case-sensitive); never readable by the plugin. */
  name: string
  /** Non-empty; fetch patterns (`https://api.example.com/v1/**`). */
  hosts: string[]
}

/** Why a call was denied: the `reason` of a decision, of `PERMISSION_DENIED` details and of the metric label. */
// @generated deny-reason
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
  | 'explicitly_denied'
  | 'path_not_allowed'
  | 'secret_not_readable'
  | 'secret_destination_not_allowed'
// @end

/** Known capability ids. */
// @generated capability-id
export type CapabilityId = 'fs.read' | 'fs.write' | 'fetch' | 'secrets.get' | 'events.publish' | 'events.subscribe' | 'db.query' | 'secrets.use'
// @end
/** Capability labels: the ids, and `unknown` for calls with an unknown id. */
export type CapabilityLabel = CapabilityId | 'unknown'

/** The answer of every `check*` method (a frozen object): allowed, or denied with the capability label and the reason. */
export type Decision =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly capability: CapabilityLabel; readonly reason: DenyReason }

/** Every error code the package throws (the registry, `ERROR_REGISTRY`). */
// @generated error-code-name
export type ErrorCodeName = 'PERMISSION_DENIED' | 'BUDGET_EXCEEDED' | 'INVALID_MANIFEST' | 'INVALID_SAMPLE' | 'ERR_UNSUPPORTED_PLATFORM' | 'LOCKDOWN_REFUSED' | 'LOCKDOWN_FAILED'
// @end

/** One registry entry: a code, its stable id and message template. */
export interface ErrorSpec {
  /** The stable code, also the error's `code` property. */
  readonly code: ErrorCodeName
  /** `SAND_PERM_*`, stable forever. */
  readonly id: string
  /** Template; `{name}` placeholders are filled from `details`. */
  readonly message: string
  /** Set when the code is retired. */
  readonly deprecated: string | null
}

/** The package version. */
export declare const VERSION: string
/** Every error code with its id and message template (frozen data, defined once in Rust). */
export declare const ERROR_REGISTRY: readonly ErrorSpec[]
/** The error codes by name: `ErrorCode.PERMISSION_DENIED === 'PERMISSION_DENIED'`. */
export declare const ErrorCode: { readonly [K in ErrorCodeName]: K }
/** The deny reasons by name: `DenyReason.PATH_TRAVERSAL === 'path_traversal'`. */
// @generated deny-reason-const
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
  readonly EXPLICITLY_DENIED: 'explicitly_denied'
  readonly PATH_NOT_ALLOWED: 'path_not_allowed'
  readonly SECRET_NOT_READABLE: 'secret_not_readable'
  readonly SECRET_DESTINATION_NOT_ALLOWED: 'secret_destination_not_allowed'
}
// @end
/** Every deny reason, in registry order. */
export declare const DENY_REASONS: readonly DenyReason[]
/** The capability labels by name: `Capability.FS_READ === 'fs.read'`; `UNKNOWN` labels calls with an unknown id. */
// @generated capability-const
export declare const Capability: {
  readonly FS_READ: 'fs.read'
  readonly FS_WRITE: 'fs.write'
  readonly FETCH: 'fetch'
  readonly SECRETS_GET: 'secrets.get'
  readonly EVENTS_PUBLISH: 'events.publish'
  readonly EVENTS_SUBSCRIBE: 'events.subscribe'
  readonly DB_QUERY: 'db.query'
  readonly SECRETS_USE: 'secrets.use'
  readonly UNKNOWN: 'unknown'
}
// @end

/** An OpenTelemetry instrument the package records, as data. */
export interface InstrumentDescriptor {
  /** The instrument name. */
  // @generated instrument-name
  readonly name: 'plugin.permission_denied_total' | 'plugin.budget_exceeded_total' | 'plugin.permission_shadow_denied_total' | 'plugin.budget_shadow_exceeded_total'
  // @end
  /** Always a monotonic counter. */
  readonly kind: 'counter'
  /** The UCUM unit. */
  readonly unit: string
  /** The instrument description. */
  readonly description: string
  /** The attribute keys of every data point; values come only from closed sets plus the plugin id. */
  readonly attributeKeys: readonly ['plugin', 'capability', 'reason']
}
/** Every instrument: the two enforced counters, then the two shadow counters. */
export declare const INSTRUMENTS: readonly [InstrumentDescriptor, InstrumentDescriptor, InstrumentDescriptor, InstrumentDescriptor]
/** `plugin.permission_denied_total{plugin, capability, reason}`: one increment per denied call. */
export declare const PERMISSION_DENIED_TOTAL: InstrumentDescriptor & { readonly name: 'plugin.permission_denied_total' }
/** `plugin.budget_exceeded_total{plugin, capability, reason}`: one increment per budget kind breached, per tracker. */
export declare const BUDGET_EXCEEDED_TOTAL: InstrumentDescriptor & { readonly name: 'plugin.budget_exceeded_total' }
/** `plugin.permission_shadow_denied_total{plugin, capability, reason}`: one increment per call a shadow policy would deny (its reason). */
export declare const PERMISSION_SHADOW_DENIED_TOTAL: InstrumentDescriptor & { readonly name: 'plugin.permission_shadow_denied_total' }
/** `plugin.budget_shadow_exceeded_total{plugin, capability, reason}`: one increment per shadow budget kind breached, per tracker. */
export declare const BUDGET_SHADOW_EXCEEDED_TOTAL: InstrumentDescriptor & { readonly name: 'plugin.budget_shadow_exceeded_total' }
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
  /** Brace variants one fs glob may expand to (256). */
  readonly maxBraceVariants: number
  /** Brace variants all the fs globs of one policy may expand to together (16,384). */
  readonly maxPolicyGlobVariants: number
  /** Compiled elements (prefix bytes, segments, characters, wildcards, class ranges) of all fs glob variants of one policy (1,048,576). */
  readonly maxPolicyGlobSize: number
  /** Path-scope segments of all fetch patterns, `deny.fetch` rules and bound-secret hosts of one policy together (131,072): each is a node of a path trie. */
  readonly maxPolicyPathSegments: number
  /** Pattern-against-name steps one fs check may spend on wildcard grants (4,000,000); past it they do not match (fail closed). */
  readonly maxMatchSteps: number
  readonly maxUrlBytes: number
  readonly defaultCpuGraceMs: number
  /** Longest `cpuGraceMs` a `BudgetTracker` accepts (60,000 ms); more is a `TypeError` (Rust: `INVALID_SAMPLE`). */
  readonly maxCpuGraceMs: number
}

/** `details` of `PERMISSION_DENIED`. Redaction-safe: never a path, URL path or query, payload value or secret name. */
export interface PermissionDeniedDetails {
  /** The plugin id the policy was built with. */
  readonly plugin: string
  /** The capability label (`unknown` for an unknown id). */
  readonly capability: CapabilityLabel
  /** Why the call was denied. */
  readonly reason: DenyReason
  /** fetch only: `scheme://host:port`, never userinfo, path, query or fragment. */
  readonly target?: string | undefined
}
/** A budget of the manifest's `budgets`. */
// @generated budget-name
export type BudgetName = 'cpuPercent' | 'memoryMb' | 'wallClockMs'
// @end
/** The `reason` label of a budget breach. */
// @generated budget-reason
export type BudgetReason = 'cpu' | 'memory' | 'wall_clock'
// @end
/** `details` of `BUDGET_EXCEEDED`. */
export interface BudgetExceededDetails {
  /** The plugin id the policy was built with. */
  readonly plugin: string
  /** The tracker's `capability` label (default `'request'`). */
  readonly capability: string
  /** The budget that was breached first. */
  readonly budget: BudgetName
  /** The metric `reason` label of that budget. */
  readonly reason: BudgetReason
  /** The manifest's limit. */
  readonly limit: number
  /** The reading that broke it. */
  readonly observed: number
  /** Wall-clock ms since the tracker started. */
  readonly elapsedMs: number
}
/** `details` of `INVALID_MANIFEST`. */
export interface InvalidManifestDetails {
  /** RFC 6901 JSON pointer of the bad field; `""` is the whole manifest. */
  readonly pointer: string
  /** What would be valid there. */
  readonly expected: string
}
/** `details` of `INVALID_SAMPLE`. */
export interface InvalidSampleDetails {
  /** The hook or option whose reading was NaN, infinite, negative or not a number. */
  // @generated sample-field
  readonly field: 'now' | 'cpuTimeMs' | 'rssMb' | 'cpuGraceMs'
  // @end
}

/** The details of any package error. */
export type ErrorDetails = PermissionDeniedDetails | BudgetExceededDetails | InvalidManifestDetails | InvalidSampleDetails | UnsupportedPlatformDetails | { readonly reason: string }
/** `details` of `ERR_UNSUPPORTED_PLATFORM`. */
export interface UnsupportedPlatformDetails {
  /** What is unsupported (`'lockdown'`). */
  readonly feature: string
  /** `process.platform-process.arch` of this host. */
  readonly platform: string
}

/** Base class of every error with a registry code. Prefer the `is*` guards to `instanceof`: errors cross realms. */
export declare class SandboxPermissionError<C extends ErrorCodeName = ErrorCodeName, D extends object = ErrorDetails> extends Error {
  constructor(code: C, details: D, message?: string)
  /** The registry code. */
  readonly code: C
  /** Registry id, `SAND_PERM_*`. */
  readonly id: string
  /** Frozen, redaction-safe details (see `schema/error-details.schema.json`). */
  readonly details: D
}
/** `PERMISSION_DENIED` (`SAND_PERM_001`): a capability call was denied. */
export declare class PermissionDeniedError extends SandboxPermissionError<'PERMISSION_DENIED', PermissionDeniedDetails> {
  constructor(details: PermissionDeniedDetails)
}
/** `BUDGET_EXCEEDED` (`SAND_PERM_002`): a request went over a budget. */
export declare class BudgetExceededError extends SandboxPermissionError<'BUDGET_EXCEEDED', BudgetExceededDetails> {
  constructor(details: BudgetExceededDetails)
}
/** `INVALID_MANIFEST` (`SAND_PERM_003`): a manifest field is invalid; `details.pointer` names it. */
export declare class InvalidManifestError extends SandboxPermissionError<'INVALID_MANIFEST', InvalidManifestDetails> {
  constructor(details: InvalidManifestDetails)
}
/** `INVALID_SAMPLE` (`SAND_PERM_004`): a budget reading was NaN, infinite, negative or not a number. */
export declare class InvalidSampleError extends SandboxPermissionError<'INVALID_SAMPLE', InvalidSampleDetails> {
  constructor(details: InvalidSampleDetails)
}
/** `ERR_UNSUPPORTED_PLATFORM` (`SAND_PERM_005`): the feature is not available on this platform. */
export declare class UnsupportedPlatformError extends SandboxPermissionError<'ERR_UNSUPPORTED_PLATFORM', UnsupportedPlatformDetails> {
  constructor(details: { feature: string; platform: string })
}

/** Guards by `code` (an own data property): work across realms and on revived errors. */
export declare function isPermissionDenied(e: unknown): e is { code: 'PERMISSION_DENIED'; id: string; details: PermissionDeniedDetails; message: string }
/** True for a `BUDGET_EXCEEDED` error from any realm (reads `code` as an own data property). */
export declare function isBudgetExceeded(e: unknown): e is { code: 'BUDGET_EXCEEDED'; id: string; details: BudgetExceededDetails; message: string }
/** True for an `INVALID_MANIFEST` error from any realm. */
export declare function isInvalidManifest(e: unknown): e is { code: 'INVALID_MANIFEST'; id: string; details: InvalidManifestDetails; message: string }
/** True for an `INVALID_SAMPLE` error from any realm. */
export declare function isInvalidSample(e: unknown): e is { code: 'INVALID_SAMPLE'; id: string; details: InvalidSampleDetails; message: string }
/** True for any error with a registry code, from any realm. */
export declare function isSandboxPermissionError(e: unknown): e is { code: ErrorCodeName; id: string; details: ErrorDetails; message: string }

/** The plain form of a package error, safe for `postMessage` and JSON. */
export interface SerializedError {
  /** Marks the object as a serialised package error. */
  $sandboxPermissionError: 1
  /** The registry code. */
  code: ErrorCodeName
  /** The registry id, `SAND_PERM_*`. */
  id: string
  /** The error message. */
  message: string
  /** The error's details, as plain data. */
  details: Record<string, string | number | boolean | null | string[]>
}
/** A plain, JSON-safe object for `postMessage`; `reviveError` rebuilds the error. */
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
  /** The plugin id: the `plugin` metric label of every denial. */
  readonly plugin: string
  /** The path flavour of fs checks. */
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

/** What `explainFs` returns. */
export interface FsExplanation {
  /** The query: the mode asked for. */
  query: { kind: 'fs'; mode: FsMode }
  /** What `checkFs` decides. */
  decision: Decision
  /** The lexically normalised path (`/`-separated), or null when invalid. */
  normalized: string | null
  /** Every grant whose glob matches the path, and whether it grants the mode. */
  matchedGrants: { index: number; pointer: string; path: string; mode: FsGrantMode; grantsMode: boolean }[]
  /** The first `deny.fs` glob matching the normalised path when the decision is `explicitly_denied`, else null. */
  deniedBy: { index: number; pointer: string; path: string } | null
  /** A one-line explanation. */
  why: string
  /**
   * Present when `matchedGrants` (and `deniedBy`) may be partial: grants and
   * deny rules are matched one by one until their checks could cost
   * `EXPLAIN_MAX_STEPS` (50,000,000) match steps together. The decision is
   * the check's either way.
   */
  incomplete?: string
}
/** What `explainFetch` returns. */
export interface FetchExplanation {
  /** The query kind. */
  query: { kind: 'fetch' }
  /** What `checkFetch` decides. */
  decision: Decision
  /** The WHATWG parse of the URL, or null when it does not parse. */
  url: { canonical: string; scheme: string; host: string | null; port: number | null; hasCredentials: boolean } | null
  /** Every pattern whose host matches, and whether its scheme, port and path scope do. */
  hostMatches: { index: number; pointer: string; pattern: string; schemeOk: boolean; portOk: boolean; pathOk: boolean }[]
  /** The first `deny.fetch` rule matching the URL, else null. */
  deniedBy: { index: number; pointer: string; pattern: string } | null
  /** A one-line explanation of the decision. */
  why: string
  /** Present when this Node's URL reads the URL's host otherwise than the core (parser parity): the decision is then `invalid_url`. `node` is null when Node rejects the URL. */
  parity?: { node: string | null; core: string | null }
}
/** What `explainCapability` returns. */
export interface CapabilityExplanation {
  /** The query: the capability id. */
  query: { kind: 'capability'; id: string }
  /** What `checkCapability` decides. */
  decision: Decision
  /** The declarations (secrets, topics, database) that match. */
  matched?: { pointer: string; pattern?: string }[]
  /** A one-line explanation of the decision; for `fs.*` and `fetch` it is in `fs.why`/`fetch.why`. */
  why?: string
  /** For `fs.read`/`fs.write`: the fs explanation. */
  fs?: FsExplanation
  /** For `fetch`: the fetch explanation. */
  fetch?: FetchExplanation
}
/** A lint warning: a grant that is valid but likely broader than meant. */
export interface LintWarning {
  /** JSON pointer of the grant. */
  pointer: string
  /** The warning kind. */
  code: 'fs-root-wildcard' | 'fs-top-level-recursive' | 'fs-write-near-root' | 'fs-grant-covered' | 'fetch-public-suffix' | 'fetch-any-port' | 'fetch-plain-http' | 'fetch-internal-address' | 'events-wildcard-only' | 'budget-missing' | 'deny-unreachable'
  /** What is broad, and what to write instead. */
  message: string
}

/**
 * The minimal manifest (exact grants only, paths escaped to stay literal)
 * allowing the recorded calls. The manifest is always valid: calls that no
 * valid entry can express (relative paths, unknown capabilities, values the
 * manifest rejects) are listed in `unlearned` with the reason and their index
 * in `calls` (from 0). An `events.subscribe` topic may itself be a pattern
 * (`orders.*`): it is learned as written when the manifest accepts it. Throws
 * a TypeError when `calls` is not an array or an option is malformed.
 */
export declare function learnManifest(
  calls: readonly { capability: string; payload: unknown }[],
  options?: {
    /** Path flavour of the fs grants (default: this host's). */
    platform?: Platform | undefined
    /**
     * Secret values (at most 256; empty ones are skipped) that must never be
     * learned or quoted: a call whose path, url, name, topic, database or
     * capability id holds one (a URL's origin in any case) is listed in
     * `unlearned` without its value. A value the plugin transformed
     * (encoded, hashed, cut) is not recognised.
     */
    secretValues?: readonly string[] | undefined
  },
): { manifest: PermissionsManifest; unlearned: { capability: string; why: string; call: number }[] }

/**
 * A request that shows a change: what `diffPolicies` found one policy allows
 * and the other denies (both checkers were run on it).
 */
export type DiffWitness =
  | { capability: 'fs.read' | 'fs.write'; path: string; mode: FsMode }
  | { capability: 'fetch'; url: string; resolvedIp?: string }
  | { capability: 'secrets.get' | 'secrets.use' | 'events.publish' | 'events.subscribe' | 'db.query'; payload: Record<string, string> }
  | { capability: 'budget'; budget: 'cpuPercent' | 'memoryMb' | 'wallClockMs'; observed: number }

/** One change `diffPolicies` found, with its witness. */
export interface DiffChange {
  /** The manifest section: `fs`, `fetch`, `secrets`, `events`, `db` or `budgets`. */
  section: 'fs' | 'fetch' | 'secrets' | 'events' | 'db' | 'budgets'
  /** JSON pointer of the grant or rule (in the new manifest for a widening, the old one for a narrowing). */
  pointer: string
  /** What changed, in words. */
  what: string
  /** A request one policy allows and the other denies. */
  witness: DiffWitness
}

/** What `diffPolicies` returns. */
export interface PolicyDiff {
  /** 0: nothing widens (proven); 1: something widens (each with a witness); 2: could not prove within the bounds. */
  exitCode: 0 | 1 | 2
  /** The exit code in words. */
  verdict: 'no-new-authority' | 'widens' | 'unknown'
  /** Requests the new policy allows and the old one denies. */
  widens: DiffChange[]
  /** Requests the old policy allowed and the new one denies. */
  narrows: DiffChange[]
  /** What could not be decided (the widening question only). */
  unknown: { section: DiffChange['section']; pointer: string; why: string }[]
}

/**
 * Whether every request `newPolicy` allows is also allowed by `oldPolicy`,
 * decided on the compiled policies (fs globs as automata, fetch patterns,
 * secrets, topics, db, budgets; see docs/diff.md). Never `exitCode` 0 when
 * something widens. Throws a TypeError unless both are `PermissionPolicy` objects.
 */
export declare function diffPolicies(oldPolicy: PermissionPolicy, newPolicy: PermissionPolicy): PolicyDiff

/** Options of `new PermissionChecker`. */
export interface CheckerOptions {
  /** Where denials are counted. Default: the global meter provider's meter, resolved when the checker is created. */
  meter?: Meter | undefined
  /**
   * A candidate policy evaluated beside the enforced one, report-only: it never changes a decision, a thrown error or the enforced
   * counter; each call it would deny counts in
   * `plugin.permission_shadow_denied_total` (its reason) and is passed to
   * `onShadow`. Must be for the same plugin id (else a `TypeError`).
   */
  shadow?: PermissionPolicy | undefined
  /** Called for each call the shadow would deny. Isolated: a throw is caught (one process warning). Needs `shadow`. */
  onShadow?: ((event: ShadowEvent) => void) | undefined
}
/** What a shadow policy would have denied. Redacted like errors. */
export interface ShadowEvent {
  /** The capability label of the call. */
  readonly capability: CapabilityLabel
  /** The shadow policy's reason. */
  readonly reason: DenyReason
  /** What the enforced policy decided. */
  readonly enforced: 'allowed' | 'denied'
  /** `fetch` / `secrets.use` only: `scheme://host:port` of the URL (never a path, query or credentials). */
  readonly target?: string
}
/**
 * Options of `checkFs`, `assertFs` and `authorizeFs`. Read strictly: an
 * unknown key, a getter, an inherited value or a Proxy is a `TypeError`.
 */
export interface FsCheckOptions {
  /**
   * Also check the real path: what `open(2)` reaches from the raw path,
   * components left to right (a `..` after a symlink climbs from the link's
   * target), a dangling final link resolved to the path it names.
   * `symlink_escape` when it leaves the grants or cannot be determined (a
   * loop, more than 40 links, a `..` after a missing directory, a policy
   * platform that is not the host's). Default: `false` (lexical only).
   */
  resolveSymlinks?: boolean | undefined
}

/** Capability payloads by id. Fields are read as own data properties only. */
export interface CapabilityPayloads {
  /** An absolute path to read. */
  'fs.read': { path: string }
  /** An absolute path to write (other fields, such as the data, are ignored). */
  'fs.write': { path: string; [extra: string]: unknown }
  /** An absolute URL. */
  fetch: { url: string }
  /** A secret name (exact, case-sensitive). */
  'secrets.get': { name: string }
  /** A concrete topic (other fields, such as the event, are ignored). */
  'events.publish': { topic: string; [extra: string]: unknown }
  /** A topic or topic pattern to subscribe to. */
  'events.subscribe': { topic: string }
  /** The database name (other fields, such as the query, are ignored). */
  'db.query': { database: string; [extra: string]: unknown }
  /** Send a destination-bound secret to `url`: the host substitutes the value only when allowed. */
  'secrets.use': { name: string; url: string }
}

/**
 * The payload type of a `checkCapability` call with id `C`: the typed
 * payload (`CapabilityPayloads`) when `C` is a known capability id (or a
 * union of them), `unknown` for any other string (a `string` variable, an id
 * from a plugin: the check denies an unknown id at run time,
 * `unknown_capability`). Not distributive, so `string` is never split into
 * the known ids.
 */
export type CapabilityPayload<C extends string> = [C] extends [CapabilityId] ? CapabilityPayloads[C] : unknown

/** The check and assert methods, on a `PermissionChecker` and on a `PermissionPolicy`. */
export interface PermissionChecks {
  /** Checks a filesystem access: absolute path, lexically normalised, against the fs grants. Counts a denial once. A TypeError for a non-string path or a mode other than `'read'`/`'write'`. */
  checkFs(path: string, mode: FsMode, options?: FsCheckOptions): Decision
  /** `checkFs`, throwing `PERMISSION_DENIED` on a denial (counted once). */
  assertFs(path: string, mode: FsMode, options?: FsCheckOptions): void
  /**
   * Asserts like `assertFs` (throws `PERMISSION_DENIED`, counted once), then
   * returns the path the host must open: the normalised path, or with
   * `resolveSymlinks` the real path. Open exactly this path, without
   * following a final symlink (`fs.constants.O_NOFOLLOW`).
   */
  authorizeFs(path: string, mode: FsMode, options?: FsCheckOptions): string
  /** Checks an outbound URL (parsed as WHATWG `URL` does) against the fetch patterns. Counts a denial once. */
  checkFetch(url: string | URL): Decision
  /** `checkFetch`, throwing `PERMISSION_DENIED` (with `details.target` = `scheme://host:port`) on a denial. */
  assertFetch(url: string | URL): void
  /** Asserts, then returns the canonical URL to fetch (exactly what was checked). */
  authorizeFetch(url: string | URL): string
  /** DNS-rebinding defence: the fetch check, then the resolved address. */
  checkFetchAddress(url: string | URL, resolvedIp: string): Decision
  /** Asserts `checkFetchAddress`, then returns the canonical URL. */
  assertFetchAddress(url: string | URL, resolvedIp: string): string
  /**
   * Checks a capability call. The payload of a known id is typed
   * (`CapabilityPayloads`: a misspelt field is a type error at the payload);
   * any other id takes any payload and is denied at run time
   * (`unknown_capability`).
   */
  checkCapability<C extends string>(capabilityId: C, payload: CapabilityPayload<C>): Decision
  /** `checkCapability`, throwing `PERMISSION_DENIED` on a denial. */
  assertCapability<C extends string>(capabilityId: C, payload: CapabilityPayload<C>): void
}

/** Checks capability calls; counts each denial once in `plugin.permission_denied_total`. */
export declare class PermissionChecker {
  constructor(policy: PermissionPolicy, options?: CheckerOptions)
  /** The policy this checker enforces. */
  readonly policy: PermissionPolicy
  /** The shadow (report-only) policy, if any. */
  readonly shadow: PermissionPolicy | undefined
}
/** The check and assert methods (`PermissionChecks`). */
export interface PermissionChecker extends PermissionChecks {}

/** What the `asp-landlock` launcher's Landlock ruleset enforced (the kernel's answer, not the request). */
export interface LandlockReport {
  /** The kernel's Landlock ABI (0: unavailable, nothing enforced). */
  readonly abi: number
  /** The ABI the kernel answered (the same as `abi` today; the crate may know fewer). */
  readonly kernelAbi: number | null
  /** Every part was enforced: ABI >= 6 and no rule skipped. */
  readonly fullyEnforced: boolean
  /** File-system rights the domain handles: denied outside the rules. */
  readonly fsHandled: readonly string[]
  /** Path-beneath rules: the grants' literal prefixes and the runtime paths; `skipped` says why one was not added. */
  readonly rules: readonly { readonly path: string; readonly rights: 'read' | 'write' | 'exec'; readonly skipped: string | null }[]
  /** TCP ports `connect` may reach; `null` when connect is not restricted (ABI < 4, or a `:*` fetch grant). */
  readonly connectTcp: readonly number[] | null
  /** `bind` is denied (ABI 4+). */
  readonly bindDenied: boolean
  /** Scopes in force (ABI 6+): `signal`, `abstract_unix_socket`. */
  readonly scoped: readonly string[]
  /** What this kernel could not enforce, with the ABI that has it. */
  readonly unavailable: readonly string[]
}

/** What `lockdown()` installed. */
export interface LockdownReport {
  /** The syscall table the filter was built for. */
  readonly arch: 'x86_64' | 'aarch64'
  /** What a syscall outside the allow-list does: fails with `EPERM`, or kills the process. */
  readonly action: 'EPERM' | 'kill'
  /** The filter is on every thread (`SECCOMP_FILTER_FLAG_TSYNC`). */
  readonly tsync: true
  /** `PR_SET_NO_NEW_PRIVS` is set. */
  readonly noNewPrivs: true
  /** `'landlock'`: the process may open files itself, inside the launcher's ruleset (the calls Landlock mediates are allowed). */
  readonly fs: 'none' | 'landlock'
  /** Syscalls allowed whatever their arguments (docs/process-tier.md says why each is there). */
  readonly allowed: readonly string[]
  /** Syscalls allowed only with some arguments (`clone` threads only, `futex` wait/wake, `kill` this process, ...). */
  readonly conditional: readonly { readonly name: string; readonly only: string }[]
  /** The conditional calls limited to this process (`kill`, `tgkill`, `setpriority`, `prlimit64`, ...). */
  readonly selfOnly: readonly string[]
  /** Calls that always answer this errno, even with `onDenied: 'kill'` (`clone3`: `ENOSYS`; `openat` and the calls Node tolerates failing: `EPERM`). */
  readonly errnoAlways: readonly { readonly name: string; readonly errno: string }[]
  /** How `clone` is filtered (pthread_create's flags only). */
  readonly clone: string
  /** How `clone3` is filtered (`ENOSYS`). */
  readonly clone3: string
  /** What a syscall of a foreign architecture does (kills the process). */
  readonly foreignArch: string
  /** Descriptors open at lockdown (they stay usable). */
  readonly openFds: readonly { readonly fd: number; readonly target: string }[]
  /** What the launcher's Landlock ruleset enforced, or `null` when the process was not started through `asp-landlock`. */
  readonly landlock: LandlockReport | null
}

/** Options of `lockdown()`. */
export interface LockdownOptions {
  /** A syscall outside the allow-list: `'eperm'` (default) fails it, `'kill'` kills the process. */
  onDenied?: 'eperm' | 'kill' | undefined
  /** `'strict'`: refuse (`LOCKDOWN_REFUSED`) unless started through `asp-landlock` with every rule enforced. Default `'report'`. */
  landlock?: 'report' | 'strict' | undefined
  /** `'landlock'`: keep opening, listing, making and removing files, walled by the launcher's Landlock ruleset (implies `landlock: 'strict'`). Default `'none'`. */
  fs?: 'none' | 'landlock' | undefined
}
/**
 * Process tier (Linux x64/arm64): a default-deny TSYNC seccomp allow-list, so
 * this process can no longer open files, create sockets, start processes or
 * reach another process. Irreversible. Throws `LOCKDOWN_REFUSED` unless started
 * with `UV_USE_IO_URING=0` (or a strict Landlock requirement is unmet),
 * `LOCKDOWN_FAILED` when seccomp/TSYNC is unavailable, `ERR_UNSUPPORTED_PLATFORM` elsewhere.
 */
export declare function lockdown(options?: LockdownOptions): LockdownReport

/** Options of `landlockCommand()`. */
export interface LandlockCommandOptions {
  /** The launcher exits 126 without starting the child unless every rule was enforced. */
  strict?: boolean | undefined
  /** More absolute paths the child reads (its script, data it loads before `lockdown()`). */
  read?: readonly string[] | undefined
  /** More absolute paths the child executes. */
  exec?: readonly string[] | undefined
}
/**
 * The `asp-landlock` launcher's command for a child under the manifest's
 * Landlock ruleset (fs grants at their literal prefixes, fetch ports, signal and
 * abstract-socket scoping) plus Node's runtime paths. `args` ends with `--`:
 * append the program and its arguments. Linux only; `ERR_UNSUPPORTED_PLATFORM`
 * when the launcher is not built.
 */
export declare function landlockCommand(manifest: object | string, options?: LandlockCommandOptions): { command: string; args: string[] }

/** One request and its verdict, as `serveDenoBroker` reports it to `onDecision` (and `deno --audit` writes it). */
export interface DenoBrokerDecision {
  /** ISO time the broker answered. */
  time: string
  /** The permission Deno asked for: `read`, `write`, `net`, `import`, `env`, `run`, `ffi`, `sys`, or another name. Absent for a malformed request. */
  permission?: string
  /** Deno's value: a path, `host:port`, a variable name, or `null` (the whole permission). */
  value?: string | null
  /** The request id. */
  id?: number
  /** The pid Deno reported. */
  pid?: unknown
  /** The capability it was checked as (`fs.read`, `fs.write`, `fetch`, `secrets.get`, `unknown`): with `payload`, the `{ capability, payload }` shape `learnManifest` reads. */
  capability: string
  /** What was checked: `{ path }`, `{ url }`, `{ name }`, or `{ permission, value }` for an unknown capability. */
  payload: Record<string, unknown>
  /** The verdict sent to Deno. */
  allowed: boolean
  /** The deny reason, when denied. */
  reason?: DenyReason
  /** Why the line was malformed (then always denied). */
  malformed?: string
  /** What the shadow policy would decide (never enforced). */
  shadow?: { allowed: true } | { allowed: false; capability: string; reason: DenyReason }
}
/** Options of `serveDenoBroker`. */
export interface DenoBrokerOptions {
  /** Where denials are counted. Default: the global meter provider's meter. */
  meter?: Meter | undefined
  /** A candidate policy evaluated beside `policy` and reported (`plugin.permission_shadow_denied_total`, `onDecision`), never enforced. */
  shadow?: PermissionPolicy | undefined
  /** Called with every request and its verdict (an audit log). A throwing hook is ignored. */
  onDecision?: ((entry: DenoBrokerDecision) => void) | undefined
  /** Longest request line, bytes; a longer one is denied and the connection closed. Default: 65536. */
  maxLineBytes?: number | undefined
  /** Most reply bytes queued to a client that does not read before it is disconnected. Default: 262144. */
  maxQueueBytes?: number | undefined
  /** Where the private socket directory is made. Default: `os.tmpdir()`. */
  tmpDir?: string | undefined
}
/** Counters of a running broker (live, mutated as requests arrive). */
export interface DenoBrokerStats {
  /** Clients served (at most 1). */
  readonly connections: number
  /** Connections after the first (closed at once). */
  readonly rejectedConnections: number
  /** Lines received. */
  readonly requests: number
  /** Requests allowed. */
  readonly allowed: number
  /** Requests denied (malformed ones included). */
  readonly denied: number
  /** Lines denied as malformed (bad JSON or UTF-8, unknown version, reused id, wrong pid, too long). */
  readonly malformed: number
  /** Connections closed for a line over `maxLineBytes`. */
  readonly closedForLineLength: number
  /** Connections closed for more than `maxQueueBytes` of unread replies. */
  readonly closedForBackpressure: number
  /** Per Deno permission name (`other` for any unknown name). */
  readonly byPermission: Readonly<Record<string, { readonly allowed: number; readonly denied: number }>>
  /** `"capability reason"` -> count. */
  readonly denials: Readonly<Record<string, number>>
  /** `"capability reason"` -> count the shadow policy would deny. */
  readonly shadowDenials: Readonly<Record<string, number>>
}
/** A running broker. */
export interface DenoBroker {
  /** The Unix socket (mode 0600, in a private mkdtemp directory of mode 0700). */
  readonly path: string
  /** `{ DENO_PERMISSION_BROKER_PATH }`: merge into the Deno child's environment. */
  readonly env: Readonly<{ DENO_PERMISSION_BROKER_PATH: string }>
  /** Live counters. */
  readonly stats: DenoBrokerStats
  /** Deny every request whose `pid` is not this one (the Deno child the host started). */
  expectPid(pid: number): void
  /** Stops serving, closes the client and removes the socket directory. */
  close(): Promise<void>
}
/**
 * Serves Deno's permission broker protocol (Deno 2.9, `DENO_PERMISSION_BROKER_PATH`) from a policy:
 * `read`/`write` are fs checks with symlinks resolved, `net` the fetch grants (host and port, any granted
 * scheme), `import` the fetch grants over https, `env` the readable `secrets`; `run`, `ffi`, `sys` and
 * anything else are denied (`unknown_capability`). Every denial is counted once. One client (Deno connects
 * once); malformed input is denied or disconnected, never allowed. Unix only (`ERR_UNSUPPORTED_PLATFORM` on win32).
 */
export declare function serveDenoBroker(policy: PermissionPolicy, options?: DenoBrokerOptions): Promise<DenoBroker>

/** `new PermissionChecker(PermissionPolicy.fromManifest(manifest, options), options)`. */
export declare function createChecker(manifest: PermissionsManifest, options: PolicyOptions & CheckerOptions): PermissionChecker

/**
 * Readings a `BudgetTracker` samples. Read strictly: each hook an own data
 * property holding a function; a getter, an inherited hook, a Proxy or any
 * other key is a `TypeError` (never the default clock in its place).
 */
export interface BudgetHooks {
  /** Monotonic clock, ms. Default: `performance.now`. */
  now?: (() => number) | undefined
  /** Cumulative CPU time, ms. */
  cpuTimeMs?: (() => number) | undefined
  /** Resident memory, MB. */
  rssMb?: (() => number) | undefined
}
/**
 * Options of `new BudgetTracker`. Read strictly: an unknown key, a getter,
 * an inherited value or a Proxy is a `TypeError`.
 */
export interface BudgetTrackerOptions {
  /**
   * Readings to sample. A `cpuPercent` budget needs `cpuTimeMs` and a
   * `memoryMb` budget needs `rssMb`: without the sampler the constructor
   * throws a `TypeError` naming the budget, unless the budget is listed in
   * `unmeasured` (then push its readings with `record()`).
   */
  hooks?: BudgetHooks | undefined
  /**
   * `capability` label of breach metrics: 1 to 64 characters `a-z 0-9 _ . -`
   * starting with a letter (never a path or URL; else a `TypeError`).
   * Default: `'request'`.
   */
  capability?: string | undefined
  /** Default: the global meter provider's meter. */
  meter?: Meter | undefined
  /**
   * A candidate policy (same plugin id) whose budgets see the same readings,
   * report-only: each of its breach kinds counts once in
   * `plugin.budget_shadow_exceeded_total`; never thrown, never in a status.
   */
  shadow?: PermissionPolicy | undefined
  /**
   * Wall-clock ms before the CPU budget is enforced. Default:
   * `LIMITS.defaultCpuGraceMs` (250); at most `LIMITS.maxCpuGraceMs`
   * (60,000). An own data property (a getter or inherited value is a
   * `TypeError`). Unknown option keys are a `TypeError` too.
   */
  cpuGraceMs?: number | undefined
  /**
   * Budgets the host measures elsewhere although this tracker has no
   * sampler for them: pushed with `record()`, or enforced by other means
   * (e.g. a Worker's `resourceLimits` for `memoryMb`). Without it, a
   * `cpuPercent` budget with no `hooks.cpuTimeMs`, or a `memoryMb` budget
   * with no `hooks.rssMb`, makes the constructor throw a `TypeError` naming
   * the budget: a budget is never silently unenforced. Must be an own data
   * property holding an array of distinct budget names, or `undefined` (the
   * same as leaving it out: nothing exempt); else a `TypeError`.
   */
  unmeasured?: readonly BudgetName[] | undefined
}
/** Readings pushed with `record`. */
export interface BudgetSample {
  /** Default: the `now` hook. */
  now?: number | undefined
  /**
   * Cumulative CPU time, ms. Without a `hooks.cpuTimeMs` sampler the
   * baseline is 0: push the CPU time used since the request started.
   */
  cpuTimeMs?: number | undefined
  /** Resident memory, MB. */
  rssMb?: number | undefined
}
/** A tracker's status: within budget (with the current readings), or the first breach (sticky). */
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
