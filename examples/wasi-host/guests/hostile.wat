;; A hostile WASI preview1 guest (WebAssembly text). Preopens: fd 3 = /data
;; (read), fd 4 = /out (readwrite). Every call below must come back EACCES
;; (WASI errno 2) from the host's gate; the guest reports each errno under a
;; tag, then spins forever so that only a budget can stop it.
(module
  (import "wasi_snapshot_preview1" "path_open" (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_filestat_get" (func $path_filestat_get (param i32 i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_filestat_set_times" (func $path_filestat_set_times (param i32 i32 i32 i32 i64 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_create_directory" (func $path_create_directory (param i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_unlink_file" (func $path_unlink_file (param i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_remove_directory" (func $path_remove_directory (param i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_rename" (func $path_rename (param i32 i32 i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_link" (func $path_link (param i32 i32 i32 i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_symlink" (func $path_symlink (param i32 i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_readlink" (func $path_readlink (param i32 i32 i32 i32 i32 i32) (result i32)))
  (import "host" "fetch" (func $fetch (param i32 i32 i32 i32 i32 i32) (result i32)))
  (import "host" "secret" (func $secret (param i32 i32 i32 i32 i32) (result i32)))
  (import "host" "publish" (func $publish (param i32 i32 i32 i32) (result i32)))
  (import "host" "report" (func $report (param i32 i32 i32)))
  (memory (export "memory") 1)
  ;; scratch: 0 fd out, 16 bufused, 20 status, 24 len, 6144 buffers; strings from 256
  (data (i32.const 256) "../../../../etc/passwd")
  (data (i32.const 280) "traversal")
  (data (i32.const 296) "/etc/passwd")
  (data (i32.const 312) "absolute")
  (data (i32.const 328) "input.txt")
  (data (i32.const 344) "write_right_on_read_grant")
  (data (i32.const 376) "input.txt")
  (data (i32.const 392) "trunc_on_read_grant")
  (data (i32.const 416) "new.txt")
  (data (i32.const 424) "create_in_read_grant")
  (data (i32.const 448) "link-to-secret")
  (data (i32.const 464) "open_through_symlink")
  (data (i32.const 488) "here/../secret-outside.txt")
  (data (i32.const 520) "dotdot_after_symlink")
  (data (i32.const 544) "../secret-outside.txt")
  (data (i32.const 568) "stat_traversal")
  (data (i32.const 584) "input.txt")
  (data (i32.const 600) "set_times_read_grant")
  (data (i32.const 624) "newdir")
  (data (i32.const 632) "mkdir_read_grant")
  (data (i32.const 656) "input.txt")
  (data (i32.const 672) "unlink_read_grant")
  (data (i32.const 696) "sub")
  (data (i32.const 704) "rmdir_read_grant")
  (data (i32.const 728) "own.txt")
  (data (i32.const 736) "../escaped.txt")
  (data (i32.const 752) "rename_out_of_grant")
  (data (i32.const 776) "input.txt")
  (data (i32.const 792) "stolen.txt")
  (data (i32.const 808) "rename_read_into_write")
  (data (i32.const 832) "own.txt")
  (data (i32.const 840) "../leak.txt")
  (data (i32.const 856) "link_out_of_grant")
  (data (i32.const 880) "input.txt")
  (data (i32.const 896) "hardlink.txt")
  (data (i32.const 912) "link_read_into_write")
  (data (i32.const 936) "../secret-outside.txt")
  (data (i32.const 960) "planted")
  (data (i32.const 968) "symlink_plant_relative")
  (data (i32.const 992) "/etc/passwd")
  (data (i32.const 1008) "planted-abs")
  (data (i32.const 1024) "symlink_plant_absolute")
  (data (i32.const 1048) "../../x")
  (data (i32.const 1056) "readlink_traversal")
  (data (i32.const 1080) "here/../secret-outside.txt")
  (data (i32.const 1112) "unlink_dotdot_after_symlink")
  (data (i32.const 1144) "AWS_SECRET_ACCESS_KEY")
  (data (i32.const 1168) "secret_undeclared")
  (data (i32.const 1192) "http://169.254.169.254/latest/meta-data/")
  (data (i32.const 1240) "fetch_metadata")
  (data (i32.const 1256) "https://evil.example/")
  (data (i32.const 1280) "fetch_undeclared_host")
  (data (i32.const 1304) "admin.shutdown")
  (data (i32.const 1320) "{}")
  (data (i32.const 1328) "publish_undeclared")

  (func (export "_start")
    ;; climb out of the /data preopen
    (call $report (i32.const 280) (i32.const 9) (call $path_open (i32.const 3) (i32.const 1) (i32.const 256) (i32.const 22) (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; an absolute path
    (call $report (i32.const 312) (i32.const 8) (call $path_open (i32.const 3) (i32.const 1) (i32.const 296) (i32.const 11) (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; open a read-only file with the fd_write right
    (call $report (i32.const 344) (i32.const 25) (call $path_open (i32.const 3) (i32.const 1) (i32.const 328) (i32.const 9) (i32.const 0) (i64.const 64) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; O_TRUNC with only fd_read
    (call $report (i32.const 392) (i32.const 19) (call $path_open (i32.const 3) (i32.const 1) (i32.const 376) (i32.const 9) (i32.const 8) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; O_CREAT in a read-only directory
    (call $report (i32.const 424) (i32.const 20) (call $path_open (i32.const 3) (i32.const 0) (i32.const 416) (i32.const 7) (i32.const 1) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; a symlink planted in /data that points outside the grants
    (call $report (i32.const 464) (i32.const 20) (call $path_open (i32.const 3) (i32.const 1) (i32.const 448) (i32.const 14) (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; here -> . : here/.. is /data lexically, its parent for the kernel
    (call $report (i32.const 520) (i32.const 20) (call $path_open (i32.const 3) (i32.const 1) (i32.const 488) (i32.const 26) (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 0)))
    ;; path_filestat_get outside the preopen
    (call $report (i32.const 568) (i32.const 14) (call $path_filestat_get (i32.const 3) (i32.const 1) (i32.const 544) (i32.const 21) (i32.const 6144)))
    ;; path_filestat_set_times on a read-only file
    (call $report (i32.const 600) (i32.const 20) (call $path_filestat_set_times (i32.const 3) (i32.const 0) (i32.const 584) (i32.const 9) (i64.const 0) (i64.const 0) (i32.const 10)))
    ;; path_create_directory in a read-only directory
    (call $report (i32.const 632) (i32.const 16) (call $path_create_directory (i32.const 3) (i32.const 624) (i32.const 6)))
    ;; path_unlink_file of a read-only file
    (call $report (i32.const 672) (i32.const 17) (call $path_unlink_file (i32.const 3) (i32.const 656) (i32.const 9)))
    ;; path_remove_directory in a read-only directory
    (call $report (i32.const 704) (i32.const 16) (call $path_remove_directory (i32.const 3) (i32.const 696) (i32.const 3)))
    ;; move a writable file out of the grants
    (call $report (i32.const 752) (i32.const 19) (call $path_rename (i32.const 4) (i32.const 728) (i32.const 7) (i32.const 4) (i32.const 736) (i32.const 14)))
    ;; move a read-only file into the writable directory
    (call $report (i32.const 808) (i32.const 22) (call $path_rename (i32.const 3) (i32.const 776) (i32.const 9) (i32.const 4) (i32.const 792) (i32.const 10)))
    ;; hard-link a writable file outside the grants
    (call $report (i32.const 856) (i32.const 17) (call $path_link (i32.const 4) (i32.const 0) (i32.const 832) (i32.const 7) (i32.const 4) (i32.const 840) (i32.const 11)))
    ;; hard-link a read-only file into the writable directory (same inode, now writable)
    (call $report (i32.const 912) (i32.const 20) (call $path_link (i32.const 3) (i32.const 0) (i32.const 880) (i32.const 9) (i32.const 4) (i32.const 896) (i32.const 12)))
    ;; plant a link in /out whose target leaves the grants
    (call $report (i32.const 968) (i32.const 22) (call $path_symlink (i32.const 936) (i32.const 21) (i32.const 4) (i32.const 960) (i32.const 7)))
    ;; plant a link to /etc/passwd
    (call $report (i32.const 1024) (i32.const 22) (call $path_symlink (i32.const 992) (i32.const 11) (i32.const 4) (i32.const 1008) (i32.const 11)))
    ;; path_readlink outside the preopen
    (call $report (i32.const 1056) (i32.const 18) (call $path_readlink (i32.const 3) (i32.const 1048) (i32.const 7) (i32.const 6144) (i32.const 256) (i32.const 16)))
    ;; out/here -> . : here/../x is /out/x lexically, outside /out for the kernel
    (call $report (i32.const 1112) (i32.const 27) (call $path_unlink_file (i32.const 4) (i32.const 1080) (i32.const 26)))
    ;; a secret the manifest does not declare
    (call $report (i32.const 1168) (i32.const 17) (call $secret (i32.const 1144) (i32.const 21) (i32.const 6144) (i32.const 256) (i32.const 24)))
    ;; the cloud metadata address
    (call $report (i32.const 1240) (i32.const 14) (call $fetch (i32.const 1192) (i32.const 40) (i32.const 6144) (i32.const 1024) (i32.const 20) (i32.const 24)))
    ;; a host the manifest does not declare
    (call $report (i32.const 1280) (i32.const 21) (call $fetch (i32.const 1256) (i32.const 21) (i32.const 6144) (i32.const 1024) (i32.const 20) (i32.const 24)))
    ;; a topic the manifest does not declare
    (call $report (i32.const 1328) (i32.const 18) (call $publish (i32.const 1304) (i32.const 14) (i32.const 1320) (i32.const 2)))
    ;; a runaway: never yields, never calls the host
    (loop $spin (br $spin))))
