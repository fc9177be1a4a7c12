// trc-select-entry keeps @train_step (or the function named by `entry`) as
// the module's only function, renamed @main, with the calls from it inlined;
// a missing entry is an error.

// RUN: trc-opt %s --split-input-file --verify-diagnostics --trc-select-entry | FileCheck %s
// RUN: trc-opt %s --split-input-file --verify-diagnostics --trc-select-entry="entry=helper" | FileCheck %s --check-prefix=HELPER

// CHECK-LABEL: func.func @main(%arg0: f32) -> f32
// CHECK-NEXT:    %[[A:.*]] = arith.addf %arg0, %arg0 : f32
// CHECK-NEXT:    %[[M:.*]] = arith.mulf %[[A]], %[[A]] : f32
// CHECK-NEXT:    return %[[M]] : f32
// CHECK-NOT:   func.func
// HELPER:      func.func @main(%arg0: f32) -> f32
// HELPER-NEXT:   arith.addf
// HELPER-NOT:  func.func

func.func private @helper(%x: f32) -> f32 {
  %y = arith.addf %x, %x : f32
  return %y : f32
}
func.func @forward(%x: f32) -> f32 {
  return %x : f32
}
func.func @train_step(%x: f32) -> f32 {
  %h = func.call @helper(%x) : (f32) -> f32
  %y = arith.mulf %h, %h : f32
  return %y : f32
}

// -----

// expected-error @below {{trc-select-entry: there is no function @}}
module {
  func.func @main() {
    return
  }
}
