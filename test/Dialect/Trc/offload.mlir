// trc.offload, trc.prefetch and trc.copy_wait: round-trip (also in generic
// form), are never folded, merged or moved by canonicalize and cse (two
// offloads of one value stay two), and lower with
// trc-offload-to-runtime-call to the copy engine's calls: a read-only buffer
// of the source, a host-pool destination for the offload, a fresh device
// buffer for the prefetch, the wait naming the start's two buffers, the
// result's tensor only after the wait. Negative cases: offload-invalid.mlir.
// RUN: trc-opt %s | trc-opt | FileCheck %s
// RUN: trc-opt %s --mlir-print-op-generic | trc-opt | FileCheck %s
// RUN: trc-opt %s --canonicalize --cse | FileCheck %s --check-prefix=KEPT
// RUN: trc-opt %s --trc-offload-to-runtime-call | FileCheck %s --check-prefix=CALLS

// CHECK-LABEL: func.func @round_trip(
// CHECK: %[[H:.*]] = trc.offload %arg0 : tensor<4x8xf32>
// CHECK-NEXT: %[[HX:.*]] = trc.copy_wait %[[H]] from %arg0 : tensor<4x8xf32>
// CHECK-NEXT: %[[P:.*]] = trc.prefetch %[[HX]] : tensor<4x8xf32>
// CHECK-NEXT: %[[Y:.*]] = trc.copy_wait %[[P]] from %[[HX]] : tensor<4x8xf32>
// CHECK-NEXT: trc.add %[[Y]], %[[Y]]
func.func @round_trip(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h = trc.offload %x : tensor<4x8xf32>
  %hx = trc.copy_wait %h from %x : tensor<4x8xf32>
  %p = trc.prefetch %hx : tensor<4x8xf32>
  %y = trc.copy_wait %p from %hx : tensor<4x8xf32>
  %s = trc.add %y, %y : tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// KEPT-LABEL: func.func @twice(
// KEPT-COUNT-2: trc.offload %arg0
// KEPT-COUNT-2: trc.prefetch
// KEPT: return
func.func @twice(%x: tensor<16xf32>) -> tensor<16xf32> {
  %h1 = trc.offload %x : tensor<16xf32>
  %h2 = trc.offload %x : tensor<16xf32>
  %hx1 = trc.copy_wait %h1 from %x : tensor<16xf32>
  %hx2 = trc.copy_wait %h2 from %x : tensor<16xf32>
  %p1 = trc.prefetch %hx1 : tensor<16xf32>
  %p2 = trc.prefetch %hx2 : tensor<16xf32>
  %y1 = trc.copy_wait %p1 from %hx1 : tensor<16xf32>
  %y2 = trc.copy_wait %p2 from %hx2 : tensor<16xf32>
  %s = trc.add %y1, %y2 : tensor<16xf32>
  return %s : tensor<16xf32>
}

// Copies are numbered in program order (0, 1 for @round_trip, 2.. for
// @twice); 4x8 f32 is 128 bytes; direction 0 to the host, 1 back.
// CALLS: func.func private @trc_rt_offload_wait(i64, i64, i64)
// CALLS: func.func private @trc_rt_offload_start(i64, i64, i64, i64, i64)
// CALLS-LABEL: func.func @round_trip(
// CALLS: %[[SRC:.*]] = bufferization.to_buffer %arg0 read_only : tensor<4x8xf32> to memref<4x8xf32>
// CALLS-NEXT: %[[HOST:.*]] = memref.alloc() {trc.host_pool} : memref<4x8xf32>
// CALLS-NEXT: %[[C0:.*]] = arith.constant 0 : i64
// CALLS-NEXT: %[[TOHOST:.*]] = arith.constant 0 : i64
// CALLS-NEXT: %[[C128:.*]] = arith.constant 128 : i64
// CALLS-NEXT: memref.extract_aligned_pointer_as_index %[[SRC]]
// CALLS: memref.extract_aligned_pointer_as_index %[[HOST]]
// CALLS: call @trc_rt_offload_start(%[[C0]], %[[TOHOST]], %[[C128]],
// CALLS: memref.extract_aligned_pointer_as_index %[[SRC]]
// CALLS: memref.extract_aligned_pointer_as_index %[[HOST]]
// CALLS: call @trc_rt_offload_wait(
// CALLS-NEXT: %[[HT:.*]] = bufferization.to_tensor %[[HOST]] restrict writable
// CALLS-NEXT: %[[HB:.*]] = bufferization.to_buffer %[[HT]] read_only
// CALLS-NEXT: %[[DEV:.*]] = memref.alloc() : memref<4x8xf32>
// CALLS-NEXT: %[[C1:.*]] = arith.constant 1 : i64
// CALLS-NEXT: %[[TODEV:.*]] = arith.constant 1 : i64
// CALLS: memref.extract_aligned_pointer_as_index %[[DEV]]
// CALLS: memref.extract_aligned_pointer_as_index %[[HB]]
// CALLS: call @trc_rt_offload_start(%[[C1]], %[[TODEV]],
// CALLS: memref.extract_aligned_pointer_as_index %[[DEV]]
// CALLS: memref.extract_aligned_pointer_as_index %[[HB]]
// CALLS: call @trc_rt_offload_wait(
// CALLS-NEXT: %[[Y:.*]] = bufferization.to_tensor %[[DEV]] restrict writable
// CALLS-NEXT: trc.add %[[Y]], %[[Y]]
// CALLS-NOT: trc.offload
// CALLS-NOT: trc.prefetch
// CALLS-NOT: trc.copy_wait
