// Verifier errors of trc.fusion and trc.yield: each case is a separate module.
// RUN: trc-opt %s -split-input-file -verify-diagnostics

func.func @no_results(%x: tensor<4xf32>) {
  // expected-error @+1 {{has no results (a group that writes nothing is dead)}}
  trc.fusion elementwise (%a = %x : tensor<4xf32>) -> () {
    trc.yield
  }
  return
}

// -----

func.func @yield_types(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{yields 2 values whose types do not match its 1 results}}
  %r = trc.fusion elementwise (%a = %x : tensor<4xf32>) -> (tensor<4xf32>) {
    trc.yield %a, %a : tensor<4xf32>, tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @yield_element_type(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{yields 1 values whose types do not match its 1 results}}
  %r = trc.fusion elementwise (%a = %x : tensor<4xf32>) -> (tensor<4xf16>) {
    %e = trc.exp %a : tensor<4xf32>
    trc.yield %e : tensor<4xf32>
  }
  return %r : tensor<4xf16>
}

// -----

func.func @unknown_kind(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{unknown fusion kind 'horizontal' (elementwise, reduction or matmul_epilogue)}}
  %r = trc.fusion horizontal (%a = %x : tensor<4xf32>) -> (tensor<4xf32>) {
    trc.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @elementwise_with_reduce(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{of kind elementwise holds a reduction or a matrix product}}
  %r = trc.fusion elementwise (%a = %x : tensor<4x8xf32>) -> (tensor<4xf32>) {
    %s = trc.reduce sum %a dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
    trc.yield %s : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @reduction_without_one(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{of kind reduction holds no reduction}}
  %r = trc.fusion reduction (%a = %x : tensor<4xf32>) -> (tensor<4xf32>) {
    %e = trc.exp %a : tensor<4xf32>
    trc.yield %e : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @two_products(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{of kind matmul_epilogue holds 2 matrix products (exactly one expected)}}
  %r = trc.fusion matmul_epilogue (%a = %x : tensor<4x4xf32>) -> (tensor<4x4xf32>) {
    %p = trc.dot_general %a, %a, batch = [] x [], contract = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %q = trc.dot_general %p, %a, batch = [] x [], contract = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    trc.yield %q : tensor<4x4xf32>
  }
  return %r : tensor<4x4xf32>
}

// -----

func.func @epilogue_on_elementwise(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{epilogue, alpha, accumulate and gelu_aux belong to matmul_epilogue fusions only}}
  %r = trc.fusion elementwise (%a = %x : tensor<4xf32>) -> (tensor<4xf32>) attributes {epilogue = "bias"} {
    %e = trc.exp %a : tensor<4xf32>
    trc.yield %e : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @unknown_epilogue(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{unknown epilogue 'relu' (none, bias, gelu or bias_gelu)}}
  %r = trc.fusion matmul_epilogue (%a = %x : tensor<4x4xf32>) -> (tensor<4x4xf32>) attributes {epilogue = "relu"} {
    %p = trc.dot_general %a, %a, batch = [] x [], contract = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    trc.yield %p : tensor<4x4xf32>
  }
  return %r : tensor<4x4xf32>
}

// -----

func.func @aux_without_gelu(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{gelu_aux needs a gelu epilogue}}
  %r = trc.fusion matmul_epilogue (%a = %x : tensor<4x4xf32>) -> (tensor<4x4xf32>) attributes {epilogue = "bias", gelu_aux} {
    %p = trc.dot_general %a, %a, batch = [] x [], contract = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    trc.yield %p : tensor<4x4xf32>
  }
  return %r : tensor<4x4xf32>
}

// -----

func.func @nested(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = trc.fusion elementwise (%a = %x : tensor<4xf32>) -> (tensor<4xf32>) {
    // expected-error @+1 {{may not be nested in another trc.fusion}}
    %i = trc.fusion elementwise (%b = %a : tensor<4xf32>) -> (tensor<4xf32>) {
      trc.yield %b : tensor<4xf32>
    }
    trc.yield %i : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @foreign_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = trc.fusion elementwise (%a = %x : tensor<4xf32>) -> (tensor<4xf32>) {
    // expected-error @+1 {{is not allowed in a trc.fusion (core and composite trc ops only)}}
    %e = func.call @f(%a) : (tensor<4xf32>) -> tensor<4xf32>
    trc.yield %e : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
func.func private @f(tensor<4xf32>) -> tensor<4xf32>

// -----

// The body is isolated from above: it reads block arguments only.
func.func @captures(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  // expected-note @+1 {{required by region isolation constraints}}
  %r = trc.fusion elementwise (%a = %x : tensor<4xf32>) -> (tensor<4xf32>) {
    // expected-error @+1 {{using value defined outside the region}}
    %s = trc.add %a, %y : tensor<4xf32>
    trc.yield %s : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @argument_types(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{body argument 0 has type 'tensor<4xf16>' but operand 0 has type 'tensor<4xf32>'}}
  %r = "trc.fusion"(%x) <{kind = #trc<fusion_kind elementwise>}> ({
  ^bb0(%a: tensor<4xf16>):
    %c = trc.convert %a : tensor<4xf16> -> tensor<4xf32>
    "trc.yield"(%c) : (tensor<4xf32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @yield_outside(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expects parent op 'trc.fusion'}}
  trc.yield %x : tensor<4xf32>
}
