// trc-matmul-to-runtime-call: batch matmuls on memrefs become calls of the
// runtime's BLAS entries (pointers and strides from the layouts; a zero fill
// of the result before the call dropped). With narrow-results, a bf16
// product into an f32 arena temporary that every reader (a generic, here
// through a reshape) rounds to bf16 first writes a bf16 view at the same
// place (trc_rt_matmul_bf16_bf16) and the readers lose their rounding; a
// product whose result a reader uses unrounded, or a result the caller
// sees, keeps f32.
// RUN: trc-opt %s --split-input-file --trc-matmul-to-runtime-call | FileCheck %s --check-prefix=PLAIN
// RUN: trc-opt %s --split-input-file --trc-matmul-to-runtime-call="narrow-results=1" | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
// PLAIN-LABEL: func.func @rounded
// PLAIN: call @trc_rt_matmul_bf16(
// PLAIN: arith.truncf
// CHECK-LABEL: func.func @rounded
// CHECK: %[[WIDE:.*]] = memref.view %arg3[%c64][] : memref<4096xi8> to memref<1x8x16xf32>
// CHECK-NEXT: %[[NARROW:.*]] = memref.view %arg3[%c64][] : memref<4096xi8> to memref<1x8x16xbf16>
// CHECK-NOT: linalg.fill
// CHECK: %[[PTR:.*]] = memref.extract_aligned_pointer_as_index %[[NARROW]]
// CHECK: call @trc_rt_matmul_bf16_bf16(
// CHECK: %[[FLAT:.*]] = memref.reshape %[[NARROW]](%arg4) : (memref<1x8x16xbf16>, memref<2xi64>) -> memref<8x16xbf16>
// CHECK: linalg.generic {{.*}} ins(%[[FLAT]] : memref<8x16xbf16>) outs(%arg2 : memref<8x16xbf16>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT: %[[NEG:.*]] = arith.negf %[[IN]] : bf16
// CHECK-NEXT: linalg.yield %[[NEG]]
func.func @rounded(%a: memref<1x8x4xbf16>, %b: memref<1x4x16xbf16>, %y: memref<8x16xbf16>,
                   %arena: memref<4096xi8>, %shape: memref<2xi64>) {
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %c = memref.view %arena[%c64][] : memref<4096xi8> to memref<1x8x16xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<1x8x16xf32>)
  linalg.batch_matmul ins(%a, %b : memref<1x8x4xbf16>, memref<1x4x16xbf16>) outs(%c : memref<1x8x16xf32>)
  %flat = memref.reshape %c(%shape) : (memref<1x8x16xf32>, memref<2xi64>) -> memref<8x16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%flat : memref<8x16xf32>) outs(%y : memref<8x16xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    %n = arith.negf %r : bf16
    linalg.yield %n : bf16
  }
  return
}

// -----

#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// A reader that adds in f32 before rounding: the result stays f32.
// CHECK-LABEL: func.func @unrounded
// CHECK: call @trc_rt_matmul_bf16(
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
func.func @unrounded(%a: memref<1x8x4xbf16>, %b: memref<1x4x16xbf16>, %y: memref<1x8x16xbf16>,
                     %arena: memref<4096xi8>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %c = memref.view %arena[%c0][] : memref<4096xi8> to memref<1x8x16xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<1x8x16xf32>)
  linalg.batch_matmul ins(%a, %b : memref<1x8x4xbf16>, memref<1x4x16xbf16>) outs(%c : memref<1x8x16xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%c : memref<1x8x16xf32>) outs(%y : memref<1x8x16xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %s = arith.addf %in, %in : f32
    %r = arith.truncf %s : f32 to bf16
    linalg.yield %r : bf16
  }
  return
}

// -----

// A result the caller sees (an argument, not an arena temporary) stays f32.
// CHECK-LABEL: func.func @returned
// CHECK: call @trc_rt_matmul_bf16(
// CHECK-NOT: bf16_bf16
func.func @returned(%a: memref<1x8x4xbf16>, %b: memref<1x4x16xbf16>, %c: memref<1x8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<1x8x16xf32>)
  linalg.batch_matmul ins(%a, %b : memref<1x8x4xbf16>, memref<1x4x16xbf16>) outs(%c : memref<1x8x16xf32>)
  return
}
