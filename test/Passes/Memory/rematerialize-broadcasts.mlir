// trc-rematerialize-broadcasts: a broadcast, an iota-like generic, a fill
// of an empty tensor and an empty tensor, each used twice, get one copy per
// use placed right before it (the shared original is gone); a generic that
// reads a full-size input or has one use stays as it is.
// RUN: trc-opt %s --pass-pipeline="builtin.module(func.func(trc-rematerialize-broadcasts))" | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @main(%b: tensor<8xf32>, %x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %bc = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b : tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x8xf32>
  %a = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %bc : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %s = arith.addf %in, %in2 : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %bc : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %s = arith.mulf %in, %in2 : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %p = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %q = linalg.matmul ins(%m, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %a, %m, %p, %q : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// CHECK-LABEL: func.func @main(
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK-NEXT: %[[BC1:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<8xf32>) outs(%[[E1]]
// CHECK: %[[E2:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK-NEXT: %[[A:.*]] = linalg.generic {{.*}} ins(%arg1, %[[BC1]] : {{.*}}) outs(%[[E2]]
// CHECK: %[[E3:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK-NEXT: %[[BC2:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<8xf32>) outs(%[[E3]]
// CHECK: linalg.generic {{.*}} ins(%[[A]], %[[BC2]] : {{.*}})
// CHECK: %[[F1:.*]] = linalg.fill {{.*}} outs(%{{.*}} : tensor<4x8xf32>)
// CHECK-NEXT: linalg.matmul ins(%arg1, %arg2 {{.*}} outs(%[[F1]]
// CHECK: %[[F2:.*]] = linalg.fill {{.*}} outs(%{{.*}} : tensor<4x8xf32>)
// CHECK-NEXT: linalg.matmul ins({{.*}} outs(%[[F2]]
