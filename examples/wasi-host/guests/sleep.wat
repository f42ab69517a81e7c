;; A guest that sleeps through poll_oneoff: first 50 ms (an honest sleep: one
;; clock event with its userdata), then 20 s on the process CPU-time clock
;; (EINVAL in both hosts: only realtime and monotonic sleeps), then 2^64-1 ns. The runtime would block in
;; native code for the second; the wall-clock budget must still end the guest
;; (BUDGET_EXCEEDED, counted once), and the host must not wait for the sleep.
(module
  (import "wasi_snapshot_preview1" "poll_oneoff" (func $poll (param i32 i32 i32 i32) (result i32)))
  (import "host" "report" (func $report (param i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 64) "short")
  (data (i32.const 72) "nevents")
  (data (i32.const 80) "userdata")
  (data (i32.const 96) "never_reached")
  (data (i32.const 112) "cpu_clock")
  (func (export "_start")
    ;; subscription at 256: userdata, tag 0 (clock), clock id 1 (monotonic), timeout, precision, flags 0
    (i64.store (i32.const 256) (i64.const 0x1234))
    (i32.store8 (i32.const 264) (i32.const 0))
    (i32.store (i32.const 272) (i32.const 1))
    (i64.store (i32.const 280) (i64.const 50000000))
    (i64.store (i32.const 288) (i64.const 0))
    (i32.store16 (i32.const 296) (i32.const 0))
    (call $report (i32.const 64) (i32.const 5) (call $poll (i32.const 256) (i32.const 512) (i32.const 1) (i32.const 600)))
    (call $report (i32.const 72) (i32.const 7) (i32.load (i32.const 600)))
    (call $report (i32.const 80) (i32.const 8) (i64.eq (i64.load (i32.const 512)) (i64.const 0x1234)))
    (i32.store (i32.const 272) (i32.const 2))
    (i64.store (i32.const 280) (i64.const 20000000000))
    (call $report (i32.const 112) (i32.const 9) (call $poll (i32.const 256) (i32.const 512) (i32.const 1) (i32.const 600)))
    (i32.store (i32.const 272) (i32.const 1))
    (i64.store (i32.const 280) (i64.const -1))
    (call $report (i32.const 96) (i32.const 13) (call $poll (i32.const 256) (i32.const 512) (i32.const 1) (i32.const 600)))))
