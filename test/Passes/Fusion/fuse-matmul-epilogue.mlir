// trc-fuse: a matrix product takes the epilogue cuBLASLt applies to it:
// D = act(alpha * A B + C + bias) with alpha a constant scale, bias a vector
// broadcast along the rows, C a residual (beta = 1, `accumulate`) and act a
// GELU (the composite, or any decomposed spelling: recognized by
// evaluation). The pre-activation may be written too (gelu_aux, for the
// backward pass); anything else stays outside the epilogue.
// RUN: trc-opt %s --split-input-file --trc-fuse | FileCheck %s
// RUN: trc-opt %s --split-input-file --trc-fuse="matmul-epilogues=false" | FileCheck %s --check-prefix=OFF

// CHECK-LABEL: func.func @bias
// CHECK-NEXT: %[[F:.*]] = trc.fusion matmul_epilogue (%[[A:.*]] = %arg0 : tensor<2x8x16xf32>, %[[W:.*]] = %arg1 : tensor<16x32xf32>, %[[B:.*]] = %arg2 : tensor<32xf32>) -> (tensor<2x8x32xf32>) attributes {epilogue = "bias"} {
// CHECK-NEXT: %[[P:.*]] = trc.dot_general %[[A]], %[[W]]
// CHECK-NEXT: %[[BB:.*]] = trc.broadcast_in_dim %[[B]], dims = [2]
// CHECK-NEXT: %[[S:.*]] = trc.add %[[BB]], %[[P]]
// CHECK-NEXT: trc.yield %[[S]]
// CHECK-NEXT: }
// CHECK-NEXT: return %[[F]]
// OFF-LABEL: func.func @bias
// OFF-NEXT: trc.dot_general
// OFF-NEXT: trc.fusion elementwise
func.func @bias(%a: tensor<2x8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<2x8x32xf32> {
  %0 = trc.dot_general %a, %w, batch = [] x [], contract = [2] x [0] : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  %1 = trc.broadcast_in_dim %b, dims = [2] : (tensor<32xf32>) -> tensor<2x8x32xf32>
  %2 = trc.add %1, %0 : tensor<2x8x32xf32>
  return %2 : tensor<2x8x32xf32>
}

// -----

// GPT-2's MLP: bias, then GELU written out (tanh approximation, pow for the
// cube).
// CHECK-LABEL: func.func @bias_gelu_tanh
// CHECK-NEXT: %[[F:.*]] = trc.fusion matmul_epilogue ({{.*}}) -> (tensor<8x64xf32>) attributes {epilogue = "bias_gelu"} {
// CHECK: trc.dot_general
// CHECK: trc.tanh
// CHECK: trc.yield
// CHECK-NEXT: }
// CHECK-NEXT: return %[[F]]
func.func @bias_gelu_tanh(%a: tensor<8x16xf32>, %w: tensor<16x64xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {
  %0 = trc.dot_general %a, %w, batch = [] x [], contract = [1] x [0] : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
  %1 = trc.broadcast_in_dim %b, dims = [1] : (tensor<64xf32>) -> tensor<8x64xf32>
  %2 = trc.add %1, %0 : tensor<8x64xf32>
  %c05 = trc.constant dense<5.000000e-01> : tensor<8x64xf32>
  %3 = trc.mul %2, %c05 : tensor<8x64xf32>
  %c3 = trc.constant dense<3.000000e+00> : tensor<8x64xf32>
  %4 = trc.pow %2, %c3 : tensor<8x64xf32>
  %ck = trc.constant dense<4.471500e-02> : tensor<8x64xf32>
  %5 = trc.mul %4, %ck : tensor<8x64xf32>
  %6 = trc.add %2, %5 : tensor<8x64xf32>
  %cs = trc.constant dense<0.797884583> : tensor<8x64xf32>
  %7 = trc.mul %6, %cs : tensor<8x64xf32>
  %8 = trc.tanh %7 : tensor<8x64xf32>
  %c1 = trc.constant dense<1.000000e+00> : tensor<8x64xf32>
  %9 = trc.add %8, %c1 : tensor<8x64xf32>
  %10 = trc.mul %3, %9 : tensor<8x64xf32>
  return %10 : tensor<8x64xf32>
}

// -----

// The exact GELU, x * 0.5 * (1 + erf(x / sqrt 2)), without a bias.
// CHECK-LABEL: func.func @gelu_erf
// CHECK-NEXT: trc.fusion matmul_epilogue ({{.*}}) -> (tensor<8x64xf32>) attributes {epilogue = "gelu"} {
// CHECK: trc.erf
func.func @gelu_erf(%a: tensor<8x16xf32>, %w: tensor<16x64xf32>) -> tensor<8x64xf32> {
  %0 = trc.dot_general %a, %w, batch = [] x [], contract = [1] x [0] : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
  %r2 = trc.constant dense<1.41421354> : tensor<8x64xf32>
  %1 = trc.div %0, %r2 : tensor<8x64xf32>
  %2 = trc.erf %1 : tensor<8x64xf32>
  %c1 = trc.constant dense<1.000000e+00> : tensor<8x64xf32>
  %3 = trc.add %2, %c1 : tensor<8x64xf32>
  %4 = trc.mul %0, %3 : tensor<8x64xf32>
  %c05 = trc.constant dense<5.000000e-01> : tensor<8x64xf32>
  %5 = trc.mul %4, %c05 : tensor<8x64xf32>
  return %5 : tensor<8x64xf32>
}

// -----

// Something that is not a GELU stays out of the epilogue.
// CHECK-LABEL: func.func @not_gelu
// CHECK-NEXT: %[[P:.*]] = trc.dot_general
// CHECK-NEXT: trc.fusion elementwise (%{{.*}} = %[[P]] : tensor<8x64xf32>)
func.func @not_gelu(%a: tensor<8x16xf32>, %w: tensor<16x64xf32>) -> tensor<8x64xf32> {
  %0 = trc.dot_general %a, %w, batch = [] x [], contract = [1] x [0] : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
  %r2 = trc.constant dense<1.5> : tensor<8x64xf32>
  %1 = trc.div %0, %r2 : tensor<8x64xf32>
  %2 = trc.erf %1 : tensor<8x64xf32>
  %c1 = trc.constant dense<1.000000e+00> : tensor<8x64xf32>
  %3 = trc.add %2, %c1 : tensor<8x64xf32>
  %4 = trc.mul %0, %3 : tensor<8x64xf32>
  return %4 : tensor<8x64xf32>
}

// -----

// Attention projections: bias and the residual stream (C with beta = 1).
// CHECK-LABEL: func.func @bias_residual
// CHECK-NEXT: %[[F:.*]] = trc.fusion matmul_epilogue ({{.*}}, %{{.*}} = %arg3 : tensor<2x8x32xf32>) -> (tensor<2x8x32xf32>) attributes {accumulate, epilogue = "bias"} {
// CHECK: trc.dot_general
// CHECK: trc.add
// CHECK: trc.add
// CHECK-NEXT: trc.yield
func.func @bias_residual(%a: tensor<2x8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>, %r: tensor<2x8x32xf32>) -> tensor<2x8x32xf32> {
  %0 = trc.dot_general %a, %w, batch = [] x [], contract = [2] x [0] : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  %1 = trc.broadcast_in_dim %b, dims = [2] : (tensor<32xf32>) -> tensor<2x8x32xf32>
  %2 = trc.add %1, %0 : tensor<2x8x32xf32>
  %3 = trc.add %r, %2 : tensor<2x8x32xf32>
  return %3 : tensor<2x8x32xf32>
}

// -----

// Attention scores scaled by a constant: alpha.
// CHECK-LABEL: func.func @alpha
// CHECK-NEXT: trc.fusion matmul_epilogue ({{.*}}) -> (tensor<2x4x8x8xf32>) attributes {alpha = 1.250000e-01 : f64, epilogue = "none"} {
func.func @alpha(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32> {
  %0 = trc.dot_general %q, %k, batch = [0, 1] x [0, 1], contract = [3] x [2] : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %c = trc.constant dense<1.250000e-01> : tensor<2x4x8x8xf32>
  %1 = trc.mul %0, %c : tensor<2x4x8x8xf32>
  return %1 : tensor<2x4x8x8xf32>
}

// -----

// The pre-activation is read by the backward pass: written too (gelu_aux).
// CHECK-LABEL: func.func @gelu_aux
// CHECK-NEXT: %[[F:.*]]:2 = trc.fusion matmul_epilogue ({{.*}}) -> (tensor<8x64xf32>, tensor<8x64xf32>) attributes {epilogue = "bias_gelu", gelu_aux} {
// CHECK: %[[H:.*]] = trc.add
// CHECK-NEXT: %[[G:.*]] = trc.gelu %[[H]] tanh
// CHECK-NEXT: trc.yield %[[H]], %[[G]]
// CHECK: return %[[F]]#1, %[[F]]#0
func.func @gelu_aux(%a: tensor<8x16xf32>, %w: tensor<16x64xf32>, %b: tensor<64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %0 = trc.dot_general %a, %w, batch = [] x [], contract = [1] x [0] : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
  %1 = trc.broadcast_in_dim %b, dims = [1] : (tensor<64xf32>) -> tensor<8x64xf32>
  %2 = trc.add %0, %1 : tensor<8x64xf32>
  %3 = trc.gelu %2 tanh : tensor<8x64xf32>
  return %3, %2 : tensor<8x64xf32>, tensor<8x64xf32>
}

// -----

// cuBLASLt adds C before the activation: a residual after the GELU stays out.
// CHECK-LABEL: func.func @residual_after_gelu
// CHECK-NEXT: %[[F:.*]] = trc.fusion matmul_epilogue ({{.*}}) -> (tensor<8x64xf32>) attributes {epilogue = "bias_gelu"} {
// CHECK: trc.gelu
// CHECK: }
// CHECK-NEXT: %[[R:.*]] = trc.add %arg3, %[[F]]
// CHECK-NEXT: return %[[R]]
func.func @residual_after_gelu(%a: tensor<8x16xf32>, %w: tensor<16x64xf32>, %b: tensor<64xf32>, %r: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %0 = trc.dot_general %a, %w, batch = [] x [], contract = [1] x [0] : (tensor<8x16xf32>, tensor<16x64xf32>) -> tensor<8x64xf32>
  %1 = trc.broadcast_in_dim %b, dims = [1] : (tensor<64xf32>) -> tensor<8x64xf32>
  %2 = trc.add %0, %1 : tensor<8x64xf32>
  %3 = trc.gelu %2 : tensor<8x64xf32>
  %4 = trc.add %r, %3 : tensor<8x64xf32>
  return %4 : tensor<8x64xf32>
}

// -----

// The product itself is read twice: no epilogue; a vector broadcast along
// the columns is not a cuBLASLt bias either.
// CHECK-LABEL: func.func @no_epilogue
// CHECK-NEXT: %[[P:.*]] = trc.dot_general
// CHECK-NEXT: trc.fusion elementwise (%{{.*}} = %arg2 : tensor<32xf32>, %{{.*}} = %[[P]] : tensor<32x32xf32>)
// CHECK-LABEL: func.func @column_vector
// CHECK-NEXT: %[[P:.*]] = trc.dot_general
// CHECK-NEXT: trc.fusion elementwise
// CHECK-NEXT: trc.broadcast_in_dim %{{.*}}, dims = [0]
func.func @no_epilogue(%a: tensor<32x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> (tensor<32x32xf32>, tensor<32x32xf32>) {
  %0 = trc.dot_general %a, %w, batch = [] x [], contract = [1] x [0] : (tensor<32x16xf32>, tensor<16x32xf32>) -> tensor<32x32xf32>
  %1 = trc.broadcast_in_dim %b, dims = [1] : (tensor<32xf32>) -> tensor<32x32xf32>
  %2 = trc.add %0, %1 : tensor<32x32xf32>
  return %2, %0 : tensor<32x32xf32>, tensor<32x32xf32>
}
func.func @column_vector(%a: tensor<32x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<32x32xf32> {
  %0 = trc.dot_general %a, %w, batch = [] x [], contract = [1] x [0] : (tensor<32x16xf32>, tensor<16x32xf32>) -> tensor<32x32xf32>
  %1 = trc.broadcast_in_dim %b, dims = [0] : (tensor<32xf32>) -> tensor<32x32xf32>
  %2 = trc.add %0, %1 : tensor<32x32xf32>
  return %2 : tensor<32x32xf32>
}
