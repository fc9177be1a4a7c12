//===- Passes.td - trc passes: Memory ----------------------*- tablegen -*-===//
//
// Activation recomputation, the static memory plan and the buffer rewrites
// around it.
// Implemented in passes/Memory/<Name>.cpp; included by passes/Passes.td.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PASSES_MEMORY_PASSES_TD
#define TRC_PASSES_MEMORY_PASSES_TD

include "mlir/Pass/PassBase.td"

def Recompute : Pass<"trc-recompute", "mlir::ModuleOp"> {
  let summary = "recomputes activations in the backward instead of keeping them";
  let description = [{
    On @main_grad (after trc-autodiff, before tensor/data parallelism and
    trc-pipeline-split): the forward values the backward reads are kept
    or recomputed per `policy` (include/trc/Training/Recompute.h):
    `none` keeps all (the pass changes nothing); `selective` recomputes
    each layer's attention core (q·kᵀ, softmax, dropout, the product with
    v: Megatron's selective recomputation; a fused trc.attention already
    recomputes its probabilities) plus weight transposes and masks;
    `full` keeps each layer's input and recomputes the layer; `budget`
    picks keep/selective/full per layer for the least recomputed FLOPs
    whose estimated peak of live temporaries fits `budget` bytes, or fails
    with the smallest reachable peak. Recomputed ops are cloned before the
    first backward op that needs them and read what they start from
    through trc.optimization_barrier, so CSE cannot merge them back.
    The module gets `trc.recompute_plan` (test-trc-print-recompute prints
    it) and each clone `trc.recompute` (its group).

    ```mlir
    %h = trc.layer_norm %x ...              // forward
    ...                                      // backward of later layers
    %x1 = trc.optimization_barrier %x : tensor<4x64x256xf32> {trc.recompute = 3}
    %h1 = trc.layer_norm %x1 ... {trc.recompute = 3}
    %dw = trc.dot_general %h1, %g ...       // reads the copy, not %h
    ```
  }];
  let options = [
    Option<"policy", "policy", "std::string", "\"none\"",
           "none, selective, full or budget">,
    Option<"budget", "budget", "int64_t", "0",
           "policy=budget: bytes the estimated peak of temporaries must fit">,
  ];
}

def OffloadActivations : Pass<"trc-offload-activations", "mlir::ModuleOp"> {
  let summary = "moves kept activations to host memory and back, asynchronously";
  let description = [{
    On @main_grad (after trc-autodiff and trc-recompute, before tensor/data
    parallelism; not with pipeline stages): every activation the backward
    keeps that belongs to a layer (its own values and its input; after
    full recomputation only the inputs remain) and has at least
    `min-bytes` bytes is copied to the host pool after its last forward
    use (trc.offload), waited for at the end of the next layer's forward
    (trc.copy_wait: its device buffer is free from there), copied back
    `horizon` layers ahead of its layer's backward (trc.prefetch; past the
    last layer: at the start of the backward) and waited for before its
    first backward use, which, like every later one, reads the copy
    (include/trc/Training/Offload.h). A value that would come back where
    it leaves (the last layer's) stays. The module gets
    `trc.offload_plan` (test-trc-print-offload prints it);
    trc-offload-to-runtime-call lowers the copies.

    ```mlir
    %x = trc.add %a, %b : tensor<4x64x256xf32>         // layer 3's input
    %h = trc.offload %x : tensor<4x64x256xf32>         // after layer 3 reads it
    ...                                                  // layer 4's forward
    %hx = trc.copy_wait %h from %x : tensor<4x64x256xf32>
    ...                                                  // backward of layers 11..4+H
    %p = trc.prefetch %hx : tensor<4x64x256xf32>
    ...
    %x1 = trc.copy_wait %p from %hx : tensor<4x64x256xf32>
    %g = trc.mul %dy, %x1 : tensor<4x64x256xf32>       // layer 3's backward
    ```
  }];
  let options = [
    Option<"horizon", "horizon", "int64_t", "4",
           "layers ahead of its backward a value is prefetched (SageMaker's "
           "activation_loading_horizon)">,
    Option<"minBytes", "min-bytes", "int64_t", "0",
           "smaller activations stay on the device">,
  ];
}

def RematerializeBroadcasts
    : Pass<"trc-rematerialize-broadcasts", "mlir::func::FuncOp"> {
  let summary = "one copy of a broadcast, iota or fill per use";
  let description = [{
    Linalg on tensors, after cse and before linalg-fuse-elementwise-ops: a
    parallel linalg.generic whose inputs are all smaller than its result
    (a broadcast) or which has none (an iota), with a small payload and
    several uses, is cloned before each further use, as is a linalg.fill
    of a tensor.empty (a matrix product's zero init). CSE merges the
    forward's and the backward's broadcasts of one parameter into one
    full-size tensor alive from the forward to the backward; with a copy
    per use each is fused into its consumer and never stored (GPT-2 124M's
    training step kept 48 such [4, 1024, 768] tensors and a [4096, 50257]
    i64 iota; one zero init shared by every layer's attention scores held
    [48, 1024, 1024] from the first layer's forward to its backward).

    ```mlir
    %b = linalg.generic {broadcast of %gamma} -> tensor<4x1024x768xf32>
    %y = linalg.generic ins(%x, %b ...)     // forward
    %g = linalg.generic ins(%dy, %b ...)    // backward
    // becomes
    %b = linalg.generic {broadcast of %gamma} ...
    %y = linalg.generic ins(%x, %b ...)
    %b1 = linalg.generic {broadcast of %gamma} ...
    %g = linalg.generic ins(%dy, %b1 ...)
    ```
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect"];
}

def DistinctResults : Pass<"trc-distinct-results", "mlir::func::FuncOp"> {
  let summary = "copies a buffer a function returns more than once";
  let description = [{
    After one-shot-bufferize, before buffer-results-to-out-params (which
    cannot give two out-parameters one buffer): every return operand that
    an earlier operand already returns becomes a new buffer holding a copy,
    so each result slot is written. (A pipeline stage sends a value and
    also keeps it for its backward: two slots, one value.)

    ```mlir
    return %0, %0 : memref<4xf32>, memref<4xf32>
    // becomes
    %1 = memref.alloc() : memref<4xf32>
    memref.copy %0, %1 : memref<4xf32> to memref<4xf32>
    return %0, %1 : memref<4xf32>, memref<4xf32>
    ```
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def PlanMemory : Pass<"trc-plan-memory", "mlir::ModuleOp"> {
  let summary = "places every temporary buffer of @main in one arena";
  let description = [{
    Computes the memory plan of `@main` and rewrites each planned
    `memref.alloc` into `memref.view` of a new last argument, the arena
    (`memref<Nxi8>`, attribute `trc.arena`), at its planned offset. The
    module gets `trc.arena_bytes`, `trc.arena_lower_bound_bytes` and
    `trc.arena_no_reuse_bytes`. Allocations marked `trc.host_pool`
    (trc-offload-to-runtime-call's host copies) are planned apart, in the
    host arena the runtime allocates (`trc.host_arena_bytes`): they are
    read only by the copy engine's calls, so each of their pointers
    becomes its offset in that arena.

    ```mlir
    %0 = memref.alloc() : memref<4x4xf32>
    // becomes, with %arena: memref<128xi8> appended to @main's arguments
    %c0 = arith.constant 0 : index
    %0 = memref.view %arena[%c0][] : memref<128xi8> to memref<4x4xf32>
    ```
    Precondition: bufferized IR whose temporaries are static memref.alloc
    ops at the top level of @main, never deallocated (the plan owns them).
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect", "mlir::arith::ArithDialect"];
}

//===----------------------------------------------------------------------===//
// CUDA backend (lib/Pipelines/CudaPipeline.cpp)
//===----------------------------------------------------------------------===//

def ForwardFills : Pass<"trc-forward-fills", "mlir::func::FuncOp"> {
  let summary = "turns copies out of a constant-filled temporary into fills";
  let description = [{
    Bufferization materializes a splat that several ops start from (the
    zeros of every reduction and matrix product, CSE'd into one tensor) as
    one filled temporary copied into each user's buffer. When a temporary
    (a `memref.view` of the arena) is filled with a constant, the copies
    out of it (`memref.copy`, `linalg.copy`) that come before any other use
    become fills of their destinations, and the temporary's fill is erased
    or, when the temporary is used otherwise afterwards, moved right before
    that use. No buffer is read, and the fills can fold into the matrix
    product (trc-matmul-to-runtime-call) or reduction (trc-linalg-to-gpu)
    right after them. Sound after trc-plan-memory: no other buffer overlaps
    a temporary while it is live.

    ```mlir
    linalg.fill ins(%zero : f32) outs(%tmp : memref<8xf32>)
    linalg.copy ins(%tmp : memref<8xf32>) outs(%a : memref<8xf32>)
    linalg.copy ins(%tmp : memref<8xf32>) outs(%b : memref<8xf32>)
    // becomes
    linalg.fill ins(%zero : f32) outs(%a : memref<8xf32>)
    linalg.fill ins(%zero : f32) outs(%b : memref<8xf32>)
    ```
  }];
}

#endif // TRC_PASSES_MEMORY_PASSES_TD
