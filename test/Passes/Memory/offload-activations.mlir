// trc-offload-activations on a hand-written four-layer step (each layer: a
// product, a softmax core, tanh, a residual add). With horizon 1, the kept
// activations of layers 0-2 (softmax and tanh outputs, and each layer's
// input, the residual) go to the host after their last forward use, are
// waited for at the end of the next layer's forward, come back before the
// backward of the layer after theirs and are waited for before their first
// backward use, which reads the copy. The last layer's would come back where
// they leave: they stay. After full recomputation only the layers' inputs
// are kept, and those move; min-bytes keeps small ones on the device;
// horizon 0 prefetches just before each layer's own backward, so the last
// layer's move too.
// RUN: trc-opt %s --trc-autodiff --trc-offload-activations="horizon=1" --test-trc-print-offload -o /dev/null | FileCheck %s --check-prefix=PRINT
// RUN: trc-opt %s --trc-autodiff --trc-offload-activations="horizon=1" | FileCheck %s --check-prefix=IR
// RUN: trc-opt %s --trc-autodiff --trc-recompute="policy=full" --trc-offload-activations="horizon=1" --test-trc-print-offload -o /dev/null | FileCheck %s --check-prefix=FULL
// RUN: trc-opt %s --trc-autodiff --trc-recompute="policy=full" --trc-offload-activations="horizon=2 min-bytes=129" --test-trc-print-offload -o /dev/null | FileCheck %s --check-prefix=SMALL
// RUN: trc-opt %s --trc-autodiff --trc-offload-activations="horizon=0" --test-trc-print-offload -o /dev/null | FileCheck %s --check-prefix=ZERO
// RUN: trc-opt %s --trc-autodiff --trc-offload-activations="horizon=1" --canonicalize --cse --trc-offload-to-runtime-call | FileCheck %s --check-prefix=LOWERED

module {
  trc.parameter @w0 : tensor<8x8xf32> = dense<0.1> : tensor<8x8xf32>
  trc.parameter @w1 : tensor<8x8xf32> = dense<0.2> : tensor<8x8xf32>
  trc.parameter @w2 : tensor<8x8xf32> = dense<0.3> : tensor<8x8xf32>
  trc.parameter @w3 : tensor<8x8xf32> = dense<0.4> : tensor<8x8xf32>
  func.func @main(%x: tensor<4x8xf32> {trc.input = "x"}, %w0: tensor<8x8xf32> {trc.param = "w0"},
                  %w1: tensor<8x8xf32> {trc.param = "w1"}, %w2: tensor<8x8xf32> {trc.param = "w2"},
                  %w3: tensor<8x8xf32> {trc.param = "w3"}) -> tensor<f32> {
    %h0 = trc.dot_general %x, %w0, batch = [] x [], contract = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %s0 = trc.softmax %h0 axis = 1 : tensor<4x8xf32>
    %t0 = trc.tanh %s0 : tensor<4x8xf32>
    %r0 = trc.add %x, %t0 : tensor<4x8xf32>
    %h1 = trc.dot_general %r0, %w1, batch = [] x [], contract = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %s1 = trc.softmax %h1 axis = 1 : tensor<4x8xf32>
    %t1 = trc.tanh %s1 : tensor<4x8xf32>
    %r1 = trc.add %r0, %t1 : tensor<4x8xf32>
    %h2 = trc.dot_general %r1, %w2, batch = [] x [], contract = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %s2 = trc.softmax %h2 axis = 1 : tensor<4x8xf32>
    %t2 = trc.tanh %s2 : tensor<4x8xf32>
    %r2 = trc.add %r1, %t2 : tensor<4x8xf32>
    %h3 = trc.dot_general %r2, %w3, batch = [] x [], contract = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %s3 = trc.softmax %h3 axis = 1 : tensor<4x8xf32>
    %t3 = trc.tanh %s3 : tensor<4x8xf32>
    %r3 = trc.add %r2, %t3 : tensor<4x8xf32>
    %l = trc.reduce sum %r3 dims = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
    return %l : tensor<f32>
  }
}

// PRINT: offload: horizon 1, min-bytes 0, 4 layers
// PRINT-NEXT: stash: 11 values, 1408 B; offloaded 8 values, 1024 B
// PRINT-NEXT: layer 0: 256 B
// PRINT-NEXT: layer 1: 384 B
// PRINT-NEXT: layer 2: 384 B
// PRINT-NEXT: layer 3: 0 B
// PRINT-NEXT: value 0: layer 0 tensor<4x8xf32> 128 B (trc.softmax at 1): offload 3, wait 8, prefetch 40 (backward of layer 1), first use 54
// PRINT-NEXT: value 1: layer 0 tensor<4x8xf32> 128 B (trc.tanh at 2): offload 4, wait 8, prefetch 40 (backward of layer 1), first use 51
// PRINT-NEXT: value 2: layer 1 tensor<4x8xf32> 128 B (trc.add at 3): offload 8, wait 12, prefetch 29 (backward of layer 2), first use 49
// PRINT-NEXT: value 3: layer 1 tensor<4x8xf32> 128 B (trc.softmax at 5): offload 7, wait 12, prefetch 29 (backward of layer 2), first use 43
// PRINT-NEXT: value 4: layer 1 tensor<4x8xf32> 128 B (trc.tanh at 6): offload 8, wait 12, prefetch 29 (backward of layer 2), first use 40
// PRINT-NEXT: value 5: layer 2 tensor<4x8xf32> 128 B (trc.add at 7): offload 12, wait 16, prefetch 18 (backward of layer 3), first use 38
// PRINT-NEXT: value 6: layer 2 tensor<4x8xf32> 128 B (trc.softmax at 9): offload 11, wait 16, prefetch 18 (backward of layer 3), first use 32
// PRINT-NEXT: value 7: layer 2 tensor<4x8xf32> 128 B (trc.tanh at 10): offload 12, wait 16, prefetch 18 (backward of layer 3), first use 29

// Layer 0's softmax: offloaded after tanh reads it, waited for once layer 1
// has run, back in layer 1's backward; its VJP reads the copy only.
// IR: module attributes {trc.offload_plan = {horizon = 1 : i64
// IR-LABEL: func.func @main_grad(
// IR: %[[S0:.*]] = trc.softmax
// IR-NEXT: %[[T0:.*]] = trc.tanh %[[S0]]
// IR-NEXT: %[[H:.*]] = trc.offload %[[S0]] : tensor<4x8xf32>
// IR: trc.add %{{.*}}, %[[T0]]
// IR: trc.dot_general
// IR: %[[HX:.*]] = trc.copy_wait %[[H]] from %[[S0]] : tensor<4x8xf32>
// IR: trc.reduce  sum
// IR: %[[P:.*]] = trc.prefetch %[[HX]] : tensor<4x8xf32>
// IR: %[[Y:.*]] = trc.copy_wait %[[P]] from %[[HX]] : tensor<4x8xf32>
// IR-NOT: %[[S0]]
// IR: trc.mul %{{.*}}, %[[Y]]
// IR-NOT: %[[S0]]
// IR: return

// FULL: stash: 4 values, 512 B; offloaded 3 values, 384 B
// FULL: value 0: layer 0 tensor<4x8xf32> 128 B (trc.dot_general at 0): offload 2, wait 8, prefetch 50 (backward of layer 1), first use 66
// FULL-NEXT: value 1: layer 1 tensor<4x8xf32> 128 B (trc.add at 3): offload 8, wait 12, prefetch 34 (backward of layer 2), first use 50
// FULL-NEXT: value 2: layer 2 tensor<4x8xf32> 128 B (trc.add at 7): offload 12, wait 16, prefetch 18 (backward of layer 3), first use 34

// SMALL: offload: horizon 2, min-bytes 129, 4 layers
// SMALL-NEXT: stash: 4 values, 512 B; offloaded 0 values, 0 B

// ZERO: stash: 11 values, 1408 B; offloaded 11 values, 1408 B
// ZERO: layer 3: 384 B

// Lowered (canonicalize and cse leave the copies where they are): the
// copies are numbered in program order, the prefetches read the host
// copies, the backward reads the prefetched buffers.
// LOWERED-LABEL: func.func @main_grad(
// LOWERED-COUNT-8: call @trc_rt_offload_start(%c{{[0-9]+}}_i64{{[_0-9]*}}, %c0_i64{{[_0-9]*}}, %c128_i64
// LOWERED-COUNT-8: call @trc_rt_offload_start(%c{{[0-9]+}}_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c128_i64
// LOWERED-NOT: trc.offload
// LOWERED-NOT: trc.prefetch
// LOWERED: return
