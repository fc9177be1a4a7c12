// trc-fuse's cost model: a producer read by two groups that cannot merge
// (a row sum and a column max) is recomputed in both only when the bytes
// saved exceed the recomputation, at `bytes-per-flop` bytes per flop.
// tanh(x) on 64x64 f32 is 16 flops x 4096 elements. Recomputing it saves
// writing and reading tanh(x) once (16 KiB): it pays at the default 0.05
// bytes/flop (3.2 KiB), not at 1 byte/flop (64 KiB), where tanh(x) is
// written once by the row kernel and read by the column kernel instead.
// RUN: trc-opt %s --split-input-file --trc-fuse | FileCheck %s --check-prefix=CHEAP
// RUN: trc-opt %s --split-input-file --trc-fuse="bytes-per-flop=1" | FileCheck %s --check-prefix=COSTLY
// RUN: trc-opt %s --split-input-file --trc-fuse="duplicate=false" | FileCheck %s --check-prefix=COSTLY
// RUN: trc-opt %s --split-input-file --trc-fuse --trc-print-fusion-summary -o /dev/null | FileCheck %s --check-prefix=SUM
// RUN: trc-opt %s --split-input-file --trc-fuse="bytes-per-flop=1" --trc-print-fusion-summary -o /dev/null | FileCheck %s --check-prefix=SUM1

// CHEAP-LABEL: func.func @cheap_producer
// CHEAP-NEXT: %[[R:.*]] = trc.fusion reduction (%{{.*}} = %arg0 : tensor<64x64xf32>) -> (tensor<64xf32>) {
// CHEAP-NEXT: trc.tanh
// CHEAP-NEXT: trc.reduce sum
// CHEAP: %[[C:.*]] = trc.fusion reduction (%{{.*}} = %arg0 : tensor<64x64xf32>) -> (tensor<64xf32>) {
// CHEAP-NEXT: trc.tanh
// CHEAP-NEXT: trc.reduce max
// CHEAP: return %[[R]], %[[C]]
// COSTLY-LABEL: func.func @cheap_producer
// COSTLY-NEXT: %[[F:.*]]:2 = trc.fusion reduction (%{{.*}} = %arg0 : tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64xf32>) {
// COSTLY-NEXT: %[[T:.*]] = trc.tanh
// COSTLY-NEXT: %[[S:.*]] = trc.reduce sum %[[T]]
// COSTLY-NEXT: trc.yield %[[T]], %[[S]]
// COSTLY-NEXT: }
// COSTLY-NEXT: %[[C:.*]] = trc.reduce max %[[F]]#0 dims = [0]
// COSTLY-NEXT: return %[[F]]#1, %[[C]]
// SUM: @cheap_producer: kernels 3 -> 2, bytes 66048 -> 33280
// SUM1: @cheap_producer: kernels 3 -> 2, bytes 66048 -> 49664
func.func @cheap_producer(%x: tensor<64x64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %e = trc.tanh %x : tensor<64x64xf32>
  %r = trc.reduce sum %e dims = [1] : (tensor<64x64xf32>) -> tensor<64xf32>
  %c = trc.reduce max %e dims = [0] : (tensor<64x64xf32>) -> tensor<64xf32>
  return %r, %c : tensor<64xf32>, tensor<64xf32>
}

// -----

// a + b recomputed in the column kernel would read a and b (32 KiB) instead
// of the sum (16 KiB) and save only its write (16 KiB): no bytes saved, so
// it is never recomputed, whatever the flops cost.
// CHEAP-LABEL: func.func @no_bytes_saved
// CHEAP-NEXT: %[[F:.*]]:2 = trc.fusion reduction (%{{.*}} = %arg0 : tensor<64x64xf32>, %{{.*}} = %arg1 : tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64xf32>) {
// CHEAP: trc.reduce max %[[F]]#0 dims = [0]
// SUM: @no_bytes_saved: kernels 3 -> 2, bytes 82432 -> 66048
func.func @no_bytes_saved(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %e = trc.add %a, %b : tensor<64x64xf32>
  %r = trc.reduce sum %e dims = [1] : (tensor<64x64xf32>) -> tensor<64xf32>
  %c = trc.reduce max %e dims = [0] : (tensor<64x64xf32>) -> tensor<64xf32>
  return %r, %c : tensor<64xf32>, tensor<64xf32>
}
