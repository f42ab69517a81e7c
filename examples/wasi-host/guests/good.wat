;; A well-behaved WASI preview1 guest (WebAssembly text, assembled by the host
;; or the test with wabt / wasmtime's `wat`). Preopens: fd 3 = /data (read),
;; fd 4 = /out (readwrite). argv[1] is the URL of the host's API.
;; It reads /data/input.txt, reads the GREETING secret, fetches argv[1]
;; through the host import, writes /out/result.txt (input | secret | body)
;; publishes `demo.finished` and writes a line to stdout. Every step reports
;; its errno to the host.
(module
  (import "wasi_snapshot_preview1" "path_open" (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_close" (func $fd_close (param i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_sizes_get" (func $args_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "args_get" (func $args_get (param i32 i32) (result i32)))
  (import "host" "fetch" (func $fetch (param i32 i32 i32 i32 i32 i32) (result i32)))
  (import "host" "secret" (func $secret (param i32 i32 i32 i32 i32) (result i32)))
  (import "host" "publish" (func $publish (param i32 i32 i32 i32) (result i32)))
  (import "host" "report" (func $report (param i32 i32 i32)))
  (memory (export "memory") 1)
  ;; scratch: 0 fd out, 4 nread, 8 iovec, 16 nwritten, 20 status, 24 len, 28 argc, 32 argv buf size
  ;; 64 argv pointers, 1024 argv strings, 2048 input, 3072 secret, 3328 body, 4400 iovecs
  (data (i32.const 128) "input.txt")
  (data (i32.const 144) "result.txt")
  (data (i32.const 160) "GREETING")
  (data (i32.const 176) "demo.finished")
  (data (i32.const 192) "{\"ok\":true}")
  (data (i32.const 208) "read")
  (data (i32.const 216) "secret")
  (data (i32.const 224) "fetch")
  (data (i32.const 232) "write")
  (data (i32.const 240) "publish")
  (data (i32.const 248) "fetch_status")
  (data (i32.const 264) "a line on stdout\n")

  (func $strlen (param $p i32) (result i32)
    (local $n i32)
    (block $done
      (loop $next
        (br_if $done (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $n)))))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (br $next)))
    (local.get $n))

  (func (export "_start")
    (local $fd i32) (local $e i32) (local $in_len i32) (local $sec_len i32) (local $body_len i32) (local $url i32)
    ;; read /data/input.txt: rights fd_read (1 << 1), follow symlinks
    (local.set $e (call $path_open (i32.const 3) (i32.const 1) (i32.const 128) (i32.const 9)
      (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 0)))
    (call $report (i32.const 208) (i32.const 4) (local.get $e))
    (if (i32.eqz (local.get $e)) (then
      (local.set $fd (i32.load (i32.const 0)))
      (i32.store (i32.const 8) (i32.const 2048))
      (i32.store (i32.const 12) (i32.const 1024))
      (drop (call $fd_read (local.get $fd) (i32.const 8) (i32.const 1) (i32.const 4)))
      (local.set $in_len (i32.load (i32.const 4)))
      (drop (call $fd_close (local.get $fd)))))
    ;; the declared secret
    (local.set $e (call $secret (i32.const 160) (i32.const 8) (i32.const 3072) (i32.const 256) (i32.const 24)))
    (call $report (i32.const 216) (i32.const 6) (local.get $e))
    (if (i32.eqz (local.get $e)) (then (local.set $sec_len (i32.load (i32.const 24)))))
    ;; fetch argv[1] through the host
    (drop (call $args_sizes_get (i32.const 28) (i32.const 32)))
    (drop (call $args_get (i32.const 64) (i32.const 1024)))
    (local.set $url (i32.load (i32.const 68)))
    (local.set $e (call $fetch (local.get $url) (call $strlen (local.get $url))
      (i32.const 3328) (i32.const 1024) (i32.const 20) (i32.const 24)))
    (call $report (i32.const 224) (i32.const 5) (local.get $e))
    (if (i32.eqz (local.get $e)) (then
      (local.set $body_len (i32.load (i32.const 24)))
      (call $report (i32.const 248) (i32.const 12) (i32.load (i32.const 20)))))
    ;; write /out/result.txt: O_CREAT | O_TRUNC, rights fd_write (1 << 6)
    (local.set $e (call $path_open (i32.const 4) (i32.const 0) (i32.const 144) (i32.const 10)
      (i32.const 9) (i64.const 64) (i64.const 0) (i32.const 0) (i32.const 0)))
    (call $report (i32.const 232) (i32.const 5) (local.get $e))
    (if (i32.eqz (local.get $e)) (then
      (local.set $fd (i32.load (i32.const 0)))
      ;; one fd_write per piece: a runtime may write only the first iovec of a call
      (i32.store (i32.const 4400) (i32.const 2048))
      (i32.store (i32.const 4404) (local.get $in_len))
      (drop (call $fd_write (local.get $fd) (i32.const 4400) (i32.const 1) (i32.const 16)))
      (i32.store (i32.const 4400) (i32.const 3072))
      (i32.store (i32.const 4404) (local.get $sec_len))
      (drop (call $fd_write (local.get $fd) (i32.const 4400) (i32.const 1) (i32.const 16)))
      (i32.store (i32.const 4400) (i32.const 3328))
      (i32.store (i32.const 4404) (local.get $body_len))
      (drop (call $fd_write (local.get $fd) (i32.const 4400) (i32.const 1) (i32.const 16)))
      (drop (call $fd_close (local.get $fd)))))
    ;; a declared topic
    (local.set $e (call $publish (i32.const 176) (i32.const 13) (i32.const 192) (i32.const 11)))
    (call $report (i32.const 240) (i32.const 7) (local.get $e))
    ;; stdout: the host decides where it goes (both example hosts: nowhere)
    (i32.store (i32.const 4400) (i32.const 264))
    (i32.store (i32.const 4404) (i32.const 17))
    (drop (call $fd_write (i32.const 1) (i32.const 4400) (i32.const 1) (i32.const 16)))))
