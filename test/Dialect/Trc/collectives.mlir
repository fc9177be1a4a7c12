// The collective ops: round trip, and their verifiers.
// RUN: trc-opt %s -split-input-file -verify-diagnostics | FileCheck %s
// Collectives have side effects: CSE keeps both identical all-reduces.
// RUN: trc-opt %s -split-input-file -verify-diagnostics --cse | FileCheck %s --check-prefix=CSE

// CHECK-LABEL: func.func @round_trip
// CHECK: trc.all_reduce %{{.*}} avg group = world : tensor<4x8xf32>
// CHECK: trc.reduce_scatter %{{.*}} sum group = shard shards = 4 : (tensor<32xf32>) -> tensor<8xf32>
// CHECK: trc.all_gather %{{.*}} group = shard shards = 4 : (tensor<8xf32>) -> tensor<32xf32>
// CHECK: trc.broadcast_from %{{.*}} root = 0 group = world : tensor<32xf32>
// CHECK: trc.shard_slice %{{.*}} group = shard shards = 4 : (tensor<32xf32>) -> tensor<8xf32>
// CHECK: trc.all_reduce %{{.*}} max group = replica : tensor<8xf32>
// CHECK: trc.collective_permute %{{.*}} shift = 1 group = context shards = 4 : tensor<4x8xf32>
// CHECK: trc.all_reduce %{{.*}} sum group = data_context : tensor<4x8xf32>
// CSE-LABEL: func.func @round_trip
// CSE-COUNT-2: trc.all_reduce %arg0 avg group = world
func.func @round_trip(%x: tensor<4x8xf32>, %flat: tensor<32xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<32xf32>, tensor<32xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %a = trc.all_reduce %x avg group = world : tensor<4x8xf32>
  %a2 = trc.all_reduce %x avg group = world : tensor<4x8xf32>
  %s = trc.reduce_scatter %flat sum group = shard shards = 4 : (tensor<32xf32>) -> tensor<8xf32>
  %g = trc.all_gather %s group = shard shards = 4 : (tensor<8xf32>) -> tensor<32xf32>
  %b = trc.broadcast_from %g root = 0 group = world : tensor<32xf32>
  %m = trc.shard_slice %b group = shard shards = 4 : (tensor<32xf32>) -> tensor<8xf32>
  %r = trc.all_reduce %m max group = replica : tensor<8xf32>
  %p = trc.collective_permute %x shift = 1 group = context shards = 4 : tensor<4x8xf32>
  %dc = trc.all_reduce %p sum group = data_context : tensor<4x8xf32>
  return %a, %a2, %g, %b, %r, %p, %dc : tensor<4x8xf32>, tensor<4x8xf32>, tensor<32xf32>, tensor<32xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

func.func @scatter_not_divisible(%x: tensor<30xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{operand has 30 elements, expected 4 x 8 (result)}}
  %0 = trc.reduce_scatter %x avg group = shard shards = 4 : (tensor<30xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @gather_2d(%x: tensor<2x4xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{expects 1-D result and operand}}
  %0 = trc.all_gather %x group = shard shards = 2 : (tensor<2x4xf32>) -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

func.func @slice_element_type(%x: tensor<8xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{changes the element type from 'f32' to 'f16'}}
  %0 = trc.shard_slice %x group = shard shards = 2 : (tensor<8xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

func.func @zero_shards(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{shards must be at least 1, got 0}}
  %0 = trc.shard_slice %x group = shard shards = 0 : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @negative_root(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{root must be a rank (>= 0), got -1}}
  %0 = trc.broadcast_from %x root = -1 group = world : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @integer_all_reduce(%x: tensor<8xi32>) -> tensor<8xi32> {
  // expected-error @+1 {{must be statically shaped tensor of}}
  %0 = trc.all_reduce %x sum group = world : tensor<8xi32>
  return %0 : tensor<8xi32>
}

// -----

func.func @permute_shift_past_ring(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{shift must be in [1, shards), got 2}}
  %0 = trc.collective_permute %x shift = 2 group = context shards = 2 : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @permute_type_change(%x: tensor<8xf32>) -> tensor<8xf16> {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "trc.collective_permute"(%x) {shift = 1 : i64, group = #trc<group context>, shards = 2 : i64} : (tensor<8xf32>) -> tensor<8xf16>
  return %0 : tensor<8xf16>
}
