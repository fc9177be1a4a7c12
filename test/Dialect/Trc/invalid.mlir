// Verifier errors of trc ops: each case is a separate module.
// RUN: trc-opt %s -split-input-file -verify-diagnostics

// Binary ops take operands of one type (broadcasting is explicit).
func.func @add_shapes(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "trc.add"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Dynamic shapes are not trc tensors.
func.func @dynamic(%a: tensor<?x3xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{must be statically shaped tensor}}
  %0 = trc.neg %a : tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

// Transcendental ops need floats.
func.func @exp_int(%a: tensor<3xi32>) -> tensor<3xi32> {
  // expected-error @+1 {{must be statically shaped tensor of}}
  %0 = trc.exp %a : tensor<3xi32>
  return %0 : tensor<3xi32>
}

// -----

func.func @dot_contract_mismatch(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{contracting dimension sizes differ: lhs dim 1 is 3, rhs dim 0 is 4}}
  %0 = trc.dot_general %a, %b, batch = [] x [], contract = [1] x [0] : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @dot_result_shape(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<5x2xf32> {
  // expected-error @+1 {{result shape [5, 2] does not match the expected [2, 5]}}
  %0 = trc.dot_general %a, %b, batch = [] x [], contract = [1] x [0] : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<5x2xf32>
  return %0 : tensor<5x2xf32>
}

// -----

func.func @dot_dim_out_of_range(%a: tensor<2x3xf32>, %b: tensor<3x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{lhs dimension 2 is out of range for rank 2}}
  %0 = trc.dot_general %a, %b, batch = [] x [], contract = [2] x [0] : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @dot_element_types(%a: tensor<2x3xf32>, %b: tensor<3x5xf16>) -> tensor<2x5xf32> {
  // expected-error @+1 {{operand element types differ: 'f32' vs 'f16'}}
  %0 = trc.dot_general %a, %b, batch = [] x [], contract = [1] x [0] : (tensor<2x3xf32>, tensor<3x5xf16>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @reduce_repeated(%a: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{reduced dimension 0 is repeated}}
  %0 = trc.reduce sum %a dims = [0, 0] : (tensor<2x3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @reduce_shape(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{result shape [2] does not match the expected [3]}}
  %0 = trc.reduce max %a dims = [0] : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @broadcast_size(%a: tensor<3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{operand dimension 0 of size 3 cannot broadcast to result dimension 1 of size 4}}
  %0 = trc.broadcast_in_dim %a, dims = [1] : (tensor<3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @broadcast_order(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{broadcast dimensions must be strictly increasing}}
  %0 = trc.broadcast_in_dim %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @transpose_not_permutation(%a: tensor<2x3xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{permutation dimension 0 is repeated}}
  %0 = trc.transpose %a, perm = [0, 0] : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @transpose_shape(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{result dimension 0 has size 2, expected 3}}
  %0 = trc.transpose %a, perm = [1, 0] : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{cannot reshape 6 elements into 7}}
  %0 = trc.reshape %a : (tensor<2x3xf32>) -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @slice_bounds(%a: tensor<4xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{slice [2, 5) is out of bounds for dimension 0 of size 4}}
  %0 = trc.slice %a[[2] : [5] : [1]] : (tensor<4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @slice_stride(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{stride 0 in dimension 0 is not positive}}
  %0 = trc.slice %a[[0] : [4] : [0]] : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @concat_sizes(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{input 1 dimension 1 has size 4, expected 3}}
  %0 = trc.concatenate %a, %b dim = 0 : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @pad_negative(%a: tensor<2xf32>, %v: tensor<f32>) -> tensor<1xf32> {
  // expected-error @+1 {{negative padding in dimension 0}}
  %0 = trc.pad %a, %v, low = [-1], high = [0] : (tensor<2xf32>, tensor<f32>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}

// -----

func.func @gather_shape(%t: tensor<10x4xf32>, %i: tensor<3xi64>) -> tensor<3x5xf32> {
  // expected-error @+1 {{result shape [3, 5] does not match the expected [3, 4]}}
  %0 = trc.gather %t, %i axis = 0 : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @gather_float_indices(%t: tensor<10x4xf32>, %i: tensor<3xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values}}
  %0 = trc.gather %t, %i axis = 0 : (tensor<10x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @softmax_axis(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = trc.softmax %a axis = 2 : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @layer_norm_scale(%a: tensor<2x8xf32>, %g: tensor<4xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{scale and bias must have the normalized shape [8], got [4]}}
  %0 = trc.layer_norm %a scale %g axis = 1 eps = 1.0e-5 : (tensor<2x8xf32>, tensor<4xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

func.func @cross_entropy_labels(%l: tensor<4x10xf32>, %y: tensor<5xi64>) -> tensor<f32> {
  // expected-error @+1 {{labels shape [5] does not match logits [N, C, d...]: expected [4]}}
  %0 = trc.cross_entropy %l, %y reduction = mean : (tensor<4x10xf32>, tensor<5xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @cross_entropy_none_shape(%l: tensor<4x10xf32>, %y: tensor<4xi64>) -> tensor<f32> {
  // expected-error @+1 {{result shape [] does not match the expected [4]}}
  %0 = trc.cross_entropy %l, %y reduction = none : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @random_uniform_key(%k: tensor<2xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{operand #0 must be 0D tensor of 64-bit signless integer values}}
  %0 = trc.random_uniform %k stream = 0 : (tensor<2xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @random_uniform_integer(%k: tensor<i64>) -> tensor<4xi32> {
  // expected-error @+1 {{result #0 must be statically shaped tensor of}}
  %0 = trc.random_uniform %k stream = 0 : (tensor<i64>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @dropout_ratio(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{ratio 1.000000e+00 is not in [0, 1)}}
  %0 = trc.dropout %a ratio = 1.0 seed = 0 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @iota_dim(%a: tensor<4xf32>) -> tensor<4xi64> {
  // expected-error @+1 {{axis 1 is out of range for rank 1}}
  %0 = trc.iota dim = 1 : tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @missing_parameter() -> tensor<4xf32> {
  // expected-error @+1 {{'nope' does not name a trc.parameter}}
  %0 = trc.get_parameter @nope : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

trc.parameter @p : tensor<4xf32> = dense<0.0> : tensor<4xf32>
func.func @parameter_type() -> tensor<5xf32> {
  // expected-error @+1 {{result type 'tensor<5xf32>' does not match parameter type 'tensor<4xf32>'}}
  %0 = trc.get_parameter @p : tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// expected-error @+1 {{initial value of type 'tensor<3xf32>' does not match the parameter type 'tensor<4xf32>'}}
trc.parameter @q : tensor<4xf32> = dense<0.0> : tensor<3xf32>

// -----

func.func @compare_types(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xi1> {
  // expected-error @+1 {{all of {lhs, rhs} have same type}}
  %0 = "trc.compare"(%a, %b) {direction = #trc<compare_direction lt>} : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// trc.optimization_barrier returns its operand: the same type.
func.func @barrier_type(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "trc.optimization_barrier"(%a) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
