// trc-attention-to-gpu's kernels against the decomposition in bf16
// (cuda-kernels-on-cpu.test): head dim 64, causal. The kernels keep the
// scores and probabilities in f32; the decomposition rounds the scores and
// the probabilities to bf16 before its products.
func.func @main(%q0: tensor<2x2x48x64xf32>, %k0: tensor<2x2x48x64xf32>, %v: tensor<2x2x48x64xf32>,
                %g: tensor<2x2x48x64xf32>)
    -> (tensor<2x2x48x64xbf16>, tensor<2x2x48x64xbf16>, tensor<2x2x48x64xbf16>, tensor<2x2x48x64xbf16>) {
  // The inputs are N(0, 1e-2): scaled so that the scores are of order 1.
  %hundred = trc.constant dense<100.0> : tensor<2x2x48x64xf32>
  %q = trc.mul %q0, %hundred : tensor<2x2x48x64xf32>
  %k = trc.mul %k0, %hundred : tensor<2x2x48x64xf32>
  %rows = trc.iota dim = 0 : tensor<48x48xi64>
  %cols = trc.iota dim = 1 : tensor<48x48xi64>
  %later = trc.compare gt, %cols, %rows : tensor<48x48xi64> -> tensor<48x48xi1>
  %causal = trc.reshape %later : (tensor<48x48xi1>) -> tensor<1x1x48x48xi1>
  %qb = trc.convert %q : tensor<2x2x48x64xf32> -> tensor<2x2x48x64xbf16>
  %kb = trc.convert %k : tensor<2x2x48x64xf32> -> tensor<2x2x48x64xbf16>
  %vb = trc.convert %v : tensor<2x2x48x64xf32> -> tensor<2x2x48x64xbf16>
  %gb = trc.convert %g : tensor<2x2x48x64xf32> -> tensor<2x2x48x64xbf16>
  %o = trc.attention %qb, %kb, %vb mask %causal fill = 0xFFF0000000000000 where true scale = 1.250000e-01
      : (tensor<2x2x48x64xbf16>, tensor<2x2x48x64xbf16>, tensor<2x2x48x64xbf16>, tensor<1x1x48x48xi1>) -> tensor<2x2x48x64xbf16>
  %dq, %dk, %dv = trc.attention_grad %qb, %kb, %vb, %gb mask %causal fill = 0xFFF0000000000000 where true scale = 1.250000e-01
      : (tensor<2x2x48x64xbf16>, tensor<2x2x48x64xbf16>, tensor<2x2x48x64xbf16>, tensor<2x2x48x64xbf16>, tensor<1x1x48x48xi1>)
      -> (tensor<2x2x48x64xbf16>, tensor<2x2x48x64xbf16>, tensor<2x2x48x64xbf16>)
  return %o, %dq, %dk, %dv : tensor<2x2x48x64xbf16>, tensor<2x2x48x64xbf16>, tensor<2x2x48x64xbf16>, tensor<2x2x48x64xbf16>
}
