// trc-fuse: producer-consumer chains of elementwise ops (with broadcasts,
// splat constants, compare, select and convert) become one kernel; values
// used outside the chain are extra results; broadcasts are copied into
// every group that reads them; groups of different shapes stay apart; a
// merge that would put an outside op both before and after a group is
// refused.
// RUN: trc-opt %s --split-input-file --trc-fuse | FileCheck %s

// One kernel reading x, y and the bias vector (not its broadcast).
// CHECK-LABEL: func.func @chain
// CHECK-SAME: attributes {trc.unfused_cost = array<i64: 5, 1440>}
// CHECK-NEXT: %[[F:.*]] = trc.fusion elementwise (%[[B:.*]] = %arg2 : tensor<8xf32>, %[[X:.*]] = %arg0 : tensor<4x8xf32>, %[[Y:.*]] = %arg1 : tensor<4x8xf32>) -> (tensor<4x8xf32>) {
// CHECK-NEXT: %[[BB:.*]] = trc.broadcast_in_dim %[[B]], dims = [1]
// CHECK-NEXT: %[[S:.*]] = trc.add %[[X]], %[[BB]]
// CHECK-NEXT: %[[C:.*]] = trc.constant dense<2.000000e+00>
// CHECK-NEXT: %[[M:.*]] = trc.mul %[[S]], %[[C]]
// CHECK-NEXT: %[[T:.*]] = trc.tanh %[[M]]
// CHECK-NEXT: %[[D:.*]] = trc.sub %[[T]], %[[Y]]
// CHECK-NEXT: trc.yield %[[D]] : tensor<4x8xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[F]]
func.func @chain(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %bb = trc.broadcast_in_dim %b, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %0 = trc.add %x, %bb : tensor<4x8xf32>
  %c = trc.constant dense<2.0> : tensor<4x8xf32>
  %1 = trc.mul %0, %c : tensor<4x8xf32>
  %2 = trc.tanh %1 : tensor<4x8xf32>
  %3 = trc.sub %2, %y : tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}

// -----

// An intermediate read outside the group is a second result.
// CHECK-LABEL: func.func @two_outputs
// CHECK-NEXT: %[[F:.*]]:2 = trc.fusion elementwise ({{.*}}) -> (tensor<16xf32>, tensor<16xf32>) {
// CHECK-NEXT: trc.mul
// CHECK-NEXT: %[[E:.*]] = trc.exp
// CHECK-NEXT: %[[A:.*]] = trc.add %[[E]]
// CHECK-NEXT: trc.yield %[[E]], %[[A]]
// CHECK: return %[[F]]#0, %[[F]]#1
func.func @two_outputs(%x: tensor<16xf32>, %y: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %0 = trc.mul %x, %y : tensor<16xf32>
  %1 = trc.exp %0 : tensor<16xf32>
  %2 = trc.add %1, %x : tensor<16xf32>
  return %1, %2 : tensor<16xf32>, tensor<16xf32>
}

// -----

// compare, select and convert are elementwise too.
// CHECK-LABEL: func.func @predicates
// CHECK-NEXT: trc.fusion elementwise ({{.*}}) -> (tensor<4x8xf16>) {
// CHECK-NEXT: trc.compare gt
// CHECK-NEXT: trc.select
// CHECK-NEXT: trc.convert
// CHECK-NEXT: trc.yield
func.func @predicates(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf16> {
  %m = trc.compare gt, %x, %y : tensor<4x8xf32> -> tensor<4x8xi1>
  %s = trc.select %m, %x, %y : tensor<4x8xi1>, tensor<4x8xf32>
  %h = trc.convert %s : tensor<4x8xf32> -> tensor<4x8xf16>
  return %h : tensor<4x8xf16>
}

// -----

// A broadcast read by two groups is copied into both and disappears.
// CHECK-LABEL: func.func @copied_broadcast
// CHECK-NOT: trc.broadcast_in_dim
// CHECK: %[[F1:.*]] = trc.fusion elementwise (%[[B:.*]] = %arg1 : tensor<8xf32>, %{{.*}} = %arg0 : tensor<4x8xf32>)
// CHECK-NEXT: trc.broadcast_in_dim %[[B]]
// CHECK-NEXT: trc.add
// CHECK: %[[T:.*]] = trc.transpose %[[F1]]
// CHECK: %[[TT:.*]] = trc.transpose %[[T]]
// CHECK: trc.fusion elementwise (%[[B2:.*]] = %arg1 : tensor<8xf32>, %{{.*}} = %[[TT]] : tensor<4x8xf32>)
// CHECK-NEXT: trc.broadcast_in_dim %[[B2]]
// CHECK-NEXT: trc.mul
// CHECK-NEXT: trc.exp
func.func @copied_broadcast(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8x4xf32>) {
  %bb = trc.broadcast_in_dim %b, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %0 = trc.add %x, %bb : tensor<4x8xf32>
  %t = trc.transpose %0, perm = [1, 0] : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %tt = trc.transpose %t, perm = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %1 = trc.mul %tt, %bb : tensor<4x8xf32>
  %2 = trc.exp %1 : tensor<4x8xf32>
  return %2, %t : tensor<4x8xf32>, tensor<8x4xf32>
}

// -----

// Scalar ops and tensor ops iterate over different spaces: two kernels, the
// second reading the scalar through a copied broadcast.
// CHECK-LABEL: func.func @shapes
// CHECK-NEXT: %[[S:.*]] = trc.fusion elementwise (%{{.*}} = %arg0 : tensor<f32>) -> (tensor<f32>) {
// CHECK-NEXT: trc.mul
// CHECK-NEXT: trc.sqrt
// CHECK-NEXT: trc.yield
// CHECK-NEXT: }
// CHECK-NEXT: trc.fusion elementwise (%{{.*}} = %[[S]] : tensor<f32>, %{{.*}} = %arg1 : tensor<4x8xf32>) -> (tensor<4x8xf32>) {
// CHECK-NEXT: trc.broadcast_in_dim
// CHECK-NEXT: trc.div
// CHECK-NEXT: trc.neg
func.func @shapes(%s: tensor<f32>, %x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = trc.mul %s, %s : tensor<f32>
  %1 = trc.sqrt %0 : tensor<f32>
  %b = trc.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<4x8xf32>
  %2 = trc.div %x, %b : tensor<4x8xf32>
  %3 = trc.neg %2 : tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}

// -----

// exp feeds the add directly and through a transpose: fusing exp with the
// add would need the transpose both before and after that kernel.
// CHECK-LABEL: func.func @no_cycle
// CHECK-NEXT: %[[E:.*]] = trc.exp %arg0
// CHECK-NEXT: %[[T:.*]] = trc.transpose %[[E]]
// CHECK-NEXT: trc.fusion elementwise (%{{.*}} = %[[E]] : tensor<4x4xf32>, %{{.*}} = %[[T]] : tensor<4x4xf32>)
// CHECK-NEXT: trc.add
// CHECK-NEXT: trc.neg
func.func @no_cycle(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %a = trc.exp %x : tensor<4x4xf32>
  %t = trc.transpose %a, perm = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %c = trc.add %a, %t : tensor<4x4xf32>
  %d = trc.neg %c : tensor<4x4xf32>
  return %d : tensor<4x4xf32>
}
