// trc-mixed-precision: f32 compute becomes bf16 (or f16), parameters stay f32
// arguments converted once, reductions/norms/losses stay f32, and results
// keep their types.
// RUN: trc-opt %s --split-input-file --trc-mixed-precision -verify-diagnostics | FileCheck %s
// RUN: trc-opt %s --split-input-file --trc-mixed-precision="type=f16 loss-scale=true" -verify-diagnostics | FileCheck %s --check-prefix=F16

// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32> {trc.input = "x"}, %[[W:.*]]: tensor<8x3xf32> {trc.param = "w"}, %[[B:.*]]: tensor<3xf32> {trc.param = "b"}, %[[T:.*]]: tensor<4xi64> {trc.input = "t"})
// CHECK-SAME: -> (tensor<f32> {trc.output = "loss"}, tensor<4x3xf32> {trc.output = "y"})
// Each f32 value is converted once, however many users it has.
// CHECK-DAG: %[[BL:.*]] = trc.convert %[[B]] : tensor<3xf32> -> tensor<3xbf16>
// CHECK-DAG: %[[XL:.*]] = trc.convert %[[X]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-DAG: %[[WL:.*]] = trc.convert %[[W]] : tensor<8x3xf32> -> tensor<8x3xbf16>
// CHECK: %[[MM:.*]] = trc.dot_general %[[XL]], %[[WL]]{{.*}} -> tensor<4x3xbf16>
// CHECK: %[[BB:.*]] = trc.broadcast_in_dim %[[BL]], dims = [1] : (tensor<3xbf16>) -> tensor<4x3xbf16>
// CHECK: %[[Y:.*]] = trc.add %[[MM]], %[[BB]] : tensor<4x3xbf16>
// CHECK: %[[YF:.*]] = trc.convert %[[Y]] : tensor<4x3xbf16> -> tensor<4x3xf32>
// CHECK: %[[G:.*]] = trc.gelu %[[Y]] : tensor<4x3xbf16>
// The loss is computed in f32 from the bf16 activations.
// CHECK: %[[GF:.*]] = trc.convert %[[G]] : tensor<4x3xbf16> -> tensor<4x3xf32>
// CHECK: %[[L:.*]] = trc.cross_entropy %[[GF]], %[[T]]{{.*}} -> tensor<f32>
// CHECK: return %[[L]], %[[YF]] : tensor<f32>, tensor<4x3xf32>

// F16-LABEL: func.func @main
// F16-SAME: %{{.*}}: tensor<f32> {trc.input = "trc.loss_scale"})
// F16: trc.dot_general {{.*}} -> tensor<4x3xf16>
// F16: %[[L:.*]] = trc.cross_entropy
// F16: %[[S:.*]] = trc.mul %[[L]], %{{.*}} : tensor<f32>
// F16: return %[[S]]
func.func @main(%x: tensor<4x8xf32> {trc.input = "x"}, %w: tensor<8x3xf32> {trc.param = "w"},
                %b: tensor<3xf32> {trc.param = "b"}, %t: tensor<4xi64> {trc.input = "t"})
    -> (tensor<f32> {trc.output = "loss"}, tensor<4x3xf32> {trc.output = "y"}) {
  %mm = trc.dot_general %x, %w, batch = [] x [], contract = [1] x [0] : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %bb = trc.broadcast_in_dim %b, dims = [1] : (tensor<3xf32>) -> tensor<4x3xf32>
  %y = trc.add %mm, %bb : tensor<4x3xf32>
  %g = trc.gelu %y : tensor<4x3xf32>
  %l = trc.cross_entropy %g, %t reduction = mean : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  return %l, %y : tensor<f32>, tensor<4x3xf32>
}

// -----

// A mask compare of f32 sources stays f32; integer values are untouched.
// CHECK-LABEL: func.func @main
// CHECK: %[[I:.*]] = trc.iota {{.*}} tensor<4xf32>
// CHECK: trc.compare  lt, %[[I]], %{{.*}} : tensor<4xf32> -> tensor<4xi1>
// CHECK: %[[SEL:.*]] = trc.select {{.*}} tensor<4xbf16>
// CHECK: %[[UP:.*]] = trc.convert %[[SEL]] : tensor<4xbf16> -> tensor<4xf32>
// CHECK: trc.reduce sum %[[UP]] dims = [0] : (tensor<4xf32>) -> tensor<f32>
func.func @main(%x: tensor<4xf32> {trc.input = "x"}) -> (tensor<f32> {trc.output = "y"}) {
  %i = trc.iota dim = 0 : tensor<4xf32>
  %c = trc.constant dense<2.0> : tensor<4xf32>
  %m = trc.compare lt, %i, %c : tensor<4xf32> -> tensor<4xi1>
  %z = trc.constant dense<0.0> : tensor<4xf32>
  %e = trc.tanh %x : tensor<4xf32>
  %y = trc.select %m, %e, %z : tensor<4xi1>, tensor<4xf32>
  %s = trc.reduce sum %y dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// expected-error @+1 {{trc-mixed-precision needs a function @main with one block}}
module {
  func.func private @main()
}
