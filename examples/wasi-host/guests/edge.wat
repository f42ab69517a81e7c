;; A guest that probes the ABI edges of the host's wrapper (preopen fd 3 =
;; /data, read). Expected errnos: an invalid UTF-8 path EILSEQ (25), a path
;; outside its memory EFAULT (21), an fd the host never gave out EBADF (8), a
;; NUL in a path EACCES (2, the checker's invalid_path), a directory it opened
;; is a base for relative paths (0: sub/inner.txt), a traversal from that directory EACCES,
;; and once closed the directory is EBADF again. It then exits normally.
(module
  (import "wasi_snapshot_preview1" "path_open" (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_close" (func $fd_close (param i32) (result i32)))
  (import "host" "report" (func $report (param i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 256) "\ff\fe")
  (data (i32.const 264) "input.txt\00x")
  (data (i32.const 280) "input.txt")
  (data (i32.const 296) "sub")
  (data (i32.const 304) "../../secret-outside.txt")
  (data (i32.const 336) "inner.txt")
  (data (i32.const 512) "ilseq")
  (data (i32.const 520) "efault")
  (data (i32.const 528) "ebadf")
  (data (i32.const 536) "nul")
  (data (i32.const 544) "open_dir")
  (data (i32.const 560) "dir_traversal")
  (data (i32.const 576) "dir_relative")
  (data (i32.const 592) "closed_dir")

  (func $open (param $fd i32) (param $p i32) (param $l i32) (result i32)
    (call $path_open (local.get $fd) (i32.const 1) (local.get $p) (local.get $l)
      (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 0)))

  (func (export "_start")
    (local $dir i32) (local $e i32)
    (call $report (i32.const 512) (i32.const 5) (call $open (i32.const 3) (i32.const 256) (i32.const 2)))
    (call $report (i32.const 520) (i32.const 6) (call $open (i32.const 3) (i32.const 65530) (i32.const 100)))
    (call $report (i32.const 528) (i32.const 5) (call $open (i32.const 99) (i32.const 280) (i32.const 9)))
    (call $report (i32.const 536) (i32.const 3) (call $open (i32.const 3) (i32.const 264) (i32.const 11)))
    ;; open /data/sub as a directory: rights path_open | fd_readdir | path_filestat_get, inheriting fd_read
    (local.set $e (call $path_open (i32.const 3) (i32.const 1) (i32.const 296) (i32.const 3)
      (i32.const 2) (i64.const 286720) (i64.const 2) (i32.const 0) (i32.const 0)))
    (call $report (i32.const 544) (i32.const 8) (local.get $e))
    (local.set $dir (i32.load (i32.const 0)))
    (call $report (i32.const 560) (i32.const 13) (call $open (local.get $dir) (i32.const 304) (i32.const 24)))
    (local.set $e (call $open (local.get $dir) (i32.const 336) (i32.const 9)))
    (call $report (i32.const 576) (i32.const 12) (local.get $e))
    (if (i32.eqz (local.get $e)) (then (drop (call $fd_close (i32.load (i32.const 0))))))
    (drop (call $fd_close (local.get $dir)))
    (call $report (i32.const 592) (i32.const 10) (call $open (local.get $dir) (i32.const 280) (i32.const 9)))))
