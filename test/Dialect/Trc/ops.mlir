// Every trc op parses, verifies, prints, and parses back to the same IR.
// RUN: trc-opt %s | trc-opt | FileCheck %s
// RUN: trc-opt %s --mlir-print-op-generic | trc-opt | FileCheck %s

// CHECK-LABEL: trc.parameter @w : tensor<4x8xf32> = dense<1.000000e+00>
trc.parameter @w : tensor<4x8xf32> = dense<1.0> : tensor<4x8xf32>
// CHECK: trc.parameter @table frozen : tensor<3xf32> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]>
trc.parameter @table frozen : tensor<3xf32> = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
// A parameter may leave its initial value out (created where it lives).
// CHECK: trc.parameter @uninit : tensor<2xbf16>{{$}}
trc.parameter @uninit : tensor<2xbf16>

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %p: tensor<4x8xi1>) -> tensor<4x8xf32> {
  // CHECK: trc.add %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %0 = trc.add %a, %b : tensor<4x8xf32>
  // CHECK: trc.sub
  %1 = trc.sub %0, %b : tensor<4x8xf32>
  // CHECK: trc.mul
  %2 = trc.mul %1, %b : tensor<4x8xf32>
  // CHECK: trc.div
  %3 = trc.div %2, %b : tensor<4x8xf32>
  // CHECK: trc.pow
  %4 = trc.pow %3, %b : tensor<4x8xf32>
  // CHECK: trc.max
  %5 = trc.max %4, %b : tensor<4x8xf32>
  // CHECK: trc.min
  %6 = trc.min %5, %b : tensor<4x8xf32>
  // CHECK: trc.neg
  %7 = trc.neg %6 : tensor<4x8xf32>
  // CHECK: trc.abs
  %8 = trc.abs %7 : tensor<4x8xf32>
  // CHECK: trc.exp
  %9 = trc.exp %8 : tensor<4x8xf32>
  // CHECK: trc.log
  %10 = trc.log %9 : tensor<4x8xf32>
  // CHECK: trc.sqrt
  %11 = trc.sqrt %10 : tensor<4x8xf32>
  // CHECK: trc.rsqrt
  %12 = trc.rsqrt %11 : tensor<4x8xf32>
  // CHECK: trc.tanh
  %13 = trc.tanh %12 : tensor<4x8xf32>
  // CHECK: trc.erf
  %14 = trc.erf %13 : tensor<4x8xf32>
  // CHECK: trc.sin
  %15 = trc.sin %14 : tensor<4x8xf32>
  // CHECK: trc.cos
  %16 = trc.cos %15 : tensor<4x8xf32>
  // CHECK: trc.logistic
  %17 = trc.logistic %16 : tensor<4x8xf32>
  // CHECK: trc.floor
  %18 = trc.floor %17 : tensor<4x8xf32>
  // CHECK: trc.compare lt, %{{.*}}, %{{.*}} : tensor<4x8xf32> -> tensor<4x8xi1>
  %c = trc.compare lt, %18, %b : tensor<4x8xf32> -> tensor<4x8xi1>
  // CHECK: trc.and
  %and = trc.and %c, %p : tensor<4x8xi1>
  // CHECK: trc.or
  %or = trc.or %and, %p : tensor<4x8xi1>
  // CHECK: trc.not
  %not = trc.not %or : tensor<4x8xi1>
  // CHECK: trc.select %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x8xi1>, tensor<4x8xf32>
  %s = trc.select %not, %18, %b : tensor<4x8xi1>, tensor<4x8xf32>
  // CHECK: trc.gelu %{{.*}} tanh : tensor<4x8xf32>
  %g = trc.gelu %s tanh : tensor<4x8xf32>
  // CHECK: trc.gelu %{{.*}} : tensor<4x8xf32>
  %g2 = trc.gelu %g : tensor<4x8xf32>
  return %g2 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @structure
func.func @structure(%x: tensor<2x3x4xf32>, %ids: tensor<5xi64>) -> tensor<2x5x4xf32> {
  // CHECK: trc.get_parameter @w : tensor<4x8xf32>
  %w = trc.get_parameter @w : tensor<4x8xf32>
  // CHECK: trc.dot_general %{{.*}}, %{{.*}}, batch = [] x [], contract = [2] x [0]
  %d = trc.dot_general %x, %w, batch = [] x [], contract = [2] x [0] : (tensor<2x3x4xf32>, tensor<4x8xf32>) -> tensor<2x3x8xf32>
  // CHECK: trc.reduce sum %{{.*}} dims = [2]
  %r = trc.reduce sum %d dims = [2] : (tensor<2x3x8xf32>) -> tensor<2x3xf32>
  // CHECK: trc.broadcast_in_dim %{{.*}}, dims = [0, 1]
  %b = trc.broadcast_in_dim %r, dims = [0, 1] : (tensor<2x3xf32>) -> tensor<2x3x4xf32>
  // CHECK: trc.transpose %{{.*}}, perm = [1, 0, 2]
  %t = trc.transpose %b, perm = [1, 0, 2] : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  // CHECK: trc.reshape %{{.*}} : (tensor<3x2x4xf32>) -> tensor<6x4xf32>
  %rs = trc.reshape %t : (tensor<3x2x4xf32>) -> tensor<6x4xf32>
  // CHECK: trc.slice %{{.*}}{{\[}}[0, 1] : [6, 4] : [2, 1]]
  %sl = trc.slice %rs[[0, 1] : [6, 4] : [2, 1]] : (tensor<6x4xf32>) -> tensor<3x3xf32>
  // CHECK: trc.reverse %{{.*}}, dims = [0]
  %rev = trc.reverse %sl, dims = [0] : tensor<3x3xf32>
  // CHECK: trc.concatenate %{{.*}}, %{{.*}} dim = 1
  %cat = trc.concatenate %rev, %rev dim = 1 : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x6xf32>
  %zero = trc.constant dense<0.0> : tensor<f32>
  // CHECK: trc.pad %{{.*}}, %{{.*}}, low = [1, 0], high = [0, 2]
  %pad = trc.pad %cat, %zero, low = [1, 0], high = [0, 2] : (tensor<3x6xf32>, tensor<f32>) -> tensor<4x8xf32>
  // CHECK: trc.iota dim = 1 : tensor<4x8xi64>
  %iota = trc.iota dim = 1 : tensor<4x8xi64>
  // CHECK: trc.convert %{{.*}} : tensor<4x8xi64> -> tensor<4x8xf32>
  %conv = trc.convert %iota : tensor<4x8xi64> -> tensor<4x8xf32>
  %sum = trc.add %pad, %conv : tensor<4x8xf32>
  // CHECK: trc.gather %{{.*}}, %{{.*}} axis = 1
  %gat = trc.gather %x, %ids axis = 1 : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<2x5x4xf32>
  // CHECK: trc.scatter_add %{{.*}}, %{{.*}}, %{{.*}} axis = 1
  %sc = trc.scatter_add %x, %ids, %gat axis = 1 : (tensor<2x3x4xf32>, tensor<5xi64>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  return %gat : tensor<2x5x4xf32>
}

// CHECK-LABEL: func.func @random_uniform
func.func @random_uniform(%key: tensor<i64>) -> tensor<4x8xbf16> {
  // CHECK: trc.random_uniform %{{.*}} stream = 3 : (tensor<i64>) -> tensor<4x8xbf16>
  %0 = trc.random_uniform %key stream = 3 : (tensor<i64>) -> tensor<4x8xbf16>
  return %0 : tensor<4x8xbf16>
}

// CHECK-LABEL: func.func @composites
func.func @composites(%x: tensor<2x3x8xf32>, %g: tensor<8xf32>, %labels: tensor<2x8xi64>) -> tensor<f32> {
  // CHECK: trc.softmax %{{.*}} axis = 2
  %0 = trc.softmax %x axis = 2 : tensor<2x3x8xf32>
  // CHECK: trc.log_softmax %{{.*}} axis = 1
  %1 = trc.log_softmax %0 axis = 1 : tensor<2x3x8xf32>
  // CHECK: trc.layer_norm %{{.*}} scale %{{.*}} bias %{{.*}} axis = 2 eps = 1.000000e-05
  %2 = trc.layer_norm %1 scale %g bias %g axis = 2 eps = 1.0e-5 : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  // CHECK: trc.layer_norm %{{.*}} axis = 2 eps = 1.000000e-05 : (tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %3 = trc.layer_norm %2 axis = 2 eps = 1.0e-5 : (tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  // CHECK: trc.dropout %{{.*}} ratio = 1.000000e-01 seed = 7
  %4 = trc.dropout %3 ratio = 0.1 seed = 7 : tensor<2x3x8xf32>
  // CHECK: trc.cross_entropy %{{.*}}, %{{.*}} reduction = mean ignore_index = -100
  %5 = trc.cross_entropy %4, %labels reduction = mean ignore_index = -100 : (tensor<2x3x8xf32>, tensor<2x8xi64>) -> tensor<f32>
  // CHECK: trc.cross_entropy %{{.*}}, %{{.*}} reduction = none log_probs
  %6 = trc.cross_entropy %1, %labels reduction = none log_probs : (tensor<2x3x8xf32>, tensor<2x8xi64>) -> tensor<2x8xf32>
  return %5 : tensor<f32>
}
