// trc-offload-activations' errors: no @main_grad, a negative horizon, and
// a step split into pipeline stages; --trc-training-pipeline refuses
// offload with pipeline-stages.
// RUN: not trc-opt %s --trc-offload-activations 2>&1 | FileCheck %s --check-prefix=AUTODIFF
// RUN: not trc-opt %s --trc-autodiff --trc-offload-activations="horizon=-1" 2>&1 | FileCheck %s --check-prefix=HORIZON
// RUN: not trc-opt %s --trc-pipeline-stages="stages=2" --trc-autodiff --trc-offload-activations 2>&1 | FileCheck %s --check-prefix=STAGES
// RUN: not trc-opt %s --trc-training-pipeline="offload=true pipeline-stages=2" 2>&1 | FileCheck %s --check-prefix=PIPELINE

module {
  trc.parameter @w0 : tensor<8x8xf32> = dense<0.1> : tensor<8x8xf32>
  trc.parameter @w1 : tensor<8x8xf32> = dense<0.2> : tensor<8x8xf32>
  func.func @main(%x: tensor<4x8xf32> {trc.input = "x"}, %w0: tensor<8x8xf32> {trc.param = "w0"},
                  %w1: tensor<8x8xf32> {trc.param = "w1"}) -> tensor<f32> {
    %h0 = trc.dot_general %x, %w0, batch = [] x [], contract = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %s0 = trc.softmax %h0 axis = 1 : tensor<4x8xf32>
    %r0 = trc.add %x, %s0 : tensor<4x8xf32>
    %h1 = trc.dot_general %r0, %w1, batch = [] x [], contract = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %s1 = trc.softmax %h1 axis = 1 : tensor<4x8xf32>
    %r1 = trc.add %r0, %s1 : tensor<4x8xf32>
    %l = trc.reduce sum %r1 dims = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// AUTODIFF: error: trc-offload-activations needs @main_grad with one block: run trc-autodiff first
// HORIZON: error: trc-offload-activations: horizon and min-bytes must not be negative
// STAGES: error: trc-offload-activations: @main_grad is split into pipeline stages (trc.stage): offloading activations does not combine with pipeline parallelism yet
// PIPELINE: error: --trc-training-pipeline: offload does not combine with pipeline-stages (trc-run{{.*}}
