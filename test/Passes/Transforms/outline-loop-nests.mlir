// trc-outline-loop-nests: each loop nest at the top of a function body of
// two or more becomes a private noinline function taking what it reads from
// above (constants cloned in, results returned); a nest reading a memref a
// bare pointer cannot carry (dynamic shape) stays inline, and so does the
// only nest of a function.
// RUN: trc-opt %s --split-input-file --trc-outline-loop-nests | FileCheck %s

// CHECK-LABEL: func.func private @main_loop0(%arg0: f32, %arg1: memref<8xf32>)
// CHECK-SAME: attributes {passthrough = ["noinline"]}
// CHECK-DAG: arith.constant 0 : index
// CHECK-DAG: arith.constant 8 : index
// CHECK-DAG: arith.constant 1 : index
// CHECK: scf.parallel
// CHECK: memref.store %arg0, %arg1
// CHECK: return
// CHECK-LABEL: func.func private @main_loop1(%arg0: memref<8xf32>) -> f32
// CHECK: %[[SUM:.*]] = scf.for
// CHECK: return %[[SUM]] : f32
// CHECK-LABEL: func.func @main
// CHECK-NOT: scf.parallel
// CHECK-NOT: scf.for
// CHECK: call @main_loop0(%arg1, %arg0) : (f32, memref<8xf32>) -> ()
// CHECK: %[[R:.*]] = call @main_loop1(%arg0) : (memref<8xf32>) -> f32
// CHECK: return %[[R]]
func.func @main(%a: memref<8xf32>, %v: f32) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %v, %a[%i] : memref<8xf32>
    scf.reduce
  }
  %sum = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> f32 {
    %x = memref.load %a[%i] : memref<8xf32>
    %s = arith.addf %acc, %x : f32
    scf.yield %s : f32
  }
  return %sum : f32
}

// -----

// A dynamic memref stays in its function; the other nest moves.
// CHECK-LABEL: func.func private @dynamic_loop0(%arg0: memref<8xf32>)
// CHECK-LABEL: func.func @dynamic(%arg0: memref<?xf32>, %arg1: memref<8xf32>)
// CHECK: scf.for
// CHECK: memref.store {{.*}} : memref<?xf32>
// CHECK: call @dynamic_loop0(%arg1)
func.func @dynamic(%a: memref<?xf32>, %b: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %one, %a[%i] : memref<?xf32>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %one, %b[%i] : memref<8xf32>
  }
  return
}

// -----

// One nest: nothing to gain.
// CHECK-LABEL: func.func @single
// CHECK: scf.for
// CHECK-NOT: call
func.func @single(%b: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %one, %b[%i] : memref<8xf32>
  }
  return
}
