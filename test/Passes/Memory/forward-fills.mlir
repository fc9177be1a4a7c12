// trc-forward-fills: copies out of a temporary that only holds a constant
// become fills of their destinations.
// RUN: trc-opt %s --split-input-file --trc-forward-fills | FileCheck %s

// Every use of the temporary is a copy out of it: each copy becomes a fill
// and the temporary is never written.
// CHECK-LABEL: func.func @all_copies
// CHECK-SAME: (%[[A:[a-z0-9]+]]: memref<8xf32>, %[[B:[a-z0-9]+]]: memref<8xf32>, %[[ARENA:[a-z0-9]+]]: memref<64xi8>)
// CHECK: %[[ZERO:[a-z0-9_]+]] = arith.constant 0.0
// CHECK-NOT: linalg.fill ins(%[[ZERO]] : f32) outs(%view
// CHECK: linalg.fill ins(%[[ZERO]] : f32) outs(%[[A]] : memref<8xf32>)
// CHECK-NEXT: linalg.fill ins(%[[ZERO]] : f32) outs(%[[B]] : memref<8xf32>)
// CHECK-NOT: copy
func.func @all_copies(%a: memref<8xf32>, %b: memref<8xf32>, %arena: memref<64xi8>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %t = memref.view %arena[%c0][] : memref<64xi8> to memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<8xf32>)
  memref.copy %t, %a : memref<8xf32> to memref<8xf32>
  linalg.copy ins(%t : memref<8xf32>) outs(%b : memref<8xf32>)
  return
}

// -----

// The temporary is reduced into after the copies: the copies become fills
// and its own fill moves right before the reduction.
// CHECK-LABEL: func.func @then_used
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%arg1 : memref<4xf32>)
// CHECK-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%[[T:[a-z0-9_]+]] : memref<4xf32>)
// CHECK-NEXT: linalg.reduce {{.*}} outs(%[[T]] : memref<4xf32>)
func.func @then_used(%x: memref<4x8xf32>, %a: memref<4xf32>, %arena: memref<64xi8>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %t = memref.view %arena[%c0][] : memref<64xi8> to memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<4xf32>)
  memref.copy %t, %a : memref<4xf32> to memref<4xf32>
  linalg.reduce { arith.addf } ins(%x : memref<4x8xf32>) outs(%t : memref<4xf32>) dimensions = [1]
  return
}

// -----

// A copy after another use (which may change the temporary) is kept, and a
// caller's buffer (not a view of the arena) is never touched.
// CHECK-LABEL: func.func @kept
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[T:[a-z0-9_]+]] : memref<4xf32>)
// CHECK-NEXT: linalg.reduce {{.*}} outs(%[[T]] : memref<4xf32>)
// CHECK-NEXT: memref.copy %[[T]], %arg1
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%arg2 : memref<4xf32>)
// CHECK-NEXT: memref.copy %arg2, %arg1
func.func @kept(%x: memref<4x8xf32>, %a: memref<4xf32>, %b: memref<4xf32>, %arena: memref<64xi8>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %t = memref.view %arena[%c0][] : memref<64xi8> to memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<4xf32>)
  linalg.reduce { arith.addf } ins(%x : memref<4x8xf32>) outs(%t : memref<4xf32>) dimensions = [1]
  memref.copy %t, %a : memref<4xf32> to memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<4xf32>)
  memref.copy %b, %a : memref<4xf32> to memref<4xf32>
  return
}
