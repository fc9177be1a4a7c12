//===- PipelineSplit.cpp - trc-pipeline-split ------------------------------===//
//
// Outlines a staged @main_grad into per-stage programs (see Passes.td): each
// op goes to the program of its stage and phase (forward ops keep the
// `trc.stage` trc-pipeline-stages gave them; trc-autodiff marked the ops of
// each VJP `trc.backward` with the stage of the op they differentiate). A
// stage's backward is split in two: B, the ops whose results reach another
// stage (the input gradients sent back), and W, the rest (the parameters'
// gradients), so that zero-bubble schedules can run W later.
// A value used by another program becomes, on demand:
//   same stage, a later program (forward -> B or W, B -> W): a stash
//     (result `stash:<k>`, argument of each later program that reads it);
//   another stage, same phase: a transfer (result `send:t<k>`, argument
//     `recv:t<k>`), listed in the module's `trc.pipeline_transfers`;
//   another stage's forward value read by a backward op: received by this
//     stage's forward program, then stashed.
// Constants and values that depend on no parameter are cloned into every
// program that reads them; so are forward values of parameters alone
// (weight transposes) that a stage's backward reads: recomputed, not kept
// per microbatch. A frozen parameter's new value (@main_grad's trc.update
// results: running statistics) is a result of the forward program that
// computes it (output "update:<name>"). @main_grad is erased (@main stays, as after
// trc-autodiff). With shard-degree > 1 (ZeRO within each stage's data
// ranks) @stage<s>_grads returns this rank's shard of each accumulated
// gradient; zero-stage 2 keeps the accumulators as shards (each W program
// reduce-scatters the gradients it adds), and zero-stage 3 also makes the
// trainable parameters shards in every program of the stage, gathered at
// each use (Training/Sharding.h). Under context parallelism a gradient
// returned as a sum over the context axis is accumulated as its part times
// C instead: averaged over data x context once a step (by the executor, or
// the shard and replica groups, which split data x context) it is the sum
// over the context axis averaged over the data axis, with no collective
// per gradient and microbatch.
// Preconditions: trc-pipeline-stages and trc-autodiff have run; ops added
// since (trc-partition's) run with the latest staged op they read.
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/Abi/PipelineNames.h"
#include "trc/Passes.h"
#include "trc/Analysis/ValueFacts.h"
#include "trc/Abi/SlotNames.h"
#include "trc/Parallel/Pipeline.h"
#include "trc/Parallel/Sharding.h"
#include "trc/Parallel/StageHomes.h"
#include "trc/Training/Optimizers.h"
#include "trc/Training/Sharding.h"
#include "trc/Training/Vjp.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

namespace trc {
#define GEN_PASS_DEF_PIPELINESPLIT
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using namespace trc::parallel;

namespace {

/// The three programs of a stage: its forward; its backward's work on the
/// gradients it sends to earlier stages (B); the rest, its parameters'
/// gradients (W), which zero-bubble schedules run later.
using Phase = trc::parallel::StagePhase;
constexpr int64_t kPhases = trc::parallel::kStagePhases;

const char *phaseName(Phase phase) {
  switch (phase) {
  case Phase::Forward: return trc::abi::kForwardPhase;
  case Phase::Backward: return trc::abi::kBackwardPhase;
  case Phase::Weights: return trc::abi::kWeightsPhase;
  }
  return "";
}

/// Where an op runs: its stage and phase; stage -1: anywhere (recomputed).
using Home = trc::parallel::StageHome;

/// One outlined function being built.
struct Program {
  func::FuncOp fn;
  int64_t stage = 0;
  Phase phase = Phase::Forward;
  IRMapping map;
  SmallVector<Value> results;
  SmallVector<Attribute> resultAttrs;
  Value keepAccum; // weights: `trc.keep_accum`, made on first use
  Block &body() { return fn.getBody().front(); }
};

using trc::analysis::inputsOf;

struct PipelineSplit : trc::impl::PipelineSplitBase<PipelineSplit> {
  using PipelineSplitBase::PipelineSplitBase;
  ModuleOp module;
  func::FuncOp grad;
  int64_t stages = 0;
  std::vector<Program> programs; // stage s's phase f at 3s + f
  SmallVector<func::FuncOp> gradsFunctions; // @stage<s>_grads
  trc::parallel::StageHomes homes;
  SmallVector<Attribute> transfers;
  int64_t nextStash = 0;
  bool failedAny = false;

  // A value of a program passed to later programs of its stage: its stash
  // name (one buffer, whichever programs read it).
  llvm::DenseMap<std::pair<Program *, Value>, std::string> stashNames;

  Program &program(int64_t stage, Phase phase) {
    return programs[size_t(kPhases * stage + int64_t(phase))];
  }

  DictionaryAttr named(StringRef key, StringRef name) {
    OpBuilder b(module.getContext());
    return b.getDictionaryAttr(b.getNamedAttr(key, b.getStringAttr(name)));
  }

  Value addArgument(Program &p, Type type, DictionaryAttr attrs) {
    unsigned at = p.fn.getNumArguments();
    if (failed(p.fn.insertArgument(at, type, attrs, p.fn.getLoc())))
      failedAny = true;
    return p.fn.getArgument(at);
  }

  void addResult(Program &p, Value v, DictionaryAttr attrs) {
    p.results.push_back(v);
    p.resultAttrs.push_back(attrs);
  }

  /// `v` of @main_grad as a value of program `p`, bringing it there.
  Value localize(Value v, Program &p) {
    if (Value known = p.map.lookupOrNull(v))
      return known;
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      DictionaryAttr attrs = grad.getArgAttrDict(arg.getArgNumber());
      Value local = addArgument(p, v.getType(), attrs ? attrs : DictionaryAttr::get(v.getContext()));
      p.map.map(v, local);
      return local;
    }
    Operation *def = v.getDefiningOp();
    Home home = homes.lookup(def);
    if (home.stage < 0) { // recomputed where used
      cloneInto(*def, p);
      return p.map.lookup(v);
    }
    // A forward value of parameters alone (a weight transpose) is computed
    // again by the stage's later programs rather than kept per microbatch.
    if (home.stage == p.stage && home.phase == Phase::Forward && p.phase != Phase::Forward &&
        homes.parameterOnly.contains(def)) {
      cloneInto(*def, p);
      return p.map.lookup(v);
    }
    Program &owner = program(home.stage, home.phase);
    if (&owner == &p) {
      def->emitError("internal error: trc-pipeline-split visits a value before its definition");
      failedAny = true;
      return v;
    }
    Value local;
    if (home.stage == p.stage) {
      local = stash(localize(v, owner), owner, p);
    } else {
      // Received by this stage's program of the value's phase, then stashed
      // for a later one (another stage's forward value a backward op reads).
      Program &receiver = program(p.stage, home.phase);
      if (&receiver != &p)
        local = stash(localize(v, receiver), receiver, p);
      else
        local = transfer(localize(v, owner), owner, p, home.phase);
    }
    p.map.map(v, local);
    return local;
  }

  /// A value of `from` passed to a later program `to` of the same stage.
  Value stash(Value inFrom, Program &from, Program &to) {
    std::string &name = stashNames[{&from, inFrom}];
    if (name.empty()) {
      name = trc::abi::kStashPrefix + std::to_string(nextStash++);
      addResult(from, inFrom, named(trc::abi::kOutputAttr, name));
    }
    return addArgument(to, inFrom.getType(), named(trc::abi::kInputAttr, name));
  }

  Value transfer(Value inFrom, Program &from, Program &to, Phase phase) {
    OpBuilder b(module.getContext());
    int64_t id = int64_t(transfers.size());
    std::string name = "t" + std::to_string(id);
    addResult(from, inFrom, named(trc::abi::kOutputAttr, trc::abi::kSendPrefix + name));
    transfers.push_back(b.getDictionaryAttr(
        {b.getNamedAttr(trc::abi::kTransferIdKey, b.getStringAttr(name)),
         b.getNamedAttr(trc::abi::kTransferPhaseKey, b.getStringAttr(phaseName(phase))),
         b.getNamedAttr(trc::abi::kTransferFromKey, b.getI64IntegerAttr(from.stage)),
         b.getNamedAttr(trc::abi::kTransferToKey, b.getI64IntegerAttr(to.stage))}));
    return addArgument(to, inFrom.getType(),
                       named(trc::abi::kInputAttr, trc::abi::kRecvPrefix + name));
  }

  void cloneInto(Operation &op, Program &p) {
    for (Value v : inputsOf(op))
      localize(v, p);
    OpBuilder b = OpBuilder::atBlockEnd(&p.body());
    Operation *copy = b.clone(op, p.map);
    copy->removeAttr(kStageAttr);
    copy->removeAttr(kBackwardAttr);
  }

  /// Whether the accumulators are shards (ZeRO-2 and 3).
  bool shardedAccumulators() const { return shardDegree > 1 && zeroStage >= 2; }

  /// The `grad_accum:` input of parameter `name` of type `full`: its type
  /// and attributes (a shard's with shardedAccumulators()).
  std::pair<Type, DictionaryAttr> accumulatorArgument(RankedTensorType full, StringAttr name) {
    Builder b(module.getContext());
    NamedAttrList attrs(named(trc::abi::kInputAttr, trc::abi::kGradAccumPrefix + name.str()));
    if (!shardedAccumulators())
      return {full, attrs.getDictionary(b.getContext())};
    attrs.append(trc::training::shardAttributes(b, full, shardDegree));
    return {trc::training::shardType(full, shardDegree), attrs.getDictionary(b.getContext())};
  }

  /// Weights: the gradient `g` of parameter `name`, added into its
  /// accumulator (restarted where trc.keep_accum is 0). Sharded
  /// accumulators take this rank's shard of `g` averaged over the shard
  /// group (a reduce-scatter per microbatch).
  void accumulate(Program &p, Value g, StringAttr name) {
    OpBuilder b = OpBuilder::atBlockEnd(&p.body());
    Location loc = p.fn.getLoc();
    std::string slot = trc::abi::kGradAccumPrefix + name.str();
    auto [accType, accAttrs] = accumulatorArgument(cast<RankedTensorType>(g.getType()), name);
    if (shardedAccumulators())
      g = b.create<trc::ReduceScatterOp>(loc, accType,
                                         trc::training::flattenPadded(b, loc, g, shardDegree),
                                         trc::CollectiveReduction::Avg,
                                         trc::CollectiveGroup::Shard, shardDegree);
    Value acc = addArgument(p, accType, accAttrs);
    if (!p.keepAccum)
      p.keepAccum = addArgument(p, RankedTensorType::get({}, b.getF32Type()),
                                named(trc::abi::kInputAttr, trc::abi::kKeepAccum));
    auto type = cast<RankedTensorType>(g.getType());
    trc::training::UpdateBuilder u(b, loc, type);
    Value keep = u.greaterThanZero(p.keepAccum);
    if (type.getRank())
      keep = b.create<trc::BroadcastInDimOp>(
          loc, RankedTensorType::get(type.getShape(), b.getI1Type()), keep,
          ArrayRef<int64_t>{});
    addResult(p, u.select(keep, u.add(acc, g), g), named(trc::abi::kUpdateAttr, slot));
  }

  /// Each gradient @main_grad returns as a sum over the context axis
  /// becomes its part times C (see the file comment).
  void foldContextSums() {
    auto ret = cast<func::ReturnOp>(grad.getBody().front().getTerminator());
    int64_t c = trc::parallel::Grid::read(module).size(trc::parallel::kContextAxis);
    for (unsigned r : trc::parallel::contextSummedGradients(grad)) {
      Operation *sum = ret.getOperand(r).getDefiningOp();
      OpBuilder b(sum);
      ret.setOperand(r, trc::autodiff::VjpBuilder(b, sum->getLoc())
                            .scale(trc::parallel::contextSummand(ret.getOperand(r)), double(c)));
      if (sum->use_empty())
        sum->erase();
    }
  }

  void runOnOperation() override {
    module = getOperation();
    grad = module.lookupSymbol<func::FuncOp>("main_grad");
    auto pipeline = module->getAttrOfType<DictionaryAttr>(kPipelineAttr);
    if (!grad || !pipeline) {
      module.emitError("trc-pipeline-split needs @main_grad of a module trc-pipeline-stages "
                       "annotated (trc.pipeline)");
      return signalPassFailure();
    }
    if (zeroStage < 1 || zeroStage > 3) {
      module.emitError("trc-pipeline-split: zero-stage is 1, 2 or 3, got ")
          << static_cast<long long>(zeroStage);
      return signalPassFailure();
    }
    foldContextSums();
    auto count = pipeline.getAs<IntegerAttr>("stages");
    auto chunks = pipeline.getAs<IntegerAttr>("virtual");
    stages = (count ? count.getInt() : 1) * (chunks ? chunks.getInt() : 1);
    OpBuilder b(module.getContext());
    b.setInsertionPoint(grad);
    for (int64_t s = 0; s < stages; ++s)
      for (Phase phase : {Phase::Forward, Phase::Backward, Phase::Weights}) {
        Program p;
        p.stage = s;
        p.phase = phase;
        std::string name = trc::abi::stageFunctionName(s, phaseName(phase));
        p.fn = b.create<func::FuncOp>(grad.getLoc(), name, b.getFunctionType({}, {}));
        p.fn.addEntryBlock();
        programs.push_back(std::move(p));
      }
    FailureOr<trc::parallel::StageHomes> found = trc::parallel::findStageHomes(grad, stages);
    if (failed(found))
      return signalPassFailure();
    homes = std::move(*found);
    Block &body = grad.getBody().front();
    for (Operation &op : body.without_terminator())
      if (Home home = homes.lookup(&op); home.stage >= 0)
        cloneInto(op, program(home.stage, home.phase));

    // The loss leaves the program that computes it; each gradient is
    // accumulated by its parameter copy's stage.
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    Value loss = ret.getOperand(0);
    Home lossHome = loss.getDefiningOp() ? homes.lookup(loss.getDefiningOp()) : Home();
    Program &lossProgram =
        program(lossHome.stage >= 0 ? lossHome.stage : stages - 1, Phase::Forward);
    addResult(lossProgram, localize(loss, lossProgram),
              named(trc::abi::kOutputAttr, trc::abi::kLossOutput));
    llvm::StringMap<int64_t> lowestStage;
    struct Gradient {
      StringAttr name;
      int64_t stage;
      Value value;
    };
    SmallVector<Gradient> gradients;
    for (unsigned r = 1; r < grad.getNumResults(); ++r) {
      auto name = grad.getResultAttrOfType<StringAttr>(r, trc::abi::kGradOfAttr);
      auto stage = grad.getResultAttrOfType<IntegerAttr>(r, kStageAttr);
      if (auto update = grad.getResultAttrOfType<StringAttr>(r, trc::abi::kUpdateAttr)) {
        // A frozen parameter's new value (a running statistic) leaves the
        // forward program that computes it, as "update:<name>": the
        // executor copies it over the parameter after each microbatch.
        Operation *def = ret.getOperand(r).getDefiningOp();
        Home home = def ? homes.lookup(def) : Home();
        if (home.stage < 0 || home.phase != Phase::Forward) {
          grad.emitError("result ") << r << " of @main_grad updates '" << update.getValue()
                                    << "' outside a stage's forward";
          return signalPassFailure();
        }
        Program &forward = program(home.stage, Phase::Forward);
        addResult(forward, localize(ret.getOperand(r), forward),
                  named(trc::abi::kUpdateAttr, update.getValue()));
        continue;
      }
      if (!name) {
        grad.emitError("result ") << r << " of @main_grad is not a gradient (trc.grad_of)";
        return signalPassFailure();
      }
      int64_t s = stage ? stage.getInt() : 0;
      gradients.push_back({name, s, ret.getOperand(r)});
      auto [it, inserted] = lowestStage.try_emplace(name.getValue(), s);
      if (!inserted)
        it->second = std::min(it->second, s);
    }
    for (const Gradient &g : gradients) {
      Program &p = program(g.stage, Phase::Weights);
      accumulate(p, localize(g.value, p), g.name);
    }
    if (failedAny)
      return signalPassFailure();
    for (Program &p : programs) {
      OpBuilder end = OpBuilder::atBlockEnd(&p.body());
      end.create<func::ReturnOp>(p.fn.getLoc(), p.results);
      p.fn.setType(end.getFunctionType(p.body().getArgumentTypes(),
                                       ValueRange(p.results).getTypes()));
      p.fn.setAllResultAttrs(p.resultAttrs);
    }
    buildGradientFunctions(gradients, lowestStage);
    if (failedAny)
      return signalPassFailure();
    if (shardDegree > 1 && zeroStage == 3) {
      llvm::StringSet<> trainable;
      for (const Gradient &g : gradients)
        trainable.insert(g.name.getValue());
      for (Program &p : programs)
        trc::training::shardParameterArguments(p.fn, trainable, shardDegree);
      for (func::FuncOp fn : gradsFunctions)
        trc::training::shardParameterArguments(fn, trainable, shardDegree);
    }
    module->setAttr(trc::abi::kPipelineTransfersAttr, b.getArrayAttr(transfers));
    grad.erase();
  }

  /// @stage<s>_grads(params..., grad_accum...) -> accumulated gradients,
  /// what trc-build-train-step turns into @stage<s>_apply. A tied
  /// parameter's copy above its lowest stage is `trc.norm_excluded` (its
  /// summed gradient counts once in the norm).
  template <typename Gradients>
  void buildGradientFunctions(const Gradients &gradients,
                              const llvm::StringMap<int64_t> &lowestStage) {
    OpBuilder b(module.getContext());
    for (int64_t s = 0; s < stages; ++s) {
      Program &weights = program(s, Phase::Weights);
      SmallVector<Type> types;
      SmallVector<Attribute> argAttrs, resultAttrs;
      SmallVector<unsigned> accumArgs;
      for (const auto &g : gradients) {
        if (g.stage != s)
          continue;
        // The parameter argument of this stage's copy.
        std::optional<unsigned> param;
        for (unsigned i = 0; i < grad.getNumArguments() && !param; ++i) {
          auto name = grad.getArgAttrOfType<StringAttr>(i, trc::abi::kParamAttr);
          auto stage = grad.getArgAttrOfType<IntegerAttr>(i, kStageAttr);
          if (name == g.name && (stage ? stage.getInt() : 0) == s)
            param = i;
        }
        if (!param) {
          grad.emitError("no argument holds stage ") << s << "'s copy of " << g.name;
          failedAny = true;
          return;
        }
        types.push_back(grad.getArgument(*param).getType());
        argAttrs.push_back(grad.getArgAttrDict(*param));
        NamedAttrList result;
        result.set(trc::abi::kGradOfAttr, g.name);
        if (lowestStage.lookup(g.name.getValue()) != s)
          result.set(trc::abi::kNormExcludedAttr, b.getUnitAttr());
        resultAttrs.push_back(result.getDictionary(b.getContext()));
      }
      size_t params = types.size();
      SmallVector<Type> resultTypes;
      for (size_t k = 0; k < params; ++k) {
        auto name = cast<DictionaryAttr>(resultAttrs[k]).getAs<StringAttr>(trc::abi::kGradOfAttr);
        auto full = cast<RankedTensorType>(types[k]);
        auto [accType, accAttrs] = accumulatorArgument(full, name);
        types.push_back(accType);
        argAttrs.push_back(accAttrs);
        if (shardDegree <= 1) {
          resultTypes.push_back(full);
          continue;
        }
        // ZeRO: this rank's shard of the (data-averaged) gradient.
        resultTypes.push_back(trc::training::shardType(full, shardDegree));
        NamedAttrList attrs(cast<DictionaryAttr>(resultAttrs[k]));
        attrs.append(trc::training::shardAttributes(b, full, shardDegree));
        resultAttrs[k] = attrs.getDictionary(b.getContext());
      }
      b.setInsertionPointAfter(weights.fn);
      auto fn = b.create<func::FuncOp>(
          grad.getLoc(), trc::abi::stageFunctionName(s, trc::abi::kGradsPhase),
          b.getFunctionType(types, resultTypes));
      Block *entry = fn.addEntryBlock();
      fn.setAllArgAttrs(argAttrs);
      fn.setAllResultAttrs(resultAttrs);
      fn->setAttr(trc::abi::kPipelineGradsAttr, b.getI64IntegerAttr(s));
      gradsFunctions.push_back(fn);
      OpBuilder body = OpBuilder::atBlockEnd(entry);
      SmallVector<Value> results(entry->getArguments().drop_front(params));
      if (shardDegree > 1 && !shardedAccumulators()) // ZeRO-1: a slice of the whole
        for (Value &r : results)
          r = trc::training::localShard(body, grad.getLoc(), r, shardDegree);
      body.create<func::ReturnOp>(grad.getLoc(), results);
    }
  }
};

} // namespace
