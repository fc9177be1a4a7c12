// trc-fuse: a reduction with its elementwise prologue and epilogue is one
// kernel: softmax (composite or decomposed) with the attention scale and
// mask before it, layer norm written with keepdims reshapes (GPT-J's
// export), cross-entropy's loss and gradient (siblings reading the logits).
// Ops work on the domain's shape or on its kept shape; reductions over other
// dimensions stay separate groups (a cheap producer is recomputed in each).
// RUN: trc-opt %s --split-input-file --trc-fuse | FileCheck %s
// RUN: trc-opt %s --split-input-file --trc-decompose-composites --trc-fuse | FileCheck %s --check-prefix=DEC

// CHECK-LABEL: func.func @attention_softmax
// CHECK-NEXT: %[[F:.*]] = trc.fusion reduction (%[[S:.*]] = %arg0 : tensor<2x4x8x8xf32>, %[[M:.*]] = %arg1 : tensor<1x1x8x8xi1>, %[[V:.*]] = %arg2 : tensor<2x4x8x8xf32>) -> (tensor<2x4x8x8xf32>) {
// CHECK: %[[SC:.*]] = trc.mul %[[S]]
// CHECK: %[[MB:.*]] = trc.broadcast_in_dim %[[M]]
// CHECK: %[[SEL:.*]] = trc.select %[[MB]], %{{.*}}, %[[SC]]
// CHECK: %[[P:.*]] = trc.softmax %[[SEL]] axis = 3
// CHECK: %[[O:.*]] = trc.mul %[[P]], %[[V]]
// CHECK: trc.yield %[[O]]
// CHECK: return %[[F]]
// DEC-LABEL: func.func @attention_softmax
// DEC-NEXT: trc.fusion reduction
// DEC: trc.reduce max %{{.*}} dims = [3]
// DEC: trc.exp
// DEC: trc.reduce sum %{{.*}} dims = [3]
// DEC: trc.div
// DEC: trc.yield
// DEC-NEXT: }
// DEC-NEXT: return
func.func @attention_softmax(%s: tensor<2x4x8x8xf32>, %mask: tensor<1x1x8x8xi1>, %v: tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32> {
  %c = trc.constant dense<0.25> : tensor<2x4x8x8xf32>
  %0 = trc.mul %s, %c : tensor<2x4x8x8xf32>
  %ninf = trc.constant dense<0xFF800000> : tensor<2x4x8x8xf32>
  %m = trc.broadcast_in_dim %mask, dims = [0, 1, 2, 3] : (tensor<1x1x8x8xi1>) -> tensor<2x4x8x8xi1>
  %1 = trc.select %m, %ninf, %0 : tensor<2x4x8x8xi1>, tensor<2x4x8x8xf32>
  %2 = trc.softmax %1 axis = 3 : tensor<2x4x8x8xf32>
  %3 = trc.mul %2, %v : tensor<2x4x8x8xf32>
  return %3 : tensor<2x4x8x8xf32>
}

// -----

// Mean and variance, keepdims reshapes, eps, sqrt, scale and bias: one pass
// over each row; the reduced values stay in the kernel.
// CHECK-LABEL: func.func @layer_norm_keepdims
// CHECK-NEXT: %[[F:.*]] = trc.fusion reduction (%[[X:.*]] = %arg0 : tensor<2x16x64xf32>, %{{.*}} = %arg1 : tensor<64xf32>, %{{.*}} = %arg2 : tensor<64xf32>) -> (tensor<2x16x64xf32>) {
// CHECK: trc.reduce sum %[[X]] dims = [2]
// CHECK: trc.reshape %{{.*}} : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
// CHECK: trc.broadcast_in_dim %{{.*}}, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x64xf32>
// CHECK: trc.reduce sum %{{.*}} dims = [2]
// CHECK: trc.sqrt %{{.*}} : tensor<2x16x1xf32>
// CHECK: trc.yield %{{.*}} : tensor<2x16x64xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[F]]
func.func @layer_norm_keepdims(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<2x16x64xf32> {
  %n = trc.constant dense<6.400000e+01> : tensor<2x16xf32>
  %eps = trc.constant dense<9.99999974E-6> : tensor<2x16x1xf32>
  %0 = trc.reduce sum %x dims = [2] : (tensor<2x16x64xf32>) -> tensor<2x16xf32>
  %1 = trc.div %0, %n : tensor<2x16xf32>
  %2 = trc.reshape %1 : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
  %3 = trc.broadcast_in_dim %2, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x64xf32>
  %4 = trc.sub %x, %3 : tensor<2x16x64xf32>
  %5 = trc.mul %4, %4 : tensor<2x16x64xf32>
  %6 = trc.reduce sum %5 dims = [2] : (tensor<2x16x64xf32>) -> tensor<2x16xf32>
  %7 = trc.div %6, %n : tensor<2x16xf32>
  %8 = trc.reshape %7 : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
  %9 = trc.add %8, %eps : tensor<2x16x1xf32>
  %10 = trc.sqrt %9 : tensor<2x16x1xf32>
  %11 = trc.broadcast_in_dim %10, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x64xf32>
  %12 = trc.div %4, %11 : tensor<2x16x64xf32>
  %13 = trc.broadcast_in_dim %g, dims = [2] : (tensor<64xf32>) -> tensor<2x16x64xf32>
  %14 = trc.mul %12, %13 : tensor<2x16x64xf32>
  %15 = trc.broadcast_in_dim %b, dims = [2] : (tensor<64xf32>) -> tensor<2x16x64xf32>
  %16 = trc.add %14, %15 : tensor<2x16x64xf32>
  return %16 : tensor<2x16x64xf32>
}

// -----

// Cross-entropy forward and backward (as trc-autodiff writes it): the loss
// and softmax - onehot share one pass over the logits; the per-sample
// weights (a reduction over the batch) are a second kernel.
// CHECK-LABEL: func.func @cross_entropy
// CHECK-NEXT: %[[W:.*]] = trc.fusion reduction (%{{.*}} = %arg1 : tensor<32xi64>) -> (tensor<32xf32>) {
// CHECK: trc.reduce sum %{{.*}} dims = [0] : (tensor<32xf32>) -> tensor<f32>
// CHECK: %[[F:.*]]:2 = trc.fusion reduction (%[[L:.*]] = %arg0 : tensor<32x256xf32>, %[[T:.*]] = %arg1 : tensor<32xi64>, %{{.*}} = %[[W]] : tensor<32xf32>) -> (tensor<f32>, tensor<32x256xf32>) {
// CHECK: %[[LOSS:.*]] = trc.cross_entropy %[[L]], %[[T]]
// CHECK: trc.iota
// CHECK: trc.softmax %[[L]] axis = 1
// CHECK: %[[G:.*]] = trc.mul
// CHECK: trc.yield %[[LOSS]], %[[G]]
// CHECK: return %[[F]]#0, %[[F]]#1
// Decomposed: the label weights, then one pass over the logits giving the
// per-row max, sum, picked logit and the gradient, then the scalar loss.
// DEC-LABEL: func.func @cross_entropy
// DEC: trc.fusion reduction (%{{.*}} = %arg1 : tensor<32xi64>) -> (tensor<32xi1>, tensor<32xf32>)
// DEC-NOT: trc.fusion
// DEC: trc.fusion reduction ({{.*}}%arg0 : tensor<32x256xf32>{{.*}}) -> (tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32x256xf32>)
// DEC-NOT: trc.fusion
// DEC: trc.fusion reduction ({{.*}}) -> (tensor<f32>)
// DEC-NOT: trc.fusion
// DEC: return
func.func @cross_entropy(%logits: tensor<32x256xf32>, %labels: tensor<32xi64>) -> (tensor<f32>, tensor<32x256xf32>) {
  %loss = trc.cross_entropy %logits, %labels reduction = mean ignore_index = -100 : (tensor<32x256xf32>, tensor<32xi64>) -> tensor<f32>
  %one = trc.constant dense<1.000000e+00> : tensor<f32>
  %ignore = trc.constant dense<-100> : tensor<32xi64>
  %valid = trc.compare ne, %labels, %ignore : tensor<32xi64> -> tensor<32xi1>
  %zeros = trc.constant dense<0.000000e+00> : tensor<32xf32>
  %ones = trc.constant dense<1.000000e+00> : tensor<32xf32>
  %w = trc.select %valid, %ones, %zeros : tensor<32xi1>, tensor<32xf32>
  %count = trc.reduce sum %w dims = [0] : (tensor<32xf32>) -> tensor<f32>
  %inv = trc.div %one, %count : tensor<f32>
  %invb = trc.broadcast_in_dim %inv, dims = [] : (tensor<f32>) -> tensor<32xf32>
  %scale = trc.mul %invb, %w : tensor<32xf32>
  %lb = trc.broadcast_in_dim %labels, dims = [0] : (tensor<32xi64>) -> tensor<32x256xi64>
  %iota = trc.iota dim = 1 : tensor<32x256xi64>
  %hot = trc.compare eq, %iota, %lb : tensor<32x256xi64> -> tensor<32x256xi1>
  %scaleb = trc.broadcast_in_dim %scale, dims = [0] : (tensor<32xf32>) -> tensor<32x256xf32>
  %p = trc.softmax %logits axis = 1 : tensor<32x256xf32>
  %onec = trc.constant dense<1.000000e+00> : tensor<32x256xf32>
  %pm1 = trc.sub %p, %onec : tensor<32x256xf32>
  %d = trc.select %hot, %pm1, %p : tensor<32x256xi1>, tensor<32x256xf32>
  %grad = trc.mul %d, %scaleb : tensor<32x256xf32>
  return %loss, %grad : tensor<f32>, tensor<32x256xf32>
}

// -----

// A row sum and a column max of exp(x): two domains, two kernels; exp is
// recomputed in both rather than written and read twice.
// CHECK-LABEL: func.func @rows_and_columns
// CHECK-NEXT: %[[R:.*]] = trc.fusion reduction (%{{.*}} = %arg0 : tensor<8x16xf32>) -> (tensor<8xf32>) {
// CHECK-NEXT: trc.exp
// CHECK-NEXT: trc.reduce sum %{{.*}} dims = [1]
// CHECK: %[[C:.*]] = trc.fusion reduction (%{{.*}} = %arg0 : tensor<8x16xf32>) -> (tensor<16xf32>) {
// CHECK-NEXT: trc.exp
// CHECK-NEXT: trc.reduce max %{{.*}} dims = [0]
// CHECK: return %[[R]], %[[C]]
func.func @rows_and_columns(%x: tensor<8x16xf32>) -> (tensor<8xf32>, tensor<16xf32>) {
  %e = trc.exp %x : tensor<8x16xf32>
  %r = trc.reduce sum %e dims = [1] : (tensor<8x16xf32>) -> tensor<8xf32>
  %c = trc.reduce max %e dims = [0] : (tensor<8x16xf32>) -> tensor<16xf32>
  return %r, %c : tensor<8xf32>, tensor<16xf32>
}
