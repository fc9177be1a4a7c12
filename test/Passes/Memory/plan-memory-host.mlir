// Host copies (trc-offload-to-runtime-call's allocations marked
// trc.host_pool) are planned in the host arena, apart from the device
// arena: here two host copies whose lives do not meet share one offset,
// as do the two device buffers. trc-plan-memory turns each host pointer
// into its offset (the program never touches the host arena; the copy
// engine adds its base) and records the host arena's size on the module.
// RUN: trc-opt %s --test-trc-print-memory-plan -o /dev/null | FileCheck %s --check-prefix=PLAN
// RUN: trc-opt %s --trc-plan-memory | FileCheck %s --check-prefix=ARENA

// PLAN: @main: memory plan: 2 buffers, arena 64 bytes, lower bound 64 (arena/bound 1.000), no reuse 128 (arena/no-reuse 0.500)
// PLAN-NEXT: buffer 0: offset 0 size 64 live [0, 8] memref<16xf32>
// PLAN-NEXT: buffer 1: offset 0 size 64 live [9, 16] memref<16xf32>
// PLAN-NEXT: host arena: 2 buffers, arena 64 bytes, lower bound 64 (arena/bound 1.000), no reuse 128 (arena/no-reuse 0.500)
// PLAN-NEXT: buffer 0: offset 0 size 64 live [1, 8] memref<16xf32>
// PLAN-NEXT: buffer 1: offset 0 size 64 live [10, 15] memref<16xf32>

// ARENA: module attributes {trc.arena_bytes = 64 : i64, trc.arena_lower_bound_bytes = 64 : i64, trc.arena_no_reuse_bytes = 128 : i64, trc.host_arena_bytes = 64 : i64}
// ARENA-LABEL: func.func @main(
// ARENA-NOT: trc.host_pool
// ARENA: memref.extract_aligned_pointer_as_index %view :
// ARENA-NEXT: arith.index_cast
// ARENA-NEXT: %[[H2:c0_[0-9]+]] = arith.constant 0 : index
// ARENA-NEXT: arith.index_cast %[[H2]] : index to i64
// ARENA: memref.view
// ARENA-NEXT: %[[H:c0_[0-9]+]] = arith.constant 0 : index
// ARENA-NEXT: arith.index_cast %[[H]] : index to i64
// ARENA-NEXT: memref.extract_aligned_pointer_as_index %view_
// ARENA-NOT: memref.alloc
func.func private @copy(i64, i64)
func.func @main(%in: memref<16xf32>, %out: memref<16xf32>) {
  %a = memref.alloc() : memref<16xf32>
  %h2 = memref.alloc() {trc.host_pool} : memref<16xf32>
  memref.copy %in, %a : memref<16xf32> to memref<16xf32>
  %pa = memref.extract_aligned_pointer_as_index %a : memref<16xf32> -> index
  %ia = arith.index_cast %pa : index to i64
  %ph2 = memref.extract_aligned_pointer_as_index %h2 : memref<16xf32> -> index
  %ih2 = arith.index_cast %ph2 : index to i64
  func.call @copy(%ia, %ih2) : (i64, i64) -> ()
  func.call @copy(%ia, %ih2) : (i64, i64) -> ()
  %b = memref.alloc() : memref<16xf32>
  %h = memref.alloc() {trc.host_pool} : memref<16xf32>
  %ph = memref.extract_aligned_pointer_as_index %h : memref<16xf32> -> index
  %ih = arith.index_cast %ph : index to i64
  %pb = memref.extract_aligned_pointer_as_index %b : memref<16xf32> -> index
  %ib = arith.index_cast %pb : index to i64
  func.call @copy(%ih, %ib) : (i64, i64) -> ()
  memref.copy %b, %out : memref<16xf32> to memref<16xf32>
  return
}
