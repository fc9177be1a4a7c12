// trc-lower-to-linalg on element types and shapes beyond the float common
// case (found by running the ONNX node tests).
// RUN: trc-opt %s --trc-lower-to-linalg --split-input-file -verify-diagnostics | FileCheck %s

// Integer matrix products are batch_matmuls too (loops, not BLAS, later),
// accumulating from an integer zero.
// CHECK-LABEL: func.func @int_matmul
// CHECK: arith.constant 0 : i32
// CHECK: linalg.fill
// CHECK: linalg.batch_matmul
func.func @int_matmul(%a: tensor<2x3xi32>, %b: tensor<3x4xi32>) -> tensor<2x4xi32> {
  %0 = trc.dot_general %a, %b, batch = [] x [], contract = [1] x [0] : (tensor<2x3xi32>, tensor<3x4xi32>) -> tensor<2x4xi32>
  return %0 : tensor<2x4xi32>
}

// -----

// An op with a zero-element result computes nothing: a slice starting at the
// end of its operand becomes an empty tensor, not an out-of-bounds
// extract_slice.
// CHECK-LABEL: func.func @empty_slice
// CHECK-NEXT: %[[E:.*]] = tensor.empty() : tensor<0x3xf32>
// CHECK-NEXT: return %[[E]]
func.func @empty_slice(%a: tensor<10x3xf32>) -> tensor<0x3xf32> {
  %0 = trc.slice %a[[10, 0] : [10, 3] : [1, 1]] : (tensor<10x3xf32>) -> tensor<0x3xf32>
  return %0 : tensor<0x3xf32>
}

// -----

// Unsigned operands are reported like unsigned results.
func.func @unsigned_operand(%a: tensor<3xui32>) -> tensor<3xf32> {
  // expected-error @+1 {{unsigned element types are not supported by the CPU backend yet}}
  %0 = trc.convert %a : tensor<3xui32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Training-mode dropout (random) is not part of the CPU inference lowering.
func.func @dropout(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{(random, training mode) is not supported by the CPU inference lowering}}
  %0 = trc.dropout %a ratio = 5.000000e-01 seed = 0 : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// trc.reduce's dimensions are a set; linalg.reduce needs them increasing.
// CHECK-LABEL: func.func @reduce_unsorted_dims
// CHECK: linalg.reduce { arith.minimumf } ins(%{{.*}} : tensor<3x4x2xf32>) outs(%{{.*}} : tensor<4xf32>) dimensions = [0, 2]
func.func @reduce_unsorted_dims(%a: tensor<3x4x2xf32>) -> tensor<4xf32> {
  %0 = trc.reduce min %a dims = [2, 0] : (tensor<3x4x2xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
