// trc.attention and trc.attention_grad: round trip and verifiers.
// RUN: trc-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @round_trip
// CHECK: trc.attention %arg0, %arg1, %arg2 mask %arg3 fill = 0xFFF0000000000000 where true scale = 2.500000e-01 : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x32xf32>, tensor<1x1x8x6xi1>) -> tensor<2x4x8x32xf32>
// CHECK: trc.attention_grad %arg0, %arg1, %arg2, %{{.*}} fill = 0.000000e+00 where false scale = 1.000000e+00 : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x32xf32>, tensor<2x4x8x32xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x32xf32>)
func.func @round_trip(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x6x16xf32>, %v: tensor<2x4x6x32xf32>,
                      %m: tensor<1x1x8x6xi1>) -> tensor<2x4x6x16xf32> {
  %o = trc.attention %q, %k, %v mask %m fill = 0xFFF0000000000000 where true scale = 0.25
      : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x32xf32>, tensor<1x1x8x6xi1>)
      -> tensor<2x4x8x32xf32>
  %dq, %dk, %dv = trc.attention_grad %q, %k, %v, %o fill = 0.0 where false scale = 1.0
      : (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x32xf32>, tensor<2x4x8x32xf32>)
      -> (tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x32xf32>)
  return %dk : tensor<2x4x6x16xf32>
}

// -----

func.func @head_size(%q: tensor<2x8x16xf32>, %k: tensor<2x8x8xf32>, %v: tensor<2x8x16xf32>) {
  // expected-error @+1 {{q has head size 16 but k has 8}}
  %o = trc.attention %q, %k, %v fill = 0.0 where true scale = 1.0
      : (tensor<2x8x16xf32>, tensor<2x8x8xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @keys(%q: tensor<2x8x16xf32>, %k: tensor<2x8x16xf32>, %v: tensor<2x6x16xf32>) {
  // expected-error @+1 {{k has 8 keys but v has 6}}
  %o = trc.attention %q, %k, %v fill = 0.0 where true scale = 1.0
      : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x6x16xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @batch(%q: tensor<2x8x16xf32>, %k: tensor<3x8x16xf32>, %v: tensor<3x8x16xf32>) {
  // expected-error @+1 {{expects q, k and v with the same batch dimensions}}
  %o = trc.attention %q, %k, %v fill = 0.0 where true scale = 1.0
      : (tensor<2x8x16xf32>, tensor<3x8x16xf32>, tensor<3x8x16xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @rank(%q: tensor<8x16xf32>) {
  // expected-error @+1 {{expects q of rank 3 or more ([batch..., Tq, D]), got rank 2}}
  %o = trc.attention %q, %q, %q fill = 0.0 where true scale = 1.0
      : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return
}

// -----

func.func @mask_shape(%q: tensor<2x8x16xf32>, %m: tensor<2x8x7xi1>) {
  // expected-error @+1 {{expects a mask of the scores' shape [batch..., Tq, Tk] (or 1 in dims it is the same along)}}
  %o = trc.attention %q, %q, %q mask %m fill = 0.0 where true scale = 1.0
      : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x7xi1>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @result(%q: tensor<2x8x16xf32>, %v: tensor<2x8x4xf32>) {
  // expected-error @+1 {{result must be 'tensor<2x8x4xf32>', got 'tensor<2x8x16xf32>'}}
  %o = trc.attention %q, %q, %v fill = 0.0 where true scale = 1.0
      : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x4xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @element_types(%q: tensor<2x8x16xf32>, %k: tensor<2x8x16xbf16>) {
  // expected-error @+1 {{expects q, k and v of one element type}}
  %o = trc.attention %q, %k, %q fill = 0.0 where true scale = 1.0
      : (tensor<2x8x16xf32>, tensor<2x8x16xbf16>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return
}

// -----

func.func @grad_types(%q: tensor<2x8x16xf32>, %g: tensor<2x8x16xf32>) {
  // expected-error @+1 {{gradients must have the types of q, k and v}}
  %a, %b, %c = trc.attention_grad %q, %q, %q, %g fill = 0.0 where true scale = 1.0
      : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>)
      -> (tensor<2x8x16xf32>, tensor<2x8x8xf32>, tensor<2x8x16xf32>)
  return
}

// -----

func.func @grad_result(%q: tensor<2x8x16xf32>, %g: tensor<2x8x8xf32>) {
  // expected-error @+1 {{result_grad must be 'tensor<2x8x16xf32>', got 'tensor<2x8x8xf32>'}}
  %a, %b, %c = trc.attention_grad %q, %q, %q, %g fill = 0.0 where true scale = 1.0
      : (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x8xf32>)
      -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>)
  return
}
