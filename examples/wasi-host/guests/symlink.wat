;; Symlink guest (the differential test, __test__/wasi-differential.test.js).
;; Preopens: fd 3 = /data (read), fd 4 = /out (readwrite); the world of
;; fixture.js plantLinks(). A call that follows a final symlink in either
;; runtime is checked as the path it resolves to, whatever dirflags says
;; (EACCES when that is denied); a no-follow open of a final symlink whose
;; target is allowed gets the O_NOFOLLOW errno (ELOOP, EEXIST with
;; O_CREAT|O_EXCL) in both hosts. A link's absolute target names a host path
;; and is not revealed (EPERM in both: wasmtime's rule, the Node gate's too).
;; node:wasi normalises a path lexically before the kernel resolves it, so
;; `lk/../x` (lk -> out/d1/d2) must be inside the grants read both ways, and
;; so must a link target it reads lexically when it follows a link itself.
;; path_link with LOOKUP_SYMLINK_FOLLOW is refused (EINVAL) before any check.
(module
  (import "wasi_snapshot_preview1" "path_open" (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_filestat_get" (func $path_filestat_get (param i32 i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_filestat_set_times" (func $path_filestat_set_times (param i32 i32 i32 i32 i64 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_readlink" (func $path_readlink (param i32 i32 i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_unlink_file" (func $path_unlink_file (param i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_link" (func $path_link (param i32 i32 i32 i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_close" (func $fd_close (param i32) (result i32)))
  (import "host" "report" (func $report (param i32 i32 i32)))
  (memory (export "memory") 1)
;; scratch: 0 fd out, 8 iovec {256, 4}, 16 nwritten/nread/bufused, 64 filestat / readdir buffer (to 512), 256 bytes written
  (data (i32.const 8) "\00\01\00\00\04\00\00\00")
  (data (i32.const 256) "gate")
  (data (i32.const 1024) "lk/../link-dir/victim")
  (data (i32.const 1048) "lk/../link-out")
  (data (i32.const 1064) "lk/../link-to-own")
  (data (i32.const 1088) "x-lex")
  (data (i32.const 1096) "hl.txt")
  (data (i32.const 1104) "link-to-secret")
  (data (i32.const 1120) "link-to-input")
  (data (i32.const 1136) "dang")
  (data (i32.const 1144) "link-out")
  (data (i32.const 1160) "link-to-inner")
  (data (i32.const 1176) "link-to-own")
  (data (i32.const 1192) "link-sub")
  (data (i32.const 1208) "link-dir/x")
  (data (i32.const 1224) "sub")
  (data (i32.const 1232) "own.txt")
  (data (i32.const 1240) "input.txt")
  (data (i32.const 1256) "nofollow_read_link_outside")
  (data (i32.const 1288) "nofollow_trunc_link_into_read_grant")
  (data (i32.const 1328) "nofollow_create_through_dangling")
  (data (i32.const 1368) "nofollow_write_link_outside")
  (data (i32.const 1400) "nofollow_link_inside")
  (data (i32.const 1424) "nofollow_excl_on_link")
  (data (i32.const 1448) "nofollow_dir_link")
  (data (i32.const 1472) "follow_link_inside")
  (data (i32.const 1496) "follow_link_outside")
  (data (i32.const 1520) "create_through_intermediate_link")
  (data (i32.const 1560) "stat_nofollow_link")
  (data (i32.const 1584) "stat_follow_link_outside")
  (data (i32.const 1616) "set_times_nofollow_link")
  (data (i32.const 1640) "set_times_follow_link_outside")
  (data (i32.const 1672) "normalized_unlink_through_link")
  (data (i32.const 1704) "normalized_open_through_link")
  (data (i32.const 1736) "lexical_link_target_into_deny")
  (data (i32.const 1768) "normalized_nofollow_final_link")
  (data (i32.const 1800) "readlink_absolute_target")
  (data (i32.const 1832) "readlink_relative_target")
  (data (i32.const 1864) "unlink_link")
  (data (i32.const 1880) "link_follow_refused")
  (data (i32.const 1904) "link_follow_refused_denied_source")
  (func $fd (result i32) (i32.load (i32.const 0)))
  (func (export "_start")
    ;; nofollow_read_link_outside
    (call $report (i32.const 1256) (i32.const 26) (call $path_open (i32.const 3) (i32.const 0) (i32.const 1104) (i32.const 14) (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; nofollow_trunc_link_into_read_grant
    (call $report (i32.const 1288) (i32.const 35) (call $path_open (i32.const 4) (i32.const 0) (i32.const 1120) (i32.const 13) (i32.const 8) (i64.const 64) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; nofollow_create_through_dangling
    (call $report (i32.const 1328) (i32.const 32) (call $path_open (i32.const 4) (i32.const 0) (i32.const 1136) (i32.const 4) (i32.const 1) (i64.const 64) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; nofollow_write_link_outside
    (call $report (i32.const 1368) (i32.const 27) (call $path_open (i32.const 4) (i32.const 0) (i32.const 1144) (i32.const 8) (i32.const 0) (i64.const 64) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; nofollow_link_inside
    (call $report (i32.const 1400) (i32.const 20) (call $path_open (i32.const 3) (i32.const 0) (i32.const 1160) (i32.const 13) (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; nofollow_excl_on_link
    (call $report (i32.const 1424) (i32.const 21) (call $path_open (i32.const 4) (i32.const 0) (i32.const 1176) (i32.const 11) (i32.const 5) (i64.const 64) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; nofollow_dir_link
    (call $report (i32.const 1448) (i32.const 17) (call $path_open (i32.const 3) (i32.const 0) (i32.const 1192) (i32.const 8) (i32.const 2) (i64.const 16384) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; follow_link_inside
    (call $report (i32.const 1472) (i32.const 18) (call $path_open (i32.const 3) (i32.const 1) (i32.const 1160) (i32.const 13) (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 0)))
    (drop (call $fd_close (call $fd)))
    ;; follow_link_outside
    (call $report (i32.const 1496) (i32.const 19) (call $path_open (i32.const 3) (i32.const 1) (i32.const 1104) (i32.const 14) (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; create_through_intermediate_link
    (call $report (i32.const 1520) (i32.const 32) (call $path_open (i32.const 4) (i32.const 0) (i32.const 1208) (i32.const 10) (i32.const 1) (i64.const 64) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; stat_nofollow_link
    (call $report (i32.const 1560) (i32.const 18) (call $path_filestat_get (i32.const 3) (i32.const 0) (i32.const 1104) (i32.const 14) (i32.const 64)))
    ;; stat_follow_link_outside
    (call $report (i32.const 1584) (i32.const 24) (call $path_filestat_get (i32.const 3) (i32.const 1) (i32.const 1104) (i32.const 14) (i32.const 64)))
    ;; set_times_nofollow_link
    (call $report (i32.const 1616) (i32.const 23) (call $path_filestat_set_times (i32.const 4) (i32.const 0) (i32.const 1144) (i32.const 8) (i64.const 0) (i64.const 0) (i32.const 10)))
    ;; set_times_follow_link_outside
    (call $report (i32.const 1640) (i32.const 29) (call $path_filestat_set_times (i32.const 4) (i32.const 1) (i32.const 1144) (i32.const 8) (i64.const 0) (i64.const 0) (i32.const 10)))
    ;; normalized_unlink_through_link
    (call $report (i32.const 1672) (i32.const 30) (call $path_unlink_file (i32.const 4) (i32.const 1024) (i32.const 21)))
    ;; normalized_open_through_link
    (call $report (i32.const 1704) (i32.const 28) (call $path_open (i32.const 4) (i32.const 0) (i32.const 1048) (i32.const 14) (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; lexical_link_target_into_deny
    (call $report (i32.const 1736) (i32.const 29) (call $path_open (i32.const 4) (i32.const 1) (i32.const 1088) (i32.const 5) (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; normalized_nofollow_final_link
    (call $report (i32.const 1768) (i32.const 30) (call $path_open (i32.const 4) (i32.const 0) (i32.const 1064) (i32.const 17) (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; readlink_absolute_target
    (call $report (i32.const 1800) (i32.const 24) (call $path_readlink (i32.const 4) (i32.const 1144) (i32.const 8) (i32.const 64) (i32.const 128) (i32.const 16)))
    ;; readlink_relative_target
    (call $report (i32.const 1832) (i32.const 24) (call $path_readlink (i32.const 4) (i32.const 1176) (i32.const 11) (i32.const 64) (i32.const 128) (i32.const 16)))
    ;; unlink_link
    (call $report (i32.const 1864) (i32.const 11) (call $path_unlink_file (i32.const 4) (i32.const 1144) (i32.const 8)))
    ;; link_follow_refused
    (call $report (i32.const 1880) (i32.const 19) (call $path_link (i32.const 4) (i32.const 1) (i32.const 1176) (i32.const 11) (i32.const 4) (i32.const 1096) (i32.const 6)))
    ;; link_follow_refused_denied_source
    (call $report (i32.const 1904) (i32.const 33) (call $path_link (i32.const 3) (i32.const 1) (i32.const 1104) (i32.const 14) (i32.const 4) (i32.const 1096) (i32.const 6)))
  ))
