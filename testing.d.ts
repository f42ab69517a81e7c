// Types of @suaveplan/api-sandbox-permissions/testing.
import type { Meter, MeterProvider } from '@opentelemetry/api'
import type { BudgetHooks, BudgetStatus, Decision, FsMode, PermissionsManifest, Platform } from './index.js'

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
  /** Create a tracker at the hooks' current readings. */
  createBudgetTracker?(hooks: BudgetHooks, options: { cpuGraceMs: number }): MaybePromise<ConformanceTracker>
}

export type MakeChecker = (manifest: PermissionsManifest, context: ConformanceContext) => MaybePromise<ConformanceChecker>

/** A runner's `it`/`test`: node:test, mocha, Jest and Vitest all fit. */
export interface RunnerIt {
  (name: string, fn: () => unknown): unknown
  /** node:test only: `it(name, { skip: reason }, fn)`. */
  (name: string, options: { skip: string }, fn: () => unknown): unknown
  /** mocha, Jest, Vitest: a declared skip. */
  skip?: (name: string, fn: () => unknown) => unknown
}

export interface ConformanceOptions {
  /**
   * The runner's `describe`. Default: the global `describe`/`it` when the
   * runner defines them (mocha, Jest, Vitest with `globals: true`), else
   * `node:test`'s. Without globals (Vitest's default), pass
   * `{ describe, it }` from `'vitest'`. Pass both or neither.
   */
  describe?: (name: string, fn: () => void) => unknown
  /** The runner's `it`; see `describe`. */
  it?: RunnerIt
  /** Only cases whose name contains this. */
  filter?: string
  /** Declared unsupported cases: `{ [name or 'category - ' prefix]: reason }`, skipped with the reason printed. */
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

/**
 * Registers one test per conformance case (named `category - case`) with the
 * runner's `describe`/`it`. Each test checks the decision, the
 * `INVALID_MANIFEST` pointer, the error shape of the optional `assert*`
 * methods and that the metric on `context.meter` moved exactly once per
 * denial. A failure names the case's category, manifest, input, expected and
 * actual result. Throws one line saying what to install when the optional
 * peer `@opentelemetry/sdk-metrics` is missing.
 */
export declare function runPermissionsConformance(label: string, makeChecker: MakeChecker, options?: ConformanceOptions): void
/** Every case of the shared table. */
export declare function conformanceCases(): readonly ConformanceCase[]
/**
 * Runs one case; rejects with the failure (or a `Skip`). `sdk` defaults to
 * `@opentelemetry/sdk-metrics`; `trace` receives `actual` (what the adapter
 * returned) and `metricStill` (an expected increment did not happen).
 */
export declare function runCase(c: ConformanceCase, makeChecker: MakeChecker, sdk?: unknown, trace?: { actual?: unknown; metricStill?: boolean }): Promise<void>
/** The adapter for this package's own checker and tracker. */
export declare function packageChecker(pkg?: unknown): MakeChecker
/** Thrown by `runCase` for a case the adapter cannot run (no optional method for it). */
export declare class Skip {
  constructor(reason: string)
  readonly reason: string
}
/** The plugin id every case's policy is built with (`context.plugin`). */
export declare const CONFORMANCE_PLUGIN: string
