// Constant folding follows ONNX element semantics (found by running the
// node tests and probes with constant operands).
// RUN: trc-opt %s --canonicalize --split-input-file | FileCheck %s

// A boolean true converts to 1 (not to the signed 1-bit value -1).
// CHECK-LABEL: func.func @bool_to_number
// CHECK-DAG: trc.constant dense<[1.000000e+00, 0.000000e+00]> : tensor<2xf32>
// CHECK-DAG: trc.constant dense<[1, 0]> : tensor<2xi32>
func.func @bool_to_number() -> (tensor<2xf32>, tensor<2xi32>) {
  %b = trc.constant dense<[true, false]> : tensor<2xi1>
  %f = trc.convert %b : tensor<2xi1> -> tensor<2xf32>
  %i = trc.convert %b : tensor<2xi1> -> tensor<2xi32>
  return %f, %i : tensor<2xf32>, tensor<2xi32>
}

// -----

// Signed division truncates toward zero; unsigned division is unsigned.
// CHECK-LABEL: func.func @division
// CHECK-DAG: trc.constant dense<[-3, -3, 3]> : tensor<3xi32>
// CHECK-DAG: trc.constant dense<[66, 3, 15]> : tensor<3xui8>
func.func @division() -> (tensor<3xi32>, tensor<3xui8>) {
  %a = trc.constant dense<[-7, 7, -7]> : tensor<3xi32>
  %b = trc.constant dense<[2, -2, -2]> : tensor<3xi32>
  %c = trc.div %a, %b : tensor<3xi32>
  %x = trc.constant dense<[200, 7, 255]> : tensor<3xui8>
  %y = trc.constant dense<[3, 2, 16]> : tensor<3xui8>
  %z = trc.div %x, %y : tensor<3xui8>
  return %c, %z : tensor<3xi32>, tensor<3xui8>
}
