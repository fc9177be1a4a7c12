// attention_grad's recomputation (marked trc.recomputed) keeps its mark on
// the linalg ops, so CSE does not merge it with the forward's product.
// RUN: trc-opt %s --trc-lower-to-linalg --cse | FileCheck %s --check-prefix=RECOMPUTED
// RECOMPUTED-LABEL: func.func @recomputed
// RECOMPUTED: linalg.batch_matmul
// RECOMPUTED-NOT: trc.recomputed
// RECOMPUTED: linalg.batch_matmul {trc.recomputed}
// RECOMPUTED: linalg.generic {{.*}} {trc.recomputed}
func.func @recomputed(%q: tensor<2x8x4xf32>, %m: tensor<1x8x8xi1>) -> (tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xi1>) {
  %s = trc.dot_general %q, %q, batch = [0] x [0], contract = [2] x [2] : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x8xf32>
  %r = trc.dot_general %q, %q, batch = [0] x [0], contract = [2] x [2] {trc.recomputed} : (tensor<2x8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x8x8xf32>
  %b = trc.broadcast_in_dim %m, dims = [0, 1, 2] {trc.recomputed} : (tensor<1x8x8xi1>) -> tensor<2x8x8xi1>
  return %s, %r, %b : tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xi1>
}
