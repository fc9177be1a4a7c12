// trc-recompute's errors: a bad policy, a budget without policy=budget or
// policy=budget without one, no @main_grad, and a budget below what every
// layer recomputed reaches (the error gives that smallest peak).
// RUN: not trc-opt %s --trc-autodiff --trc-recompute="policy=most" 2>&1 | FileCheck %s --check-prefix=POLICY
// RUN: not trc-opt %s --trc-autodiff --trc-recompute="policy=full budget=100" 2>&1 | FileCheck %s --check-prefix=EXTRA
// RUN: not trc-opt %s --trc-autodiff --trc-recompute="policy=budget" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not trc-opt %s --trc-recompute="policy=full" 2>&1 | FileCheck %s --check-prefix=AUTODIFF
// RUN: not trc-opt %s --trc-autodiff --trc-recompute="policy=budget budget=64" 2>&1 | FileCheck %s --check-prefix=SMALL
// RUN: trc-opt %s --trc-autodiff --trc-recompute="policy=budget budget=100000" --test-trc-print-recompute -o /dev/null | FileCheck %s --check-prefix=ROOMY

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

// POLICY: error: trc-recompute: policy expects none, selective, full or budget, got 'most'
// EXTRA: error: trc-recompute: budget is only read by policy=budget (got policy=full)
// MISSING: error: trc-recompute: policy=budget needs budget=BYTES (a positive byte count)
// AUTODIFF: error: trc-recompute needs @main_grad with one block: run trc-autodiff first
// SMALL: error: trc-recompute: the memory budget of 64 bytes cannot be met: the smallest reachable peak is {{[0-9]+}} bytes (every layer recomputed, as policy=full)
// A budget the step already fits recomputes nothing.
// ROOMY: recompute: policy budget budget 100000 B
// ROOMY: groups 0, cloned ops 0
