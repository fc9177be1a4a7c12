// trc-propagate-sharding: from the annotated values to every value, forward
// and backward through each op's sharding rule.
// RUN: trc-opt %s --split-input-file --trc-propagate-sharding -verify-diagnostics | FileCheck %s

// A Megatron MLP seeded on its inner activation: the first weight becomes
// column-parallel, the second row-parallel, its product a partial sum, and
// what follows the sum (nothing reaches it) whole.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: %{{.*}}: tensor<4x8xf32> {trc.sharding = #trc.sharding<[{}, {}]>}
// CHECK-SAME: {trc.param = "w1", trc.sharding = #trc.sharding<[{}, {tensor}]>}
// CHECK-SAME: {trc.param = "w2", trc.sharding = #trc.sharding<[{tensor}, {}]>}
// CHECK: trc.dot_general {{.*}}trc.sharding = [#trc.sharding<[{}, {tensor}]>]
// CHECK: trc.tanh {{.*}}trc.sharding = [#trc.sharding<[{}, {tensor}]>]
// CHECK: trc.dot_general {{.*}}trc.sharding = [#trc.sharding<[{}, {}], partial = sum {tensor}>]
// CHECK: trc.exp {{.*}}trc.sharding = [#trc.sharding<[{}, {}]>]
module attributes {trc.grid = {tensor = 2 : i64}} {
  func.func @mlp(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32> {trc.param = "w1"},
                 %w2: tensor<16x8xf32> {trc.param = "w2"}) -> tensor<4x8xf32> {
    %h = trc.dot_general %x, %w1, batch = [] x [], contract = [1] x [0]
        : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %g = trc.tanh %h {trc.sharding = [#trc.sharding<[{}, {tensor}]>]} : tensor<4x16xf32>
    %y = trc.dot_general %g, %w2, batch = [] x [], contract = [1] x [0]
        : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
    %e = trc.exp %y : tensor<4x8xf32>
    return %e : tensor<4x8xf32>
  }
}

// -----

// GPT-2's fused QKV: splitting the heads of q, k and v splits the fused
// weight in 3 blocks (each rank: its heads' q, k and v), through the head
// reshape (the heads are the major factor of the 8 features).
// CHECK-LABEL: func.func @fused_qkv
// CHECK-SAME: {trc.param = "c_attn", trc.sharding = #trc.sharding<[{}, 3 x {tensor}]>}
// CHECK: trc.dot_general {{.*}}trc.sharding = [#trc.sharding<[{}, 3 x {tensor}]>]
// CHECK: trc.slice {{.*}}trc.sharding = [#trc.sharding<[{}, {tensor}]>]
// CHECK: trc.slice {{.*}}trc.sharding = [#trc.sharding<[{}, {tensor}]>]
// CHECK: trc.reshape {{.*}}trc.sharding = [#trc.sharding<[{}, {tensor}, {}]>]
module attributes {trc.grid = {tensor = 2 : i64}} {
  func.func @fused_qkv(%x: tensor<4x8xf32>, %w: tensor<8x24xf32> {trc.param = "c_attn"})
      -> (tensor<4x2x4xf32>, tensor<4x8xf32>) {
    %qkv = trc.dot_general %x, %w, batch = [] x [], contract = [1] x [0]
        : (tensor<4x8xf32>, tensor<8x24xf32>) -> tensor<4x24xf32>
    %q = trc.slice %qkv[[0, 0] : [4, 8] : [1, 1]] : (tensor<4x24xf32>) -> tensor<4x8xf32>
    %k = trc.slice %qkv[[0, 8] : [4, 16] : [1, 1]] : (tensor<4x24xf32>) -> tensor<4x8xf32>
    %heads = trc.reshape %q {trc.sharding = [#trc.sharding<[{}, {tensor}, {}]>]}
        : (tensor<4x8xf32>) -> tensor<4x2x4xf32>
    return %heads, %k : tensor<4x2x4xf32>, tensor<4x8xf32>
  }
}

// -----

// Grouped-query attention: 4 query heads share 2 key/value heads, repeated
// before the attention. Splitting the 4 heads over 2 ranks gives each rank
// one key/value head: the split reaches the unrepeated keys.
// CHECK-LABEL: func.func @grouped_kv
// CHECK-SAME: %{{.*}}: tensor<1x2x8x4xf32> {trc.sharding = #trc.sharding<[{}, {tensor}, {}, {}]>}
// CHECK: trc.broadcast_in_dim {{.*}}trc.sharding = [#trc.sharding<[{}, {tensor}, {}, {}, {}]>]
module attributes {trc.grid = {tensor = 2 : i64}} {
  func.func @grouped_kv(%kv: tensor<1x2x8x4xf32>) -> tensor<1x4x8x4xf32> {
    %rep = trc.broadcast_in_dim %kv, dims = [0, 1, 3, 4]
        : (tensor<1x2x8x4xf32>) -> tensor<1x2x2x8x4xf32>
    %k = trc.reshape %rep {trc.sharding = [#trc.sharding<[{}, {tensor}, {}, {}]>]}
        : (tensor<1x2x2x8x4xf32>) -> tensor<1x4x8x4xf32>
    return %k : tensor<1x4x8x4xf32>
  }
}

// -----

// A normalized dim stays whole: layer_norm's rule does not take the split.
// CHECK-LABEL: func.func @normalized
// CHECK: trc.layer_norm {{.*}}trc.sharding = [#trc.sharding<[{}, {}]>]
module attributes {trc.grid = {tensor = 2 : i64}} {
  func.func @normalized(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %e = trc.exp %x {trc.sharding = [#trc.sharding<[{}, {tensor}]>]} : tensor<4x8xf32>
    %n = trc.layer_norm %e axis = 1 eps = 1.0e-05 : (tensor<4x8xf32>) -> tensor<4x8xf32>
    return %n : tensor<4x8xf32>
  }
}

// -----

module attributes {trc.grid = {tensor = 2 : i64}} {
  func.func @no_rule(%x: tensor<4xf32> {trc.sharding = #trc.sharding<[{tensor}]>}) -> tensor<4xf32> {
    // expected-error @+1 {{'trc.all_reduce' has no sharding rule}}
    %y = trc.all_reduce %x sum group = world : tensor<4xf32>
    return %y : tensor<4xf32>
  }
}
