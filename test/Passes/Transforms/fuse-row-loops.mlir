// trc-fuse-row-loops: consecutive parallel loops over the same rows become
// one loop (a row kernel) when each row touches only its own slice of what
// either writes; other rows' data, different bounds, calls, or two views
// sharing bytes keep them apart.
// RUN: trc-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(trc-fuse-row-loops))" | FileCheck %s

// A softmax's passes over 8 rows: initial maximum, maximum, exponentials.
// CHECK-LABEL: func.func @softmax_rows
// CHECK: scf.parallel (%[[I:.*]]) =
// CHECK: memref.store %{{.*}}, %arg1[%[[I]]]
// CHECK: scf.for
// CHECK: arith.maximumf
// CHECK: scf.for
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %arg2[%[[I]], %{{.*}}]
// CHECK: scf.reduce
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @softmax_rows(%x: memref<8x128xf32>, %max: memref<8xf32>, %e: memref<8x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %ninf = arith.constant 0xFF800000 : f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %ninf, %max[%i] : memref<8xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    scf.for %k = %c0 to %c128 step %c1 {
      %v = memref.load %x[%i, %k] : memref<8x128xf32>
      %m = memref.load %max[%i] : memref<8xf32>
      %n = arith.maximumf %m, %v : f32
      memref.store %n, %max[%i] : memref<8xf32>
    }
    scf.reduce
  }
  %c8b = arith.constant 8 : index
  scf.parallel (%i) = (%c0) to (%c8b) step (%c1) {
    scf.for %k = %c0 to %c128 step %c1 {
      %v = memref.load %x[%i, %k] : memref<8x128xf32>
      %m = memref.load %max[%i] : memref<8xf32>
      %d = arith.subf %v, %m : f32
      %x2 = math.exp %d : f32
      memref.store %x2, %e[%i, %k] : memref<8x128xf32>
    }
    scf.reduce
  }
  return
}

// -----

// The second loop reads another row's result (a shifted index): not fused.
// CHECK-LABEL: func.func @other_row
// CHECK: scf.parallel
// CHECK: scf.parallel
func.func @other_row(%a: memref<9xf32>, %b: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %one, %a[%i] : memref<9xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %j = arith.addi %i, %c1 : index
    %v = memref.load %a[%j] : memref<9xf32>
    memref.store %v, %b[%i] : memref<8xf32>
    scf.reduce
  }
  return
}

// -----

// Two views of one buffer whose bytes overlap: not fused; disjoint views of
// it (the memory plan's separate temporaries) are.
// CHECK-LABEL: func.func @views
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @views(%arena: memref<96xi8>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  %a = memref.view %arena[%c0][] : memref<96xi8> to memref<8xf32>
  %b = memref.view %arena[%c16][] : memref<96xi8> to memref<8xf32>
  %c = memref.view %arena[%c64][] : memref<96xi8> to memref<8xf32>
  // writes bytes [0, 32)
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %one, %a[%i] : memref<8xf32>
    scf.reduce
  }
  // reads bytes [16, 48): overlaps, stays apart
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %b[%i] : memref<8xf32>
    memref.store %v, %out[%i] : memref<8xf32>
    scf.reduce
  }
  // writes bytes [64, 96): disjoint from %b, fused with the loop above
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %one, %c[%i] : memref<8xf32>
    scf.reduce
  }
  return
}

// -----

// Different bounds, and a call in the body: not fused.
// CHECK-LABEL: func.func @apart
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK: scf.parallel
func.func private @touch(memref<8xf32>)
func.func @apart(%a: memref<8xf32>, %b: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %one, %a[%i] : memref<8xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    memref.store %one, %b[%i] : memref<8xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    func.call @touch(%a) : (memref<8xf32>) -> ()
    scf.reduce
  }
  return
}

// -----

// An i1 buffer takes a byte per element: its view's bytes [0, 8) overlap
// the f32 view read above, so the loops stay apart.
// CHECK-LABEL: func.func @bool_bytes
// CHECK: scf.parallel
// CHECK: scf.parallel
func.func @bool_bytes(%arena: memref<64xi8>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %true = arith.constant true
  %f = memref.view %arena[%c0][] : memref<64xi8> to memref<8xf32>
  %b = memref.view %arena[%c0][] : memref<64xi8> to memref<8xi1>
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    %v = memref.load %f[%i] : memref<8xf32>
    memref.store %v, %out[%i] : memref<8xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %true, %b[%i] : memref<8xi1>
    scf.reduce
  }
  return
}
