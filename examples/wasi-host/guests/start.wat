;; A guest whose `start` function never returns: it runs inside
;; instantiation, before `_start`. Budgets run from instantiation in both
;; hosts, so only its budget stops it (BUDGET_EXCEEDED, counted once).
(module
  (import "host" "report" (func $report (param i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 64) "never_reached")
  (func $spin (loop $forever (br $forever)))
  (start $spin)
  (func (export "_start")
    (call $report (i32.const 64) (i32.const 13) (i32.const 0))))
