// trc-attention-to-gpu's kernels against the decomposition at the head dims
// of real models (cuda-kernels-on-cpu.test): 64 causal (keys skipped), 64
// padded (a mask from an input, fill where false), 128 unmasked; f32.
func.func @main(%q0: tensor<2x2x48x64xf32>, %k0: tensor<2x2x48x64xf32>, %v: tensor<2x2x48x64xf32>,
                %g: tensor<2x2x48x64xf32>, %pad: tensor<2x48xf32>,
                %q20: tensor<1x2x40x128xf32>, %k20: tensor<1x2x40x128xf32>, %g2: tensor<1x2x40x128xf32>)
    -> (tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>,
        tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>,
        tensor<1x2x40x128xf32>, tensor<1x2x40x128xf32>, tensor<1x2x40x128xf32>, tensor<1x2x40x128xf32>) {
  // The inputs are N(0, 1e-2): scaled so that the scores are of order 1.
  %hundred = trc.constant dense<100.0> : tensor<2x2x48x64xf32>
  %q = trc.mul %q0, %hundred : tensor<2x2x48x64xf32>
  %k = trc.mul %k0, %hundred : tensor<2x2x48x64xf32>
  %hundred2 = trc.constant dense<100.0> : tensor<1x2x40x128xf32>
  %q2 = trc.mul %q20, %hundred2 : tensor<1x2x40x128xf32>
  %k2 = trc.mul %k20, %hundred2 : tensor<1x2x40x128xf32>
  %rows = trc.iota dim = 0 : tensor<48x48xi64>
  %cols = trc.iota dim = 1 : tensor<48x48xi64>
  %later = trc.compare gt, %cols, %rows : tensor<48x48xi64> -> tensor<48x48xi1>
  %causal = trc.reshape %later : (tensor<48x48xi1>) -> tensor<1x1x48x48xi1>
  %zero = trc.constant dense<0.0> : tensor<2x48xf32>
  %keep = trc.compare gt, %pad, %zero : tensor<2x48xf32> -> tensor<2x48xi1>
  %padded = trc.reshape %keep : (tensor<2x48xi1>) -> tensor<2x1x1x48xi1>
  %o1 = trc.attention %q, %k, %v mask %causal fill = 0xFFF0000000000000 where true scale = 1.250000e-01
      : (tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>, tensor<1x1x48x48xi1>) -> tensor<2x2x48x64xf32>
  %dq1, %dk1, %dv1 = trc.attention_grad %q, %k, %v, %g mask %causal fill = 0xFFF0000000000000 where true scale = 1.250000e-01
      : (tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>, tensor<1x1x48x48xi1>)
      -> (tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>)
  %o2 = trc.attention %q, %k, %v mask %padded fill = -1.000000e+09 where false scale = 1.250000e-01
      : (tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>, tensor<2x1x1x48xi1>) -> tensor<2x2x48x64xf32>
  %dq2, %dk2, %dv2 = trc.attention_grad %q, %k, %v, %g mask %padded fill = -1.000000e+09 where false scale = 1.250000e-01
      : (tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>, tensor<2x1x1x48xi1>)
      -> (tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>)
  %o3 = trc.attention %q2, %k2, %k2 fill = 0.000000e+00 where true scale = 8.838835e-02
      : (tensor<1x2x40x128xf32>, tensor<1x2x40x128xf32>, tensor<1x2x40x128xf32>) -> tensor<1x2x40x128xf32>
  %dq3, %dk3, %dv3 = trc.attention_grad %q2, %k2, %k2, %g2 fill = 0.000000e+00 where true scale = 8.838835e-02
      : (tensor<1x2x40x128xf32>, tensor<1x2x40x128xf32>, tensor<1x2x40x128xf32>, tensor<1x2x40x128xf32>)
      -> (tensor<1x2x40x128xf32>, tensor<1x2x40x128xf32>, tensor<1x2x40x128xf32>)
  return %o1, %dq1, %dk1, %dv1, %o2, %dq2, %dk2, %dv2, %o3, %dq3, %dk3, %dv3
      : tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>,
        tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>, tensor<2x2x48x64xf32>,
        tensor<1x2x40x128xf32>, tensor<1x2x40x128xf32>, tensor<1x2x40x128xf32>, tensor<1x2x40x128xf32>
}
