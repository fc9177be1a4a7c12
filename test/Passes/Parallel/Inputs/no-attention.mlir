// A token model without attention (an embedding and a linear head): what
// trc-shard-context-parallel refuses (shard-context-parallel.test).
trc.parameter @wte : tensor<16x4xf32> = dense<0.5> : tensor<16x4xf32>
trc.parameter @w : tensor<4x4xf32> = dense<0.25> : tensor<4x4xf32>
func.func @main(%ids: tensor<2x8xi64> {trc.input = "input_ids"}) -> (tensor<f32> {trc.output = "loss"}) {
  %wte = trc.get_parameter @wte : tensor<16x4xf32>
  %w = trc.get_parameter @w : tensor<4x4xf32>
  %e = trc.gather %wte, %ids axis = 0 : (tensor<16x4xf32>, tensor<2x8xi64>) -> tensor<2x8x4xf32>
  %h = trc.dot_general %e, %w, batch = [] x [], contract = [2] x [0]
      : (tensor<2x8x4xf32>, tensor<4x4xf32>) -> tensor<2x8x4xf32>
  %s = trc.reduce sum %h dims = [0, 1, 2] : (tensor<2x8x4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
