// trc-expand-bf16: bf16 <-> f32 conversions become integer operations and
// bf16 selects select their bits (no call of compiler-rt's __truncsfbf2
// after lowering); f16 and other ops stay.
// RUN: trc-opt %s --trc-expand-bf16 | FileCheck %s
// RUN: trc-opt %s --trc-expand-bf16 --convert-arith-to-llvm --convert-func-to-llvm | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: func.func @conversions
// CHECK-NOT: arith.truncf
// CHECK-NOT: arith.extf
// CHECK: arith.bitcast %{{.*}} : f32 to i32
// CHECK: arith.bitcast %{{.*}} : i16 to bf16
// CHECK: arith.bitcast %{{.*}} : bf16 to i16
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// LLVM-LABEL: llvm.func @conversions
// LLVM-NOT: llvm.fptrunc
// LLVM-NOT: llvm.fpext
// LLVM-NOT: __truncsfbf2
func.func @conversions(%x: f32, %y: bf16) -> (bf16, f32) {
  %0 = arith.truncf %x : f32 to bf16
  %1 = arith.extf %y : bf16 to f32
  return %0, %1 : bf16, f32
}

// CHECK-LABEL: func.func @selected
// CHECK: %[[A:.*]] = arith.bitcast %arg1 : bf16 to i16
// CHECK: %[[B:.*]] = arith.bitcast %arg2 : bf16 to i16
// CHECK: %[[S:.*]] = arith.select %arg0, %[[A]], %[[B]] : i16
// CHECK: arith.bitcast %[[S]] : i16 to bf16
// CHECK: arith.bitcast %{{.*}} : vector<4xbf16> to vector<4xi16>
// CHECK: arith.select %{{.*}} : vector<4xi1>, vector<4xi16>
func.func @selected(%c: i1, %a: bf16, %b: bf16, %cv: vector<4xi1>, %av: vector<4xbf16>,
                    %bv: vector<4xbf16>) -> (bf16, vector<4xbf16>) {
  %0 = arith.select %c, %a, %b : bf16
  %1 = arith.select %cv, %av, %bv : vector<4xi1>, vector<4xbf16>
  return %0, %1 : bf16, vector<4xbf16>
}

// CHECK-LABEL: func.func @kept
// LLVM-LABEL: llvm.func @kept
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: arith.extf %{{.*}} : f16 to f32
func.func @kept(%x: f32, %y: f16) -> (f16, f32) {
  %0 = arith.truncf %x : f32 to f16
  %1 = arith.extf %y : f16 to f32
  return %0, %1 : f16, f32
}
