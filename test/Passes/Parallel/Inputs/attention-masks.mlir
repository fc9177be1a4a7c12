// One-head attentions over 8 positions with masks of every kind the causal
// proof must tell apart (shard-context-parallel.test, MASKS): at context
// degree 2 with balance the chunks are 2 positions, and a mask is causal
// when it hides every key of a later chunk than its query's.
trc.parameter @wte : tensor<16x4xf32> = dense<0.5> : tensor<16x4xf32>
trc.parameter @tril frozen : tensor<8x8xf32> = dense<[[1., 0., 0., 0., 0., 0., 0., 0.], [1., 1., 0., 0., 0., 0., 0., 0.], [1., 1., 1., 0., 0., 0., 0., 0.], [1., 1., 1., 1., 0., 0., 0., 0.], [1., 1., 1., 1., 1., 0., 0., 0.], [1., 1., 1., 1., 1., 1., 0., 0.], [1., 1., 1., 1., 1., 1., 1., 0.], [1., 1., 1., 1., 1., 1., 1., 1.]]> : tensor<8x8xf32>
trc.parameter @trainable_tril : tensor<8x8xf32> = dense<[[1., 0., 0., 0., 0., 0., 0., 0.], [1., 1., 0., 0., 0., 0., 0., 0.], [1., 1., 1., 0., 0., 0., 0., 0.], [1., 1., 1., 1., 0., 0., 0., 0.], [1., 1., 1., 1., 1., 0., 0., 0.], [1., 1., 1., 1., 1., 1., 0., 0.], [1., 1., 1., 1., 1., 1., 1., 0.], [1., 1., 1., 1., 1., 1., 1., 1.]]> : tensor<8x8xf32>
func.func @main(%ids: tensor<2x8xi64> {trc.input = "input_ids"},
                %pad: tensor<2x8xi1> {trc.input = "padding"}) -> (tensor<f32> {trc.output = "loss"}) {
  %wte = trc.get_parameter @wte : tensor<16x4xf32>
  %tril = trc.get_parameter @tril : tensor<8x8xf32>
  %ttril = trc.get_parameter @trainable_tril : tensor<8x8xf32>
  %e = trc.gather %wte, %ids axis = 0 : (tensor<16x4xf32>, tensor<2x8xi64>) -> tensor<2x8x4xf32>
  %x = trc.reshape %e : (tensor<2x8x4xf32>) -> tensor<2x1x8x4xf32>
  %rows = trc.iota dim = 0 : tensor<8x8xi64>
  %cols = trc.iota dim = 1 : tensor<8x8xi64>
  %two = trc.constant dense<2> : tensor<8x8xi64>
  %zero = trc.constant dense<0.0> : tensor<8x8xf32>
  // 1. causal from positions: hidden where key > query.
  %later = trc.compare gt, %cols, %rows : tensor<8x8xi64> -> tensor<8x8xi1>
  %causal = trc.reshape %later : (tensor<8x8xi1>) -> tensor<1x1x8x8xi1>
  %a1 = trc.attention %x, %x, %x mask %causal fill = -1.000000e+30 where true scale = 5.000000e-01 {test.mask = "causal"}
      : (tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<1x1x8x8xi1>) -> tensor<2x1x8x4xf32>
  // 2. a look-ahead of 2: keys of the next chunk visible.
  %ahead = trc.add %rows, %two : tensor<8x8xi64>
  %beyond = trc.compare gt, %cols, %ahead : tensor<8x8xi64> -> tensor<8x8xi1>
  %lookahead = trc.reshape %beyond : (tensor<8x8xi1>) -> tensor<1x1x8x8xi1>
  %a2 = trc.attention %x, %x, %x mask %lookahead fill = -1.000000e+30 where true scale = 5.000000e-01 {test.mask = "lookahead"}
      : (tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<1x1x8x8xi1>) -> tensor<2x1x8x4xf32>
  // 3. causal or a padding input (hidden where either): causal.
  %laterb = trc.broadcast_in_dim %later, dims = [2, 3] : (tensor<8x8xi1>) -> tensor<2x1x8x8xi1>
  %padb = trc.broadcast_in_dim %pad, dims = [0, 3] : (tensor<2x8xi1>) -> tensor<2x1x8x8xi1>
  %either = trc.or %laterb, %padb : tensor<2x1x8x8xi1>
  %a3 = trc.attention %x, %x, %x mask %either fill = -1.000000e+30 where true scale = 5.000000e-01 {test.mask = "causal_or_padding"}
      : (tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x8xi1>) -> tensor<2x1x8x4xf32>
  // 4. causal and the padding input (hidden only where both): unknown.
  %both = trc.and %laterb, %padb : tensor<2x1x8x8xi1>
  %a4 = trc.attention %x, %x, %x mask %both fill = -1.000000e+30 where true scale = 5.000000e-01 {test.mask = "causal_and_padding"}
      : (tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x8xi1>) -> tensor<2x1x8x4xf32>
  // 5. a frozen lower-triangular buffer (GPT-2's): hidden where 0.
  %isZero = trc.compare eq, %tril, %zero : tensor<8x8xf32> -> tensor<8x8xi1>
  %buffer = trc.reshape %isZero : (tensor<8x8xi1>) -> tensor<1x1x8x8xi1>
  %a5 = trc.attention %x, %x, %x mask %buffer fill = -1.000000e+30 where true scale = 5.000000e-01 {test.mask = "frozen_buffer"}
      : (tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<1x1x8x8xi1>) -> tensor<2x1x8x4xf32>
  // 6. the same values in a trainable parameter: they may change.
  %tZero = trc.compare eq, %ttril, %zero : tensor<8x8xf32> -> tensor<8x8xi1>
  %tbuffer = trc.reshape %tZero : (tensor<8x8xi1>) -> tensor<1x1x8x8xi1>
  %a6 = trc.attention %x, %x, %x mask %tbuffer fill = -1.000000e+30 where true scale = 5.000000e-01 {test.mask = "trainable_buffer"}
      : (tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<1x1x8x8xi1>) -> tensor<2x1x8x4xf32>
  // 7. the allowed keys as the mask (hidden where false): causal.
  %earlier = trc.compare le, %cols, %rows : tensor<8x8xi64> -> tensor<8x8xi1>
  %allowed = trc.reshape %earlier : (tensor<8x8xi1>) -> tensor<1x1x8x8xi1>
  %a7 = trc.attention %x, %x, %x mask %allowed fill = -1.000000e+30 where false scale = 5.000000e-01 {test.mask = "allowed"}
      : (tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<1x1x8x8xi1>) -> tensor<2x1x8x4xf32>
  // 8. causal but a fill that leaves hidden keys in the softmax.
  %a8 = trc.attention %x, %x, %x mask %causal fill = -1.000000e+00 where true scale = 5.000000e-01 {test.mask = "weak_fill"}
      : (tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<2x1x8x4xf32>, tensor<1x1x8x8xi1>) -> tensor<2x1x8x4xf32>
  %s12 = trc.add %a1, %a2 : tensor<2x1x8x4xf32>
  %s34 = trc.add %a3, %a4 : tensor<2x1x8x4xf32>
  %s56 = trc.add %a5, %a6 : tensor<2x1x8x4xf32>
  %s78 = trc.add %a7, %a8 : tensor<2x1x8x4xf32>
  %s1 = trc.add %s12, %s34 : tensor<2x1x8x4xf32>
  %s2 = trc.add %s56, %s78 : tensor<2x1x8x4xf32>
  %s = trc.add %s1, %s2 : tensor<2x1x8x4xf32>
  %loss = trc.reduce sum %s dims = [0, 1, 2, 3] : (tensor<2x1x8x4xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}
