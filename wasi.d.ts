// Types of `@suaveplan/api-sandbox-permissions/wasi` (wasi.js): the WASI gate
// for node:wasi hosts. Every rule is the Rust core's (src/wasi.rs); see docs/wasi.md.
import type { PermissionChecker, Decision, FsMode } from './index.js'

/** WASI preview1 errno values a gate answers with (`wasi_snapshot_preview1` `errno`). */
export declare const ERRNO: Readonly<{
  SUCCESS: 0
  ACCES: 2
  BADF: 8
  EXIST: 20
  FAULT: 21
  ILSEQ: 25
  INVAL: 28
  IO: 29
  LOOP: 32
  NOENT: 44
  NOTSUP: 58
  PERM: 63
  NOTCAPABLE: 76
}>

/** What one `wasi_snapshot_preview1` import needs from a gate (an entry of `WASI_CALLS`). */
export type WasiCallSpec =
  | { readonly gate: 'none' }
  | { readonly gate: 'fd'; readonly mode: FsMode; readonly right: number }
  | { readonly gate: 'path'; readonly follow: 'always' | 'flag' | 'never'; readonly refuseFlags?: { readonly mask: number; readonly errno: number } }
  | { readonly gate: 'refuse'; readonly errno: number }

/**
 * Every `wasi_snapshot_preview1` import and the check it needs (the core's
 * table, `data/wasi-calls.json`). Link only what it lists: an import it does
 * not name is never forwarded unchecked. A null-prototype, frozen object.
 */
export declare const WASI_CALLS: Readonly<Record<string, WasiCallSpec>>

/** A WASI lookup-flags, oflags or fdflags value: an unsigned 32-bit integer. */
export type WasiFlags = number

/** A preview1 `rights` value: a u64 as a bigint, a safe non-negative integer or a decimal string. */
export type WasiRights = bigint | number | string

/** The arguments of each gated path call, its paths already joined to the host directories of their fds. */
export interface WasiPathCallArgs {
  /** `path_open`: `rightsBase` decides the mode with `oflags` and `fdflags` (any write right is a write). */
  path_open: { path: string; dirflags?: WasiFlags | undefined; oflags?: WasiFlags | undefined; rightsBase?: WasiRights | undefined; fdflags?: WasiFlags | undefined }
  /** `path_filestat_get`: follows a final symlink with `LOOKUP_SYMLINK_FOLLOW` in `flags`. */
  path_filestat_get: { path: string; flags?: WasiFlags | undefined }
  /** `path_filestat_set_times`: a write; follows with `LOOKUP_SYMLINK_FOLLOW`. */
  path_filestat_set_times: { path: string; flags?: WasiFlags | undefined }
  /** `path_readlink`: a read of the link itself; an absolute target is `EPERM`. */
  path_readlink: { path: string }
  /** `path_create_directory`: a write. */
  path_create_directory: { path: string }
  /** `path_remove_directory`: a write. */
  path_remove_directory: { path: string }
  /** `path_unlink_file`: a write on the name itself. */
  path_unlink_file: { path: string }
  /** `path_rename`: both names are writes, then what the rename moves (a directory's reach, the links it carries). */
  path_rename: { oldPath: string; newPath: string }
  /** `path_link`: both names are writes (a hard link shares the inode); `LOOKUP_SYMLINK_FOLLOW` in `oldFlags` is `EINVAL`. */
  path_link: { oldPath: string; oldFlags?: WasiFlags | undefined; newPath: string }
  /** `path_symlink`: where the link is made (write) and its target from the link's directory (read). */
  path_symlink: { target: string; newPath: string }
}

/** A gated path call's name. */
export type WasiPathOp = keyof WasiPathCallArgs

/** The budget of the host's work on one call. */
export interface WasiCallOptions {
  /**
   * Wall-clock ms the host's work on this call may take (what is left of the
   * run's `wallClockMs`). Past it the call is `{ errno: EIO, outOfBudget: true }`.
   * Default: unbounded.
   */
  timeLeftMs?: number | undefined
}

/** A call to perform: `paths` as node:wasi reads them (checked), `kernelPaths` as the kernel does. */
export interface WasiAllowed {
  /** Perform it. */
  readonly errno: 0
  /** Each path argument as node:wasi reads it (normalised first), checked, in the call's order. */
  readonly paths: readonly string[]
  /** Each path argument as the kernel (and wasmtime) reads it, checked. */
  readonly kernelPaths: readonly string[]
  /** `path_open`: the path string node:wasi keeps for the new fd (join later calls through a directory fd to it). */
  readonly base?: string
  /** Absent: not a denial. */
  readonly capability?: undefined
  /** Absent: within the budget. */
  readonly outOfBudget?: undefined
}

/** A denied call (answer `EACCES`), counted once on the gate's checker. */
export interface WasiDenied {
  /** `EACCES`. */
  readonly errno: 2
  /** The capability of the check that denied. */
  readonly capability: 'fs.read' | 'fs.write'
  /** The deny reason (`explicitly_denied`, `symlink_escape`, ...). */
  readonly reason: string
  /** Absent: within the budget. */
  readonly outOfBudget?: undefined
}

/** Not performed, with what the runtime itself answers (EEXIST, EINVAL, ELOOP, EPERM, ENOTCAPABLE); not a denial. */
export interface WasiNotPerformed {
  /** `EEXIST`, `EINVAL`, `ELOOP`, `EPERM` or `ENOTCAPABLE`. */
  readonly errno: 20 | 28 | 32 | 63 | 76
  /** Absent: not a denial. */
  readonly capability?: undefined
  /** Absent: within the budget. */
  readonly outOfBudget?: undefined
}

/** The budget ran out during the host's work: end the guest with its budget breach. */
export interface WasiOutOfBudget {
  /** `EIO` (the guest is ended anyway). */
  readonly errno: 29
  /** The budget ran out during the host's work. */
  readonly outOfBudget: true
}

/** How the gate decided a path call. Perform it only when `errno` is 0. */
export type WasiPathAnswer = WasiAllowed | WasiDenied | WasiNotPerformed | WasiOutOfBudget

/** How the gate decided an fd-level call. Perform it only when `errno` is 0. */
export type WasiFdAnswer = { readonly errno: 0; readonly capability?: undefined; readonly outOfBudget?: undefined } | WasiDenied | WasiNotPerformed | WasiOutOfBudget

/** Options of `WasiGate#fdCall`. */
export interface WasiFdOptions extends WasiCallOptions {
  /** The fd was opened with the call's right (else ENOTCAPABLE, after the check). Default: `true`. */
  capable?: boolean | undefined
  /** The runtime reaches the file again through the recorded path string (node:wasi's directory fds): checked as followed, every reading. Default: `false`. */
  reread?: boolean | undefined
}

/** Options of `WasiGate#checkPath`. */
export interface WasiCheckOptions extends WasiCallOptions {
  /** The call follows a final symlink (the real path is checked). Default: `false` (the name itself). */
  follow?: boolean | undefined
}

/**
 * The gate a node:wasi host calls before each path and fd call of a guest.
 * Every rule (open flags to mode, which calls follow a final symlink, the
 * readings of a path, what a rename or link moves, whether a deny reaches
 * below a directory) is the core's; a refused call is counted once on the
 * checker (its shadow policy evaluated on the same call).
 *
 * # Security
 * Pass the paths the runtime will act on, byte for byte (decode guest strings
 * with `new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })`), and
 * perform a call only when the answer's `errno` is 0.
 */
export declare class WasiGate {
  /** A gate counting on `checker` (a `PermissionChecker` of this package). */
  constructor(checker: PermissionChecker)
  /** The checker every refusal is counted on. */
  readonly checker: PermissionChecker
  /** One path call (see `WasiPathCallArgs`). */
  pathCall<Op extends WasiPathOp>(op: Op, args: WasiPathCallArgs[Op], options?: WasiCallOptions): WasiPathAnswer
  /** An fd-level call (`WASI_CALLS[op].gate === 'fd'`): `mode` on the path the host recorded for the fd. */
  fdCall(path: string, mode: FsMode, options?: WasiFdOptions): WasiFdAnswer
  /** One path check under every reading a runtime may act on. */
  checkPath(path: string, mode: FsMode, options?: WasiCheckOptions): (Decision & { readonly outOfBudget?: undefined }) | { readonly allowed: true; readonly path: string; readonly kernelPath: string } | { readonly allowed: false; readonly outOfBudget: true }
}

/** The mode a `path_open` needs: create, truncate, append or any write right is a write. */
export declare function openMode(oflags: WasiFlags, rightsBase: WasiRights, fdflags: WasiFlags): FsMode
