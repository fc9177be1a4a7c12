//===- Layers.cpp - the chain of a forward graph and its layer pieces ------===//
//
// See include/trc/Analysis/Layers.h.
//
//===----------------------------------------------------------------------===//
#include "trc/Analysis/Layers.h"

#include "trc/Abi/AttrNames.h"
#include "trc/Analysis/ValueFacts.h"
#include "trc/Dialect/Trc.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

using namespace mlir;

namespace trc::analysis {

namespace {

int64_t elements(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  return t && t.hasStaticShape() ? t.getNumElements() : 0;
}

/// q·kᵀ and probabilities·v of one attention: 2 x 2 x batch x heads x
/// queries x keys x depth.
double attentionFlops(Operation *op) {
  auto q = cast<RankedTensorType>(op->getOperand(0).getType());
  auto k = cast<RankedTensorType>(op->getOperand(1).getType());
  return 4.0 * double(q.getNumElements()) * double(k.getDimSize(k.getRank() - 2));
}

} // namespace

double opCost(Operation *op) {
  if (auto dot = dyn_cast<DotGeneralOp>(op)) {
    auto lhs = cast<RankedTensorType>(dot.getLhs().getType());
    double contracted = 1;
    for (int64_t d : dot.getLhsContractingDims())
      contracted *= double(lhs.getDimSize(d));
    return 2.0 * double(elements(dot.getType())) * contracted;
  }
  if (isa<AttentionOp>(op))
    return attentionFlops(op);
  // The backward recomputes q·kᵀ and makes four more products of that size
  // (dp, dv, dq, dk).
  if (isa<AttentionGradOp>(op))
    return 2.5 * attentionFlops(op);
  double cost = 0;
  for (Value r : op->getResults())
    cost += double(elements(r.getType()));
  return cost;
}

bool isLayerCore(Operation *op) { return isa<SoftmaxOp, AttentionOp>(op); }

FailureOr<LayerChain> findLayerChain(func::FuncOp fn, std::string &error,
                                     llvm::function_ref<bool(Operation *)> consider) {
  auto module = fn->getParentOfType<ModuleOp>();
  Block &body = fn.getBody().front();
  // active: depends on a trainable parameter; data: on a graph input.
  llvm::DenseSet<Value> active, data;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    auto name = fn.getArgAttrOfType<StringAttr>(i, trc::abi::kParamAttr);
    if (!name) {
      data.insert(fn.getArgument(i));
      continue;
    }
    auto param = module.lookupSymbol<ParameterOp>(name.getValue());
    auto type = dyn_cast<RankedTensorType>(fn.getArgument(i).getType());
    if (param && param.isTrainable() && type && isa<FloatType>(type.getElementType()))
      active.insert(fn.getArgument(i));
  }
  if (active.empty()) {
    error = "@" + fn.getSymName().str() +
            " reads no trainable parameter argument (run trc-parameters-to-arguments first)";
    return failure();
  }
  LayerChain out;
  llvm::DenseMap<Operation *, int64_t> index;
  for (Operation &op : body.without_terminator()) {
    if (consider && !consider(&op))
      continue;
    SmallVector<Value> inputs = inputsOf(op);
    bool onActive = llvm::any_of(inputs, [&](Value v) { return active.contains(v); });
    bool onData = llvm::any_of(inputs, [&](Value v) { return data.contains(v); });
    for (Value r : op.getResults()) {
      if (onActive)
        active.insert(r);
      if (onData)
        data.insert(r);
    }
    if (onActive && !onData) {
      out.parameterOnly.push_back(&op);
    } else if (onActive) {
      index[&op] = int64_t(out.chain.size());
      out.chain.push_back(&op);
    }
  }
  const int64_t n = int64_t(out.chain.size());
  if (n == 0) {
    error = "no op of @" + fn.getSymName().str() +
            " reads both a trainable parameter and a graph input";
    return failure();
  }
  // crossing[c]: values defined before chain[c] and used at or after it
  // (by chain ops or the return; other readers do not hold a cut).
  std::vector<int64_t> delta(size_t(n) + 2, 0);
  for (int64_t i = 0; i < n; ++i)
    for (Value r : out.chain[size_t(i)]->getResults()) {
      int64_t last = i;
      for (Operation *user : r.getUsers()) {
        Operation *top = topLevelIn(user, body);
        if (!top || top->hasTrait<OpTrait::IsTerminator>())
          last = n;
        else if (auto it = index.find(top); it != index.end())
          last = std::max(last, it->second);
      }
      if (last > i) {
        ++delta[size_t(i) + 1];
        --delta[size_t(last) + 1];
      }
    }
  std::vector<int64_t> crossing(size_t(n) + 1, 0);
  int64_t running = 0, fewest = std::numeric_limits<int64_t>::max();
  for (int64_t c = 1; c < n; ++c) {
    running += delta[size_t(c)];
    crossing[size_t(c)] = running;
    fewest = std::min(fewest, running);
  }
  out.bounds.push_back(0);
  for (int64_t c = 1; c < n; ++c)
    if (crossing[size_t(c)] == fewest)
      out.bounds.push_back(c);
  out.bounds.push_back(n);
  return out;
}

} // namespace trc::analysis
