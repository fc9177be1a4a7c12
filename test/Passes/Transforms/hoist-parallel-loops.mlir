// trc-hoist-parallel-loops: a parallel loop inside a perfect nest of
// sequential loops (a column sum, as linalg lowers a bias gradient) becomes
// the outermost loop, its innermost dimension tiled; nests where distinct
// parallel indices may touch one element, or whose body writes other than
// through its own index, stay as they are.
// RUN: trc-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(trc-hoist-parallel-loops{tile=32}))" | FileCheck %s

// A [4, 8, 96] -> [96] column sum.
// CHECK-LABEL: func.func @column_sum
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG: %[[C96:.*]] = arith.constant 96 : index
// CHECK: scf.parallel (%[[JO:.*]]) = (%{{.*}}) to (%[[C96]]) step (%[[C32]])
// CHECK: %[[HI:.*]] = arith.addi %[[JO]], %[[C32]]
// CHECK: %[[END:.*]] = arith.minsi %[[HI]], %[[C96]]
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[J:.*]] = %[[JO]] to %[[END]] step
// CHECK: memref.load %arg0[%[[I]], %[[K]], %[[J]]]
// CHECK: memref.load %arg1[%[[J]]]
// CHECK: memref.store %{{.*}}, %arg1[%[[J]]]
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @column_sum(%x: memref<4x8x96xf32>, %acc: memref<96xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c96 = arith.constant 96 : index
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %k = %c0 to %c8 step %c1 {
      scf.parallel (%j) = (%c0) to (%c96) step (%c1) {
        %v = memref.load %x[%i, %k, %j] : memref<4x8x96xf32>
        %a = memref.load %acc[%j] : memref<96xf32>
        %s = arith.addf %a, %v : f32
        memref.store %s, %acc[%j] : memref<96xf32>
        scf.reduce
      }
    }
  }
  return
}

// -----

// Two parallel dimensions (a position-embedding gradient): only the last is tiled.
// CHECK-LABEL: func.func @batch_sum
// CHECK: scf.parallel (%[[T:.*]], %[[CO:.*]]) = (%{{.*}}, %{{.*}}) to (%{{.*}}, %{{.*}}) step (%{{.*}}, %{{.*}})
// CHECK: scf.for %[[B:.*]] =
// CHECK: scf.for %[[C:.*]] = %[[CO]] to
// CHECK: memref.store %{{.*}}, %arg1[%[[T]], %[[C]]]
func.func @batch_sum(%x: memref<2x16x64xf32>, %acc: memref<16x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  scf.for %b = %c0 to %c2 step %c1 {
    scf.parallel (%t, %c) = (%c0, %c0) to (%c16, %c64) step (%c1, %c1) {
      %v = memref.load %x[%b, %t, %c] : memref<2x16x64xf32>
      %a = memref.load %acc[%t, %c] : memref<16x64xf32>
      %s = arith.addf %a, %v : f32
      memref.store %s, %acc[%t, %c] : memref<16x64xf32>
      scf.reduce
    }
  }
  return
}

// -----

// A store whose index misses the parallel variable (every %j writes acc[%i]):
// hoisting would race, so the nest stays.
// CHECK-LABEL: func.func @shared_element
// CHECK: scf.for
// CHECK-NEXT: scf.parallel
func.func @shared_element(%x: memref<4x96xf32>, %acc: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c96 = arith.constant 96 : index
  scf.for %i = %c0 to %c4 step %c1 {
    scf.parallel (%j) = (%c0) to (%c96) step (%c1) {
      %v = memref.load %x[%i, %j] : memref<4x96xf32>
      memref.store %v, %acc[%i] : memref<4xf32>
      scf.reduce
    }
  }
  return
}

// -----

// A load of the stored memref at another element (a shift along rows) reads
// what another parallel index wrote: the nest stays.
// CHECK-LABEL: func.func @shifted_read
// CHECK: scf.for
// CHECK-NEXT: scf.parallel
func.func @shifted_read(%acc: memref<5x96xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c95 = arith.constant 95 : index
  scf.for %i = %c0 to %c4 step %c1 {
    scf.parallel (%j) = (%c0) to (%c95) step (%c1) {
      %j1 = arith.addi %j, %c1 : index
      %v = memref.load %acc[%i, %j1] : memref<5x96xf32>
      %i1 = arith.addi %i, %c1 : index
      memref.store %v, %acc[%i1, %j] : memref<5x96xf32>
      scf.reduce
    }
  }
  return
}

// -----

// Loops that are not a perfect nest (work between them) stay.
// CHECK-LABEL: func.func @imperfect
// CHECK: scf.for
// CHECK: memref.store
// CHECK: scf.parallel
func.func @imperfect(%x: memref<4x96xf32>, %acc: memref<96xf32>, %row: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c96 = arith.constant 96 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %zero, %row[%i] : memref<4xf32>
    scf.parallel (%j) = (%c0) to (%c96) step (%c1) {
      %v = memref.load %x[%i, %j] : memref<4x96xf32>
      %a = memref.load %acc[%j] : memref<96xf32>
      %s = arith.addf %a, %v : f32
      memref.store %s, %acc[%j] : memref<96xf32>
      scf.reduce
    }
  }
  return
}

// -----

// An embedding gradient's scatter-add: sequential loops over tokens, the
// innermost over columns touching distinct elements. The columns become
// the parallel (tiled) loop outside; each element still sums the tokens in
// order.
// CHECK-LABEL: func.func @scatter_add
// CHECK: scf.parallel (%[[CO:.*]]) = (%{{.*}}) to (%{{.*}}) step (%{{.*}})
// CHECK: scf.for %[[T:.*]] =
// CHECK: scf.for %[[C:.*]] = %[[CO]] to
// CHECK: %[[ID:.*]] = memref.load %arg0[%[[T]]]
// CHECK: memref.store %{{.*}}, %arg2[%{{.*}}, %[[C]]]
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @scatter_add(%ids: memref<16xindex>, %g: memref<16x96xf32>, %table: memref<50x96xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c96 = arith.constant 96 : index
  scf.for %t = %c0 to %c16 step %c1 {
    scf.for %c = %c0 to %c96 step %c1 {
      %id = memref.load %ids[%t] : memref<16xindex>
      %v = memref.load %g[%t, %c] : memref<16x96xf32>
      %a = memref.load %table[%id, %c] : memref<50x96xf32>
      %s = arith.addf %a, %v : f32
      memref.store %s, %table[%id, %c] : memref<50x96xf32>
    }
  }
  return
}

// -----

// The innermost loop's iterations share an element (a running sum over
// columns): it stays sequential.
// CHECK-LABEL: func.func @row_sums
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @row_sums(%x: memref<16x96xf32>, %acc: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c96 = arith.constant 96 : index
  scf.for %t = %c0 to %c16 step %c1 {
    scf.for %c = %c0 to %c96 step %c1 {
      %v = memref.load %x[%t, %c] : memref<16x96xf32>
      %a = memref.load %acc[%t] : memref<16xf32>
      %s = arith.addf %a, %v : f32
      memref.store %s, %acc[%t] : memref<16xf32>
    }
  }
  return
}
