// trc-recompute on a hand-written two-layer step (each layer: a product, a
// softmax core, tanh, a residual add). full recomputes each layer in the
// backward from what it starts from, read through one barrier per value;
// selective only the cores; none changes nothing. The backward reads the
// clones, never the forward's softmax.
// RUN: trc-opt %s --trc-autodiff --trc-recompute="policy=full" | FileCheck %s --check-prefix=FULL
// RUN: trc-opt %s --trc-autodiff --trc-recompute="policy=selective" --test-trc-print-recompute -o /dev/null | FileCheck %s --check-prefix=SELECTIVE
// RUN: trc-opt %s --trc-autodiff --trc-recompute="policy=none" | FileCheck %s --check-prefix=NONE
// RUN: trc-opt %s --trc-autodiff --trc-recompute="policy=full" --canonicalize --cse | FileCheck %s --check-prefix=CSE

module {
  trc.parameter @w0 : tensor<8x8xf32> = dense<0.1> : tensor<8x8xf32>
  trc.parameter @w1 : tensor<8x8xf32> = dense<0.2> : tensor<8x8xf32>
  func.func @main(%x: tensor<4x8xf32> {trc.input = "x"}, %w0: tensor<8x8xf32> {trc.param = "w0"},
                  %w1: tensor<8x8xf32> {trc.param = "w1"}) -> tensor<f32> {
    %h0 = trc.dot_general %x, %w0, batch = [] x [], contract = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %s0 = trc.softmax %h0 axis = 1 : tensor<4x8xf32>
    %t0 = trc.tanh %s0 : tensor<4x8xf32>
    %r0 = trc.add %x, %t0 : tensor<4x8xf32>
    %h1 = trc.dot_general %r0, %w1, batch = [] x [], contract = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %s1 = trc.softmax %h1 axis = 1 : tensor<4x8xf32>
    %t1 = trc.tanh %s1 : tensor<4x8xf32>
    %r1 = trc.add %r0, %t1 : tensor<4x8xf32>
    %l = trc.reduce sum %r1 dims = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// FULL: trc.recompute_plan = {{{.*}}policy = "full"
// FULL-LABEL: func.func @main_grad(
// FULL: %[[R0:.*]] = trc.add %arg0, %{{.*}} : tensor<4x8xf32>
// FULL: %[[S1:.*]] = trc.softmax
// FULL: trc.reduce  sum
// The second layer again, from the kept residual and w1, behind barriers.
// FULL: %[[B:.*]] = trc.optimization_barrier %[[R0]] {trc.recompute = [[G:[0-9]+]] : i64}
// FULL-NEXT: %[[W:.*]] = trc.optimization_barrier %arg2 {trc.recompute = [[G]] : i64}
// FULL-NEXT: %[[H1:.*]] = trc.dot_general %[[B]], %[[W]], {{.*}}{trc.recompute = [[G]] : i64}
// FULL-NEXT: %[[S1R:.*]] = trc.softmax %[[H1]] axis = 1 {trc.recompute = [[G]] : i64}
// FULL-NEXT: trc.tanh %[[S1R]] {trc.recompute = [[G]] : i64}
// FULL-NOT: %[[S1]]
// FULL: trc.mul %{{.*}}, %[[S1R]]
// FULL: trc.optimization_barrier %{{.*}} {trc.recompute =
// FULL: return

// SELECTIVE: recompute: policy selective
// SELECTIVE-NEXT: layer 0: ops 3 choice selective kept keep 256 selective 0 full 0 B
// SELECTIVE-NEXT: layer 1: ops 5 choice selective kept keep 256 selective 0 full 0 B redo selective 512 full 512 FLOPs
// SELECTIVE-NEXT: groups 2, cloned ops 5
// SELECTIVE-NEXT: estimated peak: 784 B before, 656 B after (0.837)
// SELECTIVE-NEXT: matrix FLOPs: step 2560, recomputed 512 (1.200x)

// NONE: trc.recompute_plan = {{{.*}}groups = 0
// NONE-NOT: trc.optimization_barrier

// CSE must not merge the recomputed layer back into the forward: two
// softmax ops of each layer remain.
// CSE-LABEL: func.func @main_grad(
// CSE-COUNT-4: trc.softmax
// CSE-NOT: trc.softmax
// CSE: return
