// trc-print-fusion-summary: kernels and device memory bytes before and after
// trc-fuse, per function and in total. Unfused (5 kernels):
//   dot_general   reads x (128 B) and w (256 B), writes 128 B    512
//   broadcast     reads b (32 B), writes 128 B                    160
//   add           reads 2 x 128 B, writes 128 B                   384
//   softmax, exp  read 128 B, write 128 B each                    512
// Fused (2 kernels): the product with its bias (x, w, b in, 128 B out: 544)
// and softmax with exp (128 B in, 128 B out: 256).
// RUN: trc-opt %s --trc-fuse --trc-print-fusion-summary -o /dev/null | FileCheck %s
// RUN: trc-opt %s --trc-print-fusion-summary -o /dev/null | FileCheck %s --check-prefix=UNFUSED
// RUN: trc-opt %s --trc-fuse --trc-unfuse --trc-print-fusion-summary -o /dev/null | FileCheck %s --check-prefix=UNFUSED

// CHECK: fusion summary (kernels, device memory bytes: before -> after fusion)
// CHECK-NEXT: @f: kernels 5 -> 2, bytes 1568 -> 800 (51.0%), fusions 0 elementwise, 1 reduction, 1 matmul_epilogue
// CHECK-NEXT: @g: kernels 1 -> 1, bytes 256 -> 256 (100.0%), fusions 0 elementwise, 0 reduction, 0 matmul_epilogue
// CHECK-NEXT: total: kernels 6 -> 3, bytes 1824 -> 1056 (57.9%), fusions 0 elementwise, 1 reduction, 1 matmul_epilogue
// UNFUSED: @f: kernels 5 -> 5, bytes 1568 -> 1568 (100.0%), fusions 0 elementwise, 0 reduction, 0 matmul_epilogue
func.func @f(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = trc.dot_general %x, %w, batch = [] x [], contract = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = trc.broadcast_in_dim %b, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
  %2 = trc.add %0, %1 : tensor<4x8xf32>
  %3 = trc.softmax %2 axis = 1 : tensor<4x8xf32>
  %4 = trc.exp %3 : tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// Nothing to fuse; the splat constant is an immediate (0 bytes).
func.func @g(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = trc.constant dense<2.0> : tensor<4x8xf32>
  %0 = trc.mul %x, %c : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
