// trc.offload, trc.prefetch and trc.copy_wait: round-trip (also in generic
// form) and are never folded, merged or moved by canonicalize and cse (two
// offloads of one value stay two). Negative cases: offload-invalid.mlir;
// their lowering: test/Passes/Conversion/offload-to-runtime-call.mlir.
// RUN: trc-opt %s | trc-opt | FileCheck %s
// RUN: trc-opt %s --mlir-print-op-generic | trc-opt | FileCheck %s
// RUN: trc-opt %s --canonicalize --cse | FileCheck %s --check-prefix=KEPT

// CHECK-LABEL: func.func @round_trip(
// CHECK: %[[H:.*]] = trc.offload %arg0 : tensor<4x8xf32>
// CHECK-NEXT: %[[HX:.*]] = trc.copy_wait %[[H]] from %arg0 : tensor<4x8xf32>
// CHECK-NEXT: %[[P:.*]] = trc.prefetch %[[HX]] : tensor<4x8xf32>
// CHECK-NEXT: %[[Y:.*]] = trc.copy_wait %[[P]] from %[[HX]] : tensor<4x8xf32>
// CHECK-NEXT: trc.add %[[Y]], %[[Y]]
func.func @round_trip(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %h = trc.offload %x : tensor<4x8xf32>
  %hx = trc.copy_wait %h from %x : tensor<4x8xf32>
  %p = trc.prefetch %hx : tensor<4x8xf32>
  %y = trc.copy_wait %p from %hx : tensor<4x8xf32>
  %s = trc.add %y, %y : tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// KEPT-LABEL: func.func @twice(
// KEPT-COUNT-2: trc.offload %arg0
// KEPT-COUNT-2: trc.prefetch
// KEPT: return
func.func @twice(%x: tensor<16xf32>) -> tensor<16xf32> {
  %h1 = trc.offload %x : tensor<16xf32>
  %h2 = trc.offload %x : tensor<16xf32>
  %hx1 = trc.copy_wait %h1 from %x : tensor<16xf32>
  %hx2 = trc.copy_wait %h2 from %x : tensor<16xf32>
  %p1 = trc.prefetch %hx1 : tensor<16xf32>
  %p2 = trc.prefetch %hx2 : tensor<16xf32>
  %y1 = trc.copy_wait %p1 from %hx1 : tensor<16xf32>
  %y2 = trc.copy_wait %p2 from %hx2 : tensor<16xf32>
  %s = trc.add %y1, %y2 : tensor<16xf32>
  return %s : tensor<16xf32>
}
