// trc-data-parallel: gradients averaged over the ranks in buckets placed as
// the gradients become ready; ZeRO stages shard them (and the parameters).
// RUN: trc-opt %s --split-input-file --trc-data-parallel="bucket-mb=1" -verify-diagnostics | FileCheck %s --check-prefix=DDP
// RUN: trc-opt %s --split-input-file --trc-data-parallel="bucket-mb=0.000015" -verify-diagnostics | FileCheck %s --check-prefix=SMALL
// RUN: trc-opt %s --split-input-file --trc-data-parallel="zero-stage=1 shard-degree=4" -verify-diagnostics | FileCheck %s --check-prefix=Z1
// RUN: trc-opt %s --split-input-file --trc-data-parallel="zero-stage=2 shard-degree=4 hybrid=true" -verify-diagnostics | FileCheck %s --check-prefix=Z2
// RUN: trc-opt %s --split-input-file --trc-data-parallel="zero-stage=3 shard-degree=4" -verify-diagnostics | FileCheck %s --check-prefix=Z3
// RUN: not trc-opt %s --split-input-file --trc-data-parallel="zero-stage=4" 2>&1 | FileCheck %s --check-prefix=BAD-STAGE
// RUN: not trc-opt %s --split-input-file --trc-data-parallel="zero-stage=1 shard-degree=0" 2>&1 | FileCheck %s --check-prefix=BAD-DEGREE
// RUN: not trc-opt %s --split-input-file --trc-data-parallel="bucket-mb=0" 2>&1 | FileCheck %s --check-prefix=BAD-BUCKET

// Plain data parallelism: one bucket in the order the gradients are ready (b, w, c),
// all-reduced right after the last of them; the loss is averaged last.
// DDP-LABEL: func.func @main_grad
// DDP: %[[GB:.*]] = trc.exp
// DDP-NEXT: %[[GW:.*]] = trc.neg
// DDP-NEXT: trc.add
// DDP-NEXT: %[[GC:.*]] = trc.sqrt
// DDP-NEXT: %[[FW:.*]] = trc.reshape %[[GW]] : (tensor<2x3xf32>) -> tensor<6xf32>
// DDP-NEXT: %[[BUCKET:.*]] = trc.concatenate %[[GB]], %[[FW]], %[[GC]] dim = 0 : (tensor<3xf32>, tensor<6xf32>, tensor<3xf32>) -> tensor<12xf32>
// DDP-NEXT: %[[AVG:.*]] = trc.all_reduce %[[BUCKET]] avg group = world : tensor<12xf32>
// DDP: %[[L:.*]] = trc.all_reduce %{{.*}} avg group = world : tensor<f32>
// DDP-NEXT: return %[[L]], %{{.*}}, %{{.*}}, %{{.*}} : tensor<f32>, tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>

// A 16-byte cap: every gradient is its own bucket, each right after it is
// computed (b's before w's is produced, the last one after trc.sqrt).
// SMALL: trc.exp
// SMALL-NEXT: trc.all_reduce %{{.*}} avg group = world : tensor<3xf32>
// SMALL: trc.neg
// SMALL-NEXT: trc.reshape
// SMALL-NEXT: trc.all_reduce %{{.*}} avg group = world : tensor<6xf32>
// SMALL: trc.sqrt
// SMALL-NEXT: trc.all_reduce %{{.*}} avg group = world : tensor<3xf32>

// ZeRO-1 compiles like ZeRO-2 (a full gradient only lives until its bucket
// is reduced inside the step): reduce-scatter, no replica average.
// Z1-LABEL: func.func @main_grad
// Z1-SAME: tensor<2xf32> {trc.grad_of = "w", trc.shard_degree = 4 : i64, trc.shard_of = array<i64: 2, 3>}
// Z1: trc.reduce_scatter %{{.*}} avg group = shard shards = 4 : (tensor<16xf32>) -> tensor<4xf32>
// Z1-NOT: group = replica
// Z1-NOT: trc.all_gather

// ZeRO-2 (hybrid): the bucket laid out rank-major ([4, 1 + 2 + 1]),
// reduce-scattered over the shard group, then averaged over the replicas.
// Z2-LABEL: func.func @main_grad
// Z2: trc.concatenate %{{.*}}, %{{.*}}, %{{.*}} dim = 1 : (tensor<4x1xf32>, tensor<4x2xf32>, tensor<4x1xf32>) -> tensor<4x4xf32>
// Z2: trc.reduce_scatter %{{.*}} avg group = shard shards = 4 : (tensor<16xf32>) -> tensor<4xf32>
// Z2-NEXT: trc.all_reduce %{{.*}} avg group = replica : tensor<4xf32>
// Z2: return {{.*}} : tensor<f32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>

// ZeRO-3: trainable parameters arrive as shards and are gathered before
// each use (twice for b, used twice); a layout op between a parameter and
// its users (w's transpose) is cloned per use, so w is gathered for each
// of its two consumers rather than once at the top.
// Z3-LABEL: func.func @main_grad
// Z3-SAME: %[[W:.*]]: tensor<2xf32> {trc.param = "w", trc.shard_degree = 4 : i64, trc.shard_of = array<i64: 2, 3>}
// Z3-SAME: %[[B:.*]]: tensor<1xf32> {trc.param = "b", trc.shard_degree = 4 : i64, trc.shard_of = array<i64: 3>}
// Z3: trc.all_gather %[[W]] group = shard shards = 4 : (tensor<2xf32>) -> tensor<8xf32>
// Z3: trc.transpose
// Z3-NEXT: trc.mul
// Z3: trc.all_gather %[[W]] group = shard shards = 4 : (tensor<2xf32>) -> tensor<8xf32>
// Z3: trc.transpose
// Z3-NEXT: trc.reduce
// Z3-COUNT-2: trc.all_gather %[[B]] group = shard shards = 4 : (tensor<1xf32>) -> tensor<4xf32>
// Z3: trc.reduce_scatter
// Z3-NOT: hybrid
// Z3-NOT: group = replica

// BAD-STAGE: error: trc-data-parallel: zero-stage must be 0, 1, 2 or 3, got 4
// BAD-DEGREE: error: trc-data-parallel: shard-degree must be at least 1, got 0
// BAD-BUCKET: error: trc-data-parallel: bucket-mb must be positive, got 0
trc.parameter @w : tensor<2x3xf32> = dense<1.0> : tensor<2x3xf32>
trc.parameter @b : tensor<3xf32> = dense<1.0> : tensor<3xf32>
trc.parameter @c : tensor<3xf32> = dense<1.0> : tensor<3xf32>
func.func @main_grad(%w: tensor<2x3xf32> {trc.param = "w"}, %b: tensor<3xf32> {trc.param = "b"}, %c: tensor<3xf32> {trc.param = "c"}, %x: tensor<2x3xf32> {trc.input = "x"}) -> (tensor<f32>, tensor<2x3xf32> {trc.grad_of = "w"}, tensor<3xf32> {trc.grad_of = "b"}, tensor<3xf32> {trc.grad_of = "c"}) {
  %wt = trc.transpose %w, perm = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %xt = trc.transpose %x, perm = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %p = trc.mul %wt, %xt : tensor<3x2xf32>
  %l0 = trc.reduce sum %p dims = [0, 1] : (tensor<3x2xf32>) -> tensor<f32>
  %l1 = trc.reduce sum %wt dims = [0, 1] : (tensor<3x2xf32>) -> tensor<f32>
  %l = trc.add %l0, %l1 : tensor<f32>
  %gb = trc.exp %b : tensor<3xf32>
  %gw = trc.neg %x : tensor<2x3xf32>
  %bc = trc.add %b, %c : tensor<3xf32>
  %gc = trc.sqrt %bc : tensor<3xf32>
  return %l, %gw, %gb, %gc : tensor<f32>, tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// expected-error @+1 {{trc-data-parallel needs @main_grad (run trc-autodiff first)}}
module {
  func.func @main() {
    return
  }
}

// -----

// A frozen parameter's new value (batch normalization's running statistics
// of this rank's rows) is averaged over the world, as the loss is.
// DDP-LABEL: func.func @main_grad
// DDP: %[[N:.*]] = trc.add %arg1, %arg2 : tensor<4xf32>
// DDP: trc.all_reduce %{{.*}} avg group =  world : tensor<f32>
// DDP: %[[AVG:.*]] = trc.all_reduce %[[N]]  avg group =  world : tensor<4xf32>
// DDP: return %{{.*}}, %{{.*}}, %[[AVG]] :
trc.parameter @w : tensor<4xf32> = dense<1.0> : tensor<4xf32>
trc.parameter @stat frozen : tensor<4xf32> = dense<0.0> : tensor<4xf32>
func.func @main_grad(%w: tensor<4xf32> {trc.param = "w"}, %s: tensor<4xf32> {trc.param = "stat"}, %x: tensor<4xf32> {trc.input = "x"}) -> (tensor<f32>, tensor<4xf32> {trc.grad_of = "w"}, tensor<4xf32> {trc.update = "stat"}) {
  %p = trc.mul %w, %x : tensor<4xf32>
  %l = trc.reduce sum %p dims = [0] : (tensor<4xf32>) -> tensor<f32>
  %n = trc.add %s, %x : tensor<4xf32>
  return %l, %x, %n : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Context parallelism (trc-partition) returns gradients as sums over the
// context axis. Without ZeRO those sums fold into the bucket: one all-reduce
// over data x context, averaged there and times C = 2 (summed over the
// context axis, averaged over the data axis); a gradient that is not a
// context sum (c's, an argument: ready first) gets a bucket of its own over
// the data axis. With ZeRO the shard group splits data x context, so the
// bucket's reduce-scatter (averaged there) is times C alike. No
// per-gradient context sum is left.
// DDP-LABEL: func.func @main_grad
// DDP: trc.all_reduce %arg2 avg group = world : tensor<3xf32>
// DDP: %[[BUCKET:.*]] = trc.concatenate %arg{{.*}}, %{{.*}} dim = 0 : (tensor<3xf32>, tensor<6xf32>) -> tensor<9xf32>
// DDP-NEXT: %[[AVG:.*]] = trc.all_reduce %[[BUCKET]] avg group = data_context : tensor<9xf32>
// DDP-NEXT: %[[TWO:.*]] = trc.constant dense<2.000000e+00> : tensor<9xf32>
// DDP-NEXT: trc.mul %[[AVG]], %[[TWO]] : tensor<9xf32>
// DDP-NOT: group = context
// DDP: return
// Z1-LABEL: func.func @main_grad
// Z1: trc.reduce_scatter %{{.*}} avg group = shard shards = 4 : (tensor<4xf32>) -> tensor<1xf32>
// Z1-NOT: group = context
// Z1: %[[SHARD:.*]] = trc.reduce_scatter %{{.*}} avg group = shard shards = 4 : (tensor<12xf32>) -> tensor<3xf32>
// Z1-NEXT: %[[TWO:.*]] = trc.constant dense<2.000000e+00> : tensor<3xf32>
// Z1-NEXT: trc.mul %[[SHARD]], %[[TWO]] : tensor<3xf32>
// Z1-NOT: group = context
// Z1: return
module attributes {trc.grid = {context = 2 : i64}} {
  trc.parameter @w : tensor<2x3xf32> = dense<1.0> : tensor<2x3xf32>
  trc.parameter @b : tensor<3xf32> = dense<1.0> : tensor<3xf32>
  trc.parameter @c : tensor<3xf32> = dense<1.0> : tensor<3xf32>
  func.func @main_grad(%w: tensor<2x3xf32> {trc.param = "w"}, %b: tensor<3xf32> {trc.param = "b"}, %c: tensor<3xf32> {trc.param = "c"}, %x: tensor<2x3xf32> {trc.input = "x"}) -> (tensor<f32>, tensor<2x3xf32> {trc.grad_of = "w"}, tensor<3xf32> {trc.grad_of = "b"}, tensor<3xf32> {trc.grad_of = "c"}) {
    %l = trc.reduce sum %x dims = [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
    %gw = trc.neg %x : tensor<2x3xf32>
    %sw = trc.all_reduce %gw sum group = context : tensor<2x3xf32>
    %sb = trc.all_reduce %b sum group = context : tensor<3xf32>
    return %l, %sw, %sb, %c : tensor<f32>, tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>
  }
}
