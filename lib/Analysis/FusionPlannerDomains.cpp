//===- FusionPlannerDomains.cpp - the iteration domain of a kernel ----------===//
//
// Fusion planner phases (the overview is in FusionPlanner.cpp):
//   Domains
//
//===----------------------------------------------------------------------===//
#include "FusionPlannerImpl.h"

namespace trc::fusion::detail {

static ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// The domain a reducing op imposes: (shape, reduced dimensions).
static std::optional<std::pair<SmallVector<int64_t>, SmallVector<int64_t>>>
reductionDomain(Operation *op) {
  auto dims = [](int64_t from, int64_t to) {
    return llvm::to_vector(llvm::seq<int64_t>(from, to));
  };
  if (auto r = dyn_cast<ReduceOp>(op)) {
    SmallVector<int64_t> d(r.getDimensions());
    llvm::sort(d);
    return std::make_pair(llvm::to_vector(shapeOf(r.getOperand())), d);
  }
  if (auto s = dyn_cast<SoftmaxOp>(op))
    return std::make_pair(llvm::to_vector(shapeOf(s.getOperand())),
                          SmallVector<int64_t>{int64_t(s.getAxis())});
  if (auto s = dyn_cast<LogSoftmaxOp>(op))
    return std::make_pair(llvm::to_vector(shapeOf(s.getOperand())),
                          SmallVector<int64_t>{int64_t(s.getAxis())});
  if (auto l = dyn_cast<LayerNormOp>(op)) {
    auto shape = llvm::to_vector(shapeOf(l.getOperand()));
    return std::make_pair(shape, dims(l.getAxis(), shape.size()));
  }
  if (auto c = dyn_cast<CrossEntropyOp>(op))
    return std::make_pair(llvm::to_vector(shapeOf(c.getLogits())), SmallVector<int64_t>{1});
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Domains
//===----------------------------------------------------------------------===//

std::optional<Domain> Planner::domainOf(const View &view) {
  Domain d;
  for (Operation *op : view.ops) {
    auto rd = reductionDomain(op);
    if (!rd)
      continue;
    if (d.hasShape && (d.shape != rd->first || d.reduced != rd->second))
      return std::nullopt;
    d.shape = rd->first;
    d.reduced = rd->second;
    d.hasShape = true;
  }
  bool reduction = d.hasShape;
  SmallVector<int64_t> kept = d.kept();
  // Shapes compare without unit dimensions (keepdims reshapes).
  auto squeeze = [](ArrayRef<int64_t> s) {
    return llvm::to_vector(llvm::make_filter_range(s, [](int64_t n) { return n != 1; }));
  };
  auto atLevel = [&](ArrayRef<int64_t> s) {
    if (!d.hasShape) {
      d.shape.assign(s.begin(), s.end());
      d.hasShape = true;
      return true;
    }
    auto q = squeeze(s);
    return q == squeeze(d.shape) || (reduction && q == squeeze(kept));
  };
  // Reductions fixed the domain; every other op must fit it.
  for (Operation *op : view.ops) {
    if (reductionDomain(op)) {
      // Its other operands (labels, scale, bias) are inputs; the result of
      // a cross-entropy may be a scalar nothing inside reads.
      continue;
    }
    if (!atLevel(shapeOf(op->getResult(0))))
      return std::nullopt;
  }
  if (!view.fusible)
    return d;
  // Broadcasts copied in: of an outside value, a read at either level; of
  // a value computed inside, the kept shape spread over the reduced
  // dimensions (through keepdims reshapes).
  Traffic t = traffic(view);
  for (Operation *op : t.copied) {
    auto b = dyn_cast<BroadcastInDimOp>(op);
    if (!b || !derivedInside(b.getOperand(), view))
      continue;
    if (!reduction || !isRowBroadcast(b, d))
      return std::nullopt;
  }
  return d;
}

bool Planner::isRowBroadcast(BroadcastInDimOp b, const Domain &d) {
  ArrayRef<int64_t> out = shapeOf(b.getResult()), in = shapeOf(b.getOperand());
  if (out != ArrayRef<int64_t>(d.shape))
    return false;
  int64_t inElements = 1, keptElements = 1;
  for (int64_t n : in)
    inElements *= n;
  for (int64_t n : d.kept())
    keptElements *= n;
  if (inElements != keptElements)
    return false;
  ArrayRef<int64_t> dims = b.getBroadcastDimensions();
  for (int64_t i = 0, e = out.size(); i < e; ++i) {
    if (out[i] == 1)
      continue;
    const int64_t *at = llvm::find(dims, i);
    bool spread = at == dims.end() || in[at - dims.begin()] == 1;
    if (spread != llvm::is_contained(d.reduced, i))
      return false;
  }
  return true;
}

} // namespace trc::fusion::detail
