// Types of @suaveplan/api-sandbox-permissions/testing.
import type { Meter, MeterProvider } from '@opentelemetry/api'
import type { BudgetHooks, BudgetName, BudgetStatus, Decision, FsMode, PermissionsManifest, Platform } from './index.js'

export interface ConformanceContext {
  /** Build the policy with this plugin id. */
  readonly plugin: string
  /** Build the policy with this path flavour. */
  readonly platform: Platform
  /** Record metrics here: the harness reads them back. */
  readonly meter: Meter
  readonly meterProvider: MeterProvider
}

type MaybePromise<T> = T | Promise<T>

export interface ConformanceTracker {
  sample(): MaybePromise<BudgetStatus>
  assertWithin?(): MaybePromise<void>
}

export interface ConformanceChecker {
  checkFs(path: string, mode: FsMode): MaybePromise<Decision>
  checkFetch(url: string): MaybePromise<Decision>
  checkCapability(capabilityId: string, payload: unknown): MaybePromise<Decision>
  checkFetchAddress?(url: string, resolvedIp: string): MaybePromise<Decision>
  assertFs?(path: string, mode: FsMode): MaybePromise<void>
  assertFetch?(url: string): MaybePromise<void>
  assertFetchAddress?(url: string, resolvedIp: string): MaybePromise<unknown>
  assertCapability?(capabilityId: string, payload: unknown): MaybePromise<void>
  /**
   * Create a tracker at the hooks' current readings, with `unmeasured` (the
   * budgets declared measured elsewhere). A budget with neither a sampler in
   * `hooks` nor a place in `unmeasured` must be refused with a TypeError
   * naming it.
   */
  createBudgetTracker?(hooks: BudgetHooks, options: { cpuGraceMs: number; unmeasured: BudgetName[] }): MaybePromise<ConformanceTracker>
}

export type MakeChecker = (manifest: PermissionsManifest, context: ConformanceContext) => MaybePromise<ConformanceChecker>

export interface ConformanceOptions {
  /** Another runner's `describe` (default: `node:test`). */
  describe?: (name: string, fn: () => void) => unknown
  /** Another runner's `it` (default: `node:test`). */
  it?: (name: string, optionsOrFn: unknown, fn?: (...args: any[]) => unknown) => unknown
  /** Only cases whose name contains this. */
  filter?: string
  /** Declared unsupported cases: `{ [name or 'category - ' prefix]: reason }`. */
  skip?: Record<string, string>
}

export interface ConformanceCase {
  readonly name: string
  readonly category: string
  readonly manifest: unknown
  readonly platform: Platform
  readonly op: 'manifest' | 'fs' | 'fetch' | 'fetchAddress' | 'capability' | 'budget'
  readonly args: Readonly<Record<string, unknown>>
  readonly expect: Readonly<Record<string, unknown>>
}

/** Registers one test per conformance case. */
export declare function runPermissionsConformance(label: string, makeChecker: MakeChecker, options?: ConformanceOptions): void
/** Every case of the shared table. */
export declare function conformanceCases(): readonly ConformanceCase[]
/** Runs one case; rejects with the failure (or a `Skip`). */
export declare function runCase(c: ConformanceCase, makeChecker: MakeChecker, sdk: unknown): Promise<void>
/** The adapter for this package's own checker and tracker. */
export declare function packageChecker(pkg?: unknown): MakeChecker
export declare class Skip {
  constructor(reason: string)
  readonly reason: string
}
export declare const CONFORMANCE_PLUGIN: string
