// trc-fuse-attention: the exporters' attention chains become trc.attention
// (q, k, v transposed to [batch..., T, D]; a stretched mask taken before its
// broadcast); chains whose intermediate values are used elsewhere, or that
// are not attention, stay.
// RUN: trc-opt %s --split-input-file --trc-fuse-attention | FileCheck %s

// GPT-2: q k^T from a pre-transposed k, scale by mul, -inf where the
// causal mask is true.
// CHECK-LABEL: func.func @gpt2
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x8x16xf32>, %[[KT:.*]]: tensor<2x4x16x8xf32>, %[[V:.*]]: tensor<2x4x8x16xf32>, %[[M:.*]]: tensor<1x1x8x8xi1>)
// CHECK: %[[K:.*]] = trc.transpose %[[KT]], perm = [0, 1, 3, 2]
// CHECK: %[[O:.*]] = trc.attention %[[Q]], %[[K]], %[[V]] mask %[[M]] fill = 0xFFF0000000000000 where true scale = 2.500000e-01
// CHECK-NOT: trc.softmax
// CHECK-NOT: trc.dot_general
// CHECK: return %[[O]]
func.func @gpt2(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>,
                %m: tensor<1x1x8x8xi1>) -> tensor<2x4x8x16xf32> {
  %s = trc.dot_general %q, %kt, batch = [0, 1] x [0, 1], contract = [3] x [2] : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %c = trc.constant dense<2.500000e-01> : tensor<2x4x8x8xf32>
  %scaled = trc.mul %s, %c : tensor<2x4x8x8xf32>
  %ninf = trc.constant dense<0xFF800000> : tensor<2x4x8x8xf32>
  %mb = trc.broadcast_in_dim %m, dims = [0, 1, 2, 3] : (tensor<1x1x8x8xi1>) -> tensor<2x4x8x8xi1>
  %masked = trc.select %mb, %ninf, %scaled : tensor<2x4x8x8xi1>, tensor<2x4x8x8xf32>
  %p = trc.softmax %masked axis = 3 : tensor<2x4x8x8xf32>
  %o = trc.dot_general %p, %v, batch = [0, 1] x [0, 1], contract = [3] x [2] : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// GPT-J: q, k, v as [batch, T, heads, D], scale by div, the fill where the
// mask is false.
// CHECK-LABEL: func.func @gptj
// CHECK-SAME: (%[[Q:.*]]: tensor<2x8x4x16xf32>, %[[K:.*]]: tensor<2x8x4x16xf32>, %[[V:.*]]: tensor<2x8x4x16xf32>, %[[M:.*]]: tensor<2x4x8x8xi1>)
// CHECK-DAG: %[[QT:.*]] = trc.transpose %[[Q]], perm = [0, 2, 1, 3]
// CHECK-DAG: %[[KT:.*]] = trc.transpose %[[K]], perm = [0, 2, 1, 3]
// CHECK-DAG: %[[VT:.*]] = trc.transpose %[[V]], perm = [0, 2, 1, 3]
// CHECK: trc.attention %[[QT]], %[[KT]], %[[VT]] mask %[[M]] fill = -3.4028234663852886E+38 where false scale = 2.500000e-01
func.func @gptj(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x4x16xf32>, %v: tensor<2x8x4x16xf32>,
                %m: tensor<2x4x8x8xi1>) -> tensor<2x4x8x16xf32> {
  %s = trc.dot_general %q, %k, batch = [0, 2] x [0, 2], contract = [3] x [3] : (tensor<2x8x4x16xf32>, tensor<2x8x4x16xf32>) -> tensor<2x4x8x8xf32>
  %c = trc.constant dense<4.000000e+00> : tensor<2x4x8x8xf32>
  %scaled = trc.div %s, %c : tensor<2x4x8x8xf32>
  %min = trc.constant dense<-3.40282347E+38> : tensor<2x4x8x8xf32>
  %masked = trc.select %m, %scaled, %min : tensor<2x4x8x8xi1>, tensor<2x4x8x8xf32>
  %p = trc.softmax %masked axis = 3 : tensor<2x4x8x8xf32>
  %o = trc.dot_general %p, %v, batch = [0, 1] x [0, 2], contract = [3] x [1] : (tensor<2x4x8x8xf32>, tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// BERT (no mask), rank 3.
// CHECK-LABEL: func.func @bert
// CHECK: trc.attention %arg0, %arg1, %arg2 fill = 0.000000e+00 where true scale = 1.250000e-01 : (tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
func.func @bert(%q: tensor<4x8x16xf32>, %k: tensor<4x8x16xf32>, %v: tensor<4x8x16xf32>) -> tensor<4x8x16xf32> {
  %s = trc.dot_general %q, %k, batch = [0] x [0], contract = [2] x [2] : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x8xf32>
  %c = trc.constant dense<8.000000e+00> : tensor<4x8x8xf32>
  %scaled = trc.div %s, %c : tensor<4x8x8xf32>
  %p = trc.softmax %scaled axis = 2 : tensor<4x8x8xf32>
  %o = trc.dot_general %p, %v, batch = [0] x [0], contract = [2] x [1] : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %o : tensor<4x8x16xf32>
}

// -----

// The probabilities are returned too: not fused.
// CHECK-LABEL: func.func @probabilities_used
// CHECK-NOT: trc.attention
// CHECK: trc.softmax
func.func @probabilities_used(%q: tensor<4x8x16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8x8xf32>) {
  %s = trc.dot_general %q, %q, batch = [0] x [0], contract = [2] x [2] : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x8xf32>
  %p = trc.softmax %s axis = 2 : tensor<4x8x8xf32>
  %o = trc.dot_general %p, %q, batch = [0] x [0], contract = [2] x [1] : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %o, %p : tensor<4x8x16xf32>, tensor<4x8x8xf32>
}

// -----

// The scores are also used elsewhere: not fused.
// CHECK-LABEL: func.func @scores_used
// CHECK-NOT: trc.attention
func.func @scores_used(%q: tensor<4x8x16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8x8xf32>) {
  %s = trc.dot_general %q, %q, batch = [0] x [0], contract = [2] x [2] : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x8xf32>
  %p = trc.softmax %s axis = 2 : tensor<4x8x8xf32>
  %o = trc.dot_general %p, %q, batch = [0] x [0], contract = [2] x [1] : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %o, %s : tensor<4x8x16xf32>, tensor<4x8x8xf32>
}

// -----

// A scale that is not a constant splat, and a softmax over another axis:
// not attention.
// CHECK-LABEL: func.func @not_attention
// CHECK-NOT: trc.attention
func.func @not_attention(%q: tensor<4x8x16xf32>, %w: tensor<4x8x8xf32>) -> (tensor<4x8x16xf32>, tensor<4x8x16xf32>) {
  %s = trc.dot_general %q, %q, batch = [0] x [0], contract = [2] x [2] : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x8xf32>
  %scaled = trc.mul %s, %w : tensor<4x8x8xf32>
  %p = trc.softmax %scaled axis = 2 : tensor<4x8x8xf32>
  %o = trc.dot_general %p, %q, batch = [0] x [0], contract = [2] x [1] : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  %s2 = trc.dot_general %q, %q, batch = [0] x [0], contract = [2] x [2] : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4x8x8xf32>
  %p2 = trc.softmax %s2 axis = 1 : tensor<4x8x8xf32>
  %o2 = trc.dot_general %p2, %q, batch = [0] x [0], contract = [2] x [1] : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %o, %o2 : tensor<4x8x16xf32>, tensor<4x8x16xf32>
}

// -----

// torch 2.x's decomposition of scaled_dot_product_attention: sqrt(scale) on
// q and on k^T (computed from a constant), the mask added as a bias
// select(mask, 0, lowest), and the safe softmax's where(p != p, 0, p); with a
// finite fill no row is NaN, so the guard goes too. The scale is 1/sqrt(16).
// CHECK-LABEL: func.func @torch2_sdpa
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x8x16xf32>, %[[KT:.*]]: tensor<2x4x16x8xf32>, %[[V:.*]]: tensor<2x4x8x16xf32>, %[[M:.*]]: tensor<2x1x8x8xi1>)
// CHECK: %[[K:.*]] = trc.transpose %[[KT]], perm = [0, 1, 3, 2]
// CHECK: %[[O:.*]] = trc.attention %[[Q]], %[[K]], %[[V]] mask %[[M]] fill = -3.4028234663852886E+38 where false scale = 2.500000e-01
// CHECK-NOT: trc.softmax
// CHECK-NOT: trc.select
// CHECK: return %[[O]]
func.func @torch2_sdpa(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>,
                       %m: tensor<2x1x8x8xi1>) -> tensor<2x4x8x16xf32> {
  %c = trc.constant dense<2.500000e-01> : tensor<f32>
  %r1 = trc.sqrt %c : tensor<f32>
  %r2 = trc.sqrt %c : tensor<f32>
  %b1 = trc.broadcast_in_dim %r1, dims = [] : (tensor<f32>) -> tensor<2x4x8x16xf32>
  %qs = trc.mul %q, %b1 : tensor<2x4x8x16xf32>
  %b2 = trc.broadcast_in_dim %r2, dims = [] : (tensor<f32>) -> tensor<2x4x16x8xf32>
  %ks = trc.mul %kt, %b2 : tensor<2x4x16x8xf32>
  %zero = trc.constant dense<0.000000e+00> : tensor<2x1x8x8xf32>
  %low = trc.constant dense<-3.40282347E+38> : tensor<2x1x8x8xf32>
  %bias = trc.select %m, %zero, %low : tensor<2x1x8x8xi1>, tensor<2x1x8x8xf32>
  %s = trc.dot_general %qs, %ks, batch = [0, 1] x [0, 1], contract = [3] x [2] : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %bb = trc.broadcast_in_dim %bias, dims = [0, 1, 2, 3] : (tensor<2x1x8x8xf32>) -> tensor<2x4x8x8xf32>
  %masked = trc.add %s, %bb : tensor<2x4x8x8xf32>
  %p = trc.softmax %masked axis = 3 : tensor<2x4x8x8xf32>
  %nan = trc.compare ne, %p, %p : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xi1>
  %z = trc.constant dense<0.000000e+00> : tensor<2x4x8x8xf32>
  %safe = trc.select %nan, %z, %p : tensor<2x4x8x8xi1>, tensor<2x4x8x8xf32>
  %o = trc.dot_general %safe, %v, batch = [0, 1] x [0, 1], contract = [3] x [2] : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// With a -inf bias a row the mask hides whole is NaN after the softmax and
// 0 after the guard, where trc.attention would give NaN: left unfused. A
// bias of -10000 is not a fill (s - 10000 is not -10000): left unfused.
// CHECK-LABEL: func.func @torch2_inf_bias
// CHECK: trc.softmax
// CHECK-NOT: trc.attention
// CHECK-LABEL: func.func @small_bias
// CHECK: trc.softmax
// CHECK-NOT: trc.attention
func.func @torch2_inf_bias(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>,
                           %m: tensor<2x1x8x8xi1>) -> tensor<2x4x8x16xf32> {
  %zero = trc.constant dense<0.000000e+00> : tensor<2x1x8x8xf32>
  %ninf = trc.constant dense<0xFF800000> : tensor<2x1x8x8xf32>
  %bias = trc.select %m, %zero, %ninf : tensor<2x1x8x8xi1>, tensor<2x1x8x8xf32>
  %s = trc.dot_general %q, %kt, batch = [0, 1] x [0, 1], contract = [3] x [2] : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %bb = trc.broadcast_in_dim %bias, dims = [0, 1, 2, 3] : (tensor<2x1x8x8xf32>) -> tensor<2x4x8x8xf32>
  %masked = trc.add %s, %bb : tensor<2x4x8x8xf32>
  %p = trc.softmax %masked axis = 3 : tensor<2x4x8x8xf32>
  %nan = trc.compare ne, %p, %p : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xi1>
  %z = trc.constant dense<0.000000e+00> : tensor<2x4x8x8xf32>
  %safe = trc.select %nan, %z, %p : tensor<2x4x8x8xi1>, tensor<2x4x8x8xf32>
  %o = trc.dot_general %safe, %v, batch = [0, 1] x [0, 1], contract = [3] x [2] : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}
func.func @small_bias(%q: tensor<2x4x8x16xf32>, %kt: tensor<2x4x16x8xf32>, %v: tensor<2x4x8x16xf32>,
                      %m: tensor<2x1x8x8xi1>) -> tensor<2x4x8x16xf32> {
  %zero = trc.constant dense<0.000000e+00> : tensor<2x1x8x8xf32>
  %low = trc.constant dense<-1.000000e+04> : tensor<2x1x8x8xf32>
  %bias = trc.select %m, %zero, %low : tensor<2x1x8x8xi1>, tensor<2x1x8x8xf32>
  %s = trc.dot_general %q, %kt, batch = [0, 1] x [0, 1], contract = [3] x [2] : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %bb = trc.broadcast_in_dim %bias, dims = [0, 1, 2, 3] : (tensor<2x1x8x8xf32>) -> tensor<2x4x8x8xf32>
  %masked = trc.add %s, %bb : tensor<2x4x8x8xf32>
  %p = trc.softmax %masked axis = 3 : tensor<2x4x8x8xf32>
  %o = trc.dot_general %p, %v, batch = [0, 1] x [0, 1], contract = [3] x [2] : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}
