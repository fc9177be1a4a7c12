// trc-append-loss: a logits model gets torch's cross-entropy (mean, ignore
// index) against a new targets input, and returns the loss instead of its
// outputs (parameter updates stay).
// RUN: trc-opt %s --split-input-file --trc-append-loss="ignore-index=7" -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[IDS:.*]]: tensor<2x3xi64> {trc.input = "input_ids"}, %[[T:.*]]: tensor<2x3xi64> {trc.input = "loss.targets"})
// CHECK-SAME: -> (tensor<f32> {trc.output = "loss"})
// CHECK: %[[LOGITS:.*]] = trc.reshape %{{.*}} : (tensor<2x3x5xf32>) -> tensor<6x5xf32>
// CHECK: %[[LABELS:.*]] = trc.reshape %[[T]] : (tensor<2x3xi64>) -> tensor<6xi64>
// CHECK: %[[L:.*]] = trc.cross_entropy %[[LOGITS]], %[[LABELS]] reduction = mean ignore_index = 7
// CHECK: return %[[L]] : tensor<f32>
trc.parameter @table : tensor<8x5xf32> = dense<0.5> : tensor<8x5xf32>
func.func @main(%ids: tensor<2x3xi64> {trc.input = "input_ids"}) -> (tensor<2x3x5xf32> {trc.output = "logits"}) {
  %t = trc.get_parameter @table : tensor<8x5xf32>
  %e = trc.gather %t, %ids axis = 0 : (tensor<8x5xf32>, tensor<2x3xi64>) -> tensor<2x3x5xf32>
  return %e : tensor<2x3x5xf32>
}

// -----

// A parameter's new value (a running statistic, trc.update) stays a result
// after the loss; other outputs go.
// CHECK-LABEL: func.func @main
// CHECK-SAME: -> (tensor<f32> {trc.output = "loss"}, tensor<5xf32> {trc.update = "mean"})
// CHECK: %[[L:.*]] = trc.cross_entropy
// CHECK: return %[[L]], %[[NEW:.*]] : tensor<f32>, tensor<5xf32>
trc.parameter @mean : tensor<5xf32> = dense<0.0> : tensor<5xf32>
func.func @main(%x: tensor<2x5xf32> {trc.input = "x"}) -> (tensor<2x5xf32> {trc.output = "logits"}, tensor<5xf32> {trc.update = "mean"}, tensor<2x5xf32> {trc.output = "hidden"}) {
  %m = trc.get_parameter @mean : tensor<5xf32>
  %s = trc.reduce sum %x dims = [0] : (tensor<2x5xf32>) -> tensor<5xf32>
  %n = trc.add %m, %s : tensor<5xf32>
  return %x, %n, %x : tensor<2x5xf32>, tensor<5xf32>, tensor<2x5xf32>
}

// -----

// expected-error @+1 {{output 'loss' is already a scalar (the model computes its loss)}}
func.func @main(%x: tensor<4xf32> {trc.input = "x"}) -> (tensor<f32> {trc.output = "loss"}) {
  %l = trc.reduce sum %x dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// expected-error @+1 {{output 'y' must be logits [..., classes], a float tensor of rank >= 2}}
func.func @main(%x: tensor<4xf32> {trc.input = "x"}) -> (tensor<4xf32> {trc.output = "y"}) {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{an input is already named 'loss.targets'}}
func.func @main(%x: tensor<2x4xf32> {trc.input = "loss.targets"}) -> (tensor<2x4xf32> {trc.output = "y"}) {
  return %x : tensor<2x4xf32>
}
