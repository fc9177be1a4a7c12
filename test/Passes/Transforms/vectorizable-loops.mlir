// trc-vectorizable-loops: a multi-dimensional parallel loop walks its last
// dimension in order, and a row reduction's accumulator is carried in a
// register (iter_args) with its add marked reassoc; loops that touch the
// accumulator elsewhere, or call out, stay as they are.
// RUN: trc-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(trc-vectorizable-loops))" | FileCheck %s

// An elementwise [8, 128] scale: parallel rows, an inner loop over columns.
// CHECK-LABEL: func.func @scale
// CHECK: scf.parallel (%[[I:.*]]) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// CHECK-NEXT: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT: memref.load %arg0[%[[I]], %[[J]]]
// CHECK: memref.store %{{.*}}, %arg1[%[[I]], %[[J]]]
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @scale(%x: memref<8x128xf32>, %y: memref<8x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %s = arith.constant 0.5 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c128) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<8x128xf32>
    %m = arith.mulf %v, %s : f32
    memref.store %m, %y[%i, %j] : memref<8x128xf32>
    scf.reduce
  }
  return
}

// -----

// A row sum: the accumulator is loaded once, carried, stored once.
// CHECK-LABEL: func.func @row_sum
// CHECK: scf.parallel (%[[I:.*]]) =
// CHECK: %[[INIT:.*]] = memref.load %arg1[%[[I]]]
// CHECK: %[[SUM:.*]] = scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32)
// CHECK-NEXT: %[[V:.*]] = memref.load %arg0[%[[I]], %[[K]]]
// CHECK-NEXT: %[[A:.*]] = arith.addf %[[ACC]], %[[V]] fastmath<reassoc> : f32
// CHECK-NEXT: scf.yield %[[A]]
// CHECK: memref.store %[[SUM]], %arg1[%[[I]]]
func.func @row_sum(%x: memref<8x128xf32>, %acc: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %k = %c0 to %c128 step %c1 {
      %v = memref.load %x[%i, %k] : memref<8x128xf32>
      %a = memref.load %acc[%i] : memref<8xf32>
      %s = arith.addf %a, %v : f32
      memref.store %s, %acc[%i] : memref<8xf32>
    }
    scf.reduce
  }
  return
}

// -----

// A row maximum keeps maximumf as it is (exact in any order).
// CHECK-LABEL: func.func @row_max
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32)
// CHECK: arith.maximumf %[[ACC]], %{{.*}} : f32
func.func @row_max(%x: memref<8x128xf32>, %acc: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %k = %c0 to %c128 step %c1 {
      %v = memref.load %x[%i, %k] : memref<8x128xf32>
      %a = memref.load %acc[%i] : memref<8xf32>
      %s = arith.maximumf %a, %v : f32
      memref.store %s, %acc[%i] : memref<8xf32>
    }
    scf.reduce
  }
  return
}

// -----

// The loop also reads the accumulator's memref at another element: left.
// CHECK-LABEL: func.func @other_element
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: memref.load %arg1[%arg2]
// CHECK: memref.load %arg1[%{{.*}}]
// CHECK: memref.store %{{.*}}, %arg1[%arg2]
func.func @other_element(%x: memref<128xf32>, %acc: memref<8xf32>, %i: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  scf.for %k = %c0 to %c128 step %c1 {
    %v = memref.load %x[%k] : memref<128xf32>
    %a = memref.load %acc[%i] : memref<8xf32>
    %b = memref.load %acc[%c0] : memref<8xf32>
    %s = arith.addf %a, %v : f32
    %t = arith.addf %s, %b : f32
    memref.store %t, %acc[%i] : memref<8xf32>
  }
  return
}

// -----

// A call in the body may touch the accumulator: left.
// CHECK-LABEL: func.func @opaque_call
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: memref.store
func.func private @touch(memref<8xf32>)
func.func @opaque_call(%x: memref<128xf32>, %acc: memref<8xf32>, %i: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  scf.for %k = %c0 to %c128 step %c1 {
    %v = memref.load %x[%k] : memref<128xf32>
    %a = memref.load %acc[%i] : memref<8xf32>
    %s = arith.addf %a, %v : f32
    memref.store %s, %acc[%i] : memref<8xf32>
    func.call @touch(%acc) : (memref<8xf32>) -> ()
  }
  return
}

// -----

// The store's index varies with the loop (an elementwise row, not a
// reduction); one-dimensional parallel loops stay as they are.
// CHECK-LABEL: func.func @elementwise_row
// CHECK: scf.parallel (%{{.*}}) =
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: memref.store %{{.*}}, %arg1[%{{.*}}, %[[J]]]
func.func @elementwise_row(%x: memref<8x128xf32>, %y: memref<8x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %j = %c0 to %c128 step %c1 {
      %v = memref.load %x[%i, %j] : memref<8x128xf32>
      memref.store %v, %y[%i, %j] : memref<8x128xf32>
    }
    scf.reduce
  }
  return
}
