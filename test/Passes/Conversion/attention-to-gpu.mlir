// RUN: trc-opt %s --pass-pipeline="builtin.module(func.func(trc-attention-to-gpu))" -split-input-file | FileCheck %s

// A causal mask from positions (hidden where key > query, fill -inf): the
// forward is one kernel, a thread per query row of the 2 x 3 x 16 rows, whose
// loop over keys ends after the query's own (mean 8.5 trips, recorded for the
// cost model); the result comes back as a tensor.
// CHECK-LABEL: func.func @causal
// CHECK-DAG: %[[OUT:.*]] = memref.alloc() : memref<2x3x16x4xf32>
// CHECK-DAG: %[[MASK:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<1x1x16x16xi1> to memref<1x1x16x16xi1>
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %[[OUT]] {{\[\[}}0, 1, 2, 3]] : memref<2x3x16x4xf32> into memref<384xf32>
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c1{{.*}}, {{.*}}) threads({{.*}}) in (%{{.*}} = %c96{{.*}}, {{.*}}) module(@trc_kernels) function(@causal_attention0)
// CHECK: %[[QUERY:.*]] = arith.remui %{{.*}}, %c16
// CHECK: %[[END:.*]] = arith.addi %[[QUERY]], %c1
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %[[END]] step %c1{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32) {
// CHECK: math.exp
// CHECK: } {trc.mean_trips = 8 : i64}
// CHECK: arith.divf
// CHECK: memref.store %{{.*}}, %[[FLAT]]
// CHECK: gpu.terminator
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK-NOT: trc.attention
// CHECK: return %[[R]]
func.func @causal(%q: tensor<2x3x16x8xf32>, %k: tensor<2x3x16x8xf32>, %v: tensor<2x3x16x4xf32>) -> tensor<2x3x16x4xf32> {
  %rows = trc.iota dim = 0 : tensor<16x16xi64>
  %cols = trc.iota dim = 1 : tensor<16x16xi64>
  %later = trc.compare gt, %cols, %rows : tensor<16x16xi64> -> tensor<16x16xi1>
  %m = trc.reshape %later : (tensor<16x16xi1>) -> tensor<1x1x16x16xi1>
  %o = trc.attention %q, %k, %v mask %m fill = 0xFFF0000000000000 where true scale = 1.250000e-01
      : (tensor<2x3x16x8xf32>, tensor<2x3x16x8xf32>, tensor<2x3x16x4xf32>, tensor<1x1x16x16xi1>) -> tensor<2x3x16x4xf32>
  return %o : tensor<2x3x16x4xf32>
}

// -----

// The gradient of bf16 attention under a padding mask from an input (not
// provably causal: every key is visited): two kernels in order, a thread per
// query row (statistics into a [2, rows] f32 buffer, then dq) and a thread
// per key row (dk, dv), reading bf16 widened to f32 and writing bf16; the
// mask's element for (batch, key) is read with the head and query dims
// broadcast (fill where false: the element is negated).
// CHECK-LABEL: func.func @padded_grad
// CHECK-DAG: %[[STATS:.*]] = memref.alloc() : memref<2x32xf32>
// CHECK-DAG: %[[DQ:.*]] = memref.alloc() : memref<2x1x16x8xbf16>
// CHECK: gpu.launch {{.*}} function(@padded_grad_attention0_dq)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step
// CHECK: arith.xori
// CHECK: math.log
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step
// CHECK-NOT: trc.mean_trips
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: gpu.launch {{.*}} function(@padded_grad_attention0_dkv)
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step
// CHECK: gpu.terminator
// CHECK-COUNT-3: bufferization.to_tensor
// CHECK-NOT: trc.attention_grad
func.func @padded_grad(%q: tensor<2x1x16x8xbf16>, %g: tensor<2x1x16x8xbf16>, %pad: tensor<2x1x1x16xi1>)
    -> (tensor<2x1x16x8xbf16>, tensor<2x1x16x8xbf16>, tensor<2x1x16x8xbf16>) {
  %dq, %dk, %dv = trc.attention_grad %q, %q, %q, %g mask %pad fill = -1.000000e+09 where false scale = 3.500000e-01
      : (tensor<2x1x16x8xbf16>, tensor<2x1x16x8xbf16>, tensor<2x1x16x8xbf16>, tensor<2x1x16x8xbf16>, tensor<2x1x1x16xi1>)
      -> (tensor<2x1x16x8xbf16>, tensor<2x1x16x8xbf16>, tensor<2x1x16x8xbf16>)
  return %dq, %dk, %dv : tensor<2x1x16x8xbf16>, tensor<2x1x16x8xbf16>, tensor<2x1x16x8xbf16>
}

// -----

// A causal mask whose fill (-1) keeps hidden keys in the softmax: every key
// is computed.
// CHECK-LABEL: func.func @small_fill
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step
// CHECK-NOT: trc.mean_trips
func.func @small_fill(%q: tensor<1x16x8xf32>) -> tensor<1x16x8xf32> {
  %rows = trc.iota dim = 0 : tensor<16x16xi64>
  %cols = trc.iota dim = 1 : tensor<16x16xi64>
  %later = trc.compare gt, %cols, %rows : tensor<16x16xi64> -> tensor<16x16xi1>
  %m = trc.reshape %later : (tensor<16x16xi1>) -> tensor<1x16x16xi1>
  %o = trc.attention %q, %q, %q mask %m fill = -1.000000e+00 where true scale = 1.000000e+00
      : (tensor<1x16x8xf32>, tensor<1x16x8xf32>, tensor<1x16x8xf32>, tensor<1x16x16xi1>) -> tensor<1x16x8xf32>
  return %o : tensor<1x16x8xf32>
}

// -----

// Left for trc-decompose-composites: a head dim of 256 (the rows would not
// fit in registers) and f64.
// CHECK-LABEL: func.func @not_taken
// CHECK-NOT: gpu.launch
// CHECK: trc.attention
// CHECK: trc.attention
func.func @not_taken(%q: tensor<1x16x256xf32>, %d: tensor<1x16x8xf64>) -> (tensor<1x16x256xf32>, tensor<1x16x8xf64>) {
  %a = trc.attention %q, %q, %q fill = 0.000000e+00 where true scale = 1.000000e+00
      : (tensor<1x16x256xf32>, tensor<1x16x256xf32>, tensor<1x16x256xf32>) -> tensor<1x16x256xf32>
  %b = trc.attention %d, %d, %d fill = 0.000000e+00 where true scale = 1.000000e+00
      : (tensor<1x16x8xf64>, tensor<1x16x8xf64>, tensor<1x16x8xf64>) -> tensor<1x16x8xf64>
  return %a, %b : tensor<1x16x256xf32>, tensor<1x16x8xf64>
}
