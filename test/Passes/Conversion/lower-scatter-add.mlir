// trc-lower-to-linalg of scatter_add (the adjoint of gather): an scf.for nest
// over the updates' index space accumulating into a copy of the operand.
// RUN: trc-opt %s --trc-lower-to-linalg --split-input-file | FileCheck %s

// Rows of updates are added at wrapped indices (i < 0 counts from the end):
// one loop per updates dimension, the result carried through iter_args,
// starting from a copy of the operand (never the operand itself, which may
// be an input buffer).
// CHECK-LABEL: func.func @scatter_rows
// CHECK: %[[INIT:[a-z0-9_]+]] = linalg.copy ins(%arg0 : tensor<5x3xf32>)
// CHECK: scf.for %[[I:[a-z0-9_]+]] = {{.*}} iter_args(%[[A:[a-z0-9_]+]] = %[[INIT]])
// CHECK: scf.for %[[J:[a-z0-9_]+]] = {{.*}} iter_args(%[[B:[a-z0-9_]+]] = %[[A]])
// CHECK: scf.for %[[K:[a-z0-9_]+]] = {{.*}} iter_args(%[[C:[a-z0-9_]+]] = %[[B]])
// CHECK: %[[IDX:[a-z0-9_]+]] = tensor.extract %arg1[%[[I]], %[[J]]] : tensor<2x2xi64>
// CHECK: %[[CAST:[a-z0-9_]+]] = arith.index_cast %[[IDX]] : i64 to index
// CHECK: %[[NEG:[a-z0-9_]+]] = arith.cmpi slt, %[[CAST]]
// CHECK: %[[WRAP:[a-z0-9_]+]] = arith.addi %[[CAST]]
// CHECK: %[[ROW:[a-z0-9_]+]] = arith.select %[[NEG]], %[[WRAP]], %[[CAST]]
// CHECK: %[[U:[a-z0-9_]+]] = tensor.extract %arg2[%[[I]], %[[J]], %[[K]]]
// CHECK: %[[OLD:[a-z0-9_]+]] = tensor.extract %[[C]][%[[ROW]], %[[K]]]
// CHECK: %[[SUM:[a-z0-9_]+]] = arith.addf %[[OLD]], %[[U]] : f32
// CHECK: %[[NEW:[a-z0-9_]+]] = tensor.insert %[[SUM]] into %[[C]][%[[ROW]], %[[K]]]
// CHECK: scf.yield %[[NEW]]
func.func @scatter_rows(%t: tensor<5x3xf32>, %i: tensor<2x2xi64>, %u: tensor<2x2x3xf32>) -> tensor<5x3xf32> {
  %r = trc.scatter_add %t, %i, %u axis = 0 : (tensor<5x3xf32>, tensor<2x2xi64>, tensor<2x2x3xf32>) -> tensor<5x3xf32>
  return %r : tensor<5x3xf32>
}

// -----

// A splat operand (the zeros a gather's VJP scatters into) is filled, not
// copied from a constant as large as the table; scattering along an inner
// axis reads the index at the updates' middle dimension.
// CHECK-LABEL: func.func @scatter_columns_into_zeros
// CHECK: %[[ZERO:[a-z0-9_]+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[INIT:[a-z0-9_]+]] = linalg.fill ins(%[[ZERO]] : f32)
// CHECK: scf.for %[[I:[a-z0-9_]+]] = {{.*}} iter_args(%{{.*}} = %[[INIT]])
// CHECK: scf.for %[[J:[a-z0-9_]+]] =
// CHECK: tensor.extract %arg0[%[[J]]] : tensor<3xi32>
// CHECK: tensor.insert %{{.*}} into %{{.*}}[%[[I]], %{{.*}}] : tensor<2x4xf32>
func.func @scatter_columns_into_zeros(%i: tensor<3xi32>, %u: tensor<2x3xf32>) -> tensor<2x4xf32> {
  %z = trc.constant dense<0.0> : tensor<2x4xf32>
  %r = trc.scatter_add %z, %i, %u axis = 1 : (tensor<2x4xf32>, tensor<3xi32>, tensor<2x3xf32>) -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}
