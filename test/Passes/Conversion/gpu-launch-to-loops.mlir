// trc-gpu-launch-to-loops: a launch runs as loops over its blocks, then its
// threads, with the ids bound to the loop variables.
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
