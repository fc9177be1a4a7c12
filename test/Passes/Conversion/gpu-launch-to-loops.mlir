// trc-gpu-launch-to-loops: a launch runs as loops over its blocks, then its
// threads, with the ids bound to the loop variables; xor shuffles cut it
// into segments (per-thread arrays carry values across); other thread
// communication is an error.
// RUN: trc-opt %s --split-input-file --trc-gpu-launch-to-loops --verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @launch
// CHECK-NOT: gpu.launch
// CHECK: scf.for %{{.*}} = %c0 to %c1
// CHECK: scf.for %{{.*}} = %c0 to %c1
// CHECK: scf.for %[[BX:[a-z0-9_]+]] = %c0 to %[[GX:[a-z0-9_]+]]
// CHECK: scf.for %{{.*}} = %c0 to %c1
// CHECK: scf.for %{{.*}} = %c0 to %c1
// CHECK: scf.for %[[TX:[a-z0-9_]+]] = %c0 to %[[TB:[a-z0-9_]+]]
// CHECK: %[[I:[0-9]+]] = arith.muli %[[BX]], %[[TB]]
// CHECK: %[[J:[0-9]+]] = arith.addi %[[I]], %[[TX]]
// CHECK: memref.store %{{.*}}, %arg0[%[[J]]]
func.func @launch(%out: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %one = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %i = arith.muli %bx, %sx : index
    %j = arith.addi %i, %tx : index
    memref.store %one, %out[%j] : memref<64xf32>
    gpu.terminator
  }
  return
}

// -----

// Threads that synchronize cannot run one after another.
func.func @barrier(%out: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @below {{'gpu.barrier' cannot run as a host loop}}
    gpu.barrier
    gpu.terminator
  }
  return
}

// -----

// Xor shuffles at the top level: the body runs in segments cut at them,
// each a loop over the block's threads. A value another segment uses goes
// through a per-thread array; the shuffle reads its partner's element
// (thread ^ offset), as the warp's butterfly does; constants are cloned
// once, before the loops.
// CHECK-LABEL: func.func @butterfly
// CHECK-NOT: gpu.
// CHECK: %[[C16:.*]] = arith.constant 16 : i32
// CHECK: %[[PART:.*]] = memref.alloca(%[[THREADS:.*]]) : memref<?xf32>
// CHECK: %[[SUM:.*]] = memref.alloca(%[[THREADS]]) : memref<?xf32>
// CHECK: scf.for %[[BX:.*]] = %{{.*}} to %{{.*}}
// CHECK: scf.for %[[T1:.*]] = %{{.*}} to %[[THREADS]]
// CHECK: %[[V:.*]] = memref.load %arg0[
// CHECK: memref.store %[[V]], %[[PART]][%[[T1]]]
// CHECK: scf.for %[[T2:.*]] = %{{.*}} to %[[THREADS]]
// CHECK: %[[MINE:.*]] = memref.load %[[PART]][%[[T2]]]
// CHECK: %[[LANE:.*]] = arith.index_cast %[[T2]] : index to i32
// CHECK: %[[PARTNER:.*]] = arith.xori %[[LANE]], %[[C16]]
// CHECK: %[[AT:.*]] = arith.index_cast %[[PARTNER]] : i32 to index
// CHECK: %[[OTHER:.*]] = memref.load %[[PART]][%[[AT]]]
// CHECK: %[[S:.*]] = arith.addf %[[OTHER]], %[[MINE]]
// CHECK: memref.store %[[S]], %[[SUM]][%[[T2]]]
// CHECK: scf.for %[[T3:.*]] = %{{.*}} to %[[THREADS]]
// CHECK: %[[MYSUM:.*]] = memref.load %[[SUM]][%[[T3]]]
// CHECK: arith.xori %{{.*}}, %{{.*}} : i32
// CHECK: %[[TOTAL:.*]] = arith.addf %{{.*}}, %[[MYSUM]]
// CHECK: memref.store %[[TOTAL]], %arg1[
func.func @butterfly(%in: memref<64xf32>, %out: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %c8_i32 = arith.constant 8 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %c16_i32 = arith.constant 16 : i32
    %c32_i32 = arith.constant 32 : i32
    %i = arith.muli %bx, %sx : index
    %j = arith.addi %i, %tx : index
    %v = memref.load %in[%j] : memref<64xf32>
    %other, %valid = gpu.shuffle xor %v, %c16_i32, %c32_i32 : f32
    %s = arith.addf %other, %v : f32
    %other2, %valid2 = gpu.shuffle xor %s, %c8_i32, %c32_i32 : f32
    %t = arith.addf %other2, %s : f32
    memref.store %t, %out[%j] : memref<64xf32>
    gpu.terminator
  }
  return
}

// -----

// A shuffle under control flow cannot be cut into segments.
func.func @nested_shuffle(%out: memref<32xf32>, %flag: i1) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %c1_i32 = arith.constant 1 : i32
    %c32_i32 = arith.constant 32 : i32
    %v = memref.load %out[%tx] : memref<32xf32>
    scf.if %flag {
      // expected-error @below {{'gpu.shuffle' cannot run as a host loop (only xor shuffles at the kernel's top level)}}
      %o, %ok = gpu.shuffle xor %v, %c1_i32, %c32_i32 : f32
      memref.store %o, %out[%tx] : memref<32xf32>
    }
    gpu.terminator
  }
  return
}

// -----

// Only xor shuffles (the butterfly trc-linalg-to-gpu emits).
func.func @down_shuffle(%out: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %c1_i32 = arith.constant 1 : i32
    %c32_i32 = arith.constant 32 : i32
    %v = memref.load %out[%tx] : memref<32xf32>
    // expected-error @below {{'gpu.shuffle' cannot run as a host loop (only xor shuffles at the kernel's top level)}}
    %o, %ok = gpu.shuffle down %v, %c1_i32, %c32_i32 : f32
    memref.store %o, %out[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}

// -----

// Shuffles need one-dimensional blocks (a lane is the thread's x).
func.func @shuffle_2d(%out: memref<32xf32>) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  // expected-error @below {{a kernel with shuffles runs as host loops only with one-dimensional blocks}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c2, %sz = %c1) {
    %c1_i32 = arith.constant 1 : i32
    %c32_i32 = arith.constant 32 : i32
    %v = memref.load %out[%tx] : memref<32xf32>
    %o, %ok = gpu.shuffle xor %v, %c1_i32, %c32_i32 : f32
    memref.store %o, %out[%tx] : memref<32xf32>
    gpu.terminator
  }
  return
}
