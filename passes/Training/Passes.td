//===- Passes.td - trc passes: Training --------------------*- tablegen -*-===//
//
// The training step: loss, autodiff, optimizer update, mixed precision,
// dropout.
// Implemented in passes/Training/<Name>.cpp; included by passes/Passes.td.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PASSES_TRAINING_PASSES_TD
#define TRC_PASSES_TRAINING_PASSES_TD

include "mlir/Pass/PassBase.td"

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

    `recompute-statistics` (default true): a layer norm's gradient
    recomputes the forward's mean and variance from its input (read through
    a trc.optimization_barrier) instead of sharing the forward's normalized
    input: two tensors of the input's size fewer kept from the forward to
    the backward, for a reduction more in the backward. trc-run turns it
    off for the CPU without recomputation, where time matters more.
  }];
  let options = [
    Option<"recomputeStatistics", "recompute-statistics", "bool", "true",
           "layer norm gradients recompute the forward's statistics">,
  ];
  let dependentDialects = ["trc::TrcDialect"];
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

def DetectAnomaly : Pass<"trc-detect-anomaly", "mlir::ModuleOp"> {
  let summary = "checks every float value of the training step for NaN and inf (--detect-anomaly)";
  let description = [{
    After trc-build-train-step: every float value of `@main_grad` (its
    float arguments, then each op's results in program order) and of
    `@train_step`'s own ops (norm, clipping, update) becomes a "site"; for
    each, the step computes a code, max over its elements of 2 if NaN,
    1 if +-inf, else 0 (include/trc/Abi/AnomalySites.h), and returns the
    codes as one more output `trc.anomaly` (f32[sites]; @main_grad gains
    the result, @train_step's call forwards it). The module attribute
    `trc.anomaly_sites` lists per site its op, ONNX node (from the op's
    location), phase (input, parameter, forward, backward, optimizer: an op
    of @main_grad is forward when the loss or a `trc.update` result depends
    on it) and the sites it reads, which the artifact writer puts in the
    manifest; the runtime names the first site that made a non-finite
    value from finite operands when a step's loss or norm is non-finite.
    A debugging mode: results are unchanged but the step is slower (every
    value is read once more, by small reductions; bench/RESULTS.md).

    Errors: no `@train_step` calling `@main_grad` (pipeline stages: their
    steps are several programs), or a step already instrumented.
  }];
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
    is a new input named trc.rng_key (by `trc.input`; tensor<i64>) that the runtime
    sets from the run's seed and the step, making each step's masks
    different and a resumed run's masks the same. Without dropouts @main is
    unchanged.
  }];
  let dependentDialects = ["trc::TrcDialect"];
}

#endif // TRC_PASSES_TRAINING_PASSES_TD
