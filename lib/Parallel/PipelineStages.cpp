//===- PipelineStages.cpp - cutting the forward graph into stages ---------===//
//
// See include/trc/Parallel/Pipeline.h. The layer pieces are
// trc/Analysis/Layers.h's; a min-max partition (dynamic programming over the
// pieces) picks the stages.
//
//===----------------------------------------------------------------------===//
#include "trc/Parallel/Pipeline.h"

#include "trc/Abi/AttrNames.h"
#include "trc/Analysis/Layers.h"
#include "trc/Analysis/ValueFacts.h"
#include "trc/Dialect/Trc.h"
#include "trc/Plan/Partition.h"

#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

using namespace mlir;

namespace trc::parallel {

using analysis::inputsOf;
using analysis::tensorBytes;

LogicalResult assignStages(func::FuncOp main, int64_t stages, StageBalance balance,
                           llvm::DenseMap<Operation *, int64_t> &stageOf,
                           SmallVectorImpl<Operation *> &parameterOnly, std::string &error) {
  Block &body = main.getBody().front();
  FailureOr<analysis::LayerChain> found = analysis::findLayerChain(main, error);
  if (failed(found)) {
    error += ": nothing to split into stages";
    return failure();
  }
  SmallVector<Operation *> &staged = found->chain;
  parameterOnly.append(found->parameterOnly.begin(), found->parameterOnly.end());
  const SmallVector<int64_t> &bounds = found->bounds;
  const int64_t pieces = int64_t(bounds.size()) - 1;
  if (balance == StageBalance::Pieces)
    stages = pieces;
  if (pieces < stages) {
    error = "cannot cut @main into " + std::to_string(stages) + " stages: it has " +
            std::to_string(pieces) + " piece" + (pieces == 1 ? "" : "s") +
            " between layer boundaries";
    return failure();
  }
  // Layers: the attention cores dominate; the cost breaks ties.
  const double layerWeight = balance == StageBalance::Layers ? 1e18 : 0.0;
  std::vector<double> weights(size_t(pieces), 0.0);
  for (int64_t p = 0; p < pieces; ++p)
    for (int64_t i = bounds[size_t(p)]; i < bounds[size_t(p) + 1]; ++i) {
      Operation *op = staged[size_t(i)];
      weights[size_t(p)] += opCost(op) + (isLayerCore(op) ? layerWeight : 0.0);
    }
  std::vector<int64_t> cuts = plan::balancedCuts(weights, stages);
  for (int64_t k = 0; k < stages; ++k)
    for (int64_t op = bounds[size_t(cuts[size_t(k)])]; op < bounds[size_t(cuts[size_t(k) + 1])];
         ++op)
      stageOf[staged[size_t(op)]] = k;
  // Parameter-only ops: the lowest stage among their users (the pass copies
  // them into the other users' stages).
  for (Operation *op : llvm::reverse(parameterOnly)) {
    int64_t stage = -1;
    for (Operation *user : op->getUsers()) {
      Operation *top = analysis::topLevelIn(user, body);
      auto it = top ? stageOf.find(top) : stageOf.end();
      if (it != stageOf.end())
        stage = stage < 0 ? it->second : std::min(stage, it->second);
    }
    stageOf[op] = std::max<int64_t>(stage, 0);
  }
  return success();
}

std::vector<StageSummary> summarizeStages(func::FuncOp fn) {
  std::vector<StageSummary> out;
  auto stageOfOp = [](Operation *op) -> int64_t {
    auto s = op->getAttrOfType<IntegerAttr>(kStageAttr);
    return s && !op->hasAttr(kBackwardAttr) ? s.getInt() : -1;
  };
  auto at = [&](int64_t s) -> StageSummary & {
    if (out.size() <= size_t(s))
      out.resize(size_t(s) + 1);
    return out[size_t(s)];
  };
  Block &body = fn.getBody().front();
  llvm::DenseSet<std::pair<unsigned, int64_t>> paramSeen;
  for (Operation &op : body.without_terminator()) {
    int64_t s = stageOfOp(&op);
    if (s < 0)
      continue;
    StageSummary &summary = at(s);
    ++summary.ops;
    summary.cost += opCost(&op);
    summary.layers += isLayerCore(&op);
    for (Value v : inputsOf(op))
      if (auto arg = dyn_cast<BlockArgument>(v);
          arg && arg.getOwner() == &body &&
          fn.getArgAttr(arg.getArgNumber(), trc::abi::kParamAttr) &&
          paramSeen.insert({arg.getArgNumber(), s}).second)
        summary.paramBytes += tensorBytes(arg.getType());
    for (Value r : op.getResults())
      if (llvm::any_of(r.getUsers(), [&](Operation *user) {
            Operation *top = analysis::topLevelIn(user, body);
            return top && stageOfOp(top) > s;
          }))
        summary.sendBytes += tensorBytes(r.getType());
  }
  return out;
}

} // namespace trc::parallel
