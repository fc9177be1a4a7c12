// trc-lower-dropout: each dropout becomes select(u >= p, x / (1 - p), 0) with
// u drawn from a new key input, one stream per dropout.
// RUN: trc-opt %s --split-input-file --trc-lower-dropout -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-SAME: %[[X:[^:]*]]: tensor<2x8xf32> {trc.input = "x"}, %[[KEY:[^:]*]]: tensor<i64> {trc.input = "trc.rng_key"})
// CHECK: %[[U:.*]] = trc.random_uniform %[[KEY]] stream = 7340032 : (tensor<i64>) -> tensor<2x8xf32>
// CHECK: %[[P:.*]] = trc.constant dense<2.500000e-01> : tensor<2x8xf32>
// CHECK: %[[KEEP:.*]] = trc.compare  ge, %[[U]], %[[P]] : tensor<2x8xf32> -> tensor<2x8xi1>
// CHECK: %[[S:.*]] = trc.constant dense<1.33333
// CHECK: %[[XS:.*]] = trc.mul %[[X]], %[[S]]
// CHECK: %[[Y:.*]] = trc.select %[[KEEP]], %[[XS]], %{{.*}}
// The second dropout has its own stream.
// CHECK: trc.random_uniform %[[KEY]] stream = 7340033
// CHECK-NOT: trc.dropout
func.func @main(%x: tensor<2x8xf32> {trc.input = "x"}) -> (tensor<2x8xf32> {trc.output = "y"}) {
  %y = trc.dropout %x ratio = 0.25 seed = 7 : tensor<2x8xf32>
  %z = trc.dropout %y ratio = 0.5 seed = 7 : tensor<2x8xf32>
  return %z : tensor<2x8xf32>
}

// -----

// Without dropouts nothing changes (no key input).
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%{{.*}}: tensor<4xf32> {trc.input = "x"}) -> (tensor<4xf32> {trc.output = "y"})
func.func @main(%x: tensor<4xf32> {trc.input = "x"}) -> (tensor<4xf32> {trc.output = "y"}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{trc-lower-dropout needs a function @main with a body}}
module {
}
