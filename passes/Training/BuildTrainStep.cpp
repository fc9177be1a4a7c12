//===- BuildTrainStep.cpp - trc-build-train-step ---------------------------===//
//
// Builds @train_step around @main_grad (see Passes.td): calls it, computes
// the global gradient norm, optionally clips, and applies the optimizer's
// update (include/trc/Training/Optimizers.h) to every trainable parameter;
// optionally accumulates gradients over micro-steps and unscales a loss
// scale (mixed precision).
// Frozen parameters' new values (`trc.update` results of @main_grad, such
// as running statistics) are returned as they are.
// Preconditions: @main_grad as trc-autodiff writes it (loss first, then
// gradients with `trc.grad_of`), parameters as arguments with `trc.param`.
// The call is left for the inliner.
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/Abi/PipelineNames.h"
#include "trc/Passes.h"
#include "trc/Abi/SlotNames.h"
#include "trc/Training/Optimizers.h"
#include "trc/Training/Sharding.h"

#include "mlir/IR/Builders.h"

namespace trc {
#define GEN_PASS_DEF_BUILDTRAINSTEP
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {

struct Trainable {
  std::string name;
  unsigned argument;  // index in @main_grad's (and @train_step's) arguments
  unsigned gradient;  // result index in @main_grad
  // Sharded (trc-data-parallel, ZeRO): the gradient is this rank's 1-D shard
  // over `shards` ranks of a parameter of type `full`; 0 when replicated.
  int64_t shards = 0;
  RankedTensorType full;
  // A tied parameter's copy on a pipeline stage above its lowest: its
  // summed gradient counts in the norm only once, on the lowest stage.
  bool normExcluded = false;
  // Tensor parallel (trc-partition): the parameter is this rank's part
  // (`trc.split` on its argument); its state is split alike.
  bool split = false;
  /// The type of the gradient, the optimizer state and the accumulators.
  Type stateType(func::FuncOp grad) const { return grad.getResultTypes()[gradient]; }
  /// Whether the step's parameter argument is full while its gradient is a shard.
  bool gathersParam(func::FuncOp grad) const {
    return shards && grad.getArgumentTypes()[argument] != stateType(grad);
  }
};

DictionaryAttr namedInput(OpBuilder &b, StringRef name) {
  return b.getDictionaryAttr(b.getNamedAttr(trc::abi::kInputAttr, b.getStringAttr(name)));
}

std::optional<unsigned> findInput(func::FuncOp fn, StringRef name) {
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (auto n = fn.getArgAttrOfType<StringAttr>(i, trc::abi::kInputAttr);
        n && n.getValue() == name)
      return i;
  return std::nullopt;
}

struct BuildTrainStep : trc::impl::BuildTrainStepBase<BuildTrainStep> {
  using BuildTrainStepBase::BuildTrainStepBase;

  // @main_grad's `trc.update` results (index, parameter): new values of
  // frozen parameters that the step returns as they are.
  SmallVector<std::pair<unsigned, StringAttr>> parameterUpdates;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (optimizer != "sgd" && optimizer != "adam" && optimizer != "adamw") {
      module.emitError("unknown optimizer '") << optimizer << "' (sgd, adam or adamw)";
      return signalPassFailure();
    }
    if (auto grad = module.lookupSymbol<func::FuncOp>("main_grad")) {
      buildFor(module, grad, "train_step", /*stage=*/-1);
      return;
    }
    // Pipeline stages (trc-pipeline-split): one update per stage, from its
    // accumulated gradients.
    SmallVector<func::FuncOp> stageGrads;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr(trc::abi::kPipelineGradsAttr))
        stageGrads.push_back(fn);
    if (stageGrads.empty()) {
      module.emitError("trc-build-train-step needs @main_grad (run trc-autodiff first)");
      return signalPassFailure();
    }
    for (func::FuncOp fn : stageGrads) {
      int64_t stage = fn->getAttrOfType<IntegerAttr>(trc::abi::kPipelineGradsAttr).getInt();
      buildFor(module, fn, trc::abi::stageFunctionName(stage, trc::abi::kApplyPhase), stage);
    }
  }

  /// @`name` around `grad`: @main_grad (loss first, then gradients), or a
  /// pipeline stage's gradients alone (`stage` >= 0, a pipeline: no loss,
  /// no accumulation here, the norm summed over the pipeline group).
  void buildFor(ModuleOp module, func::FuncOp grad, StringRef name, int64_t stage) {
    bool pipeline = stage >= 0;
    // Which argument each gradient belongs to.
    llvm::StringMap<unsigned> argumentOf;
    for (unsigned i = 0; i < grad.getNumArguments(); ++i)
      if (auto name = grad.getArgAttrOfType<StringAttr>(i, trc::abi::kParamAttr))
        argumentOf[name.getValue()] = i;
    SmallVector<Trainable> trainables;
    parameterUpdates.clear();
    for (unsigned r = pipeline ? 0 : 1; r < grad.getNumResults(); ++r) {
      // A frozen parameter's new value (running statistics): passed through.
      if (auto update = grad.getResultAttrOfType<StringAttr>(r, trc::abi::kUpdateAttr)) {
        parameterUpdates.push_back({r, update});
        continue;
      }
      auto of = grad.getResultAttrOfType<StringAttr>(r, trc::abi::kGradOfAttr);
      if (!of || !argumentOf.count(of.getValue())) {
        grad.emitError("result ") << r << " of @" << grad.getSymName()
                                  << " is not the gradient of a parameter";
        return signalPassFailure();
      }
      Trainable t{of.str(), argumentOf[of.getValue()], r};
      t.normExcluded = bool(grad.getResultAttr(r, trc::abi::kNormExcludedAttr));
      t.split = bool(grad.getArgAttr(t.argument, trc::abi::kSplitAttr));
      if (auto degree = grad.getResultAttrOfType<IntegerAttr>(r, trc::training::kShardDegreeAttr)) {
        auto shape = grad.getResultAttrOfType<DenseI64ArrayAttr>(r, trc::training::kShardOfAttr);
        if (!shape) {
          grad.emitError("result ") << r << " of @main_grad is a shard without "
                                    << trc::training::kShardOfAttr;
          return signalPassFailure();
        }
        t.shards = degree.getInt();
        t.full = RankedTensorType::get(
            shape.asArrayRef(),
            cast<RankedTensorType>(grad.getResultTypes()[r]).getElementType());
      }
      trainables.push_back(t);
    }
    // A pipeline stage may hold none (a pooling between a CNN's layers): its
    // apply program updates nothing and its norm share is 0.
    if (trainables.empty() && !pipeline) {
      grad.emitError("the model has no trainable parameters (none are float parameters on "
                     "the path to the loss, or all are frozen): nothing to train");
      return signalPassFailure();
    }
    build(module, grad, trainables, name, pipeline);
    if (pipeline)
      buildNorm(module, grad, trainables, trc::abi::stageFunctionName(stage, trc::abi::kNormPhase));
  }

  /// Names of the optimizer's state slots per parameter.
  SmallVector<std::string> stateSlots() const {
    if (optimizer == "sgd")
      return momentum != 0.0 ? SmallVector<std::string>{"sgd.momentum"}
                             : SmallVector<std::string>{};
    return {"adam.m", "adam.v"};
  }

  /// The sum of the gradients' squares over every rank holding a part:
  /// sharded ones summed over the shard group, tensor-parallel parts over
  /// the tensor group, both over both; a tied copy above its lowest stage
  /// left out.
  Value sumOfSquares(OpBuilder &b, Location loc, ArrayRef<Value> grads,
                     ArrayRef<Trainable> trainables) {
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    Value sumSquares = b.create<trc::ConstantOp>(
        loc, SplatElementsAttr::get(scalar, b.getF32FloatAttr(0)));
    Value shardedSquares, splitSquares, bothSquares;
    auto addTo = [&](Value &sum, Value total) {
      sum = sum ? b.create<trc::AddOp>(loc, sum, total).getResult() : total;
    };
    for (auto [g, t] : llvm::zip(grads, trainables)) {
      if (t.normExcluded)
        continue;
      auto type = cast<RankedTensorType>(g.getType());
      Value squares = b.create<trc::MulOp>(loc, g, g);
      Value total = b.create<trc::ReduceOp>(
          loc, RankedTensorType::get({}, type.getElementType()), trc::ReduceKind::Sum,
          squares, llvm::to_vector(llvm::seq<int64_t>(0, type.getRank())));
      if (type.getElementType() != b.getF32Type())
        total = b.create<trc::ConvertOp>(loc, scalar, total);
      addTo(t.shards ? (t.split ? bothSquares : shardedSquares)
                          : (t.split ? splitSquares : sumSquares),
                 total);
    }
    auto allSum = [&](Value v, trc::CollectiveGroup group) -> Value {
      return b.create<trc::AllReduceOp>(loc, v, trc::CollectiveReduction::Sum, group);
    };
    if (bothSquares)
      addTo(splitSquares, allSum(bothSquares, trc::CollectiveGroup::Shard));
    if (shardedSquares)
      addTo(sumSquares, allSum(shardedSquares, trc::CollectiveGroup::Shard));
    if (splitSquares)
      addTo(sumSquares, allSum(splitSquares, trc::CollectiveGroup::Tensor));
    return sumSquares;
  }

  /// @`name`(@grad's arguments, trc.grad_scale) -> grad_sq: a pipeline
  /// stage's share of the squared global norm (of the scaled accumulated
  /// gradients), which the runtime sums over every stage of every rank
  /// (several per rank with interleaved schedules) into the apply's
  /// trc.grad_norm_sq.
  void buildNorm(ModuleOp module, func::FuncOp grad, ArrayRef<Trainable> trainables,
                 StringRef name) {
    OpBuilder b(module.getContext());
    Location loc = grad.getLoc();
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    SmallVector<Type> argTypes(grad.getArgumentTypes());
    SmallVector<DictionaryAttr> argAttrs;
    for (unsigned i = 0; i < grad.getNumArguments(); ++i)
      argAttrs.push_back(grad.getArgAttrDict(i) ? grad.getArgAttrDict(i)
                                                : b.getDictionaryAttr({}));
    argTypes.push_back(scalar);
    argAttrs.push_back(namedInput(b, trc::abi::kGradScale));
    b.setInsertionPointAfter(grad);
    auto fn = b.create<func::FuncOp>(loc, name, b.getFunctionType(argTypes, {scalar}));
    fn.setAllArgAttrs(argAttrs);
    Block *body = fn.addEntryBlock();
    b.setInsertionPointToStart(body);
    auto call = b.create<func::CallOp>(loc, grad,
                                       body->getArguments().take_front(grad.getNumArguments()));
    Value gradScale = body->getArguments().back();
    SmallVector<Value> grads;
    for (const Trainable &t : trainables) {
      Value g = call.getResult(t.gradient);
      trc::training::UpdateBuilder u(b, loc, cast<RankedTensorType>(g.getType()));
      grads.push_back(u.mul(g, u.expand(gradScale)));
    }
    b.create<func::ReturnOp>(loc, sumOfSquares(b, loc, grads, trainables));
    fn.setResultAttrs(
        0, b.getDictionaryAttr(b.getNamedAttr(trc::abi::kOutputAttr,
                                              b.getStringAttr(trc::abi::kGradSquaresOutput))));
  }

  void build(ModuleOp module, func::FuncOp grad, ArrayRef<Trainable> trainables, StringRef name,
             bool pipeline) {
    const bool accumulate = this->accumulate && !pipeline;
    MLIRContext *ctx = module.getContext();
    OpBuilder b(ctx);
    Location loc = grad.getLoc();
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    auto slots = stateSlots();

    // Signature: @main_grad's arguments, then state, then lr and step.
    SmallVector<Type> argTypes(grad.getArgumentTypes());
    SmallVector<DictionaryAttr> argAttrs;
    for (unsigned i = 0; i < grad.getNumArguments(); ++i)
      argAttrs.push_back(grad.getArgAttrDict(i) ? grad.getArgAttrDict(i)
                                                : b.getDictionaryAttr({}));
    // State and accumulators have the gradient's type (a shard under ZeRO).
    auto stateAttrs = [&](const Trainable &t, const std::string &name) {
      NamedAttrList attrs;
      attrs.set(trc::abi::kStateAttr, b.getStringAttr(name));
      if (t.shards)
        for (const NamedAttribute &a : trc::training::shardAttributes(b, t.full, t.shards))
          attrs.set(a.getName(), a.getValue());
      if (t.split)
        for (StringRef key : {trc::abi::kSplitAttr, trc::abi::kSplitOfAttr})
          attrs.set(key, grad.getArgAttr(t.argument, key));
      return attrs.getDictionary(ctx);
    };
    for (const auto &slot : slots)
      for (const auto &t : trainables) {
        argTypes.push_back(t.stateType(grad));
        argAttrs.push_back(stateAttrs(t, slot + ":" + t.name));
      }
    argTypes.append({scalar, scalar});
    argAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(trc::abi::kLearningRate, b.getUnitAttr())));
    argAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(trc::abi::kStepCount, b.getUnitAttr())));
    // Gradient accumulation: one buffer per parameter, and whether to keep it.
    unsigned accumBase = argTypes.size();
    if (accumulate) {
      for (const auto &t : trainables) {
        argTypes.push_back(t.stateType(grad));
        argAttrs.push_back(stateAttrs(t, trc::abi::kGradAccumPrefix + t.name));
      }
      argTypes.push_back(scalar);
      argAttrs.push_back(namedInput(b, trc::abi::kKeepAccum));
    }
    // The factor the summed gradients are multiplied by before the update:
    // 1 / (micro-steps * loss scale), fed by the runtime.
    std::optional<unsigned> lossScaleArg = findInput(grad, trc::abi::kLossScale);
    bool scaled = accumulate || lossScaleArg || pipeline;
    if (scaled) {
      argTypes.push_back(scalar);
      argAttrs.push_back(namedInput(b, trc::abi::kGradScale));
    }
    unsigned normSquaredArg = argTypes.size();
    if (pipeline) {
      argTypes.push_back(scalar);
      argAttrs.push_back(namedInput(b, trc::abi::kGradNormSquared));
    }

    b.setInsertionPointAfter(grad);
    auto step = b.create<func::FuncOp>(loc, name, b.getFunctionType(argTypes, {}));
    step.setAllArgAttrs(argAttrs);
    Block *body = step.addEntryBlock();
    b.setInsertionPointToStart(body);
    unsigned numGradArgs = grad.getNumArguments();
    auto call = b.create<func::CallOp>(loc, grad, body->getArguments().take_front(numGradArgs));
    Value lr = body->getArgument(accumBase - 2);
    Value stepCount = body->getArgument(accumBase - 1);
    Value keepAccum = accumulate ? body->getArgument(accumBase + trainables.size()) : Value();
    Value gradScale =
        scaled ? body->getArgument(pipeline ? normSquaredArg - 1 : argTypes.size() - 1) : Value();

    // The gradients the update uses: accumulated, then scaled.
    SmallVector<Value> grads, newAccums;
    for (auto [k, t] : llvm::enumerate(trainables)) {
      Value g = call.getResult(t.gradient);
      trc::training::UpdateBuilder u(b, loc, cast<RankedTensorType>(g.getType()));
      if (accumulate) {
        g = u.add(body->getArgument(accumBase + k), g);
        // select, not a multiplication by 0, so that an overflowed sum resets.
        Value keep = u.greaterThanZero(keepAccum);
        auto predType = RankedTensorType::get(u.type().getShape(), b.getI1Type());
        if (u.type().getRank())
          keep = b.create<trc::BroadcastInDimOp>(loc, predType, keep, ArrayRef<int64_t>{});
        newAccums.push_back(u.select(keep, g, u.constant(0.0)));
      }
      if (gradScale)
        g = u.mul(g, u.expand(gradScale));
      grads.push_back(g);
    }

    // Global gradient norm (before clipping), as torch's clip_grad_norm_; a
    // pipeline stage's comes from the runtime, which sums every stage's
    // squares (@stage<s>_norm) over the pipeline.
    Value sumSquares = pipeline ? body->getArgument(normSquaredArg)
                                : sumOfSquares(b, loc, grads, trainables);
    Value norm = b.create<trc::SqrtOp>(loc, sumSquares);
    Value clipScale;
    if (clipNorm > 0) {
      trc::training::UpdateBuilder s(b, loc, scalar);
      Value ratio = s.div(s.constant(clipNorm), s.add(norm, s.constant(1e-6)));
      clipScale = b.create<trc::MinOp>(loc, ratio, s.constant(1.0));
    }

    SmallVector<Value> results;
    SmallVector<DictionaryAttr> resultAttrs;
    if (!pipeline) {
      Value loss = call.getResult(0);
      if (lossScaleArg)
        loss = b.create<trc::DivOp>(loc, loss, body->getArgument(*lossScaleArg));
      results.push_back(loss);
      resultAttrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr(trc::abi::kOutputAttr, b.getStringAttr(trc::abi::kLossOutput))));
    }
    results.push_back(norm);
    resultAttrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr(trc::abi::kOutputAttr, b.getStringAttr(trc::abi::kGradNormOutput))));
    SmallVector<Value> newParams, newStates(slots.size() * trainables.size());
    double decay = weightDecay >= 0 ? weightDecay : (optimizer == "adamw" ? 0.01 : 0.0);
    for (auto [k, t] : llvm::enumerate(trainables)) {
      Value x = body->getArgument(t.argument);
      // ZeRO 1 and 2: this rank updates its shard of a full parameter.
      bool gathers = t.gathersParam(grad);
      auto fullType = t.shards ? t.full : cast<RankedTensorType>(x.getType());
      if (gathers)
        x = trc::training::localShard(b, loc, x, t.shards);
      Value g = grads[k];
      auto type = cast<RankedTensorType>(x.getType());
      trc::training::UpdateBuilder u(b, loc, type);
      if (clipScale)
        g = u.mul(g, u.expand(clipScale));
      double paramDecay = (!decayOneDimensional && fullType.getRank() <= 1) ? 0.0 : decay;
      auto stateArg = [&](unsigned slot) {
        return body->getArgument(numGradArgs + slot * trainables.size() + k);
      };
      trc::training::Update up;
      if (optimizer == "sgd") {
        trc::training::MomentumOptions o;
        o.momentum = momentum;
        o.gradScale = 1.0 - dampening;
        o.weightDecay = paramDecay;
        o.nesterov = nesterov;
        if (momentum != 0.0) {
          // The first step (step == 1) takes the gradient as the velocity.
          Value first = b.create<trc::CompareOp>(
              loc, RankedTensorType::get({}, b.getI1Type()), trc::CompareDirection::LE,
              stepCount,
              b.create<trc::ConstantOp>(
                  loc, SplatElementsAttr::get(scalar, b.getF32FloatAttr(1.0))));
          up = trc::training::momentum(u, x, g, stateArg(0), lr, first, o);
        } else {
          up.param = u.sub(x, u.mul(u.expand(lr),
                                    paramDecay ? u.add(g, u.mul(x, u.constant(paramDecay)))
                                               : g));
        }
      } else {
        trc::training::AdamOptions o;
        o.beta1 = beta1;
        o.beta2 = beta2;
        o.epsilon = epsilon;
        (optimizer == "adamw" ? o.decoupledDecay : o.weightDecay) = paramDecay;
        up = trc::training::adam(u, x, g, stateArg(0), stateArg(1), lr, stepCount, o);
      }
      newParams.push_back(gathers ? trc::training::gatherFull(b, loc, up.param, t.shards,
                                                              fullType)
                                  : up.param);
      for (unsigned s = 0; s < up.state.size(); ++s)
        newStates[s * trainables.size() + k] = up.state[s];
    }
    for (auto [k, t] : llvm::enumerate(trainables)) {
      results.push_back(newParams[k]);
      resultAttrs.push_back(
          b.getDictionaryAttr(b.getNamedAttr(trc::abi::kUpdateAttr, b.getStringAttr(t.name))));
    }
    for (auto [s, slot] : llvm::enumerate(slots))
      for (auto [k, t] : llvm::enumerate(trainables)) {
        results.push_back(newStates[s * trainables.size() + k]);
        resultAttrs.push_back(b.getDictionaryAttr(
            b.getNamedAttr(trc::abi::kUpdateAttr, b.getStringAttr(slot + ":" + t.name))));
      }
    for (auto [r, update] : parameterUpdates) {
      results.push_back(call.getResult(r));
      resultAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(trc::abi::kUpdateAttr, update)));
    }
    for (auto [k, t] : llvm::enumerate(trainables)) {
      if (!accumulate)
        break;
      results.push_back(newAccums[k]);
      resultAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
          trc::abi::kUpdateAttr, b.getStringAttr(trc::abi::kGradAccumPrefix + t.name))));
    }
    b.create<func::ReturnOp>(loc, results);
    step.setType(b.getFunctionType(argTypes, ValueRange(results).getTypes()));
    step.setAllResultAttrs(resultAttrs);
  }
};
} // namespace
