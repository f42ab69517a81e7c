// Types of @suaveplan/api-sandbox-permissions/testing.
import type { Meter, MeterProvider } from '@opentelemetry/api'
import type { BudgetHooks, BudgetName, BudgetStatus, Decision, FsMode, PermissionsManifest, Platform } from './index.js'

/** What the harness passes to `makeChecker` with each case's manifest. */
export interface ConformanceContext {
  /** Build the policy with this plugin id. */
  readonly plugin: string
  /** Build the policy with this path flavour. */
  readonly platform: Platform
  /** Record metrics here: the harness reads them back. */
  readonly meter: Meter
  /** The SDK provider behind `meter` (an in-memory exporter). */
  readonly meterProvider: MeterProvider
}

/** A value, or a Promise of it: adapters may be synchronous or async. */
type MaybePromise<T> = T | Promise<T>

/** The budget tracker an adapter returns from `createBudgetTracker`. */
export interface ConformanceTracker {
  /** Reads the hooks and returns the status (as `BudgetTracker.sample`). */
  sample(): MaybePromise<BudgetStatus>
  /** Throws `BUDGET_EXCEEDED` after a breach (optional: then checked too). */
  assertWithin?: (() => MaybePromise<void>) | undefined
}

/**
 * The check and assert methods of an adapter: what `makeChecker` returns,
 * and what its `withShadow` returns. An optional method that is absent or
 * `undefined` is not called (its cases are skipped, or its checks left out).
 */
export interface ConformanceChecks {
  /** The host's fs check. */
  checkFs(path: string, mode: FsMode): MaybePromise<Decision>
  /** The host's fetch check. */
  checkFetch(url: string): MaybePromise<Decision>
  /** The host's capability check. */
  checkCapability(capabilityId: string, payload: unknown): MaybePromise<Decision>
  /** The DNS-rebinding re-check; without it those cases are skipped. */
  checkFetchAddress?: ((url: string, resolvedIp: string) => MaybePromise<Decision>) | undefined
  /** Optional: throws `PERMISSION_DENIED`; its error shape is then checked. */
  assertFs?: ((path: string, mode: FsMode) => MaybePromise<void>) | undefined
  /** Optional: throws `PERMISSION_DENIED`; its error shape is then checked. */
  assertFetch?: ((url: string) => MaybePromise<void>) | undefined
  /** Optional: throws `PERMISSION_DENIED`; its error shape is then checked. */
  assertFetchAddress?: ((url: string, resolvedIp: string) => MaybePromise<unknown>) | undefined
  /** Optional: throws `PERMISSION_DENIED`; its error shape is then checked. */
  assertCapability?: ((capabilityId: string, payload: unknown) => MaybePromise<void>) | undefined
}

/** The adapter a host returns from `makeChecker`: its own checks, under these names. */
export interface ConformanceChecker extends ConformanceChecks {
  /**
   * Create a tracker at the hooks' current readings, with `unmeasured` (the
   * budgets declared measured elsewhere). A budget with neither a sampler in
   * `hooks` nor a place in `unmeasured` must be refused with a TypeError
   * naming it. Without it the budget cases are skipped.
   */
  createBudgetTracker?: ((hooks: BudgetHooks, options: { cpuGraceMs: number; unmeasured: BudgetName[] }) => MaybePromise<ConformanceTracker>) | undefined
  /**
   * Optional, for a host with shadow (report-only) policies: the same checks
   * with a shadow policy built from `shadowManifest` (with the case's
   * `context.plugin` and `context.platform`, counting on `context.meter`)
   * evaluated beside the enforced one. Given it, every decision case runs
   * again beside a deny-all shadow and fails if the shadow changes a
   * decision, an error or the enforced counter, or if
   * `plugin.permission_shadow_denied_total` does not move exactly once per
   * call with the call's capability label.
   */
  withShadow?: ((shadowManifest: PermissionsManifest) => MaybePromise<ConformanceChecks>) | undefined
}

/**
 * Builds the host's checker for one case: a policy from `manifest` with
 * `context.plugin` and `context.platform`, counting on `context.meter`.
 * Called once more when registering, with `{}`: a checker returned
 * synchronously shows which optional methods it has, and the cases it cannot
 * run are registered as skips (the same count under every runner). An async
 * adapter is seen only at run time: mocha, node:test and Vitest skip then,
 * but Jest has no run-time skip, so there such a case fails saying so.
 */
export type MakeChecker = (manifest: PermissionsManifest, context: ConformanceContext) => MaybePromise<ConformanceChecker>

/**
 * A runner's `it`/`test`: node:test's, mocha's, Jest's and Vitest's all fit.
 * The harness calls `it(name, fn)` with a zero-parameter async `fn`, and for
 * declared skips node:test's `it(name, { skip: reason }, fn)` or the
 * others' `it.skip(name, fn)`.
 */
export type RunnerIt = ((name: string, fn: () => Promise<void>) => unknown) & { skip?: unknown }

/** Options of `runPermissionsConformance`. */
export interface ConformanceOptions {
  /**
   * The runner's `describe`. Default: the global `describe`/`it` when the
   * runner defines them (mocha, Jest, Vitest with `globals: true`), else
   * `node:test`'s. Without globals (Vitest's default), pass
   * `{ describe, it }` from `'vitest'`. Pass both or neither.
   */
  describe?: ((name: string, fn: () => void) => unknown) | undefined
  /** The runner's `it`; see `describe`. */
  it?: RunnerIt | undefined
  /**
   * Only cases whose name contains this. A run in which no case runs (a
   * filter that matches none, or every match skipped) fails.
   */
  filter?: string | undefined
  /**
   * Declared unsupported cases: `{ [case name or 'category - ']: reason }`,
   * skipped with the reason printed. A key skips one case (its whole name)
   * or one category (the category's name followed by `' - '`); any other
   * key (empty, a prefix of a name, a name that is no case) skips nothing
   * and fails the run; a reason that is not a non-empty string is a
   * `TypeError`. (A failing run reports its first 10 failures in full and
   * every later one in a line.)
   */
  skip?: Record<string, string> | undefined
  /**
   * Known gaps: exact case names the adapter is expected to fail. A listed
   * case still runs: failing, it passes as an expected failure (node:test
   * marks it TODO); passing, it fails as an unexpected pass, so the list only
   * shrinks. A name that is no case fails the run; a non-array is a `TypeError`.
   */
  expectedFailures?: readonly string[] | undefined
}

/** One case of the shared table. */
export interface ConformanceCase {
  /** `category - case`: the test name. */
  readonly name: string
  /** `manifest`, `fs`, `fetch`, `capability`, `budget`, `adversarial`, ... */
  readonly category: string
  /** The manifest the checker is built from. */
  readonly manifest: unknown
  /** The path flavour. */
  readonly platform: Platform
  /** Which call the case makes. */
  readonly op: 'manifest' | 'fs' | 'fetch' | 'fetchAddress' | 'capability' | 'budget'
  /** The call's arguments. */
  readonly args: Readonly<Record<string, unknown>>
  /** The expected result. */
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
export declare function runCase(c: ConformanceCase, makeChecker: MakeChecker, sdk?: unknown, trace?: { actual?: unknown; metricStill?: boolean | undefined }): Promise<void>
/** The adapter for this package's own checker and tracker. */
export declare function packageChecker(pkg?: unknown): MakeChecker
/** Thrown by `runCase` for a case the adapter cannot run (no optional method for it). */
export declare class Skip {
  constructor(reason: string)
  /** Why the case cannot run. */
  readonly reason: string
}
/** The plugin id every case's policy is built with (`context.plugin`). */
export declare const CONFORMANCE_PLUGIN: string
