//===- TrainingOps.cpp - ai.onnx.preview.training Adam, Adagrad, Momentum ---===//
//
// The optimizer ops of ONNX's training domain, imported through the same
// update rules trc's own training step uses (include/trc/Training/
// Optimizers.h), so ONNX's node tests (test_adam*, test_adagrad*,
// test_momentum*, test_nesterov_momentum) check trc's optimizer numerics.
// Inputs: R (rate), T (step count, from 0), then groups of tensors
// (X..., G..., state...); outputs: X_new..., state_new....
//
//===----------------------------------------------------------------------===//
#include "../HandlerRegistry.h"
#include "trc/Training/Optimizers.h"

using namespace mlir;

namespace trc::import {
namespace {

/// Common shape of the three ops: checks the group count and returns n, the
/// number of optimized tensors; `groups` tensors per one of them.
std::optional<int> tensorCount(ImportContext &ctx, int groups, int outputsPerTensor) {
  int rest = ctx.numInputs() - 2;
  if (rest <= 0 || rest % groups != 0 || ctx.numOutputs() != rest / groups * outputsPerTensor) {
    (void)ctx.fail("expects R, T and ", groups, " groups of tensors with ", outputsPerTensor,
                   " outputs per tensor, got ", ctx.numInputs(), " inputs and ",
                   ctx.numOutputs(), " outputs");
    return std::nullopt;
  }
  return rest / groups;
}

/// T as f32 and "T == 0" as i1, both rank 0.
std::pair<Value, Value> stepValues(ImportContext &ctx, Value t) {
  auto &b = ctx.builder();
  auto f32 = RankedTensorType::get({}, b.getF32Type());
  Value tf = ctx.build<ConvertOp>(f32, ctx.reshape(t, {}));
  Value zero = ctx.scalar(b.getF32Type(), 0.0);
  Value isZero = ctx.build<CompareOp>(RankedTensorType::get({}, b.getI1Type()),
                                      CompareDirection::EQ, tf, zero);
  return {tf, isZero};
}

/// Rate and step inputs must be one-element tensors.
bool scalarInputs(ImportContext &ctx, Value &r, Value &t) {
  r = ctx.input(0);
  t = ctx.input(1);
  if (!r || !t)
    return false;
  if (cast<RankedTensorType>(r.getType()).getNumElements() != 1 ||
      cast<RankedTensorType>(t.getType()).getNumElements() != 1) {
    (void)ctx.fail("R and T must hold one element each");
    return false;
  }
  r = ctx.reshape(r, {});
  return true;
}

LogicalResult importAdagrad(ImportContext &ctx) {
  auto n = tensorCount(ctx, 3, 2);
  Value r, t;
  if (!n || !scalarInputs(ctx, r, t))
    return failure();
  // r = R / (1 + T * decay_factor)
  auto [tf, isZero] = stepValues(ctx, t);
  (void)isZero;
  Value decay = ctx.scalar(ctx.builder().getF32Type(), ctx.floatAttr("decay_factor", 0));
  Value one = ctx.scalar(ctx.builder().getF32Type(), 1.0);
  Value rate = ctx.build<DivOp>(ctx.convert(r, ctx.builder().getF32Type()),
                                ctx.build<AddOp>(one, ctx.build<MulOp>(tf, decay)));
  training::AdagradOptions o;
  o.epsilon = ctx.floatAttr("epsilon", 1e-6f); // the schema's default
  o.weightDecay = ctx.floatAttr("norm_coefficient", 0.0f);
  for (int i = 0; i < *n; ++i) {
    // Inputs start after R and T.
    Value x = ctx.input(2 + i), g = ctx.input(2 + *n + i), h = ctx.input(2 + 2 * *n + i);
    if (!x || !g || !h)
      return failure();
    training::UpdateBuilder u(ctx.builder(), ctx.loc(), cast<RankedTensorType>(x.getType()));
    auto up = training::adagrad(u, x, g, h, rate, o);
    if (failed(ctx.setOutput(i, up.param)) || failed(ctx.setOutput(*n + i, up.state[0])))
      return failure();
  }
  return success();
}

LogicalResult importMomentum(ImportContext &ctx) {
  auto n = tensorCount(ctx, 3, 2);
  Value r, t;
  if (!n || !scalarInputs(ctx, r, t))
    return failure();
  std::string mode = ctx.stringAttr("mode", "standard");
  if (mode != "standard" && mode != "nesterov")
    return ctx.fail("mode '", mode, "' is not 'standard' or 'nesterov'");
  training::MomentumOptions o;
  o.momentum = ctx.floatAttr("alpha", 0.0f);
  o.gradScale = ctx.floatAttr("beta", 1.0f);
  o.weightDecay = ctx.floatAttr("norm_coefficient", 0.0f);
  o.nesterov = mode == "nesterov";
  auto [tf, isZero] = stepValues(ctx, t);
  (void)tf;
  for (int i = 0; i < *n; ++i) {
    Value x = ctx.input(2 + i), g = ctx.input(2 + *n + i), v = ctx.input(2 + 2 * *n + i);
    if (!x || !g || !v)
      return failure();
    training::UpdateBuilder u(ctx.builder(), ctx.loc(), cast<RankedTensorType>(x.getType()));
    auto up = training::momentum(u, x, g, v, r, isZero, o);
    if (failed(ctx.setOutput(i, up.param)) || failed(ctx.setOutput(*n + i, up.state[0])))
      return failure();
  }
  return success();
}

LogicalResult importAdam(ImportContext &ctx) {
  auto n = tensorCount(ctx, 4, 3);
  Value r, t;
  if (!n || !scalarInputs(ctx, r, t))
    return failure();
  training::AdamOptions o;
  o.beta1 = ctx.floatAttr("alpha", 0.9f);
  o.beta2 = ctx.floatAttr("beta", 0.999f);
  o.epsilon = ctx.floatAttr("epsilon", 1e-6f);
  o.weightDecay = ctx.floatAttr("norm_coefficient", 0.0f);
  o.postDecay = ctx.floatAttr("norm_coefficient_post", 0.0f);
  o.epsilonMode = training::AdamEpsilon::Onnx;
  auto [tf, isZero] = stepValues(ctx, t);
  for (int i = 0; i < *n; ++i) {
    Value x = ctx.input(2 + i), g = ctx.input(2 + *n + i), v = ctx.input(2 + 2 * *n + i),
          h = ctx.input(2 + 3 * *n + i);
    if (!x || !g || !v || !h)
      return failure();
    training::UpdateBuilder u(ctx.builder(), ctx.loc(), cast<RankedTensorType>(x.getType()));
    auto up = training::adam(u, x, g, v, h, r, tf, o, isZero);
    if (failed(ctx.setOutput(i, up.param)) || failed(ctx.setOutput(*n + i, up.state[0])) ||
        failed(ctx.setOutput(2 * *n + i, up.state[1])))
      return failure();
  }
  return success();
}

} // namespace

void registerTrainingHandlers(HandlerRegistry &r) {
  const char *domain = "ai.onnx.preview.training";
  r.add(HandlerRegistry::key(domain, "Adagrad"), 1, importAdagrad);
  r.add(HandlerRegistry::key(domain, "Momentum"), 1, importMomentum);
  r.add(HandlerRegistry::key(domain, "Adam"), 1, importAdam);
}

} // namespace trc::import
