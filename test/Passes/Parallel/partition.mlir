// trc-partition: per-rank shapes, with the collectives each sharding change
// needs on the tensor group (the annotations come from
// trc-propagate-sharding).
// RUN: trc-opt %s --split-input-file --trc-propagate-sharding --trc-partition -verify-diagnostics | FileCheck %s

// A Megatron MLP: each rank holds half of each weight; the row-parallel
// product is all-reduced once, where its whole value is needed. Split
// parameters carry trc.split [dim, blocks, degree] and the full shape.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32>
// CHECK-SAME: %[[W1:.*]]: tensor<8x8xf32> {trc.param = "w1", trc.split = array<i64: 1, 1, 2, 0>, trc.split_of = array<i64: 8, 16>}
// CHECK-SAME: %[[W2:.*]]: tensor<8x8xf32> {trc.param = "w2", trc.split = array<i64: 0, 1, 2, 0>, trc.split_of = array<i64: 16, 8>}
// CHECK: %[[H:.*]] = trc.dot_general %[[X]], %[[W1]], {{.*}} -> tensor<4x8xf32>
// CHECK: %[[G:.*]] = trc.tanh %[[H]] : tensor<4x8xf32>
// CHECK: %[[P:.*]] = trc.dot_general %[[G]], %[[W2]], {{.*}} -> tensor<4x8xf32>
// CHECK: %[[Y:.*]] = trc.all_reduce %[[P]] sum group = tensor : tensor<4x8xf32>
// CHECK: trc.exp %[[Y]]
// CHECK-NOT: trc.all_reduce
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

// A block-split fused projection: the slice of block 1 (k) takes this
// rank's part of it, [2, 4) of the 12 local features.
// CHECK-LABEL: func.func @fused_qkv
// CHECK: trc.dot_general {{.*}} -> tensor<4x12xf32>
// CHECK: trc.slice %{{.*}}{{\[\[}}0, 4] : [4, 8] : [1, 1]] : (tensor<4x12xf32>) -> tensor<4x4xf32>
module attributes {trc.grid = {tensor = 2 : i64}} {
  func.func @fused_qkv(%x: tensor<4x8xf32>, %w: tensor<8x24xf32> {trc.param = "c_attn"})
      -> tensor<4x2x4xf32> {
    %qkv = trc.dot_general %x, %w, batch = [] x [], contract = [1] x [0]
        : (tensor<4x8xf32>, tensor<8x24xf32>) -> tensor<4x24xf32>
    %k = trc.slice %qkv[[0, 8] : [4, 16] : [1, 1]] : (tensor<4x24xf32>) -> tensor<4x8xf32>
    %heads = trc.reshape %k {trc.sharding = [#trc.sharding<[{}, {tensor}, {}]>]}
        : (tensor<4x8xf32>) -> tensor<4x2x4xf32>
    %out = trc.exp %heads : tensor<4x2x4xf32>
    return %out : tensor<4x2x4xf32>
  }
}

// -----

// A vocabulary-parallel embedding: each rank looks up the ids in its rows
// (ids minus its first row, masked outside [0, rows)), and the partial
// lookups are summed.
// CHECK-LABEL: func.func @embedding
// CHECK-SAME: %[[T:arg[0-9]+]]: tensor<4x3xf32> {trc.param = "wte", trc.split = array<i64: 0, 1, 2, 0>
// CHECK: %[[STARTS:.*]] = trc.constant dense<[0, 4]> : tensor<2xi64>
// CHECK: %[[MINE:.*]] = trc.shard_slice %[[STARTS]] group = tensor shards = 2
// CHECK: %[[LOCAL:.*]] = trc.sub %[[IDS:.*]], %{{.*}} : tensor<2x5xi64>
// CHECK: %[[IN:.*]] = trc.and
// CHECK: %[[SAFE:.*]] = trc.select %[[IN]], %[[LOCAL]]
// CHECK: %[[ROWS:.*]] = trc.gather %[[T]], %[[SAFE]] axis = 0 : (tensor<4x3xf32>, tensor<2x5xi64>) -> tensor<2x5x3xf32>
// CHECK: %[[MASKED:.*]] = trc.select %{{.*}}, %[[ROWS]]
// CHECK: trc.all_reduce %[[MASKED]] sum group = tensor : tensor<2x5x3xf32>
module attributes {trc.grid = {tensor = 2 : i64}} {
  func.func @embedding(%ids: tensor<2x5xi64>,
                       %table: tensor<8x3xf32> {trc.param = "wte", trc.sharding = #trc.sharding<[{tensor}, {}]>})
      -> tensor<2x5x3xf32> {
    %e = trc.gather %table, %ids axis = 0 : (tensor<8x3xf32>, tensor<2x5xi64>) -> tensor<2x5x3xf32>
    %t = trc.tanh %e : tensor<2x5x3xf32>
    return %t : tensor<2x5x3xf32>
  }
}

// -----

// A partial value whose user splits a dim is reduce-scattered (sequence
// parallelism's collective), not all-reduced and sliced.
// CHECK-LABEL: func.func @reduce_scatter
// CHECK: %[[P:.*]] = trc.dot_general {{.*}} -> tensor<4x8xf32>
// CHECK-NEXT: %[[FLAT:.*]] = trc.reshape %[[P]] : (tensor<4x8xf32>) -> tensor<32xf32>
// CHECK: %[[RS:.*]] = trc.reduce_scatter %[[FLAT]] sum group = tensor shards = 2 : (tensor<32xf32>) -> tensor<16xf32>
// CHECK: trc.reshape %[[RS]] : (tensor<16xf32>) -> tensor<2x8xf32>
module attributes {trc.grid = {tensor = 2 : i64}} {
  func.func @reduce_scatter(%x: tensor<4x16xf32> {trc.sharding = #trc.sharding<[{}, {tensor}]>},
                            %w: tensor<16x8xf32> {trc.sharding = #trc.sharding<[{tensor}, {}]>})
      -> tensor<4x8xf32> {
    %y = trc.dot_general %x, %w, batch = [] x [], contract = [1] x [0]
        {trc.sharding = [#trc.sharding<[{}, {}], partial = sum {tensor}>]}
        : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
    %e = trc.exp %y {trc.sharding = [#trc.sharding<[{tensor}, {}]>]} : tensor<4x8xf32>
    %w2 = trc.exp %e {trc.sharding = [#trc.sharding<[{}, {}]>]} : tensor<4x8xf32>
    return %w2 : tensor<4x8xf32>
  }
}

// -----

module attributes {trc.grid = {data = 2 : i64}} {
  func.func @no_group(%x: tensor<4xf32> {trc.sharding = #trc.sharding<[{data}]>}) -> tensor<4xf32> {
    // expected-error @+1 {{trc-partition: grid axis 'data' has no communicator group}}
    %e = trc.exp %x {trc.sharding = [#trc.sharding<[{}]>]} : tensor<4xf32>
    return %e : tensor<4xf32>
  }
}

// -----

// Context parallelism's head-tail layout (2 x mirrored, 8 positions over 2
// ranks in chunks of 2): rank 0 holds positions 0,1,6,7 and rank 1 2,3,4,5.
// A whole value (an iota, a table) a split user needs is reordered into
// the ranks' chunks before the rank takes its part; the
// returned value is gathered and its chunks put back in order (rows r0:0,
// r0:3, r1:1, r1:2 of the gathered chunks).
// CHECK-LABEL: func.func @head_tail
// CHECK-SAME: %[[IDS:.*]]: tensor<1x4xi64> {trc.input = "ids", trc.split = array<i64: 1, 2, 2, 1>, trc.split_of = array<i64: 1, 8>}
// CHECK: %[[IOTA:.*]] = trc.iota dim = 1 : tensor<1x8xi64>
// CHECK: %[[TO_RANKS:.*]] = trc.constant dense<[0, 3, 1, 2]> : tensor<4xi64>
// CHECK: trc.gather %{{.*}}, %[[TO_RANKS]] axis = 0 : (tensor<4x2x1xi64>, tensor<4xi64>) -> tensor<4x2x1xi64>
// CHECK: trc.shard_slice %{{.*}} group = context shards = 2 : (tensor<8xi64>) -> tensor<4xi64>
// CHECK: trc.constant dense<{{\[\[}}10, 11, 12, 13, 14, 15, 16, 17]]>
// CHECK: trc.gather %{{.*}}, %{{.*}} axis = 0 : (tensor<4x2x1xi64>, tensor<4xi64>) -> tensor<4x2x1xi64>
// CHECK: trc.shard_slice %{{.*}} group = context shards = 2 : (tensor<8xi64>) -> tensor<4xi64>
// CHECK: %[[ALL:.*]] = trc.all_gather %{{.*}} group = context shards = 2 : (tensor<4xi64>) -> tensor<8xi64>
// CHECK: %[[CHUNKS:.*]] = trc.reshape %[[ALL]] : (tensor<8xi64>) -> tensor<4x2x1xi64>
// CHECK: %[[IN_ORDER:.*]] = trc.constant dense<[0, 2, 3, 1]> : tensor<4xi64>
// CHECK: trc.gather %[[CHUNKS]], %[[IN_ORDER]] axis = 0 : (tensor<4x2x1xi64>, tensor<4xi64>) -> tensor<4x2x1xi64>
module attributes {trc.grid = {context = 2 : i64}} {
  func.func @head_tail(%ids: tensor<1x8xi64> {trc.input = "ids", trc.sharding = #trc.sharding<[{}, 2 x mirrored {context}]>})
      -> tensor<1x8xi64> {
    %pos = trc.iota dim = 1 : tensor<1x8xi64>
    %shifted = trc.add %ids, %pos : tensor<1x8xi64>
    %bias = trc.constant dense<[[10, 11, 12, 13, 14, 15, 16, 17]]> : tensor<1x8xi64>
    %sum = trc.add %shifted, %bias : tensor<1x8xi64>
    return %sum : tensor<1x8xi64>
  }
}
