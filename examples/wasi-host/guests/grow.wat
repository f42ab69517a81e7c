;; Grows memories and a table a step at a time: each growth is reported
;; (the size before it, or -1) until the host stops the guest. Under a 4 MB
;; memoryMb budget two memories and the table together pass it while each
;; alone stays below: the growth past the total ends the run with
;; BUDGET_EXCEEDED (memory), counted once.
(module
  (import "host" "report" (func $report (param i32 i32 i32)))
  (memory (export "memory") 1)
  (memory $second 1)
  (table $t 1 funcref)
  (data (i32.const 64) "grow_first")
  (data (i32.const 80) "grow_second")
  (data (i32.const 96) "grow_table")
  (data (i32.const 112) "not_stopped")
  (func $step
    (call $report (i32.const 64) (i32.const 10) (memory.grow (i32.const 8)))
    (call $report (i32.const 80) (i32.const 11) (memory.grow $second (i32.const 8)))
    (call $report (i32.const 96) (i32.const 10) (table.grow $t (ref.null func) (i32.const 1024))))
  (func (export "_start")
    (local $i i32)
    (loop $again
      (call $step)
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $again (i32.lt_u (local.get $i) (i32.const 64))))
    (call $report (i32.const 112) (i32.const 11) (i32.const 0))))
