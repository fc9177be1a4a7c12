// trc-matmul-to-cublaslt: the BLAS entries trc-matmul-to-runtime-call calls
// become the CUDA runtime's cuBLASLt entries, arguments unchanged.
// RUN: trc-opt %s --trc-matmul-to-runtime-call --trc-matmul-to-cublaslt | FileCheck %s

// CHECK-NOT: @trc_rt_matmul_f32
// CHECK: func.func private @trc_rt_cublaslt_matmul_f32(i64, i64, i64, i64, i64, i64, i64, i32, i64, i64, i64, i32, i64, i64, i64)
// CHECK-LABEL: func.func @main
// CHECK: call @trc_rt_cublaslt_matmul_f32(%{{.*}}) : (i64, i64, i64, i64, i64, i64, i64, i32, i64, i64, i64, i32, i64, i64, i64) -> ()
// CHECK: call @trc_rt_cublaslt_matmul_f32(
// CHECK-NOT: linalg.batch_matmul
func.func @main(%a: memref<2x3x4xf32>, %b: memref<2x4x5xf32>, %c: memref<2x3x5xf32>, %d: memref<2x3x5xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<2x3x4xf32>, memref<2x4x5xf32>) outs(%c : memref<2x3x5xf32>)
  linalg.batch_matmul ins(%a, %b : memref<2x3x4xf32>, memref<2x4x5xf32>) outs(%d : memref<2x3x5xf32>)
  return
}
