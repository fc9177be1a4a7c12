// trc-split-reductions: a reduction with few output points over many values
// becomes partials over many threads (reduced dimension r -> (j, s), s where
// r was), a tail over the values S * J leaves, and a combining reduction,
// split again while it qualifies; reductions that do not qualify stay.
// RUN: trc-opt %s --pass-pipeline="builtin.module(func.func(trc-split-reductions))" | FileCheck %s
// RUN: trc-opt %s --pass-pipeline="builtin.module(func.func(trc-split-reductions{threads=1024 min-points=2 min-reduced=64}))" | FileCheck %s --check-prefix=SMALL

// A sum to a scalar over two dimensions: collapsed (3860736 values), then
// J = 32 per thread over S = 120648 partials; 120648 -> 3770 (+ 8 left) ->
// 117 (+ 26 left); 117 values are too few to split again.
// CHECK-LABEL: func.func @norm
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1]] : tensor<768x5027xf32> into tensor<3860736xf32>
// CHECK: %[[HEAD:.*]] = tensor.expand_shape %[[FLAT]] {{\[\[}}0, 1]] output_shape [32, 120648]
// CHECK: %[[P1:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[HEAD]] : tensor<32x120648xf32>) outs(%{{.*}} : tensor<120648xf32>)
// CHECK: arith.addf
// CHECK: tensor.extract_slice %[[P1]][0] [120640] [1]
// CHECK: %[[P2:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<32x3770xf32>) outs(%{{.*}} : tensor<3770xf32>)
// CHECK: %[[REST1:.*]] = tensor.extract_slice %[[P1]][120640] [8] [1]
// CHECK: %[[T1:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[REST1]] : tensor<8xf32>) outs(%[[ZERO:.*]] : tensor<f32>)
// CHECK: %[[P3:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<32x117xf32>) outs(%{{.*}} : tensor<117xf32>)
// CHECK: %[[T2:.*]] = linalg.generic {{.*}} ins(%{{.*}} : tensor<26xf32>) outs(%[[T1]] : tensor<f32>)
// CHECK: %[[LAST:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%[[P3]] : tensor<117xf32>) outs(%[[T2]] : tensor<f32>)
// CHECK: return %[[LAST]]
func.func @norm(%x: tensor<768x5027xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = linalg.reduce { arith.addf } ins(%x : tensor<768x5027xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
  return %r : tensor<f32>
}

// A column reduction (a bias gradient): the leading dimensions are reduced,
// s takes their place before the 768 outputs, so neighbouring threads still
// read neighbouring elements; the payload (x * x folded in) is kept, and the
// partials start from 0 while the result starts from the original output.
// CHECK-LABEL: func.func @bias
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : tensor<8x1024x768xf32> into tensor<8192x768xf32>
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2]] output_shape [32, 256, 768]
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<256x768xf32>)
// CHECK: %[[P:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "parallel"]} ins(%{{.*}} : tensor<32x256x768xf32>) outs(%{{.*}} : tensor<256x768xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[R:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%[[P]] : tensor<256x768xf32>) outs(%arg1 : tensor<768xf32>)
// CHECK-NOT: arith.mulf
// CHECK: return %[[R]]
#m3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#o3 = affine_map<(d0, d1, d2) -> (d2)>
func.func @bias(%x: tensor<8x1024x768xf32>, %init: tensor<768xf32>) -> tensor<768xf32> {
  %r = linalg.generic {indexing_maps = [#m3, #o3], iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%x : tensor<8x1024x768xf32>) outs(%init : tensor<768xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    %t = arith.addf %out, %s : f32
    linalg.yield %t : f32
  } -> tensor<768xf32>
  return %r : tensor<768xf32>
}

// A maximum starts its partials from -inf (maximumf's neutral element).
// SMALL-LABEL: func.func @maximum
// SMALL: arith.constant 0xFF800000 : f32
// SMALL: linalg.generic {{.*}} ins(%{{.*}} : tensor<32x8xf32>) outs(%{{.*}} : tensor<8xf32>)
// SMALL: arith.maximumf
// SMALL: linalg.generic {{.*}} ins(%{{.*}} : tensor<8xf32>) outs(%arg1 : tensor<f32>)
// SMALL: arith.maximumf
func.func @maximum(%x: tensor<256xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.reduce { arith.maximumf } ins(%x : tensor<256xf32>) outs(%init : tensor<f32>) dimensions = [0]
  return %r : tensor<f32>
}

// What stays: many output points (layer-norm rows), too few values, a
// payload that is not acc (+) f(x) (two combiners), linalg.index in the
// payload, reduced dimensions that are not adjacent.
// CHECK-LABEL: func.func @stays
// CHECK-NOT: tensor.expand_shape
// CHECK-NOT: tensor.collapse_shape
// CHECK: return
#r2 = affine_map<(d0, d1) -> (d0, d1)>
#p2 = affine_map<(d0, d1) -> (d0)>
#id1 = affine_map<(d0) -> (d0)>
#s1 = affine_map<(d0) -> ()>
#m3b = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#o3b = affine_map<(d0, d1, d2) -> (d1)>
func.func @stays(%rows: tensor<8192x768xf32>, %rinit: tensor<8192xf32>, %small: tensor<512xf32>,
                 %big: tensor<65536xf32>, %s: tensor<f32>, %x3: tensor<64x8x64xf32>, %i8: tensor<8xf32>)
    -> (tensor<8192xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<8xf32>) {
  %a = linalg.reduce { arith.addf } ins(%rows : tensor<8192x768xf32>) outs(%rinit : tensor<8192xf32>) dimensions = [1]
  %b = linalg.reduce { arith.addf } ins(%small : tensor<512xf32>) outs(%s : tensor<f32>) dimensions = [0]
  %c = linalg.generic {indexing_maps = [#id1, #s1], iterator_types = ["reduction"]}
      ins(%big : tensor<65536xf32>) outs(%s : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %t = arith.addf %out, %in : f32
    %u = arith.mulf %t, %t : f32
    linalg.yield %u : f32
  } -> tensor<f32>
  %d = linalg.generic {indexing_maps = [#id1, #s1], iterator_types = ["reduction"]}
      ins(%big : tensor<65536xf32>) outs(%s : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %m = arith.mulf %in, %fi : f32
    %t = arith.addf %out, %m : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  %e = linalg.generic {indexing_maps = [#m3b, #o3b], iterator_types = ["reduction", "parallel", "reduction"]}
      ins(%x3 : tensor<64x8x64xf32>) outs(%i8 : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = arith.addf %out, %in : f32
    linalg.yield %t : f32
  } -> tensor<8xf32>
  return %a, %b, %c, %d, %e : tensor<8192xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<8xf32>
}
