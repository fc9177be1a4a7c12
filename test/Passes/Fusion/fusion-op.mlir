// trc.fusion prints and parses back to the same IR (each block argument
// named with the value bound to it); trc-unfuse inlines the bodies back.
// RUN: trc-opt %s | trc-opt | FileCheck %s
// RUN: trc-opt %s --trc-unfuse | FileCheck %s --check-prefix=UNFUSE

// CHECK-LABEL: func.func @elementwise
// CHECK: %[[R:.*]] = trc.fusion elementwise (%[[A:.*]] = %arg0 : tensor<4xf32>, %[[B:.*]] = %arg1 : tensor<4xf32>) -> (tensor<4xf32>) {
// CHECK-NEXT: %[[S:.*]] = trc.add %[[A]], %[[B]] : tensor<4xf32>
// CHECK-NEXT: %[[E:.*]] = trc.exp %[[S]] : tensor<4xf32>
// CHECK-NEXT: trc.yield %[[E]] : tensor<4xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[R]]
// UNFUSE-LABEL: func.func @elementwise
// UNFUSE-NEXT: %[[S:.*]] = trc.add %arg0, %arg1 : tensor<4xf32>
// UNFUSE-NEXT: %[[E:.*]] = trc.exp %[[S]] : tensor<4xf32>
// UNFUSE-NEXT: return %[[E]]
func.func @elementwise(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %r = trc.fusion elementwise (%a = %x : tensor<4xf32>, %b = %y : tensor<4xf32>) -> (tensor<4xf32>) {
    %s = trc.add %a, %b : tensor<4xf32>
    %e = trc.exp %s : tensor<4xf32>
    trc.yield %e : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// Several results; a reduction group.
// CHECK-LABEL: func.func @reduction
// CHECK: %[[R:.*]]:2 = trc.fusion reduction (%{{.*}} = %arg0 : tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
// CHECK: trc.reduce max
// CHECK: trc.yield %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4xf32>
// CHECK: return %[[R]]#0, %[[R]]#1
// UNFUSE-LABEL: func.func @reduction
// UNFUSE-NOT: trc.fusion
// UNFUSE: %[[M:.*]] = trc.reduce max %arg0
// UNFUSE: %[[D:.*]] = trc.sub %arg0,
// UNFUSE: return %[[D]], %[[M]]
func.func @reduction(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
  %r:2 = trc.fusion reduction (%a = %x : tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>) {
    %m = trc.reduce max %a dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
    %b = trc.broadcast_in_dim %m, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
    %d = trc.sub %a, %b : tensor<4x8xf32>
    trc.yield %d, %m : tensor<4x8xf32>, tensor<4xf32>
  }
  return %r#0, %r#1 : tensor<4x8xf32>, tensor<4xf32>
}

// A matrix product with its cuBLASLt epilogue attributes.
// CHECK-LABEL: func.func @matmul
// CHECK: trc.fusion matmul_epilogue (%{{.*}} = %arg0 : tensor<4x8xf32>, %{{.*}} = %arg1 : tensor<8x16xf32>, %{{.*}} = %arg2 : tensor<16xf32>, %{{.*}} = %arg3 : tensor<4x16xf32>) -> (tensor<4x16xf32>) attributes {accumulate, alpha = 5.000000e-01 : f64, epilogue = "bias"} {
// CHECK: trc.dot_general
// UNFUSE-LABEL: func.func @matmul
// UNFUSE: trc.dot_general %arg0, %arg1
func.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %bias: tensor<16xf32>, %res: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %r = trc.fusion matmul_epilogue (%x = %a : tensor<4x8xf32>, %w = %b : tensor<8x16xf32>, %c = %bias : tensor<16xf32>, %z = %res : tensor<4x16xf32>) -> (tensor<4x16xf32>) attributes {accumulate, alpha = 0.5 : f64, epilogue = "bias"} {
    %p = trc.dot_general %x, %w, batch = [] x [], contract = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %h = trc.constant dense<0.5> : tensor<4x16xf32>
    %s = trc.mul %p, %h : tensor<4x16xf32>
    %bb = trc.broadcast_in_dim %c, dims = [1] : (tensor<16xf32>) -> tensor<4x16xf32>
    %t = trc.add %s, %bb : tensor<4x16xf32>
    %u = trc.add %t, %z : tensor<4x16xf32>
    trc.yield %u : tensor<4x16xf32>
  }
  return %r : tensor<4x16xf32>
}

// A group may read nothing (an iota and constants).
// CHECK-LABEL: func.func @no_inputs
// CHECK: trc.fusion elementwise () -> (tensor<4xf32>)
func.func @no_inputs() -> tensor<4xf32> {
  %r = trc.fusion elementwise () -> (tensor<4xf32>) {
    %i = trc.iota dim = 0 : tensor<4xf32>
    %e = trc.exp %i : tensor<4xf32>
    trc.yield %e : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
