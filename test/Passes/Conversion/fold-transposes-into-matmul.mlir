// trc-fold-transposes-into-matmul: a transpose materialized only for
// products to read becomes a strided view of its source (BLAS transposes
// it); regroupings no strides express, other readers of the temporary and
// a source written before the product reads it keep the copy.
// RUN: trc-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(trc-fold-transposes-into-matmul))" | FileCheck %s

// The forward's x @ W^T, W stored [out, in].
// CHECK-LABEL: func.func @weight
// CHECK-NOT: linalg.transpose
// CHECK-NOT: memref.alloc
// CHECK: %[[V:.*]] = memref.reinterpret_cast %arg1 to offset: [0], sizes: [1, 16, 48], strides: [16, 1, 16] : memref<48x16xf32> to memref<1x16x48xf32, strided<[16, 1, 16]>>
// CHECK: linalg.batch_matmul ins(%arg0, %[[V]] : memref<1x8x16xf32>, memref<1x16x48xf32, strided<[16, 1, 16]>>)
func.func @weight(%x: memref<1x8x16xf32>, %w: memref<48x16xf32>, %y: memref<1x8x48xf32>) {
  %shape = memref.get_global @shape3 : memref<3xi64>
  %t = memref.alloc() : memref<16x48xf32>
  linalg.transpose ins(%w : memref<48x16xf32>) outs(%t : memref<16x48xf32>) permutation = [1, 0]
  %r = memref.reshape %t(%shape) : (memref<16x48xf32>, memref<3xi64>) -> memref<1x16x48xf32>
  linalg.batch_matmul ins(%x, %r : memref<1x8x16xf32>, memref<1x16x48xf32>) outs(%y : memref<1x8x48xf32>)
  return
}
memref.global "private" constant @shape3 : memref<3xi64> = dense<[1, 16, 48]>

// -----

// A weight gradient dY^T @ X with dY [B, T, N] regrouped to [1, N, B*T].
// CHECK-LABEL: func.func @weight_gradient
// CHECK-NOT: linalg.transpose
// CHECK: memref.reinterpret_cast %arg0 to offset: [0], sizes: [1, 32, 64], strides: [{{.*}}, 1, 32]
func.func @weight_gradient(%dy: memref<4x16x32xf32>, %x: memref<1x64x8xf32>, %dw: memref<1x32x8xf32>) {
  %shape = memref.get_global @shape3b : memref<3xi64>
  %t = memref.alloc() : memref<32x4x16xf32>
  linalg.transpose ins(%dy : memref<4x16x32xf32>) outs(%t : memref<32x4x16xf32>) permutation = [2, 0, 1]
  %r = memref.reshape %t(%shape) : (memref<32x4x16xf32>, memref<3xi64>) -> memref<1x32x64xf32>
  linalg.batch_matmul ins(%r, %x : memref<1x32x64xf32>, memref<1x64x8xf32>) outs(%dw : memref<1x32x8xf32>)
  return
}
memref.global "private" constant @shape3b : memref<3xi64> = dense<[1, 32, 64]>

// -----

// Attention heads [B, T, H, D] -> [B*H, T, D]: no single batch stride.
// CHECK-LABEL: func.func @heads
// CHECK: linalg.transpose
// CHECK-NOT: memref.reinterpret_cast
func.func @heads(%q: memref<2x8x4x16xf32>, %k: memref<8x16x8xf32>, %s: memref<8x8x8xf32>) {
  %shape = memref.get_global @shape3c : memref<3xi64>
  %t = memref.alloc() : memref<2x4x8x16xf32>
  linalg.transpose ins(%q : memref<2x8x4x16xf32>) outs(%t : memref<2x4x8x16xf32>) permutation = [0, 2, 1, 3]
  %r = memref.reshape %t(%shape) : (memref<2x4x8x16xf32>, memref<3xi64>) -> memref<8x8x16xf32>
  linalg.batch_matmul ins(%r, %k : memref<8x8x16xf32>, memref<8x16x8xf32>) outs(%s : memref<8x8x8xf32>)
  return
}
memref.global "private" constant @shape3c : memref<3xi64> = dense<[8, 8, 16]>

// -----

// The source is overwritten between the transpose and the product: the
// copy holds the old values and stays.
// CHECK-LABEL: func.func @source_written
// CHECK: linalg.transpose
// CHECK-NOT: memref.reinterpret_cast
func.func @source_written(%x: memref<1x8x16xf32>, %w: memref<48x16xf32>, %y: memref<1x8x48xf32>) {
  %shape = memref.get_global @shape3d : memref<3xi64>
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<16x48xf32>
  linalg.transpose ins(%w : memref<48x16xf32>) outs(%t : memref<16x48xf32>) permutation = [1, 0]
  linalg.fill ins(%zero : f32) outs(%w : memref<48x16xf32>)
  %r = memref.reshape %t(%shape) : (memref<16x48xf32>, memref<3xi64>) -> memref<1x16x48xf32>
  linalg.batch_matmul ins(%x, %r : memref<1x8x16xf32>, memref<1x16x48xf32>) outs(%y : memref<1x8x48xf32>)
  return
}
memref.global "private" constant @shape3d : memref<3xi64> = dense<[1, 16, 48]>

// -----

// The transposed temporary is also read elsewhere: it stays.
// CHECK-LABEL: func.func @other_reader
// CHECK: linalg.transpose
// CHECK-NOT: memref.reinterpret_cast
func.func @other_reader(%x: memref<1x8x16xf32>, %w: memref<48x16xf32>, %y: memref<1x8x48xf32>, %c: memref<16x48xf32>) {
  %shape = memref.get_global @shape3e : memref<3xi64>
  %t = memref.alloc() : memref<16x48xf32>
  linalg.transpose ins(%w : memref<48x16xf32>) outs(%t : memref<16x48xf32>) permutation = [1, 0]
  %r = memref.reshape %t(%shape) : (memref<16x48xf32>, memref<3xi64>) -> memref<1x16x48xf32>
  linalg.batch_matmul ins(%x, %r : memref<1x8x16xf32>, memref<1x16x48xf32>) outs(%y : memref<1x8x48xf32>)
  linalg.copy ins(%t : memref<16x48xf32>) outs(%c : memref<16x48xf32>)
  return
}
memref.global "private" constant @shape3e : memref<3xi64> = dense<[1, 16, 48]>
