// trc-offload-to-runtime-call: each copy becomes the copy engine's start
// and wait: a read-only buffer of the source, a host-pool destination
// (trc.host_pool, planned in the host arena) for the offload, a fresh device
// buffer for the prefetch, the wait naming the start's two buffers, the
// result's tensor only after the wait. Copies are numbered in program order
// (0, 1 here); 4x8 f32 is 128 bytes; direction 0 to the host, 1 back.
// Bufferized, the host copy stays one marked allocation that only the
// calls read, the prefetch's destination is what the step reads, and
// nothing is copied on the device.
// RUN: trc-opt %s --trc-offload-to-runtime-call | FileCheck %s
// RUN: trc-opt %s --pass-pipeline="builtin.module(trc-offload-to-runtime-call, canonicalize, func.func(trc-lower-to-linalg), one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map})" | FileCheck %s --check-prefix=BUFFERS

func.func @round_trip(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h = trc.offload %x : tensor<4x8xf32>
  %hx = trc.copy_wait %h from %x : tensor<4x8xf32>
  %p = trc.prefetch %hx : tensor<4x8xf32>
  %y = trc.copy_wait %p from %hx : tensor<4x8xf32>
  %s = trc.add %y, %y : tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// CHECK: func.func private @trc_rt_offload_wait(i64, i64, i64)
// CHECK: func.func private @trc_rt_offload_start(i64, i64, i64, i64, i64)
// CHECK-LABEL: func.func @round_trip(
// CHECK: %[[SRC:.*]] = bufferization.to_buffer %arg0 read_only : tensor<4x8xf32> to memref<4x8xf32>
// CHECK-NEXT: %[[HOST:.*]] = memref.alloc() {trc.host_pool} : memref<4x8xf32>
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : i64
// CHECK-NEXT: %[[TOHOST:.*]] = arith.constant 0 : i64
// CHECK-NEXT: %[[C128:.*]] = arith.constant 128 : i64
// CHECK-NEXT: memref.extract_aligned_pointer_as_index %[[SRC]]
// CHECK: memref.extract_aligned_pointer_as_index %[[HOST]]
// CHECK: call @trc_rt_offload_start(%[[C0]], %[[TOHOST]], %[[C128]],
// CHECK: memref.extract_aligned_pointer_as_index %[[SRC]]
// CHECK: memref.extract_aligned_pointer_as_index %[[HOST]]
// CHECK: call @trc_rt_offload_wait(
// CHECK-NEXT: %[[HT:.*]] = bufferization.to_tensor %[[HOST]] restrict writable
// CHECK-NEXT: %[[HB:.*]] = bufferization.to_buffer %[[HT]] read_only
// CHECK-NEXT: %[[DEV:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1 : i64
// CHECK-NEXT: %[[TODEV:.*]] = arith.constant 1 : i64
// CHECK: memref.extract_aligned_pointer_as_index %[[DEV]]
// CHECK: memref.extract_aligned_pointer_as_index %[[HB]]
// CHECK: call @trc_rt_offload_start(%[[C1]], %[[TODEV]],
// CHECK: memref.extract_aligned_pointer_as_index %[[DEV]]
// CHECK: memref.extract_aligned_pointer_as_index %[[HB]]
// CHECK: call @trc_rt_offload_wait(
// CHECK-NEXT: %[[Y:.*]] = bufferization.to_tensor %[[DEV]] restrict writable
// CHECK-NEXT: trc.add %[[Y]], %[[Y]]
// CHECK-NOT: trc.offload
// CHECK-NOT: trc.prefetch
// CHECK-NOT: trc.copy_wait

// BUFFERS-LABEL: func.func @round_trip(%arg0: memref<4x8xf32>)
// BUFFERS-NOT: memref.copy
// BUFFERS: %[[HOST:.*]] = memref.alloc() {trc.host_pool} : memref<4x8xf32>
// BUFFERS: memref.extract_aligned_pointer_as_index %arg0
// BUFFERS: call @trc_rt_offload_start(
// BUFFERS: call @trc_rt_offload_wait(
// BUFFERS: %[[DEV:.*]] = memref.alloc() : memref<4x8xf32>
// BUFFERS: memref.extract_aligned_pointer_as_index %[[DEV]]
// BUFFERS: memref.extract_aligned_pointer_as_index %[[HOST]]
// BUFFERS: call @trc_rt_offload_start(
// BUFFERS: call @trc_rt_offload_wait(
// BUFFERS: linalg.generic {{.*}} ins(%[[DEV]], %[[DEV]] : memref<4x8xf32>, memref<4x8xf32>)
// BUFFERS-NOT: memref.copy
