// trc-align-products: a matrix product whose operands' or result's innermost
// dimension (at least min-size elements) is not a multiple of 16 bytes gets
// it padded with zeros (a contracting or batch dim on both operands, a free
// dim on its own) and the result sliced back; aligned, small and integer
// products stay.
// RUN: trc-opt %s --pass-pipeline="builtin.module(func.func(trc-align-products))" | FileCheck %s
// RUN: trc-opt %s --pass-pipeline="builtin.module(func.func(trc-align-products{min-size=8}))" | FileCheck %s --check-prefix=SMALL

// The LM head: logits x w^T over a 50257-word vocabulary in bf16 (8 to 16
// bytes): w's rows padded to 50264, the logits sliced back.
// CHECK-LABEL: func.func @lm_head
// CHECK: %[[ZERO:.*]] = trc.constant dense<0.000000e+00> : tensor<bf16>
// CHECK: %[[W:.*]] = trc.pad %arg1, %[[ZERO]], low = [0, 0], high = [7, 0] : (tensor<50257x64xbf16>, tensor<bf16>) -> tensor<50264x64xbf16>
// CHECK: %[[Y:.*]] = trc.dot_general %arg0, %[[W]], batch = [] x [], contract = [1] x [1] : (tensor<4x64xbf16>, tensor<50264x64xbf16>) -> tensor<4x50264xbf16>
// CHECK: %[[S:.*]] = trc.slice %[[Y]]{{\[}}[0, 0] : [4, 50257] : [1, 1]] : (tensor<4x50264xbf16>) -> tensor<4x50257xbf16>
// CHECK: return %[[S]]
func.func @lm_head(%x: tensor<4x64xbf16>, %w: tensor<50257x64xbf16>) -> tensor<4x50257xbf16> {
  %y = trc.dot_general %x, %w, batch = [] x [], contract = [1] x [1] : (tensor<4x64xbf16>, tensor<50257x64xbf16>) -> tensor<4x50257xbf16>
  return %y : tensor<4x50257xbf16>
}

// Its input gradient: the logits' gradient contracted over the vocabulary
// (lhs's innermost dim): both operands padded along it, nothing to slice.
// In f32 the alignment is 4 elements (50257 -> 50260).
// CHECK-LABEL: func.func @input_grad
// CHECK: %[[G:.*]] = trc.pad %arg0, %{{.*}}, low = [0, 0], high = [0, 3] : (tensor<4x50257xf32>, tensor<f32>) -> tensor<4x50260xf32>
// CHECK: %[[W:.*]] = trc.pad %arg1, %{{.*}}, low = [0, 0], high = [3, 0] : (tensor<50257x64xf32>, tensor<f32>) -> tensor<50260x64xf32>
// CHECK: %[[D:.*]] = trc.dot_general %[[G]], %[[W]], batch = [] x [], contract = [1] x [0] : (tensor<4x50260xf32>, tensor<50260x64xf32>) -> tensor<4x64xf32>
// CHECK-NOT: trc.slice
// CHECK: return %[[D]]
func.func @input_grad(%g: tensor<4x50257xf32>, %w: tensor<50257x64xf32>) -> tensor<4x64xf32> {
  %d = trc.dot_general %g, %w, batch = [] x [], contract = [1] x [0] : (tensor<4x50257xf32>, tensor<50257x64xf32>) -> tensor<4x64xf32>
  return %d : tensor<4x64xf32>
}

// Its weight gradient: the vocabulary is lhs's free innermost dim, so only
// lhs is padded and the result's rows are sliced back; batched alike, with
// the batch dims left as they are.
// CHECK-LABEL: func.func @weight_grad
// CHECK: %[[G:.*]] = trc.pad %arg0, %{{.*}}, low = [0, 0, 0], high = [0, 0, 3] : (tensor<2x4x50257xf32>, tensor<f32>) -> tensor<2x4x50260xf32>
// CHECK: %[[D:.*]] = trc.dot_general %[[G]], %arg1, batch = [0] x [0], contract = [1] x [1] : (tensor<2x4x50260xf32>, tensor<2x4x64xf32>) -> tensor<2x50260x64xf32>
// CHECK: trc.slice %[[D]]{{\[}}[0, 0, 0] : [2, 50257, 64] : [1, 1, 1]] : (tensor<2x50260x64xf32>) -> tensor<2x50257x64xf32>
func.func @weight_grad(%g: tensor<2x4x50257xf32>, %x: tensor<2x4x64xf32>) -> tensor<2x50257x64xf32> {
  %d = trc.dot_general %g, %x, batch = [0] x [0], contract = [1] x [1] : (tensor<2x4x50257xf32>, tensor<2x4x64xf32>) -> tensor<2x50257x64xf32>
  return %d : tensor<2x50257x64xf32>
}

// Aligned dims, a misaligned dim below min-size (10 < 256) and an integer
// product are left alone; with min-size=8 the 10 is padded to 12 (f32).
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: trc.pad
// CHECK-NOT: trc.slice
// CHECK: return
// SMALL-LABEL: func.func @left_alone
// SMALL: trc.pad %arg1, %{{.*}}, low = [0, 0], high = [0, 2] : (tensor<64x10xf32>, tensor<f32>) -> tensor<64x12xf32>
// SMALL: trc.slice %{{.*}}{{\[}}[0, 0] : [4, 10] : [1, 1]] : (tensor<4x12xf32>) -> tensor<4x10xf32>
// SMALL-NOT: trc.pad %arg3
// SMALL: return
func.func @left_alone(%x: tensor<4x64xf32>, %w: tensor<64x10xf32>, %a: tensor<4x64xf32>, %i: tensor<4x12xi32>, %j: tensor<12x10xi32>) -> (tensor<4x10xf32>, tensor<4x4xf32>, tensor<4x10xi32>) {
  %y = trc.dot_general %x, %w, batch = [] x [], contract = [1] x [0] : (tensor<4x64xf32>, tensor<64x10xf32>) -> tensor<4x10xf32>
  %z = trc.dot_general %x, %a, batch = [] x [], contract = [1] x [1] : (tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x4xf32>
  %k = trc.dot_general %i, %j, batch = [] x [], contract = [1] x [0] : (tensor<4x12xi32>, tensor<12x10xi32>) -> tensor<4x10xi32>
  return %y, %z, %k : tensor<4x10xf32>, tensor<4x4xf32>, tensor<4x10xi32>
}
