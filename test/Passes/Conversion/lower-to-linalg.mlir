// trc-lower-to-linalg: core trc ops to linalg/tensor/arith/math on tensors.
// RUN: trc-opt %s --trc-lower-to-linalg --split-input-file -verify-diagnostics | FileCheck %s

// Elementwise ops become one linalg.generic each with a scalar body.
// CHECK-LABEL: func.func @elementwise
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK: math.tanh
// CHECK: linalg.generic
// CHECK: arith.cmpf olt
// CHECK: linalg.generic
// CHECK: arith.select
// CHECK-NOT: trc.
func.func @elementwise(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = trc.add %a, %b : tensor<2x3xf32>
  %1 = trc.tanh %0 : tensor<2x3xf32>
  %2 = trc.compare lt, %1, %b : tensor<2x3xf32> -> tensor<2x3xi1>
  %3 = trc.select %2, %1, %a : tensor<2x3xi1>, tensor<2x3xf32>
  return %3 : tensor<2x3xf32>
}

// -----

// Integer division is signed; conversions follow ONNX Cast.
// CHECK-LABEL: func.func @ints
// CHECK: arith.divsi
// CHECK: arith.sitofp
func.func @ints(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xf32> {
  %0 = trc.div %a, %b : tensor<4xi64>
  %1 = trc.convert %0 : tensor<4xi64> -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Size-1 operand dims broadcast through a constant-0 index in the map.
// CHECK-DAG: #[[BMAP:.*]] = affine_map<(d0, d1, d2) -> (0, d2)>
// CHECK-LABEL: func.func @broadcast
// CHECK: linalg.generic {indexing_maps = [#[[BMAP]], #{{.*}}]
func.func @broadcast(%a: tensor<1x8xf32>) -> tensor<4x3x8xf32> {
  %0 = trc.broadcast_in_dim %a, dims = [1, 2] : (tensor<1x8xf32>) -> tensor<4x3x8xf32>
  return %0 : tensor<4x3x8xf32>
}

// -----

// Reductions start from their identity (-inf for max) in linalg.reduce.
// CHECK-LABEL: func.func @reduce
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: linalg.fill
// CHECK: linalg.reduce { arith.maximumf } ins(%{{.*}} : tensor<4x8xf32>) outs(%{{.*}} : tensor<4xf32>) dimensions = [1]
func.func @reduce(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = trc.reduce max %a dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A linear layer: [2,3,4] x [4,5] is one batch_matmul over B=1, M=6.
// CHECK-LABEL: func.func @dot
// CHECK: tensor.reshape %arg0{{.*}} -> tensor<1x6x4xf32>
// CHECK: tensor.reshape %arg1{{.*}} -> tensor<1x4x5xf32>
// CHECK: linalg.batch_matmul ins({{.*}} : tensor<1x6x4xf32>, tensor<1x4x5xf32>) outs({{.*}} : tensor<1x6x5xf32>)
// CHECK: tensor.reshape {{.*}} -> tensor<2x3x5xf32>
func.func @dot(%a: tensor<2x3x4xf32>, %w: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = trc.dot_general %a, %w, batch = [] x [], contract = [2] x [0] : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// Attention scores: batch dims first; k is transposed to [B, K, N].
// CHECK-LABEL: func.func @scores
// CHECK: linalg.transpose ins(%arg1 : tensor<2x7x8xf32>) outs({{.*}} : tensor<2x8x7xf32>) permutation = [0, 2, 1]
// CHECK: linalg.batch_matmul ins({{.*}} : tensor<2x5x8xf32>, tensor<2x8x7xf32>)
func.func @scores(%q: tensor<2x5x8xf32>, %k: tensor<2x7x8xf32>) -> tensor<2x5x7xf32> {
  %0 = trc.dot_general %q, %k, batch = [0] x [0], contract = [2] x [2] : (tensor<2x5x8xf32>, tensor<2x7x8xf32>) -> tensor<2x5x7xf32>
  return %0 : tensor<2x5x7xf32>
}

// -----

// Gather reads the table with tensor.extract at a wrapped index.
// CHECK-LABEL: func.func @gather
// CHECK: linalg.generic
// CHECK: arith.index_cast
// CHECK: arith.cmpi slt
// CHECK: tensor.extract %arg0[%{{.*}}, %{{.*}}] : tensor<10x4xf32>
func.func @gather(%t: tensor<10x4xf32>, %i: tensor<2x3xi64>) -> tensor<2x3x4xf32> {
  %0 = trc.gather %t, %i axis = 0 : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Data movement: slice, concatenate, pad, reverse, iota.
// CHECK-LABEL: func.func @movement
// CHECK: tensor.extract_slice %arg0[0, 1] [3, 3] [2, 1]
// CHECK: tensor.insert_slice
// CHECK: tensor.insert_slice
// CHECK: linalg.fill
// CHECK: tensor.insert_slice {{.*}}[1, 0] [3, 6] [1, 1]
// CHECK: linalg.index 0
func.func @movement(%a: tensor<6x4xf32>, %v: tensor<f32>) -> (tensor<4x8xf32>, tensor<3x3xf32>, tensor<4xi64>) {
  %s = trc.slice %a[[0, 1] : [6, 4] : [2, 1]] : (tensor<6x4xf32>) -> tensor<3x3xf32>
  %c = trc.concatenate %s, %s dim = 1 : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x6xf32>
  %p = trc.pad %c, %v, low = [1, 0], high = [0, 2] : (tensor<3x6xf32>, tensor<f32>) -> tensor<4x8xf32>
  %r = trc.reverse %s, dims = [0] : tensor<3x3xf32>
  %i = trc.iota dim = 0 : tensor<4xi64>
  return %p, %r, %i : tensor<4x8xf32>, tensor<3x3xf32>, tensor<4xi64>
}

// -----

// Composites must be decomposed first.
func.func @composite(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{is not lowered by trc-lower-to-linalg (run trc-decompose-composites first}}
  %0 = trc.softmax %a axis = 0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}
