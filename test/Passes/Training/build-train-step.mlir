// trc-build-train-step: @train_step around @main_grad with the optimizer's
// state, rate and step as arguments and every new value as a result.
// RUN: trc-opt %s --split-input-file --trc-build-train-step="optimizer=adamw clip-norm=1.0" -verify-diagnostics | FileCheck %s
// RUN: trc-opt %s --split-input-file --trc-build-train-step="optimizer=sgd accumulate=true" -verify-diagnostics | FileCheck %s --check-prefix=ACC

// Gradient accumulation: the running sum is an input and an update, reset
// (select, not a product with 0) when trc.keep_accum is 0; the update uses
// (sum + gradient) * trc.grad_scale.
// ACC-LABEL: func.func @train_step
// ACC-SAME: %[[ACC:[^:]*]]: tensor<4xf32> {trc.state = "grad_accum:w"}, %[[KEEP:[^:]*]]: tensor<f32> {trc.input = "trc.keep_accum"}, %[[SCALE:[^:]*]]: tensor<f32> {trc.input = "trc.grad_scale"})
// ACC-SAME: tensor<4xf32> {trc.update = "grad_accum:w"})
// ACC: %[[G:.*]]:2 = call @main_grad
// ACC: %[[SUM:.*]] = trc.add %[[ACC]], %[[G]]#1
// ACC: %[[K:.*]] = trc.compare  gt, %[[KEEP]]
// ACC: %[[KB:.*]] = trc.broadcast_in_dim %[[K]]
// ACC: %[[NEW:.*]] = trc.select %[[KB]], %[[SUM]], %{{.*}}
// ACC: %[[S:.*]] = trc.broadcast_in_dim %[[SCALE]]
// ACC: trc.mul %[[SUM]], %[[S]]
// ACC: return {{.*}}, %[[NEW]] :

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %{{.*}}: tensor<4xf32> {trc.param = "w"}
// CHECK-SAME: %{{.*}}: tensor<4xf32> {trc.state = "adam.m:w"}, %{{.*}}: tensor<4xf32> {trc.state = "adam.v:w"}
// CHECK-SAME: %[[LR:.*]]: tensor<f32> {trc.lr}, %[[STEP:.*]]: tensor<f32> {trc.step}
// CHECK-SAME: -> (tensor<f32> {trc.output = "loss"}, tensor<f32> {trc.output = "grad_norm"}, tensor<4xf32> {trc.update = "w"}, tensor<4xf32> {trc.update = "adam.m:w"}, tensor<4xf32> {trc.update = "adam.v:w"})
// CHECK: %[[G:.*]]:2 = call @main_grad
// The norm is taken before clipping; clipping scales by min(1, c / (norm + 1e-6)).
// CHECK: trc.mul %[[G]]#1, %[[G]]#1
// CHECK: %[[NORM:.*]] = trc.sqrt
// CHECK: trc.min
// Bias corrections use beta^step.
// CHECK: trc.pow %{{.*}}, %[[STEP]]
// CHECK: return %[[G]]#0, %[[NORM]]
trc.parameter @w : tensor<4xf32> = dense<1.0> : tensor<4xf32>
func.func @main_grad(%w: tensor<4xf32> {trc.param = "w"}, %x: tensor<4xf32> {trc.input = "x"}) -> (tensor<f32>, tensor<4xf32> {trc.grad_of = "w"}) {
  %p = trc.mul %w, %x : tensor<4xf32>
  %l = trc.reduce sum %p dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l, %x : tensor<f32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{trc-build-train-step needs @main_grad (run trc-autodiff first)}}
module {
  func.func @main() {
    return
  }
}

// -----

func.func @main_grad(%w: tensor<4xf32> {trc.param = "w"}) -> (tensor<f32>, tensor<4xf32>) {
  // expected-error @-1 {{result 1 of @main_grad is not the gradient of a parameter}}
  %l = trc.constant dense<0.0> : tensor<f32>
  return %l, %w : tensor<f32>, tensor<4xf32>
}

// -----

// expected-error @+1 {{the model has no trainable parameters}}
func.func @main_grad(%x: tensor<4xf32> {trc.input = "x"}) -> tensor<f32> {
  %l = trc.reduce sum %x dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Loss scaling: @main_grad's input trc.loss_scale divides the reported loss,
// and the gradients are multiplied by trc.grad_scale.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[LS:[^:]*]]: tensor<f32> {trc.input = "trc.loss_scale"}
// CHECK-SAME: %[[GS:[^:]*]]: tensor<f32> {trc.input = "trc.grad_scale"})
// CHECK: %[[G:.*]]:2 = call @main_grad
// CHECK: %[[S:.*]] = trc.broadcast_in_dim %[[GS]]
// CHECK: trc.mul %[[G]]#1, %[[S]]
// CHECK: %[[L:.*]] = trc.div %[[G]]#0, %[[LS]] : tensor<f32>
// CHECK: return %[[L]]
trc.parameter @w : tensor<4xf32> = dense<1.0> : tensor<4xf32>
func.func @main_grad(%w: tensor<4xf32> {trc.param = "w"}, %s: tensor<f32> {trc.input = "trc.loss_scale"}) -> (tensor<f32>, tensor<4xf32> {trc.grad_of = "w"}) {
  %p = trc.reduce sum %w dims = [0] : (tensor<4xf32>) -> tensor<f32>
  %l = trc.mul %p, %s : tensor<f32>
  return %l, %w : tensor<f32>, tensor<4xf32>
}

// -----

// Sharded gradients (trc-data-parallel zero-stage 1/2): optimizer state has
// the gradient's shard type and is marked; this rank updates its shard of
// the full parameter (shard_slice), the squared norm of the shards is
// summed over the shard group, and the new parameter is all-gathered back
// to its full shape (padding dropped). One-dimensional parameters keep no
// weight decay although their shards and the full tensor are both 1-D.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[W:[^:]*]]: tensor<2x3xf32> {trc.param = "w"}
// CHECK-SAME: tensor<2xf32> {trc.shard_degree = 4 : i64, trc.shard_of = array<i64: 2, 3>, trc.state = "adam.m:w"}
// CHECK-SAME: -> (tensor<f32> {trc.output = "loss"}, tensor<f32> {trc.output = "grad_norm"}, tensor<2x3xf32> {trc.update = "w"}, tensor<2xf32> {trc.update = "adam.m:w"}, tensor<2xf32> {trc.update = "adam.v:w"})
// CHECK: %[[G:.*]]:2 = call @main_grad
// CHECK: %[[SQ:.*]] = trc.reduce sum
// CHECK: trc.all_reduce %[[SQ]] sum group = shard : tensor<f32>
// CHECK: %[[FLAT:.*]] = trc.reshape %[[W]] : (tensor<2x3xf32>) -> tensor<6xf32>
// CHECK: %[[PAD:.*]] = trc.pad %[[FLAT]]
// CHECK: trc.shard_slice %[[PAD]] group = shard shards = 4 : (tensor<8xf32>) -> tensor<2xf32>
// CHECK: %[[ALL:.*]] = trc.all_gather %{{.*}} group = shard shards = 4 : (tensor<2xf32>) -> tensor<8xf32>
// CHECK: %[[CUT:.*]] = trc.slice %[[ALL]]{{\[}}[0] : [6] : [1]] : (tensor<8xf32>) -> tensor<6xf32>
// CHECK: %[[NEW:.*]] = trc.reshape %[[CUT]] : (tensor<6xf32>) -> tensor<2x3xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[NEW]],
trc.parameter @w : tensor<2x3xf32> = dense<1.0> : tensor<2x3xf32>
func.func @main_grad(%w: tensor<2x3xf32> {trc.param = "w"}, %g: tensor<2xf32> {trc.input = "g"}) -> (tensor<f32>, tensor<2xf32> {trc.grad_of = "w", trc.shard_degree = 4 : i64, trc.shard_of = array<i64: 2, 3>}) {
  %l = trc.reduce sum %w dims = [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
  return %l, %g : tensor<f32>, tensor<2xf32>
}

// -----

// A frozen parameter's new value from @main_grad (running statistics) is
// returned as it is, after the optimizer's updates.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %{{.*}}: tensor<4xf32> {trc.param = "stat"}
// CHECK-SAME: tensor<4xf32> {trc.update = "adam.v:w"}, tensor<4xf32> {trc.update = "stat"})
// CHECK: %[[G:.*]]:3 = call @main_grad
// CHECK: return {{.*}}, %[[G]]#2 :
trc.parameter @w : tensor<4xf32> = dense<1.0> : tensor<4xf32>
trc.parameter @stat frozen : tensor<4xf32> = dense<0.0> : tensor<4xf32>
func.func @main_grad(%w: tensor<4xf32> {trc.param = "w"}, %s: tensor<4xf32> {trc.param = "stat"}, %x: tensor<4xf32> {trc.input = "x"}) -> (tensor<f32>, tensor<4xf32> {trc.grad_of = "w"}, tensor<4xf32> {trc.update = "stat"}) {
  %p = trc.mul %w, %x : tensor<4xf32>
  %l = trc.reduce sum %p dims = [0] : (tensor<4xf32>) -> tensor<f32>
  %n = trc.add %s, %x : tensor<4xf32>
  return %l, %x, %n : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}
