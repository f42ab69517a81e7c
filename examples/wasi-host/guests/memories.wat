;; Eight linear memories of 2 MiB each (multi-memory): 16 MiB together, each
;; one far below a 4 MB memoryMb budget. The budget bounds the guest's memories
;; and tables together, so instantiation itself is over it.
(module
  (import "host" "report" (func $report (param i32 i32 i32)))
  (memory (export "memory") 32)
  (memory $m1 32) (memory $m2 32) (memory $m3 32)
  (memory $m4 32) (memory $m5 32) (memory $m6 32) (memory $m7 32)
  (data (i32.const 64) "instantiated")
  (func (export "_start")
    (call $report (i32.const 64) (i32.const 12) (i32.const 0))))
