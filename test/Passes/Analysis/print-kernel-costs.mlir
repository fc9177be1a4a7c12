// trc-print-kernel-costs prices each gpu.launch (the bytes of the buffers
// it uses from outside, the float operations of its body times its
// threads, times the trips of loops inside) and each cuBLASLt product
// (2 b m n k FLOPs; a stride-0 operand read once for the batch), counts the
// trips of host loops around them and prints identical items once.

// RUN: trc-opt %s --split-input-file --verify-diagnostics --trc-print-kernel-costs -o /dev/null | FileCheck %s

// The elementwise kernel: 256 threads x (1 mulf + 1 addf on vector<4xf32> = 8
// lanes), buffers 3 x 4 KiB; launched 3 times by the host loop. The row
// kernel: 8 threads, a loop of 16 trips with one addf; buffers 2 KiB + 32 B.
// The product: bf16, batch 4, 64x32 by 32x16, B shared (stride 0):
// 2*4*64*16*32 = 262144 FLOPs; A 4*64*32*2 + B 32*16*2 + C 4*64*16*4 bytes.
// CHECK:      "bytes": 2080,
// CHECK-NEXT: "count": 1,
// CHECK-NEXT: "flops": 128,
// CHECK-NEXT: "kind": "kernel",
// CHECK-NEXT: "threads": 8
// CHECK:      "bytes": 12288,
// CHECK-NEXT: "count": 3,
// CHECK-NEXT: "flops": 2048,
// CHECK-NEXT: "kind": "kernel",
// CHECK-NEXT: "threads": 256
// CHECK:      "batch": 4,
// CHECK-NEXT: "bytes": 33792,
// CHECK-NEXT: "count": 1,
// CHECK-NEXT: "flops": 262144,
// CHECK-NEXT: "k": 32,
// CHECK-NEXT: "kind": "matmul",
// CHECK-NEXT: "m": 64,
// CHECK-NEXT: "n": 16,
// CHECK-NEXT: "type": "bf16"
// CHECK:      "kernels": 4,
// CHECK-NEXT: "matmuls": 1

func.func private @trc_rt_cublaslt_matmul_bf16(i64, i64, i64, i64, i64, i64, i64, i32, i64, i64, i64, i32, i64, i64, i64)

func.func @main(%x: memref<1024xf32>, %y: memref<1024xf32>, %z: memref<1024xf32>,
                %rows: memref<8x64xf32>, %sums: memref<8xf32>, %pa: i64, %pb: i64, %pc: i64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  scf.for %i = %c0 to %c3 step %c1 {
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
      %cst = arith.constant 0.0 : f32
      %a = vector.transfer_read %x[%tx], %cst : memref<1024xf32>, vector<4xf32>
      %b = vector.transfer_read %y[%tx], %cst : memref<1024xf32>, vector<4xf32>
      %m = arith.mulf %a, %b : vector<4xf32>
      %s = arith.addf %m, %b : vector<4xf32>
      vector.transfer_write %s, %z[%tx] : vector<4xf32>, memref<1024xf32>
      gpu.terminator
    }
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %zero = arith.constant 0.0 : f32
    %c4 = arith.constant 4 : index
    %sum = scf.for %j = %c0 to %c64 step %c4 iter_args(%acc = %zero) -> f32 {
      %v = memref.load %rows[%tx, %j] : memref<8x64xf32>
      %n = arith.addf %acc, %v : f32
      scf.yield %n : f32
    }
    memref.store %sum, %sums[%tx] : memref<8xf32>
    gpu.terminator
  }
  %b4 = arith.constant 4 : i64
  %m = arith.constant 64 : i64
  %n = arith.constant 16 : i64
  %k = arith.constant 32 : i64
  %s0 = arith.constant 0 : i64
  %sa = arith.constant 2048 : i64
  %sc = arith.constant 1024 : i64
  %f = arith.constant 0 : i32
  func.call @trc_rt_cublaslt_matmul_bf16(%b4, %m, %n, %k, %pa, %k, %sa, %f, %pb, %n, %s0, %f, %pc, %n, %sc)
      : (i64, i64, i64, i64, i64, i64, i64, i32, i64, i64, i64, i32, i64, i64, i64) -> ()
  return
}

// -----

func.func private @trc_rt_cublaslt_matmul_f32(i64, i64, i64, i64, i64, i64, i64, i32, i64, i64, i64, i32, i64, i64, i64)

func.func @main(%m: i64, %p: i64) {
  %one = arith.constant 1 : i64
  %f = arith.constant 0 : i32
  // expected-error @below {{the sizes of this matrix product are not constants; it cannot be priced}}
  func.call @trc_rt_cublaslt_matmul_f32(%one, %m, %one, %one, %p, %one, %one, %f, %p, %one, %one, %f, %p, %one, %one)
      : (i64, i64, i64, i64, i64, i64, i64, i32, i64, i64, i64, i32, i64, i64, i64) -> ()
  return
}

// -----

// A product into bf16 (trc_rt_cublaslt_matmul_bf16_bf16): the same operands,
// C 4*64*16*2 bytes: 16384 + 1024 + 8192.
// CHECK:      "batch": 4,
// CHECK-NEXT: "bytes": 25600,
// CHECK:      "type": "bf16_bf16"

func.func private @trc_rt_cublaslt_matmul_bf16_bf16(i64, i64, i64, i64, i64, i64, i64, i32, i64, i64, i64, i32, i64, i64, i64)

func.func @main(%pa: i64, %pb: i64, %pc: i64) {
  %b4 = arith.constant 4 : i64
  %m = arith.constant 64 : i64
  %n = arith.constant 16 : i64
  %k = arith.constant 32 : i64
  %s0 = arith.constant 0 : i64
  %sa = arith.constant 2048 : i64
  %sc = arith.constant 1024 : i64
  %f = arith.constant 0 : i32
  func.call @trc_rt_cublaslt_matmul_bf16_bf16(%b4, %m, %n, %k, %pa, %k, %sa, %f, %pb, %n, %s0, %f, %pc, %n, %sc)
      : (i64, i64, i64, i64, i64, i64, i64, i32, i64, i64, i64, i32, i64, i64, i64) -> ()
  return
}
