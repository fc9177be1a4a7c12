// trc-detect-anomaly: every float value of @main_grad and of @train_step's
// own ops gets a code (2 NaN, 1 inf, 0 finite: compare ne x x, |x| == inf,
// max over the elements); the codes are @train_step's output trc.anomaly and
// the module attribute lists each site's op, node, phase and operand sites.
// RUN: trc-opt %s --split-input-file --trc-detect-anomaly -verify-diagnostics | FileCheck %s

// Sites in program order: the parameter, the input, the forward's mul and
// reduce (the loss depends on them), the backward's mul (only a gradient
// does), then the step's own sub. Integer values are not sites.
// CHECK: module attributes {trc.anomaly_sites = {{\[}}["", "w", "parameter", ""], ["", "x", "input", ""], ["trc.mul", "/Mul", "forward", "0,1"], ["trc.reduce", "/ReduceSum", "forward", "2"], ["trc.mul", "/Mul", "backward", "1"], ["trc.sub", "", "optimizer", "0,4"]]}
// CHECK-LABEL: func.func @main_grad
// CHECK-SAME: -> (tensor<f32>, tensor<4xf32> {trc.grad_of = "w"}, tensor<5xf32>)
// The parameter's check.
// CHECK: %[[NAN:.*]] = trc.compare  ne, %arg0, %arg0
// CHECK: %[[ABS:.*]] = trc.abs %arg0
// CHECK: %[[INF:.*]] = trc.compare  eq, %[[ABS]], %{{.*}}
// CHECK: %[[ONE:.*]] = trc.select %[[INF]]
// CHECK: %[[CODE:.*]] = trc.select %[[NAN]], %{{.*}}, %[[ONE]]
// CHECK: trc.reduce  max %[[CODE]] dims = [0]
// CHECK: %[[LOSS:.*]] = trc.reduce  sum
// CHECK: %[[CODES:.*]] = trc.concatenate {{.*}} dim = 0 : ({{.*}}) -> tensor<5xf32>
// CHECK: return %[[LOSS]], %{{.*}}, %[[CODES]]
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: tensor<6xf32> {trc.output = "trc.anomaly"}
// CHECK: %[[G:.*]]:3 = call @main_grad
// CHECK: %[[NEW:.*]] = trc.sub %arg0, %[[G]]#1
// CHECK: %[[ALL:.*]] = trc.concatenate %[[G]]#2, %{{.*}} dim = 0 : (tensor<5xf32>, tensor<1xf32>) -> tensor<6xf32>
// CHECK: return %[[G]]#0, %[[NEW]], %[[ALL]]
func.func @main_grad(%w: tensor<4xf32> {trc.param = "w"}, %x: tensor<4xf32> {trc.input = "x"},
                     %i: tensor<4xi64> {trc.input = "i"})
    -> (tensor<f32>, tensor<4xf32> {trc.grad_of = "w"}) {
  %p = trc.mul %w, %x : tensor<4xf32> loc("/Mul")
  %l = trc.reduce sum %p dims = [0] : (tensor<4xf32>) -> tensor<f32> loc("/ReduceSum")
  %g = trc.mul %x, %x : tensor<4xf32> loc("/Mul")
  return %l, %g : tensor<f32>, tensor<4xf32>
}
func.func @train_step(%w: tensor<4xf32> {trc.param = "w"}, %x: tensor<4xf32> {trc.input = "x"},
                      %i: tensor<4xi64> {trc.input = "i"})
    -> (tensor<f32> {trc.output = "loss"}, tensor<4xf32> {trc.update = "w"}) {
  %r:2 = call @main_grad(%w, %x, %i) : (tensor<4xf32>, tensor<4xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<4xf32>)
  %new = trc.sub %w, %r#1 : tensor<4xf32>
  return %r#0, %new : tensor<f32>, tensor<4xf32>
}

// -----

// Pipeline stages (several programs) and untrained modules are refused.
// expected-error @+1 {{trc-detect-anomaly needs @train_step calling @main_grad once (trc-build-train-step; pipeline stages are not supported)}}
module {
  func.func @main() {
    return
  }
}

// -----

// expected-error @+1 {{trc-detect-anomaly: the step is already instrumented}}
module attributes {trc.anomaly_sites = []} {
  func.func @main_grad(%w: tensor<f32> {trc.param = "w"}) -> (tensor<f32>, tensor<f32> {trc.grad_of = "w"}) {
    return %w, %w : tensor<f32>, tensor<f32>
  }
  func.func @train_step(%w: tensor<f32> {trc.param = "w"}) -> (tensor<f32> {trc.output = "loss"}) {
    %r:2 = call @main_grad(%w) : (tensor<f32>) -> (tensor<f32>, tensor<f32>)
    return %r#0 : tensor<f32>
  }
}
