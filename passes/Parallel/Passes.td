//===- Passes.td - trc passes: Parallel --------------------*- tablegen -*-===//
//
// Distribution over ranks: data parallelism and ZeRO; tensor parallelism by
// sharding propagation and partitioning (include/trc/Parallel/Sharding.h).
// Implemented in passes/Parallel/<Name>.cpp; included by passes/Passes.td.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PASSES_PARALLEL_PASSES_TD
#define TRC_PASSES_PARALLEL_PASSES_TD

include "mlir/Pass/PassBase.td"

def DataParallel : Pass<"trc-data-parallel", "mlir::ModuleOp"> {
  let summary = "averages @main_grad's loss and gradients over the ranks (DDP, ZeRO 1-3)";
  let description = [{
    Inserts the collectives of data parallelism into @main_grad, before
    trc-build-train-step: gradients averaged in buckets of at most
    `bucket-mb` MiB, each right after its last gradient is computed; the
    loss averaged over the world. `zero-stage` 1 leaves each rank its shard
    of every gradient (optimizer state sharding), 2 reduce-scatters them
    (gradient sharding), 3 also takes trainable parameters as shards and
    all-gathers them before each use (FSDP). Shards span `shard-degree`
    consecutive ranks; `hybrid` adds an all-reduce over the replica groups
    (shard within groups, replicate across). Shards are 1-D, zero-padded
    (include/trc/Training/Sharding.h) and marked `trc.shard_degree` /
    `trc.shard_of`; trc-build-train-step keeps optimizer state in the same
    shape.
  }];
  let options = [
    Option<"zeroStage", "zero-stage", "int64_t", "0",
           "0: replicate everything; 1: shard optimizer state; 2: + gradients; "
           "3: + parameters">,
    Option<"shardDegree", "shard-degree", "int64_t", "1",
           "ranks a sharded tensor is split over (zero-stage >= 1)">,
    Option<"bucketMb", "bucket-mb", "double", "25.0",
           "largest gradient bucket, MiB">,
    Option<"hybrid", "hybrid", "bool", "false",
           "also average over the replica groups (shard-degree < world size)">,
  ];
  let dependentDialects = ["trc::TrcDialect", "mlir::func::FuncDialect"];
}

def PropagateSharding : Pass<"trc-propagate-sharding", "mlir::func::FuncOp"> {
  let summary = "gives every value a sharding, from the annotated ones";
  let description = [{
    Seeds are the `trc.sharding` annotations already present (on arguments
    and op results); each op's sharding rule (ShardingRuleOpInterface)
    carries them to its other operands and results, sweeping forward and
    backward to a fixpoint. A disagreement inside one op goes to the side
    with more bytes (trc-partition moves the lighter one); values nothing
    reaches are whole. Every value ends annotated. The grid is the module's
    `trc.grid`. An op without a sharding rule is an error naming it.

    ```mlir
    // seed: %w : #trc.sharding< [ {}, {tensor} ] >
    %y = trc.dot_general %x, %w ... {trc.sharding = [ #trc.sharding< [ {}, {tensor} ] > ]}
    ```
  }];
  let dependentDialects = ["trc::TrcDialect"];
}

def ShardTensorParallel : Pass<"trc-shard-tensor-parallel", "mlir::ModuleOp"> {
  let summary = "Megatron's tensor-parallel layout, found from the model's structure";
  let description = [{
    Sets the grid's `tensor` axis to `degree` and seeds @main_grad (or
    @main without one) the way Megatron-LM splits a transformer, with no
    model-specific code: every trc.attention's heads; the hidden dim between
    a column-parallel and a row-parallel product (a dot_general whose
    contracting operand comes, through elementwise ops, from another
    parameter's product: the MLP, gated or not); the vocabulary of the loss'
    logits and of every embedding table of that size (a vocabulary-parallel
    embedding and loss: the cross-entropy and the softmaxes over the
    vocabulary are decomposed into reductions, so the logits are never
    gathered). Then trc-propagate-sharding's propagation gives every value
    its sharding. With `sequence-parallel` (Megatron's sequence
    parallelism) every layer norm's input and output in the forward pass is
    also split on its sequence dim (the dim before the normalized ones), so
    the row-parallel sums are reduce-scattered into it and all-gathered
    back before the column-parallel products. Heads, kv heads or MLP widths the degree does not divide
    are errors naming the op; a vocabulary it does not divide stays whole
    (a warning says so; Megatron pads it, which changes the loss).
  }];
  let options = [
    Option<"degree", "degree", "int64_t", "1", "tensor-parallel ranks">,
    Option<"sequenceParallel", "sequence-parallel", "bool", "false",
           "also split the layer norms' activations on the sequence dim "
           "(reduce-scatter and all-gather instead of all-reduce)">,
  ];
  let dependentDialects = ["trc::TrcDialect"];
}

def ShardContextParallel : Pass<"trc-shard-context-parallel", "mlir::ModuleOp"> {
  let summary = "context parallelism: the token sequences split over the context axis";
  let description = [{
    Sets the grid's `context` axis to `degree` and splits @main_grad's
    sequences over it: the graph inputs of the token ids' [batch, sequence]
    shape (ids, targets, attention masks) are seeded split on the sequence
    and trc-propagate-sharding's propagation does the rest. Ops that keep
    positions apart compute on the rank's positions (position tables and
    causal masks take the rank's rows); attention gathers its keys and
    values over the axis (the all-gather form of context parallelism) and
    reduce-scatters their gradients; the cross-entropy is decomposed into
    sums so that only scalars are reduced; parameter gradients are summed
    over the axis. After trc-shard-tensor-parallel the two layouts are
    propagated apart and combined value by value (Megatron's layout on each
    rank's positions). With `balance` the sequence is split head-tail
    (`2 x mirrored {context}`): rank r holds chunks r and 2C-1-r of its 2C
    chunks, so causal attention has the same work on every rank; each
    attention whose mask is proven to hide the keys of later chunks
    (CausalMask.h: causal masks, alone or with a padding mask) gets
    `trc.causal_chunk`, which trc-ring-attention uses to skip them. Errors:
    no token ids (an input indexing an embedding table), no attention, a
    sequence the degree (2 x the degree with balance) does not divide
    (naming the input), a value both layouts split on one dim (sequence
    parallelism).
  }];
  let options = [
    Option<"degree", "degree", "int64_t", "1", "context-parallel ranks">,
    Option<"balance", "balance", "bool", "false",
           "split each sequence head-tail (causal load balancing)">,
  ];
  let dependentDialects = ["trc::TrcDialect"];
}

def RingAttention : Pass<"trc-ring-attention", "mlir::ModuleOp"> {
  let summary = "context parallelism's ring: attention passes K/V blocks rank to rank";
  let description = [{
    After trc-partition: every trc.attention whose keys and values are
    all-gathered over the `context` group computes instead on this rank's
    block of them and the blocks the ring brings (trc.collective_permute, one
    rank on per step), merging the blocks' softmaxes online (running max and
    sum in f32); its mask is read block by block. Every trc.attention_grad
    whose key and value gradients are reduce-scattered over the group passes
    the blocks round again, with the gradients of each block travelling
    beside it back to its rank (dq stays; dK and dV arrive summed). The
    backward reuses the forward's row statistics (logsumexp) where it is the
    gradient of that forward, and computes them itself otherwise. Nothing
    of size T x T/C is kept: a rank never holds more than one block of the
    others' keys and values. With the head-tail layout (trc-shard-context-
    parallel's balance) and a mask tagged trc.causal_chunk, each step after
    the first computes only the two chunk x chunk sub-blocks causality
    leaves, and the first skips its own head x tail ((2C+1)/(4C) of the blocks
    on every rank). Errors: float
    activations still all-gathered
    over the context group (attention that is not fused: run
    trc-fuse-attention), a gradient whose reduce-scatter it cannot find.
  }];
  let dependentDialects = ["trc::TrcDialect"];
}

def Partition : Pass<"trc-partition", "mlir::ModuleOp"> {
  let summary = "rewrites sharded functions to per-rank shapes with collectives";
  let description = [{
    For every function whose values are annotated (trc-propagate-sharding):
    each op computes on its rank's parts, as its sharding rule says, and
    the trc collectives on the axis' group (`tensor`) move values where a
    user needs another sharding: partial sums all-reduced (reduce-scattered
    when the user splits a dim), split dims all-gathered, whole dims sliced.
    A gather from a table split along the looked-up dim masks the indices
    outside this rank's rows (its result is a partial sum); scatter_add
    likewise. Returned values: the first (the loss) whole; a gradient
    (`trc.grad_of`) sharded as its parameter; the others whole. Split
    parameter arguments get `trc.split = array<i64: dim, blocks, degree,
    mirrored>`
    and `trc.split_of` (the full shape) for the artifact.
  }];
  let dependentDialects = ["trc::TrcDialect"];
}

def PipelineStages : Pass<"trc-pipeline-stages", "mlir::ModuleOp"> {
  let summary = "assigns @main's forward ops to pipeline stages at layer boundaries";
  let description = [{
    Before trc-autodiff (which carries each op's `trc.stage` to its VJP):
    the ops of @main that depend on a trainable parameter are cut into
    `stages` x `virtual` stages where the fewest activations cross (between
    transformer layers), balanced by cost (matrix-product and attention
    FLOPs, elements elsewhere) or by attention layers (`balance=layers`).
    Ops that depend on no trainable parameter stay unstaged: each stage that
    needs one computes it. A parameter read by several stages (tied
    embeddings) gets one argument per stage, each with `trc.stage`, so each
    stage's gradient is its own (trc-pipeline-split sums them). The module
    gets `trc.pipeline = {stages = S, virtual = V}`. Fewer layer boundaries
    than cuts is an error.

    ```mlir
    %h = trc.add %x, %y {trc.stage = 1 : i64} : ...
    ```
  }];
  let options = [
    Option<"stages", "stages", "int64_t", "2", "pipeline ranks">,
    Option<"virtualStages", "virtual", "int64_t", "1",
           "model chunks per rank (interleaved schedules)">,
    Option<"balance", "balance", "std::string", "\"cost\"",
           "cost (FLOPs per stage), layers (attention layers per stage) or pieces "
           "(every piece its own stage: what trc-print-stage-work counts)">,
  ];
  let dependentDialects = ["trc::TrcDialect"];
}

def PipelineSplit : Pass<"trc-pipeline-split", "mlir::ModuleOp"> {
  let summary = "outlines a staged @main_grad into per-stage forward, backward and gradient functions";
  let description = [{
    After trc-autodiff on a module trc-pipeline-stages annotated: for each
    stage s, @stage<s>_forward runs its forward ops, @stage<s>_backward the
    backward ops whose results reach earlier stages (B: the input
    gradients), @stage<s>_weights the rest (W: its parameters' gradients,
    added into `grad_accum:` inputs, restarting where `trc.keep_accum` is
    0; zero-bubble schedules run W later), and @stage<s>_grads names the
    accumulated gradients for trc-build-train-step (which makes
    @stage<s>_apply). Values crossing stages become explicit transfers: a
    result `send:t<k>` of the producing function and an argument
    `recv:t<k>` of the consuming one, listed in the module's
    `trc.pipeline_transfers` (id, phase, from stage, to stage); forward
    values a stage's later programs read are passed as `stash:<k>`. Constants
    and values that depend on no parameter are recomputed where used.
    Parameters several stages read (tied) keep one gradient per stage; the
    runtime sums them before the update, and only the lowest stage counts
    them in the gradient norm.

    With `shard-degree` N > 1 (ZeRO-1 within each stage's data group, which
    the runtime has averaged the accumulated gradients over), @stage<s>_grads
    returns this rank's 1/N shard of each (include/trc/Training/Sharding.h's
    layout and attributes): trc-build-train-step then keeps the optimizer
    state of that shard alone, updates it and all-gathers the parameter.
    With `zero-stage=2` the accumulators are shards as well: each W program
    reduce-scatters (averages over the shard group) every gradient it
    computes and adds this rank's shard into `grad_accum:` (a collective per
    microbatch; the runtime then averages the shards over the replica group
    alone). With `zero-stage=3` also the stage's trainable parameters are
    shards in every program of the stage (forward, B, W, grads), each use
    all-gathering the full tensor right before it, and the update keeps the
    shard.
  }];
  let options = [
    Option<"shardDegree", "shard-degree", "int64_t", "1",
           "ZeRO-1: the stage's data ranks each update a 1/N shard of every "
           "parameter">,
    Option<"zeroStage", "zero-stage", "int64_t", "1",
           "with shard-degree > 1: 1 shards the optimizer state, 2 the "
           "gradient accumulators as well, 3 the parameters too">,
  ];
  let dependentDialects = ["trc::TrcDialect", "mlir::func::FuncDialect"];
}

#endif // TRC_PASSES_PARALLEL_PASSES_TD
