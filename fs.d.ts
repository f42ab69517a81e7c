// `@suaveplan/api-sandbox-permissions/fs`: open exactly what was checked.
import type { PermissionChecker } from './index.js'

/** Options of `openChecked`. Every flag defaults to `false`. */
export interface OpenCheckedOptions {
  /**
   * The access, and the modes the path is checked in: `'read'` (a read
   * grant), `'write'` (a write grant), `'readwrite'` (both). Default: `'read'`.
   */
  mode?: 'read' | 'write' | 'readwrite' | undefined
  /** Create the file when it does not exist (`O_CREAT`); a write: needs `mode` `'write'` or `'readwrite'`. */
  create?: boolean | undefined
  /** Truncate to length 0, once what was opened is verified; a write. */
  truncate?: boolean | undefined
  /** Every write goes to the end (`O_APPEND`); a write. */
  append?: boolean | undefined
  /** Fail with `EEXIST` when the file exists (`O_EXCL`); needs `create`. */
  exclusive?: boolean | undefined
  /** Open only a directory (`O_DIRECTORY`), read-only. */
  directory?: boolean | undefined
  /** Permission bits of a file `create` makes, at most `0o777` (the umask applies). Default: `0o666`. */
  permissions?: number | undefined
}

/** The part of `fs.Stats` this package relies on; `stat()` resolves to a full `fs.Stats`. */
export interface CheckedFileStats {
  /** Device id. */
  dev: number
  /** Inode number. */
  ino: number
  /** File type and permission bits. */
  mode: number
  /** Hard link count. */
  nlink: number
  /** Size in bytes. */
  size: number
  /** Last modification, ms since the epoch. */
  mtimeMs: number
  /** Whether it is a regular file. */
  isFile(): boolean
  /** Whether it is a directory. */
  isDirectory(): boolean
}

/**
 * An open descriptor of the file a checked open checked, and its checked
 * real path. Methods mirror `fs.promises.FileHandle`; an operation in
 * flight holds the descriptor open, so `close()` waits for it. Made by
 * `openChecked` only.
 */
export declare class CheckedFile {
  private constructor()
  /** The descriptor number while open; -1 once `close()` was called. Do not close it yourself: call `close()`. */
  readonly fd: number
  /** The real path that was checked and opened. */
  readonly path: string
  /** Reads into `buffer` (one read(2)). `position` null or omitted: the current position. */
  read<T extends ArrayBufferView>(
    buffer: T,
    offset?: number,
    length?: number,
    position?: number | bigint | null,
  ): Promise<{ bytesRead: number; buffer: T }>
  /** Writes bytes (one write(2)), as `fs.write(fd, buffer, offset, length, position)`. */
  write<T extends ArrayBufferView>(
    buffer: T,
    offset?: number | null,
    length?: number | null,
    position?: number | null,
  ): Promise<{ bytesWritten: number; buffer: T }>
  /** Writes a string (one write(2)), as `fs.write(fd, string, position, encoding)`. */
  write(data: string, position?: number | null, encoding?: string | null): Promise<{ bytesWritten: number; buffer: string }>
  /** Reads from the current position to the end, as text. */
  readFile(options: { encoding: string } | string): Promise<string>
  /** Reads from the current position to the end (a Node `Buffer`). */
  readFile(options?: { encoding?: null | undefined }): Promise<Uint8Array>
  /** Writes all of `data` from the current position. */
  writeFile(data: string | ArrayBufferView, options?: { encoding?: string | null | undefined } | string): Promise<void>
  /** `fs.Stats` of the open file. */
  stat(): Promise<CheckedFileStats>
  /** Truncates (or extends) to `len` bytes (default 0); needs the file open for writing. */
  truncate(len?: number): Promise<void>
  /** Flushes the file to storage (fsync). */
  sync(): Promise<void>
  /** Closes the descriptor once the operations in flight end; later calls return the same promise. */
  close(): Promise<void>
}

/**
 * Checks `path` with `checker` (symlinks resolved, deny rules included, in
 * every mode the open needs) and opens exactly the checked real path, in one
 * step: beneath the grant's literal root, never through a symlink, a `..` or
 * a magic link (Linux `openat2`; a component walk with `O_NOFOLLOW`
 * elsewhere), then verified. A denial rejects with `PERMISSION_DENIED`
 * (`PermissionDeniedError`), counted once on the checker's meter; a tree
 * changed between the check and the open is `symlink_escape`; a failed open
 * rejects with a Node-style system error (`code` `'ENOENT'`, ...). Unix
 * only (`ERR_UNSUPPORTED_PLATFORM` on Windows).
 */
export declare function openChecked(checker: PermissionChecker, path: string, options?: OpenCheckedOptions): Promise<CheckedFile>
