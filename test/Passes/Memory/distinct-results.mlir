// trc-distinct-results: a buffer returned twice gets a copy for its second
// result, so buffer-results-to-out-params can give each result its own
// out-parameter (it crashed on the shared one); distinct results, and
// arguments returned once, are left alone.
// RUN: trc-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(trc-distinct-results))" | FileCheck %s
// RUN: trc-opt %s --split-input-file --pass-pipeline="builtin.module(func.func(trc-distinct-results),buffer-results-to-out-params{modify-public-functions})" | FileCheck %s --check-prefix=OUT

// CHECK-LABEL: func.func @twice
// CHECK: %[[V:.*]] = memref.alloc() : memref<4xf32>
// CHECK: %[[C:.*]] = memref.alloc() : memref<4xf32>
// CHECK: memref.copy %[[V]], %[[C]]
// CHECK: %[[D:.*]] = memref.alloc() : memref<4xf32>
// CHECK: memref.copy %[[V]], %[[D]]
// CHECK: return %[[V]], %[[C]], %[[D]]
// OUT-LABEL: func.func @twice(%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>)
func.func @twice() -> (memref<4xf32>, memref<4xf32>, memref<4xf32>) {
  %0 = memref.alloc() : memref<4xf32>
  return %0, %0, %0 : memref<4xf32>, memref<4xf32>, memref<4xf32>
}

// -----

// CHECK-LABEL: func.func @distinct
// CHECK-NOT: memref.copy
// CHECK: return %arg0, %{{.*}} :
func.func @distinct(%a: memref<4xf32>) -> (memref<4xf32>, memref<4xf32>) {
  %0 = memref.alloc() : memref<4xf32>
  return %a, %0 : memref<4xf32>, memref<4xf32>
}
