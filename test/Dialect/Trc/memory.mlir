// trc.optimization_barrier: round-trips (also in generic form), is never
// folded or merged by canonicalize and cse (two barriers of one value stay
// two), and must keep its operand's type. It survives trc-lower-to-linalg
// and bufferizes to its operand's buffer (no copy, no allocation).
// RUN: trc-opt %s | trc-opt | FileCheck %s
// RUN: trc-opt %s --mlir-print-op-generic | trc-opt | FileCheck %s
// RUN: trc-opt %s --canonicalize --cse | FileCheck %s --check-prefix=KEPT
// RUN: trc-opt %s --pass-pipeline="builtin.module(func.func(trc-lower-to-linalg), one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map})" | FileCheck %s --check-prefix=BUFFERS

// CHECK-LABEL: func.func @barrier(
// CHECK: %[[B:.*]] = trc.optimization_barrier %arg0 : tensor<4x8xf32>
// CHECK: trc.optimization_barrier %arg0 {trc.recompute = 3 : i64} : tensor<4x8xf32>
// KEPT-LABEL: func.func @barrier(
// KEPT-COUNT-2: trc.optimization_barrier %arg0
// BUFFERS-LABEL: func.func @barrier(
// BUFFERS-NOT: trc.optimization_barrier
// BUFFERS-NOT: memref.copy
// BUFFERS: linalg.generic {{.*}} ins(%arg0, %arg0 : memref<4x8xf32>, memref<4x8xf32>)
func.func @barrier(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = trc.optimization_barrier %x : tensor<4x8xf32>
  %b = trc.optimization_barrier %x {trc.recompute = 3 : i64} : tensor<4x8xf32>
  %s = trc.add %a, %b : tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}
