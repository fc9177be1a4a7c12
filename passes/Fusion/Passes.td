//===- Passes.td - trc passes: Fusion ----------------------*- tablegen -*-===//
//
// Grouping ops into kernels (trc.fusion, trc.attention) and undoing it.
// Implemented in passes/Fusion/<Name>.cpp; included by passes/Passes.td.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PASSES_FUSION_PASSES_TD
#define TRC_PASSES_FUSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def FuseAttention : Pass<"trc-fuse-attention", "mlir::func::FuncOp"> {
  let summary = "forms trc.attention from the exported attention chain (before autodiff)";
  let description = [{
    Matches `dot_general(q, k)`, an optional scale (`mul` or `div` by a
    splat constant), an optional mask (`select` of the scores against a
    splat fill, either way round), `softmax` over the last dimension and
    `dot_general(p, v)`, where each product has rank-2 batch dimensions and
    one contracting dimension in any layout, and replaces the chain by one
    `trc.attention` on q, k, v transposed to [batch..., T, D] (transposes
    fold into the exporter's). Run before trc-autodiff: the gradient is then
    `trc.attention_grad`, which recomputes the probabilities, so training
    keeps q, k and v per layer instead of the [batch, heads, T, T]
    probabilities (GPT-2, BERT and GPT-J exports all match). torch 2.x's
    decomposition of scaled_dot_product_attention matches too: the scale as
    sqrt(scale) on q and on k (a broadcast scalar, or the square root of a
    constant), the mask as an added bias `select(mask, 0, fill)` with |fill|
    at least 1e30 (adding it is filling with it), and the safe softmax's
    `where(p != p, 0, p)` after the softmax when the fill is finite (no row
    is then NaN). A chain whose scores or probabilities have other users
    (returned, dropout) stays as it is.

    ```mlir
    %s = trc.dot_general %q, %kt, batch = [0, 1] x [0, 1], contract = [3] x [2] ...
    %c = trc.mul %s, %scale ...          // splat 0.25
    %m = trc.select %mask, %ninf, %c ... // splat -inf where mask
    %p = trc.softmax %m axis = 3 ...
    %o = trc.dot_general %p, %v, batch = [0, 1] x [0, 1], contract = [3] x [2] ...
    // becomes
    %k = trc.transpose %kt, perm = [0, 1, 3, 2] ...
    %o = trc.attention %q, %k, %v mask %mask fill = 0xFF800000 where true
        scale = 2.500000e-01 ...
    ```
  }];
}

def FuseOps : Pass<"trc-fuse", "mlir::func::FuncOp"> {
  let summary = "groups trc ops into kernels (trc.fusion), cost-driven";
  let description = [{
    Groups the ops of each function into trc.fusion regions, each one kernel
    that reads its operands from device memory once and writes only the
    values used outside it (lib/Analysis: FusionPlanner.cpp decides,
    FusionCostModel.cpp counts bytes). Run it on the whole training step,
    after trc-autodiff and trc-build-train-step (autodiff does not
    differentiate through regions) and before lowering; trc-unfuse undoes it
    for lowerings that do not take fused regions.

    Patterns, in order:
    * matmul epilogues (`matmul_epilogue`): a dot_general with what cuBLASLt
      applies to its result: a constant scale (`alpha`), a bias add (a vector
      broadcast along the rows), a residual add (`accumulate`: beta = 1, C =
      the residual) and GELU (composite or any decomposed spelling, found by
      evaluation), giving `epilogue` = none, bias, gelu or bias_gelu; with
      `gelu_aux` the pre-activation is written too (the backward pass reads
      it);
    * producer-consumer chains of elementwise ops (`elementwise`), including
      broadcast_in_dim, iota, compare, select and convert;
    * reductions with their elementwise prologue and epilogue
      (`reduction`): reduce, softmax, log_softmax, layer_norm and
      cross_entropy or their decomposed forms; every op of the group works on
      one shape S or on S without the reduced dimensions D, every reduction
      reduces D;
    * siblings: groups of one domain that read the same large input share
      one pass over it (e.g. cross_entropy's loss and its gradient, the bias
      and scale gradients of a layer norm).
    Merges are taken best bytes saved first and never create a cycle
    between groups. Broadcasts, iotas and splat constants are copied into
    every group that reads them. A chain of cheap elementwise producers is
    recomputed in a consumer group (and disappears when no one else reads
    it) only when the bytes saved exceed its arithmetic times
    `bytes-per-flop`.

    ```mlir
    %s = trc.reduce max %x dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
    %b = trc.broadcast_in_dim %s, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
    %d = trc.sub %x, %b : tensor<4x8xf32>
    // becomes
    %d = trc.fusion reduction (%a = %x : tensor<4x8xf32>) -> (tensor<4x8xf32>) {
      %0 = trc.reduce max %a dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
      %1 = trc.broadcast_in_dim %0, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
      %2 = trc.sub %a, %1 : tensor<4x8xf32>
      trc.yield %2 : tensor<4x8xf32>
    }
    ```
    The function records its kernels and bytes before fusion in
    `trc.unfused_cost = array<i64: kernels, bytes>`.
  }];
  let options = [
    Option<"bytesPerFlop", "bytes-per-flop", "double", "0.05",
           "device memory bytes one flop of recomputation is worth">,
    Option<"siblings", "siblings", "bool", "true",
           "fuse groups that read the same large input">,
    Option<"matmulEpilogues", "matmul-epilogues", "bool", "true",
           "give matrix products their cuBLASLt epilogue">,
    Option<"duplicate", "duplicate", "bool", "true",
           "recompute cheap producers in consumer groups when it saves bytes">,
    Option<"maxDuplicateOps", "max-duplicate-ops", "unsigned", "8",
           "longest producer chain one duplication copies">,
  ];
  let dependentDialects = ["trc::TrcDialect"];
}

def Unfuse : Pass<"trc-unfuse", "mlir::func::FuncOp"> {
  let summary = "inlines every trc.fusion back into its block";
  let description = [{
    The inverse of trc-fuse, for lowerings that take core trc ops only
    (trc-lower-to-linalg): each fusion's body is cloned in its place. Copies
    of broadcasts and constants several fusions made stay separate (cse
    merges them). Removes `trc.unfused_cost`.
  }];
}

#endif // TRC_PASSES_FUSION_PASSES_TD
