;; Two preopens, /out (fd 3) and /z (fd 4) = out/z inside it: the guest
;; replaces out/z by a symlink chain into a denied directory, then lists fd 4.
;; node:wasi reaches a preopen through its path string again on every call.
(module
  (import "wasi_snapshot_preview1" "path_rename" (func $rename (param i32 i32 i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_symlink" (func $symlink (param i32 i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_readdir" (func $readdir (param i32 i32 i32 i64 i32) (result i32)))
  (import "host" "report" (func $report (param i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "z")
  (data (i32.const 24) "z_old")
  (data (i32.const 32) "m/private")
  (data (i32.const 48) "m")
  (data (i32.const 56) "a")
  (data (i32.const 64) "readdir")
  (data (i32.const 80) "rename")
  (func (export "_start")
    (call $report (i32.const 80) (i32.const 6)
      (call $rename (i32.const 3) (i32.const 16) (i32.const 1) (i32.const 3) (i32.const 24) (i32.const 5)))
    (drop (call $symlink (i32.const 32) (i32.const 9) (i32.const 3) (i32.const 16) (i32.const 1)))
    (drop (call $symlink (i32.const 56) (i32.const 1) (i32.const 3) (i32.const 48) (i32.const 1)))
    (call $report (i32.const 64) (i32.const 7)
      (call $readdir (i32.const 4) (i32.const 1024) (i32.const 256) (i64.const 0) (i32.const 600)))))
