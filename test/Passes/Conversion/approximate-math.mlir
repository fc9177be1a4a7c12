// trc-approximate-math: f32 tanh/erf/exp become arithmetic (no calls);
// logarithms stay math ops (libm), being wrong on subnormals otherwise.
// RUN: trc-opt %s --trc-approximate-math | FileCheck %s

// CHECK-LABEL: func.func @approximated
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK-NOT: math.exp
// CHECK: return
func.func @approximated(%x: f32) -> (f32, f32, f32) {
  %0 = math.tanh %x : f32
  %1 = math.erf %x : f32
  %2 = math.exp %x : f32
  return %0, %1, %2 : f32, f32, f32
}

// CHECK-LABEL: func.func @kept
// CHECK: math.log %{{.*}} : f32
// CHECK: math.log1p %{{.*}} : f32
func.func @kept(%x: f32) -> (f32, f32) {
  %0 = math.log %x : f32
  %1 = math.log1p %x : f32
  return %0, %1 : f32, f32
}
