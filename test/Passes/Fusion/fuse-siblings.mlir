// trc-fuse: groups of one domain that read the same large input share one
// pass over it (one kernel, several results); a small shared input (a
// scalar) is no reason to fuse, nor is any merge that would need an outside
// op both before and after the kernel. siblings=false turns it off.
// RUN: trc-opt %s --split-input-file --trc-fuse | FileCheck %s
// RUN: trc-opt %s --split-input-file --trc-fuse="siblings=false" | FileCheck %s --check-prefix=OFF

// The scale and bias gradients of a layer norm: two column sums over dy.
// CHECK-LABEL: func.func @layer_norm_weight_grads
// CHECK-NEXT: %[[F:.*]]:2 = trc.fusion reduction (%[[DY:.*]] = %arg0 : tensor<2x16x64xf32>, %[[XH:.*]] = %arg1 : tensor<2x16x64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
// CHECK-NEXT: %[[P:.*]] = trc.mul %[[DY]], %[[XH]]
// CHECK-NEXT: %[[DG:.*]] = trc.reduce sum %[[P]] dims = [0, 1]
// CHECK-NEXT: %[[DB:.*]] = trc.reduce sum %[[DY]] dims = [0, 1]
// CHECK-NEXT: trc.yield %[[DG]], %[[DB]]
// CHECK: return %[[F]]#0, %[[F]]#1
// OFF-LABEL: func.func @layer_norm_weight_grads
// OFF-NEXT: trc.fusion reduction
// OFF: trc.reduce sum %arg0 dims = [0, 1]
func.func @layer_norm_weight_grads(%dy: tensor<2x16x64xf32>, %xhat: tensor<2x16x64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %0 = trc.mul %dy, %xhat : tensor<2x16x64xf32>
  %1 = trc.reduce sum %0 dims = [0, 1] : (tensor<2x16x64xf32>) -> tensor<64xf32>
  %2 = trc.reduce sum %dy dims = [0, 1] : (tensor<2x16x64xf32>) -> tensor<64xf32>
  return %1, %2 : tensor<64xf32>, tensor<64xf32>
}

// -----

// Two elementwise consumers of x: x is read once.
// CHECK-LABEL: func.func @elementwise_siblings
// CHECK-NEXT: %[[F:.*]]:2 = trc.fusion elementwise (%[[X:.*]] = %arg0 : tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
// CHECK-NEXT: trc.exp %[[X]]
// CHECK-NEXT: trc.neg %[[X]]
// CHECK: return %[[F]]#0, %[[F]]#1
// OFF-LABEL: func.func @elementwise_siblings
// OFF-NEXT: trc.exp %arg0
// OFF-NEXT: trc.neg %arg0
func.func @elementwise_siblings(%x: tensor<64x64xf32>) -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %a = trc.exp %x : tensor<64x64xf32>
  %b = trc.neg %x : tensor<64x64xf32>
  return %a, %b : tensor<64x64xf32>, tensor<64x64xf32>
}

// -----

// Only a scalar in common: two kernels.
// CHECK-LABEL: func.func @small_shared_input
// CHECK: trc.fusion elementwise (%{{.*}} = %arg2 : tensor<f32>, %{{.*}} = %arg0 : tensor<4x8xf32>) -> (tensor<4x8xf32>)
// CHECK: trc.fusion elementwise (%{{.*}} = %arg2 : tensor<f32>, %{{.*}} = %arg1 : tensor<4x8xf32>) -> (tensor<4x8xf32>)
func.func @small_shared_input(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %s: tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %b = trc.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
  %0 = trc.mul %x, %b : tensor<4x8xf32>
  %1 = trc.mul %y, %b : tensor<4x8xf32>
  return %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Both read x, but the second also reads the first through a transpose.
// CHECK-LABEL: func.func @dependent_siblings
// CHECK-NEXT: %[[A:.*]] = trc.exp %arg0
// CHECK-NEXT: %[[T:.*]] = trc.transpose %[[A]]
// CHECK-NEXT: %[[B:.*]] = trc.add %arg0, %[[T]]
// CHECK-NEXT: return %[[B]]
func.func @dependent_siblings(%x: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %a = trc.exp %x : tensor<64x64xf32>
  %t = trc.transpose %a, perm = [1, 0] : (tensor<64x64xf32>) -> tensor<64x64xf32>
  %b = trc.add %x, %t : tensor<64x64xf32>
  return %b : tensor<64x64xf32>
}
