//===- Passes.td - every trc pass --------------------------*- tablegen -*-===//
//
// One def per pass; flag `trc-<area>-<verb>` (or `test-trc-print-*` for the
// printers of analyses), implemented in passes/<Area>/<Name>.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PASSES_TD
#define TRC_PASSES_TD

include "mlir/Pass/PassBase.td"

def TestPrintOpStats : Pass<"test-trc-print-op-stats", "mlir::ModuleOp"> {
  let summary = "prints op counts and parameter totals of a trc module";
  let description = [{
    A printable summary of an imported model, for lit tests and for users:
    how many of each op, how many parameters (trainable and frozen) and their
    bytes. Printed to stdout, IR unchanged.

    ```
    trc-opt gpt2.onnx --dim batch=8 --test-trc-print-op-stats
    ops: trc.add=12 trc.dot_general=8 ...
    parameters: 28 trainable (102400 elements, 409600 bytes), 0 frozen
    ```
  }];
  let dependentDialects = ["trc::TrcDialect"];
}

def DecomposeComposites : Pass<"trc-decompose-composites"> {
  let summary = "rewrites composite trc ops into core trc ops";
  let description = [{
    softmax, log_softmax, layer_norm, gelu and cross_entropy become their
    definitions in core ops (reduce, broadcast_in_dim, exp, log, rsqrt, erf,
    tanh, compare, select...), numerically stable (max-subtracted softmax).
    Backends without a fused kernel for a composite lower this form.

    ```mlir
    %y = trc.softmax %x axis = 1 : tensor<4x8xf32>
    // becomes
    %m = trc.reduce max %x dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
    %mb = trc.broadcast_in_dim %m, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
    %d = trc.sub %x, %mb : tensor<4x8xf32>
    %e = trc.exp %d : tensor<4x8xf32>
    %s = trc.reduce sum %e dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
    %sb = trc.broadcast_in_dim %s, dims = [0] : (tensor<4xf32>) -> tensor<4x8xf32>
    %y = trc.div %e, %sb : tensor<4x8xf32>
    ```
    Dropout is not decomposed here: it needs the step's random state.
  }];
  let dependentDialects = ["trc::TrcDialect"];
}

def LowerToLinalg : Pass<"trc-lower-to-linalg", "mlir::func::FuncOp"> {
  let summary = "lowers core trc ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Elementwise ops, compare, select, convert and iota become `linalg.generic`
    with scalar arith/math bodies; reduce becomes `linalg.reduce`; transpose
    `linalg.transpose`; broadcast_in_dim and reverse `linalg.generic` with
    affine input maps; reshape `tensor.reshape`; slice `tensor.extract_slice`;
    concatenate and pad `tensor.insert_slice` into a filled tensor; gather a
    `linalg.generic` that reads with `tensor.extract`; scatter_add an
    `scf.for` nest over the updates that accumulates into a copy of the
    operand (a fill when it is a splat) with `tensor.extract`/`tensor.insert`
    (in place after bufferization); dot_general a
    `linalg.batch_matmul` on operands transposed and reshaped to [B, M, K] and
    [B, K, N] (the CPU pipeline later hands it to BLAS).

    Preconditions: composites decomposed (trc-decompose-composites), signless
    or float element types. `trc.get_parameter` is left alone.
  }];
  let dependentDialects = ["trc::TrcDialect", "mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect", "mlir::arith::ArithDialect",
                           "mlir::math::MathDialect", "mlir::scf::SCFDialect"];
}

def TestPrintMemoryPlan : Pass<"test-trc-print-memory-plan", "mlir::func::FuncOp"> {
  let summary = "prints the static memory plan of a bufferized function";
  let description = [{
    Computes `trc::MemoryPlan` (include/trc/Analysis/MemoryPlan.h) and prints
    the arena size against its lower bound and against no reuse, then each
    buffer's offset, size and live range. The IR is unchanged.

    ```
    memory plan: 3 buffers, arena 128 bytes, lower bound 128 (arena/bound 1.000), ...
      buffer 0: offset 0 size 64 live [0, 2] memref<4x4xf32>
    ```
  }];
}

def PlanMemory : Pass<"trc-plan-memory", "mlir::ModuleOp"> {
  let summary = "places every temporary buffer of @main in one arena";
  let description = [{
    Computes the memory plan of `@main` and rewrites each planned
    `memref.alloc` into `memref.view` of a new last argument, the arena
    (`memref<Nxi8>`, attribute `trc.arena`), at its planned offset. The
    module gets `trc.arena_bytes`, `trc.arena_lower_bound_bytes` and
    `trc.arena_no_reuse_bytes`.

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

def ParametersToArguments : Pass<"trc-parameters-to-arguments", "mlir::ModuleOp"> {
  let summary = "turns the parameters @main reads into arguments after its inputs";
  let description = [{
    Each `trc.parameter` that `@main` reads becomes a new argument (in
    declaration order) with attribute `trc.param = "<name>"`; its
    `trc.get_parameter` ops are replaced by the argument. The parameter
    symbols stay (they hold the initial values the artifact writes).

    ```mlir
    %w = trc.get_parameter @w : tensor<4x4xf32>
    // becomes an argument %arg1: tensor<4x4xf32> {trc.param = "w"}
    ```
  }];
}

def MatmulToRuntimeCall : Pass<"trc-matmul-to-runtime-call", "mlir::ModuleOp"> {
  let summary = "hands linalg.batch_matmul on memrefs to the runtime's BLAS";
  let description = [{
    Replaces each f32/f64 `linalg.batch_matmul` on strided memrefs whose
    innermost or row stride is 1 with a call to `trc_rt_matmul_f32/f64`
    (docs/ARTIFACT.md): pointers, leading dimensions, batch strides and
    transpose flags come from the memref layouts, so slices and transposed
    views need no copy. A zero `linalg.fill` of the result just before the
    call is dropped (the call overwrites it).
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect", "mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect"];
}

def CollectivesToRuntimeCall
    : Pass<"trc-collectives-to-runtime-call", "mlir::ModuleOp"> {
  let summary = "lowers trc collectives to calls of the runtime's communicators";
  let description = [{
    Replaces trc.all_reduce, trc.reduce_scatter, trc.all_gather,
    trc.broadcast_from and trc.shard_slice on tensors by a call to
    `trc_rt_all_reduce` (etc., docs/ARTIFACT.md "Collectives") reading a
    read-only buffer of the operand and writing a fresh buffer that becomes
    the result. Runs before bufferization.
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect", "mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect",
                           "mlir::bufferization::BufferizationDialect"];
}

def CopiesToLinalg : Pass<"trc-copies-to-linalg", "mlir::ModuleOp"> {
  let summary = "rewrites memref.copy into linalg.copy";
  let description = [{
    So that copies lower to plain loops (or memcpy) instead of calls into
    MLIR's C runner library, which the runtime does not link.

    ```mlir
    memref.copy %a, %b : memref<4xf32, strided<[2]>> to memref<4xf32>
    // becomes
    linalg.copy ins(%a : memref<4xf32, strided<[2]>>) outs(%b : memref<4xf32>)
    ```
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def ApproximateMath : Pass<"trc-approximate-math", "mlir::ModuleOp"> {
  let summary = "replaces f32 math calls by polynomial approximations";
  let description = [{
    exp, expm1, tanh, erf, sin, cos, rsqrt... on f32 become MLIR's
    polynomial approximations (a few ulp from libm), written in arith ops so
    LLVM vectorizes the loops around them instead of calling libm per
    element. Logarithms stay libm calls (the approximation is wrong for
    subnormal inputs). Runs on loops or scalars before lowering to LLVM.

    ```mlir
    %y = math.tanh %x : f32
    // becomes a rational approximation in arith.mulf/addf/divf/select
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::math::MathDialect"];
}

def Autodiff : Pass<"trc-autodiff", "mlir::ModuleOp"> {
  let summary = "adds @main_grad: the loss and its gradient for every trainable parameter";
  let description = [{
    Reverse-mode automatic differentiation. Input: `@main` takes the model's
    parameters as arguments (after `trc-parameters-to-arguments`: attribute
    `trc.param = "<name>"`) and returns a scalar float loss as its first
    result. Output: a new function `@main_grad` with the same arguments that
    returns the loss, then d loss / d p for each trainable float parameter
    argument p, in argument order, each result marked
    `trc.grad_of = "<name>"`. `@main` is unchanged.

    Every op on a path from a trainable parameter to the loss applies its
    vector-Jacobian product rule (VjpOpInterface, lib/Training/Vjp*.cpp:
    elementwise ops, select, convert, dot_general, reduce, the data-movement
    ops, gather and scatter_add, and the composites softmax, log_softmax,
    layer_norm, gelu and cross_entropy, so decomposition is optional).
    Gradients of a value used several times are summed (a tied embedding
    read by gather and by a transpose gets both). Frozen parameters, integer
    and i1 values (labels, indices, masks) get none. It is an error when the
    first result is not a scalar float, or when an op on such a path has no
    rule (e.g. dropout).

    The backward pass is kept small: the seed 1 and identities fold away,
    constants are built once, a transposed product becomes the product with
    its operands swapped, the gradients of slices that split a tensor (q, k,
    v) are joined by one concatenate, and forward values nothing needs any
    more are erased.

    ```mlir
    func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x2xf32> {trc.param = "w"})
        -> tensor<f32> {
      %y = trc.dot_general %x, %w, batch = [] x [], contract = [1] x [0]
          : (tensor<4x8xf32>, tensor<8x2xf32>) -> tensor<4x2xf32>
      %l = trc.reduce sum %y dims = [0, 1] : (tensor<4x2xf32>) -> tensor<f32>
      return %l : tensor<f32>
    }
    // gains
    func.func @main_grad(%x: tensor<4x8xf32>, %w: tensor<8x2xf32> {trc.param = "w"})
        -> (tensor<f32>, tensor<8x2xf32> {trc.grad_of = "w"}) {
      ... forward ...
      %one = trc.constant dense<1.0> : tensor<4x2xf32>
      %dw = trc.dot_general %x, %one, batch = [] x [], contract = [0] x [0]
          : (tensor<4x8xf32>, tensor<4x2xf32>) -> tensor<8x2xf32>
      return %l, %dw : tensor<f32>, tensor<8x2xf32>
    }
    ```
  }];
  let dependentDialects = ["trc::TrcDialect"];
}

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

def BuildTrainStep : Pass<"trc-build-train-step", "mlir::ModuleOp"> {
  let summary = "builds @train_step: gradients, clipping and the optimizer update";
  let description = [{
    From `@main_grad` (trc-autodiff: loss, then one gradient per trainable
    parameter) builds

    ```mlir
    func.func @train_step(<inputs>, <parameters>, <optimizer state>,
                          %lr: tensor<f32> {trc.lr}, %step: tensor<f32> {trc.step})
        -> (loss, grad_norm, <new parameters>, <new optimizer state>)
    ```

    Parameters keep their `trc.param` attributes; state arguments carry
    `trc.state = "<slot>:<param>"` (e.g. `adam.m:wte.weight`); results carry
    `trc.output = "loss" | "grad_norm"` or `trc.update = "<argument's name>"`
    (the argument the runtime overwrites with it). The global gradient norm
    is computed before clipping; with `clip-norm` > 0 gradients are scaled
    by min(1, clip / (norm + 1e-6)) as torch.nn.utils.clip_grad_norm_ does.
    The update rules are include/trc/Training/Optimizers.h with torch.optim's
    semantics and defaults. `step` counts from 1.

    Gradient accumulation (`accumulate`): state inputs `grad_accum:<p>` hold
    the sum of the previous micro-steps' gradients; the update uses
    (sum + this micro-step's gradient) * `trc.grad_scale` (the runtime feeds
    1/K), and `update:grad_accum:<p>` is that sum while the input
    `trc.keep_accum` is > 0, else zero (the last micro-step). The runtime
    applies the parameter and optimizer-state updates only on the last
    micro-step. Loss scaling: when @main_grad has an input
    `trc.loss_scale` (trc-mixed-precision), the reported loss is divided by
    it and the gradients are multiplied by `trc.grad_scale` (the runtime
    feeds 1/(K * scale)); a non-finite grad_norm means the step overflowed.
  }];
  let options = [
    Option<"optimizer", "optimizer", "std::string", "\"adamw\"",
           "sgd, adam or adamw">,
    Option<"beta1", "beta1", "double", "0.9", "Adam's beta1">,
    Option<"beta2", "beta2", "double", "0.999", "Adam's beta2">,
    Option<"epsilon", "eps", "double", "1e-8", "Adam's epsilon">,
    Option<"weightDecay", "weight-decay", "double", "-1",
           "weight decay (default: 0.01 for adamw, else 0)">,
    Option<"momentum", "momentum", "double", "0", "SGD momentum">,
    Option<"dampening", "dampening", "double", "0", "SGD dampening">,
    Option<"nesterov", "nesterov", "bool", "false", "SGD Nesterov momentum">,
    Option<"clipNorm", "clip-norm", "double", "0", "global-norm clipping (0: off)">,
    Option<"decayOneDimensional", "decay-1d", "bool", "true",
           "apply weight decay to 1-D parameters (biases, norms) too">,
    Option<"accumulate", "accumulate", "bool", "false",
           "accumulate gradients over micro-steps (inputs grad_accum:<p>, "
           "trc.keep_accum, trc.grad_scale)">,
  ];
  let dependentDialects = ["trc::TrcDialect", "mlir::func::FuncDialect"];
}

def AppendLoss : Pass<"trc-append-loss", "mlir::ModuleOp"> {
  let summary = "makes @main return the cross-entropy loss of its logits";
  let description = [{
    For models exported without their loss: @main's first result, logits
    `[d0, ..., dk, C]` (float, rank >= 2), is replaced by the mean softmax
    cross-entropy against a new argument, the targets `[d0, ..., dk]` (i64),
    named by `trc.input = "<targets>"` (option `targets`, default
    "loss.targets"). Targets equal to `ignore-index` contribute nothing and
    are not counted in the mean (torch.nn.functional.cross_entropy's
    semantics, default -100). @main then returns the loss alone, named
    `trc.output = "loss"`.

    Errors: the first result is already a scalar (the model has its loss), is
    not a float tensor of rank >= 2 with static shape, or an input already
    has the targets' name.
  }];
  let options = [
    Option<"ignoreIndex", "ignore-index", "int64_t", "-100",
           "target value that contributes no loss">,
    Option<"targetsName", "targets", "std::string", "\"loss.targets\"",
           "name of the new targets input">,
  ];
  let dependentDialects = ["trc::TrcDialect"];
}

def MixedPrecision : Pass<"trc-mixed-precision", "mlir::ModuleOp"> {
  let summary = "runs @main in bf16 or f16 with f32 master weights";
  let description = [{
    Before trc-autodiff, on @main whose parameters are arguments
    (trc-parameters-to-arguments): every op that computes f32 values from f32
    operands computes them in `type` (bf16 or f16) instead, its f32 operands
    converted once each. Numerically sensitive ops stay in f32, their 16-bit
    operands converted up: the composites softmax, log_softmax, layer_norm and
    cross_entropy, trc.reduce, exp, log and pow, and gather (so embedding
    gradients accumulate in f32, as in PyTorch's autocast). Matrix products in
    16 bits accumulate in f32 (the lowering). Values without float operands
    (constants, iota, integer converts) stay f32 sources; results returned
    in 16 bits are converted back, so @main's signature is unchanged. The
    parameters remain f32 arguments: their gradients (through the converts)
    and the optimizer's update are f32.

    With `loss-scale`, @main gains an input `trc.loss_scale` (tensor<f32>)
    and returns its loss multiplied by it, so that small f16 gradients do
    not flush to zero; trc-build-train-step divides it back out.
  }];
  let options = [
    Option<"type", "type", "std::string", "\"bf16\"", "bf16 or f16">,
    Option<"lossScale", "loss-scale", "bool", "false",
           "multiply the loss by a new argument trc.loss_scale">,
  ];
  let dependentDialects = ["trc::TrcDialect"];
}

def LowerDropout : Pass<"trc-lower-dropout", "mlir::ModuleOp"> {
  let summary = "turns trc.dropout into a mask keyed by the step";
  let description = [{
    Before trc-autodiff (which then differentiates the mask's select and
    scale like any other op, so the backward pass applies the forward's
    mask): every `trc.dropout %x ratio = p seed = s` in @main becomes

    ```mlir
    %u = trc.random_uniform %key stream = <s * 2^20 + k> : ... -> tensor<...xf32>
    %keep = trc.compare ge, %u, p
    %y = trc.select %keep, %x * (1 / (1 - p)), 0
    ```

    where k numbers the dropouts in order (so no two share a mask) and %key
    is a new input `trc.input = "trc.rng_key"` (tensor<i64>) that the runtime
    sets from the run's seed and the step, making each step's masks
    different and a resumed run's masks the same. Without dropouts @main is
    unchanged.
  }];
  let dependentDialects = ["trc::TrcDialect"];
}

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
    probabilities (GPT-2, BERT and GPT-J exports all match). A chain whose
    scores or probabilities have other users (returned, dropout) stays as
    it is.

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

def PrintFusionSummary : Pass<"trc-print-fusion-summary", "mlir::ModuleOp"> {
  let summary = "prints kernels and device memory bytes before and after trc-fuse";
  let description = [{
    Per function and in total: the number of kernels (every op but
    constants, get_parameter, reshape and calls is one; a trc.fusion is one)
    and the bytes they read and write in device memory (each operand read
    and each result written once; splat constants are immediates), before
    fusion (as trc-fuse recorded it) and now, and the fusions by kind. The
    IR is unchanged.

    ```
    fusion summary (kernels, device memory bytes: before -> after fusion)
    @main: kernels 5 -> 1, bytes 640 -> 192 (30.0%), fusions 1 elementwise, 0 reduction, 0 matmul_epilogue
    total: kernels 5 -> 1, bytes 640 -> 192 (30.0%), fusions 1 elementwise, 0 reduction, 0 matmul_epilogue
    ```
  }];
}

//===----------------------------------------------------------------------===//
// CUDA backend (lib/Pipelines/CudaPipeline.cpp)
//===----------------------------------------------------------------------===//

def LinalgToGpu : Pass<"trc-linalg-to-gpu", "mlir::func::FuncOp"> {
  let summary = "turns every linalg op on buffers into one gpu.launch";
  let description = [{
    The kernel generator of the CUDA backend. Each linalg op on memrefs
    with static shapes becomes a `gpu.launch` (outlined later by
    gpu-kernel-outlining into `gpu.module @trc_kernels`, kernel
    `<function>_k<N>_<op>`): its parallel iteration space is linearized
    and tiled over blocks of up to 256 threads (`block_id.x * T +
    thread_id.x`, guarded when T does not divide it), each thread
    computes one point (delinearized with constant divisions) and runs the
    op's reduction dimensions as a sequential loop whose accumulators stay
    in registers (`scf.for` with `iter_args`), reading the output once and
    writing it once. A reduction over trailing dimensions and the ops after
    it on the same rows (elementwise over the same space, reductions over
    the same dimensions, ops over the rows: a layer norm, a softmax) form
    one row kernel, a thread per row: reductions and row results stay in
    registers, elementwise results are recomputed where they are read and
    stored only when read after the group (every buffer the group writes
    is accessed row-locally inside it, and nothing it reads overlaps one it
    writes). Elementwise ops whose innermost dimension is a
    multiple of 4 and contiguous in every operand move 4 elements per thread
    with 16-byte vector loads and stores (`vector.load`/`vector.store`).
    Constants read in a kernel (`memref.get_global` and views of it) are
    sunk into it, so they live in the cubin. A constant `linalg.fill` of a
    reduction's output right before it becomes the reduction's starting
    value (no fill kernel).

    Host `scf.for` nests (trc-lower-to-linalg's scatter_add) become kernels
    too: when every store is in the innermost loop and every access to a
    stored buffer indexes its last dimension with that loop's induction
    variable (and no other accessed buffer overlaps it), each thread runs
    the outer loops for one iteration of the innermost (deterministic);
    otherwise the nest runs on one thread, with a remark.

    `memref.reshape` with a static result becomes `memref.reinterpret_cast`
    (no shape buffer is read). Afterwards the function may only do pointer
    arithmetic, launches and calls of `trc_rt_*` entries on the host: any
    other op that touches memory (a load, store, copy, allocation, a
    constant read by a library call...) is an error naming it, since the
    host cannot read device memory.

    ```mlir
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%a : memref<1000xf32>) outs(%b : memref<1000xf32>) {...}
    // becomes
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, ...) threads(%tx, %ty, %tz)
        in (%sx = %c256, ...) module(@trc_kernels) function(@main_k0_generic) {
      %i = (%bx * 256 + %tx), if %i < 1000: load %a[%i], body, store %b[%i]
    }
    ```
  }];
  let dependentDialects = ["mlir::gpu::GPUDialect", "mlir::scf::SCFDialect",
                           "mlir::arith::ArithDialect", "mlir::memref::MemRefDialect",
                           "mlir::vector::VectorDialect"];
}

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

def MatmulToCublasLt : Pass<"trc-matmul-to-cublaslt", "mlir::ModuleOp"> {
  let summary = "retargets the matrix-product runtime calls to cuBLASLt";
  let description = [{
    Renames the calls trc-matmul-to-runtime-call made, `trc_rt_matmul_<t>`
    (t = f32, f64, bf16, f16), to the CUDA runtime's
    `trc_rt_cublaslt_matmul_<t>`: the same arguments (docs/ARTIFACT.md),
    with device pointers, run on the runtime's stream in launch order.

    ```mlir
    func.call @trc_rt_matmul_f32(%b, %m, %n, %k, ...)
    // becomes
    func.call @trc_rt_cublaslt_matmul_f32(%b, %m, %n, %k, ...)
    ```
  }];
}

def GpuLaunchToLoops : Pass<"trc-gpu-launch-to-loops", "mlir::func::FuncOp"> {
  let summary = "runs each gpu.launch as sequential host loops (tests kernels on the CPU)";
  let description = [{
    Replaces every `gpu.launch` by `scf.for` loops over its blocks and then
    its threads, the body cloned inside with the block and thread ids bound
    to the loop variables. Exact for kernels whose threads do not
    communicate (no barriers, shuffles or shared memory: all that
    trc-linalg-to-gpu makes); anything else is an error. With it the CPU
    backend runs the CUDA backend's kernels, so that their indexing,
    vector accesses, reductions, row kernels and loop nests are checked
    against onnxruntime and the CPU's own lowering without a GPU
    (`--trc-compile="target=cpu emulate=cuda"`).

    ```mlir
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, ...) threads(%tx, %ty, %tz)
        in (%sx = %c256, ...) { ...; gpu.terminator }
    // becomes
    scf.for %bz = %c0 to %c1 step %c1 { scf.for %by ... { scf.for %bx = %c0 to %c4 ... {
      scf.for %tz ... { scf.for %ty ... { scf.for %tx = %c0 to %c256 ... { ... } } } } } }
    ```
  }];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::arith::ArithDialect"];
}

def OutlineLoopNests : Pass<"trc-outline-loop-nests", "mlir::ModuleOp"> {
  let summary = "moves each top-level loop nest of a function into its own function";
  let description = [{
    Every `scf.parallel` and `scf.for` directly in a `func.func`'s body
    (when the body has two or more) becomes a private function
    `@<function>_loop<N>` marked `noinline` (LLVM passthrough), taking the values the nest
    reads from above as arguments (constants are cloned in), and is replaced
    by a call. The CPU backend needs it for large steps: OpenMP's IR builder
    scans the whole enclosing function once per parallel region, which made
    translating one function of thousands of loop nests quadratic, and
    LLVM's optimizer and code generator are faster on many small functions.
    A nest reading a value a bare-pointer call cannot pass (a memref of
    dynamic shape or layout) stays where it is.

    ```mlir
    func.func @main(%a: memref<8xf32>) {
      scf.parallel (%i) = (%c0) to (%c8) step (%c1) { ... %a ... }
      scf.for %j = %c0 to %c8 step %c1 { ... }
    }
    // becomes
    func.func private @main_loop0(%a: memref<8xf32>)
        attributes {passthrough = ["noinline"]} {
      %c0 = arith.constant 0 : index  ...
      scf.parallel (%i) = (%c0) to (%c8) step (%c1) { ... %a ... }
      return
    }
    func.func @main(%a: memref<8xf32>) { call @main_loop0(%a) ... call @main_loop1() ... }
    ```
  }];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

def DeduplicateFunctions : Pass<"trc-deduplicate-functions", "mlir::ModuleOp"> {
  let summary = "merges private functions and GPU kernels whose bodies are the same";
  let description = [{
    Outlining makes one function per loop nest (trc-outline-loop-nests, CPU)
    or per launch (gpu-kernel-outlining, CUDA); a transformer's layers run
    the same computation on other buffers, so most of those functions are
    copies (GPT-2 124M's training step: 1428 kernel launches, 127 distinct
    kernels). Private `func.func` ops of the module, and `gpu.func` ops of
    each `gpu.module`, with the same signature, attributes (the name aside)
    and body (locations aside) become one: every reference to a copy
    (`func.call`, `gpu.launch_func`) names the first such function and the
    copies are erased, so each distinct function is optimized and compiled
    once. Public functions are never merged.

    ```mlir
    gpu.module @trc_kernels {
      gpu.func @main_k0(%a: memref<8xf32>) kernel { ... }
      gpu.func @main_k7(%a: memref<8xf32>) kernel { ... }   // the same body
    }
    gpu.launch_func @trc_kernels::@main_k7 ...
    // becomes: @main_k7 erased, the launch is of @trc_kernels::@main_k0
    ```
  }];
}

def GpuLaunchToRuntimeCall : Pass<"trc-gpu-launch-to-runtime-call", "mlir::ModuleOp"> {
  let summary = "turns gpu.launch_func into calls of trc_rt_cuda_launch";
  let description = [{
    Runs after gpu-to-llvm (kernel operands are LLVM values: bare pointers
    and scalars). Each `gpu.launch_func @trc_kernels::@k` becomes a call

        trc_rt_cuda_launch(i32 kernel, i64 gridX, gridY, gridZ,
                           i64 blockX, blockY, blockZ, i32 sharedBytes,
                           ptr params, i32 numParams)

    where `params` points to an array of pointers to each operand's value
    (cuLaunchKernel's kernelParams) and `kernel` is the kernel's index in
    the module attribute `trc.cuda_kernels` (the names, in the order of
    their first launch), which the artifact's kernel table repeats. The
    artifact's program thus never calls the CUDA driver itself.

    ```mlir
    gpu.launch_func @trc_kernels::@main_k0_generic blocks in (%c4, %c1, %c1)
        threads in (%c256, %c1, %c1) : i64 args(%p : !llvm.ptr)
    // becomes
    llvm.call @trc_rt_cuda_launch(%c0_i32, %c4, %c1, %c1, %c256, %c1, %c1,
                                  %c0_i32, %params, %c1_i32)
    ```
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // TRC_PASSES_TD
