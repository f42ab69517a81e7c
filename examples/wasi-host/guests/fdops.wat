;; fd-level guest (the differential test). Preopens: fd 3 = /data (read),
;; fd 4 = /out (readwrite). Every call that can change or reveal the tree
;; through an fd is checked with its mode (examples/wasi-host/wasi-calls.json)
;; on the path the host recorded for the fd: a preopen's own directory is not
;; under `/data/**` or `/out/**`, so changing or listing it is EACCES; a write
;; through an fd opened without the call's right is ENOTCAPABLE (preview1);
;; sockets are refused (ENOTSUP).
(module
  (import "wasi_snapshot_preview1" "path_open" (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_close" (func $fd_close (param i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_readdir" (func $fd_readdir (param i32 i32 i32 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_filestat_get" (func $fd_filestat_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_filestat_set_times" (func $fd_filestat_set_times (param i32 i64 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_filestat_set_size" (func $fd_filestat_set_size (param i32 i64) (result i32)))
  (import "wasi_snapshot_preview1" "fd_allocate" (func $fd_allocate (param i32 i64 i64) (result i32)))
  (import "wasi_snapshot_preview1" "fd_sync" (func $fd_sync (param i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_fdstat_get" (func $fd_fdstat_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_renumber" (func $fd_renumber (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "sock_recv" (func $sock_recv (param i32 i32 i32 i32 i32 i32) (result i32)))
  (import "host" "report" (func $report (param i32 i32 i32)))
  (memory (export "memory") 1)
;; scratch: 0 fd out, 8 iovec {256, 4}, 16 nwritten/nread/bufused, 64 filestat / readdir buffer (to 512), 256 bytes written
  (data (i32.const 8) "\00\01\00\00\04\00\00\00")
  (data (i32.const 256) "gate")
  (data (i32.const 1024) "data_preopen_set_times")
  (data (i32.const 1048) "data_preopen_set_size")
  (data (i32.const 1072) "data_preopen_allocate")
  (data (i32.const 1096) "data_preopen_write")
  (data (i32.const 1120) "data_preopen_readdir")
  (data (i32.const 1144) "data_preopen_filestat")
  (data (i32.const 1168) "data_preopen_sync")
  (data (i32.const 1192) "out_preopen_set_times")
  (data (i32.const 1216) "out_preopen_write")
  (data (i32.const 1240) "out_preopen_readdir")
  (data (i32.const 1264) "lk/../link-dir/victim")
  (data (i32.const 1288) "lk/../link-out")
  (data (i32.const 1304) "lk/../link-to-own")
  (data (i32.const 1328) "x-lex")
  (data (i32.const 1336) "hl.txt")
  (data (i32.const 1344) "link-to-secret")
  (data (i32.const 1360) "link-to-input")
  (data (i32.const 1376) "dang")
  (data (i32.const 1384) "link-out")
  (data (i32.const 1400) "link-to-inner")
  (data (i32.const 1416) "link-to-own")
  (data (i32.const 1432) "link-sub")
  (data (i32.const 1448) "link-dir/x")
  (data (i32.const 1464) "sub")
  (data (i32.const 1472) "own.txt")
  (data (i32.const 1480) "input.txt")
  (data (i32.const 1496) "open_sub_dir")
  (data (i32.const 1512) "sub_dir_readdir")
  (data (i32.const 1528) "sub_dir_filestat")
  (data (i32.const 1552) "sub_dir_set_times")
  (data (i32.const 1576) "sub_dir_write")
  (data (i32.const 1592) "open_own_read_only")
  (data (i32.const 1616) "own_ro_read")
  (data (i32.const 1632) "own_ro_write")
  (data (i32.const 1648) "own_ro_set_size")
  (data (i32.const 1664) "own_ro_set_times")
  (data (i32.const 1688) "open_input")
  (data (i32.const 1704) "input_read")
  (data (i32.const 1720) "input_sync")
  (data (i32.const 1736) "input_set_times")
  (data (i32.const 1752) "closed_input_write")
  (data (i32.const 1776) "open_own_write")
  (data (i32.const 1792) "own_rw_set_times")
  (data (i32.const 1816) "own_rw_write")
  (data (i32.const 1832) "closed_fd_write")
  (data (i32.const 1848) "renumber_unknown_onto_stderr")
  (data (i32.const 1880) "stderr_write_after_failed_renumber")
  (data (i32.const 1920) "stdout_write")
  (data (i32.const 1936) "unknown_fd_write")
  (data (i32.const 1960) "sock_recv_preopen")
  (data (i32.const 1984) "fdstat_preopen")
  (data (i32.const 2000) "open_input_again")
  (data (i32.const 2024) "renumber_onto_stdout")
  (data (i32.const 2048) "renumbered_stdout_write")
  (data (i32.const 2072) "renumbered_stdout_read")
  (func $fd (result i32) (i32.load (i32.const 0)))
  (func (export "_start")
    ;; data_preopen_set_times
    (call $report (i32.const 1024) (i32.const 22) (call $fd_filestat_set_times (i32.const 3) (i64.const 0) (i64.const 0) (i32.const 10)))
    ;; data_preopen_set_size
    (call $report (i32.const 1048) (i32.const 21) (call $fd_filestat_set_size (i32.const 3) (i64.const 0)))
    ;; data_preopen_allocate
    (call $report (i32.const 1072) (i32.const 21) (call $fd_allocate (i32.const 3) (i64.const 0) (i64.const 1)))
    ;; data_preopen_write
    (call $report (i32.const 1096) (i32.const 18) (call $fd_write (i32.const 3) (i32.const 8) (i32.const 1) (i32.const 16)))
    ;; data_preopen_readdir
    (call $report (i32.const 1120) (i32.const 20) (call $fd_readdir (i32.const 3) (i32.const 64) (i32.const 256) (i64.const 0) (i32.const 16)))
    ;; data_preopen_filestat
    (call $report (i32.const 1144) (i32.const 21) (call $fd_filestat_get (i32.const 3) (i32.const 64)))
    ;; data_preopen_sync
    (call $report (i32.const 1168) (i32.const 17) (call $fd_sync (i32.const 3)))
    ;; out_preopen_set_times
    (call $report (i32.const 1192) (i32.const 21) (call $fd_filestat_set_times (i32.const 4) (i64.const 0) (i64.const 0) (i32.const 10)))
    ;; out_preopen_write
    (call $report (i32.const 1216) (i32.const 17) (call $fd_write (i32.const 4) (i32.const 8) (i32.const 1) (i32.const 16)))
    ;; out_preopen_readdir
    (call $report (i32.const 1240) (i32.const 19) (call $fd_readdir (i32.const 4) (i32.const 64) (i32.const 256) (i64.const 0) (i32.const 16)))
    ;; open_sub_dir
    (call $report (i32.const 1496) (i32.const 12) (call $path_open (i32.const 3) (i32.const 0) (i32.const 1464) (i32.const 3) (i32.const 2) (i64.const 2113536) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; sub_dir_readdir
    (call $report (i32.const 1512) (i32.const 15) (call $fd_readdir (call $fd) (i32.const 64) (i32.const 256) (i64.const 0) (i32.const 16)))
    ;; sub_dir_filestat
    (call $report (i32.const 1528) (i32.const 16) (call $fd_filestat_get (call $fd) (i32.const 64)))
    ;; sub_dir_set_times
    (call $report (i32.const 1552) (i32.const 17) (call $fd_filestat_set_times (call $fd) (i64.const 0) (i64.const 0) (i32.const 10)))
    ;; sub_dir_write
    (call $report (i32.const 1576) (i32.const 13) (call $fd_write (call $fd) (i32.const 8) (i32.const 1) (i32.const 16)))
    (drop (call $fd_close (call $fd)))
    ;; open_own_read_only
    (call $report (i32.const 1592) (i32.const 18) (call $path_open (i32.const 4) (i32.const 0) (i32.const 1472) (i32.const 7) (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; own_ro_read
    (call $report (i32.const 1616) (i32.const 11) (call $fd_read (call $fd) (i32.const 8) (i32.const 1) (i32.const 16)))
    ;; own_ro_write
    (call $report (i32.const 1632) (i32.const 12) (call $fd_write (call $fd) (i32.const 8) (i32.const 1) (i32.const 16)))
    ;; own_ro_set_size
    (call $report (i32.const 1648) (i32.const 15) (call $fd_filestat_set_size (call $fd) (i64.const 0)))
    ;; own_ro_set_times
    (call $report (i32.const 1664) (i32.const 16) (call $fd_filestat_set_times (call $fd) (i64.const 0) (i64.const 0) (i32.const 10)))
    (drop (call $fd_close (call $fd)))
    ;; open_input
    (call $report (i32.const 1688) (i32.const 10) (call $path_open (i32.const 3) (i32.const 0) (i32.const 1480) (i32.const 9) (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; input_read
    (call $report (i32.const 1704) (i32.const 10) (call $fd_read (call $fd) (i32.const 8) (i32.const 1) (i32.const 16)))
    ;; input_sync
    (call $report (i32.const 1720) (i32.const 10) (call $fd_sync (call $fd)))
    ;; input_set_times
    (call $report (i32.const 1736) (i32.const 15) (call $fd_filestat_set_times (call $fd) (i64.const 0) (i64.const 0) (i32.const 10)))
    (drop (call $fd_close (call $fd)))
    ;; closed_input_write
    (call $report (i32.const 1752) (i32.const 18) (call $fd_write (call $fd) (i32.const 8) (i32.const 1) (i32.const 16)))
    ;; open_own_write
    (call $report (i32.const 1776) (i32.const 14) (call $path_open (i32.const 4) (i32.const 0) (i32.const 1472) (i32.const 7) (i32.const 0) (i64.const 8388672) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; own_rw_set_times
    (call $report (i32.const 1792) (i32.const 16) (call $fd_filestat_set_times (call $fd) (i64.const 0) (i64.const 0) (i32.const 10)))
    ;; own_rw_write
    (call $report (i32.const 1816) (i32.const 12) (call $fd_write (call $fd) (i32.const 8) (i32.const 1) (i32.const 16)))
    (drop (call $fd_close (call $fd)))
    ;; closed_fd_write
    (call $report (i32.const 1832) (i32.const 15) (call $fd_write (call $fd) (i32.const 8) (i32.const 1) (i32.const 16)))
    ;; renumber_unknown_onto_stderr
    (call $report (i32.const 1848) (i32.const 28) (call $fd_renumber (i32.const 99) (i32.const 2)))
    ;; stderr_write_after_failed_renumber
    (call $report (i32.const 1880) (i32.const 34) (call $fd_write (i32.const 2) (i32.const 8) (i32.const 1) (i32.const 16)))
    ;; stdout_write
    (call $report (i32.const 1920) (i32.const 12) (call $fd_write (i32.const 1) (i32.const 8) (i32.const 1) (i32.const 16)))
    ;; unknown_fd_write
    (call $report (i32.const 1936) (i32.const 16) (call $fd_write (i32.const 99) (i32.const 8) (i32.const 1) (i32.const 16)))
    ;; sock_recv_preopen
    (call $report (i32.const 1960) (i32.const 17) (call $sock_recv (i32.const 3) (i32.const 8) (i32.const 1) (i32.const 0) (i32.const 16) (i32.const 20)))
    ;; fdstat_preopen
    (call $report (i32.const 1984) (i32.const 14) (call $fd_fdstat_get (i32.const 3) (i32.const 64)))
    ;; open_input_again
    (call $report (i32.const 2000) (i32.const 16) (call $path_open (i32.const 3) (i32.const 0) (i32.const 1480) (i32.const 9) (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; renumber_onto_stdout
    (call $report (i32.const 2024) (i32.const 20) (call $fd_renumber (call $fd) (i32.const 1)))
    ;; renumbered_stdout_write
    (call $report (i32.const 2048) (i32.const 23) (call $fd_write (i32.const 1) (i32.const 8) (i32.const 1) (i32.const 16)))
    ;; renumbered_stdout_read
    (call $report (i32.const 2072) (i32.const 22) (call $fd_read (i32.const 1) (i32.const 8) (i32.const 1) (i32.const 16)))
  ))
