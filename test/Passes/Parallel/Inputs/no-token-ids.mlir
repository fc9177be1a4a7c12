// Attention over float inputs (no embedding lookup by a graph input): what
// trc-shard-context-parallel refuses (shard-context-parallel.test).
trc.parameter @w : tensor<16x16xf32> = dense<0.5> : tensor<16x16xf32>
func.func @main(%x: tensor<2x4x8x16xf32> {trc.input = "x"}) -> (tensor<f32> {trc.output = "loss"}) {
  %w = trc.get_parameter @w : tensor<16x16xf32>
  %q = trc.dot_general %x, %w, batch = [] x [], contract = [3] x [0]
      : (tensor<2x4x8x16xf32>, tensor<16x16xf32>) -> tensor<2x4x8x16xf32>
  %s = trc.dot_general %q, %x, batch = [0, 1] x [0, 1], contract = [3] x [3]
      : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  %p = trc.softmax %s axis = 3 : tensor<2x4x8x8xf32>
  %r = trc.reduce sum %p dims = [0, 1, 2, 3] : (tensor<2x4x8x8xf32>) -> tensor<f32>
  return %r : tensor<f32>
}
