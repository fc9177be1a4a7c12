// The static memory plan: liveness through views, best-fit reuse, and the
// rewrite of allocations into views of one arena argument.
// RUN: trc-opt %s --test-trc-print-memory-plan -o /dev/null | FileCheck %s --check-prefix=PLAN
// RUN: trc-opt %s --trc-plan-memory | FileCheck %s --check-prefix=ARENA

// %a dies at position 4 (its last use); %b lives through its subview %bs
// until 6; %c (from 5) reuses %a's bytes. At every point 320 bytes are live,
// so the arena equals the lower bound.
// PLAN: @main: memory plan: 3 buffers, arena 320 bytes, lower bound 320 (arena/bound 1.000), no reuse 384 (arena/no-reuse 0.833)
// PLAN-NEXT: buffer 0: offset 256 size 64 live [0, 4] memref<16xf32>
// PLAN-NEXT: buffer 1: offset 0 size 256 live [2, 6] memref<64xf32>
// PLAN-NEXT: buffer 2: offset 256 size 64 live [5, 7] memref<16xf32>

// ARENA: module attributes {trc.arena_bytes = 320 : i64, trc.arena_lower_bound_bytes = 320 : i64, trc.arena_no_reuse_bytes = 384 : i64}
// ARENA: func.func @main(%{{.*}}: memref<16xf32>, %{{.*}}: memref<16xf32>, %[[ARENA:.*]]: memref<320xi8> {trc.arena})
// ARENA: %[[A:.*]] = arith.constant 256 : index
// ARENA: memref.view %[[ARENA]][%[[A]]][] : memref<320xi8> to memref<16xf32>
// ARENA: %[[B:.*]] = arith.constant 0 : index
// ARENA: memref.view %[[ARENA]][%[[B]]][] : memref<320xi8> to memref<64xf32>
// ARENA: %[[C:.*]] = arith.constant 256 : index
// ARENA: memref.view %[[ARENA]][%[[C]]][] : memref<320xi8> to memref<16xf32>
// ARENA-NOT: memref.alloc
func.func @main(%in: memref<16xf32>, %out: memref<16xf32>) {
  %a = memref.alloc() : memref<16xf32>
  memref.copy %in, %a : memref<16xf32> to memref<16xf32>
  %b = memref.alloc() : memref<64xf32>
  %bs = memref.subview %b[0] [16] [1] : memref<64xf32> to memref<16xf32, strided<[1]>>
  memref.copy %a, %bs : memref<16xf32> to memref<16xf32, strided<[1]>>
  %c = memref.alloc() : memref<16xf32>
  memref.copy %bs, %c : memref<16xf32, strided<[1]>> to memref<16xf32>
  memref.copy %c, %out : memref<16xf32> to memref<16xf32>
  return
}

// A runtime call reads a buffer through an integer taken from it: the call
// is the buffer's last use, not the extraction (which CSE may share between
// calls), so %b may not take %a's bytes while the call is still to come.
// PLAN: @pointers: memory plan: 2 buffers, arena 128 bytes, lower bound 128
// PLAN-NEXT: buffer 0: offset {{.*}} size 64 live [0, 6] memref<16xf32>
// PLAN-NEXT: buffer 1: offset {{.*}} size 64 live [4, 7] memref<16xf32>
// ARENA-LABEL: func.func @pointers
func.func private @reads(i64)
func.func @pointers(%in: memref<16xf32>, %out: memref<16xf32>) {
  %a = memref.alloc() : memref<16xf32>
  memref.copy %in, %a : memref<16xf32> to memref<16xf32>
  %p = memref.extract_aligned_pointer_as_index %a : memref<16xf32> -> index
  %i = arith.index_cast %p : index to i64
  %b = memref.alloc() : memref<16xf32>
  memref.copy %in, %b : memref<16xf32> to memref<16xf32>
  func.call @reads(%i) : (i64) -> ()
  memref.copy %b, %out : memref<16xf32> to memref<16xf32>
  return
}
