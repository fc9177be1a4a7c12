// #trc.sharding: per-dim split axes (with blocks) and a pending partial.
// RUN: trc-opt %s --split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @round_trip
// CHECK-SAME: trc.sharding = #trc.sharding<[3 x {tensor}, {}]>
// CHECK-SAME: trc.sharding = #trc.sharding<[{}, 2 x mirrored {context}]>
// CHECK: trc.sharding = [#trc.sharding<[{}, {}], partial = sum {tensor}>]
// CHECK: trc.sharding = [#trc.sharding<[{tensor}, {}]>]
// CHECK: trc.sharding = [#trc.sharding<[{}], partial = max {tensor}>]
func.func @round_trip(%w: tensor<6x4xf32> {trc.sharding = #trc.sharding<[3 x {tensor}, {}]>},
                      %ids: tensor<2x8xi64> {trc.sharding = #trc.sharding<[{}, 2 x mirrored {context}]>},
                      %x: tensor<4x4xf32>) -> tensor<4xf32> {
  %p = trc.dot_general %x, %x, batch = [] x [], contract = [1] x [0]
      {trc.sharding = [#trc.sharding<[{}, {}], partial = sum {tensor}>]}
      : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %e = trc.exp %p {trc.sharding = [#trc.sharding<[{tensor}, {}]>]} : tensor<4x4xf32>
  %m = trc.reduce max %e dims = [1] {trc.sharding = [#trc.sharding<[{}], partial = max {tensor}>]}
      : (tensor<4x4xf32>) -> tensor<4xf32>
  return %m : tensor<4xf32>
}

// -----

// expected-error @+1 {{sharding splits dims 0 and 1 over axis 'tensor'}}
func.func @twice(%x: tensor<4x4xf32> {trc.sharding = #trc.sharding<[{tensor}, {tensor}]>}) {
  return
}

// -----

// expected-error @+1 {{sharding splits dim 0 over axis 'tensor' and is partial over it}}
func.func @split_and_partial(%x: tensor<4xf32> {trc.sharding = #trc.sharding<[{tensor}], partial = sum {tensor}>}) {
  return
}

// -----

// expected-error @+1 {{sharding dim 0: block count must be positive}}
func.func @zero_blocks(%x: tensor<4xf32> {trc.sharding = #trc.sharding<[0 x {tensor}]>}) {
  return
}

// -----

// expected-error @+1 {{unknown partial reduction 'avg2'}}
func.func @bad_kind(%x: tensor<4xf32> {trc.sharding = #trc.sharding<[{}], partial = avg2 {tensor}>}) {
  return
}

// -----

// A mirrored split hands out its odd blocks in reverse: it needs pairs.
// expected-error @+1 {{sharding dim 0: a mirrored split needs an even block count, got 3}}
func.func @odd_mirrored(%x: tensor<6xf32> {trc.sharding = #trc.sharding<[3 x mirrored {context}]>}) {
  return
}
