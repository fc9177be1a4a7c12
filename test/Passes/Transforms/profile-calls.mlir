// trc-profile-calls brackets @main's calls of private (outlined loop nest)
// functions and of the runtime's matrix products with the profiler hooks,
// one id per (op type, node, function), and lists the spans on the module;
// other calls (a collective, which the runtime times itself) and other
// functions are left alone. Running it twice is an error.
// RUN: trc-opt %s --trc-profile-calls | FileCheck %s
// RUN: not trc-opt %s --trc-profile-calls --trc-profile-calls 2>&1 | FileCheck %s --check-prefix=TWICE

// CHECK: trc.profile_spans = {{\[}}["LayerNormalization (loop)", "/blocks.0/ln_1/LayerNormalization", "main_loop0"], ["MatMul (blas)", "/blocks.0/c_fc/MatMul", "trc_rt_matmul_f32"], ["LayerNormalization (loop)", "/blocks.1/ln_1/LayerNormalization_3", "main_loop0"], ["other (loop)", "", "main_loop1"]]
// The nests themselves are not instrumented.
// CHECK: func.func private @main_loop0(
// CHECK-NEXT: return
// CHECK-LABEL: func.func @main(
// CHECK: %[[ID0:.*]] = arith.constant 0 : i64
// CHECK-NEXT: call @trc_rt_profile_begin(%[[ID0]])
// CHECK-NEXT: call @main_loop0(
// CHECK-NEXT: call @trc_rt_profile_end(%[[ID0]])
// CHECK: call @trc_rt_profile_begin(
// CHECK-NEXT: call @trc_rt_matmul_f32(
// CHECK-NEXT: call @trc_rt_profile_end(
// CHECK: call @trc_rt_profile_begin(
// CHECK-NEXT: call @main_loop0(
// CHECK: call @trc_rt_profile_begin(
// CHECK-NEXT: call @main_loop1(
// CHECK-NOT: call @trc_rt_profile_begin
// CHECK: call @trc_rt_all_reduce(
// CHECK: func.func private @trc_rt_profile_begin(i64)
// CHECK: func.func private @trc_rt_profile_end(i64)

// TWICE: error: trc-profile-calls has run on this module already

module {
  func.func private @trc_rt_matmul_f32(i64, i64, i64, i64, i64, i64, i64)
  func.func private @trc_rt_all_reduce(i64)
  func.func private @main_loop0(%a: memref<4xf32>) {
    return
  }
  func.func private @main_loop1(%a: memref<4xf32>) {
    return
  }
  func.func @main(%a: memref<4xf32>) {
    %c = arith.constant 1 : i64
    call @main_loop0(%a) : (memref<4xf32>) -> () loc("/blocks.0/ln_1/LayerNormalization")
    call @trc_rt_matmul_f32(%c, %c, %c, %c, %c, %c, %c) : (i64, i64, i64, i64, i64, i64, i64) -> () loc(fused["/blocks.0/c_fc/MatMul", unknown])
    call @main_loop0(%a) : (memref<4xf32>) -> () loc("/blocks.1/ln_1/LayerNormalization_3")
    call @main_loop1(%a) : (memref<4xf32>) -> ()
    call @trc_rt_all_reduce(%c) : (i64) -> ()
    return
  }
}
