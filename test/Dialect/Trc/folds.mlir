// Folders of trc ops, run through the canonicalizer.
// RUN: trc-opt %s --canonicalize --split-input-file | FileCheck %s

// Integer shape arithmetic (what exporters emit for `c // heads`) folds.
// CHECK-LABEL: func.func @int_arith
// CHECK-NEXT: %[[C:.*]] = trc.constant dense<[16, 1]> : tensor<2xi64>
// CHECK-NEXT: return %[[C]]
func.func @int_arith() -> tensor<2xi64> {
  %a = trc.constant dense<[64, 7]> : tensor<2xi64>
  %b = trc.constant dense<[4, 7]> : tensor<2xi64>
  %c = trc.div %a, %b : tensor<2xi64>
  %d = trc.constant dense<[2, 3]> : tensor<2xi64>
  %e = trc.mul %c, %d : tensor<2xi64>
  %f = trc.sub %e, %c : tensor<2xi64>
  %g = trc.add %f, %c : tensor<2xi64>
  %h = trc.div %g, %d : tensor<2xi64>
  return %h : tensor<2xi64>
}

// -----

// Integer division by zero is not folded (left for run time to report).
// CHECK-LABEL: func.func @int_div_zero
// CHECK: trc.div
func.func @int_div_zero() -> tensor<i64> {
  %a = trc.constant dense<5> : tensor<i64>
  %b = trc.constant dense<0> : tensor<i64>
  %c = trc.div %a, %b : tensor<i64>
  return %c : tensor<i64>
}

// -----

// Float constants fold too.
// CHECK-LABEL: func.func @float_arith
// CHECK-NEXT: trc.constant dense<-1.250000e+00> : tensor<3xf32>
func.func @float_arith() -> tensor<3xf32> {
  %a = trc.constant dense<2.5> : tensor<3xf32>
  %b = trc.constant dense<2.0> : tensor<3xf32>
  %c = trc.div %a, %b : tensor<3xf32>
  %d = trc.neg %c : tensor<3xf32>
  return %d : tensor<3xf32>
}

// -----

// x + 0, x * 1, x - 0, x / 1, -(-x) are x.
// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>
// CHECK-NEXT: return %[[X]]
func.func @identities(%x: tensor<4xf32>) -> tensor<4xf32> {
  %zero = trc.constant dense<0.0> : tensor<4xf32>
  %one = trc.constant dense<1.0> : tensor<4xf32>
  %0 = trc.add %x, %zero : tensor<4xf32>
  %1 = trc.mul %one, %0 : tensor<4xf32>
  %2 = trc.sub %1, %zero : tensor<4xf32>
  %3 = trc.div %2, %one : tensor<4xf32>
  %4 = trc.neg %3 : tensor<4xf32>
  %5 = trc.neg %4 : tensor<4xf32>
  return %5 : tensor<4xf32>
}

// -----

// Chained reshapes collapse; a reshape to the same type disappears.
// CHECK-LABEL: func.func @reshapes
// CHECK-NEXT: %[[R:.*]] = trc.reshape %{{.*}} : (tensor<2x3x4xf32>) -> tensor<24xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshapes(%x: tensor<2x3x4xf32>) -> tensor<24xf32> {
  %0 = trc.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = trc.reshape %0 : (tensor<6x4xf32>) -> tensor<24xf32>
  %2 = trc.reshape %1 : (tensor<24xf32>) -> tensor<24xf32>
  return %2 : tensor<24xf32>
}

// -----

// transpose(transpose(x)) composes; the identity permutation disappears.
// CHECK-LABEL: func.func @transposes
// CHECK-NEXT: %[[T:.*]] = trc.transpose %{{.*}}, perm = [2, 0, 1]
// CHECK-NEXT: return %[[T]]
func.func @transposes(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = trc.transpose %x, perm = [1, 0, 2] : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %1 = trc.transpose %0, perm = [2, 1, 0] : (tensor<3x2x4xf32>) -> tensor<4x2x3xf32>
  %2 = trc.transpose %1, perm = [0, 1, 2] : (tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
  return %2 : tensor<4x2x3xf32>
}

// -----

// Data movement of constants folds (element order checked).
// CHECK-LABEL: func.func @constant_movement
// CHECK-DAG: dense<{{\[}}[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi64>
// CHECK-DAG: dense<[2, 3]> : tensor<2xi64>
// CHECK-DAG: dense<{{\[}}[1, 2, 3], [1, 2, 3]]> : tensor<2x3xi64>
// CHECK-DAG: dense<[3, 1]> : tensor<2xi64>
// CHECK-DAG: dense<[1, 2, 3, 4, 5, 6, 1, 2, 3]> : tensor<9xi64>
func.func @constant_movement() -> (tensor<3x2xi64>, tensor<2xi64>, tensor<2x3xi64>, tensor<2xi64>, tensor<9xi64>) {
  %m = trc.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %t = trc.transpose %m, perm = [1, 0] : (tensor<2x3xi64>) -> tensor<3x2xi64>
  %s = trc.slice %m[[0, 1] : [1, 3] : [1, 1]] : (tensor<2x3xi64>) -> tensor<1x2xi64>
  %s1 = trc.reshape %s : (tensor<1x2xi64>) -> tensor<2xi64>
  %v = trc.constant dense<[1, 2, 3]> : tensor<3xi64>
  %b = trc.broadcast_in_dim %v, dims = [1] : (tensor<3xi64>) -> tensor<2x3xi64>
  %i = trc.constant dense<[-1, 0]> : tensor<2xi64>
  %g = trc.gather %v, %i axis = 0 : (tensor<3xi64>, tensor<2xi64>) -> tensor<2xi64>
  %flat = trc.reshape %m : (tensor<2x3xi64>) -> tensor<6xi64>
  %c = trc.concatenate %flat, %v dim = 0 : (tensor<6xi64>, tensor<3xi64>) -> tensor<9xi64>
  return %t, %s1, %b, %g, %c : tensor<3x2xi64>, tensor<2xi64>, tensor<2x3xi64>, tensor<2xi64>, tensor<9xi64>
}

// -----

// The Equal/Where pattern of dynamic-axes Expand exports folds.
// CHECK-LABEL: func.func @compare_select
// CHECK-NEXT: %[[C:.*]] = trc.constant dense<[2, 16, 1]> : tensor<3xi64>
// CHECK-NEXT: return %[[C]]
func.func @compare_select() -> tensor<3xi64> {
  %shape = trc.constant dense<[2, -1, 1]> : tensor<3xi64>
  %minus = trc.constant dense<-1> : tensor<3xi64>
  %eq = trc.compare eq, %shape, %minus : tensor<3xi64> -> tensor<3xi1>
  %fill = trc.constant dense<16> : tensor<3xi64>
  %r = trc.select %eq, %fill, %shape : tensor<3xi1>, tensor<3xi64>
  return %r : tensor<3xi64>
}

// -----

// Conversions of constants: int <-> float, to bool.
// CHECK-LABEL: func.func @converts
// CHECK-DAG: dense<[1.000000e+00, -2.000000e+00]> : tensor<2xf32>
// CHECK-DAG: dense<[3, -1]> : tensor<2xi32>
// CHECK-DAG: dense<[true, false]> : tensor<2xi1>
func.func @converts() -> (tensor<2xf32>, tensor<2xi32>, tensor<2xi1>) {
  %i = trc.constant dense<[1, -2]> : tensor<2xi64>
  %f = trc.convert %i : tensor<2xi64> -> tensor<2xf32>
  %g = trc.constant dense<[3.7, -1.2]> : tensor<2xf32>
  %t = trc.convert %g : tensor<2xf32> -> tensor<2xi32>
  %z = trc.constant dense<[5, 0]> : tensor<2xi64>
  %b = trc.convert %z : tensor<2xi64> -> tensor<2xi1>
  return %f, %t, %b : tensor<2xf32>, tensor<2xi32>, tensor<2xi1>
}

// -----

// select with equal branches or a splat predicate picks a branch.
// CHECK-LABEL: func.func @select_trivial
// CHECK-SAME: (%[[P:.*]]: tensor<4xi1>, %[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @select_trivial(%p: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = trc.select %p, %a, %a : tensor<4xi1>, tensor<4xf32>
  %f = trc.constant dense<false> : tensor<4xi1>
  %1 = trc.select %f, %a, %b : tensor<4xi1>, tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// -----

// Out-of-range constant gather indices are not folded.
// CHECK-LABEL: func.func @gather_out_of_range
// CHECK: trc.gather
func.func @gather_out_of_range() -> tensor<1xi64> {
  %v = trc.constant dense<[1, 2, 3]> : tensor<3xi64>
  %i = trc.constant dense<[3]> : tensor<1xi64>
  %g = trc.gather %v, %i axis = 0 : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
  return %g : tensor<1xi64>
}

// -----

// pow by a constant 1, 2, 3 or 0.5 becomes multiplications or sqrt; other
// exponents stay.
// CHECK-LABEL: func.func @pow_by_constant
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-DAG: %[[SQ:.*]] = trc.mul %[[X]], %[[X]]
// CHECK-DAG: %[[SQ2:.*]] = trc.mul %[[X]], %[[X]]
// CHECK-DAG: %[[CUBE:.*]] = trc.mul %[[SQ2]], %[[X]]
// CHECK-DAG: %[[ROOT:.*]] = trc.sqrt %[[X]]
// CHECK-DAG: %[[OTHER:.*]] = trc.pow %[[X]], %{{.*}}
// CHECK: return %[[X]], %[[SQ]], %[[CUBE]], %[[ROOT]], %[[OTHER]]
func.func @pow_by_constant(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %one = trc.constant dense<1.0> : tensor<4xf32>
  %two = trc.constant dense<2.0> : tensor<4xf32>
  %three = trc.constant dense<3.0> : tensor<4xf32>
  %half = trc.constant dense<0.5> : tensor<4xf32>
  %seven = trc.constant dense<7.0> : tensor<4xf32>
  %0 = trc.pow %x, %one : tensor<4xf32>
  %1 = trc.pow %x, %two : tensor<4xf32>
  %2 = trc.pow %x, %three : tensor<4xf32>
  %3 = trc.pow %x, %half : tensor<4xf32>
  %4 = trc.pow %x, %seven : tensor<4xf32>
  return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
