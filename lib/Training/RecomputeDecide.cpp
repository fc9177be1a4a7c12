//===- RecomputeDecide.cpp - the memory estimate and the policies' choices --===//
//
// estimatePeakBytes() and decide() of include/trc/Training/Recompute.h.
//
// Policy budget is a multiple-choice knapsack: each layer picks keep,
// selective or full; its weight is the bytes it keeps beyond full's, its
// value the FLOPs it saves. The layers are few (tens) and the choices three,
// so dynamic programming over the bytes (in 4096 buckets of the room left
// above every layer recomputed) is exact up to the bucket rounding, which
// errs toward keeping less, and takes microseconds. The byte model is
// additive, the true peak is not quite (transients, where the peak falls),
// so every answer is simulated on a copy of the step, and the room shrunk by
// the overshoot until the simulated peak fits. (A min-cut over the whole
// activation graph as in PyTorch's partitioner minimizes kept bytes but
// cannot trade against a budget; Checkmate's ILP can, at minutes of solver
// time for a graph this size. Layers are the granularity users and
// Megatron reason in, and the simulation checks what the model assumes.)
//
//===----------------------------------------------------------------------===//
#include "trc/Training/Recompute.h"
#include "trc/Analysis/ValueFacts.h"
#include "trc/Analysis/ElementBytes.h"
#include "trc/Dialect/Trc.h"

#include "mlir/IR/SymbolTable.h"

#include <limits>

using namespace mlir;

namespace trc::recompute {

namespace {

/// Ops whose result is a view of their operand after bufferization.
bool isAlias(Operation *op) { return isa<ReshapeOp, SliceOp, OptimizationBarrierOp>(op); }

/// Bytes a composite needs while it runs (its decomposition's temporaries
/// beyond its result): attention's scores and probabilities.
int64_t transientBytes(Operation *op) {
  if (!isa<AttentionOp, AttentionGradOp>(op))
    return 0;
  auto q = cast<RankedTensorType>(op->getOperand(0).getType());
  auto k = cast<RankedTensorType>(op->getOperand(1).getType());
  int64_t scores = q.getNumElements() / q.getDimSize(q.getRank() - 1) *
                   k.getDimSize(k.getRank() - 2) * elementBytes(q.getElementType());
  return (isa<AttentionOp>(op) ? 2 : 3) * scores;
}

/// An op lowering to one parallel loop nest that elementwise fusion can
/// fold into its consumer.
bool isPointwise(Operation *op) {
  return op->hasTrait<OpTrait::Elementwise>() || isa<BroadcastInDimOp>(op);
}

/// A result elementwise fusion never stores: a pointwise op's only use is
/// another pointwise op (linalg-fuse-elementwise-ops fuses a producer with
/// one use into its consumer).
bool fusedAway(Value r) {
  if (!r.hasOneUse() || !isPointwise(r.getDefiningOp()))
    return false;
  Operation *user = *r.getUsers().begin();
  return isPointwise(user) && user->getNumResults() == 1 &&
         user->getResult(0).getType() == r.getType();
}

struct Simulated {
  int64_t peak = 0;
  double flops = 0;
};

/// Rewrites a copy of `a.fn` with `choices` and estimates its peak.
Simulated simulate(const StepActivations &a, ArrayRef<LayerChoice> choices, bool cheap) {
  auto module = a.fn->getParentOfType<ModuleOp>();
  func::FuncOp copy = a.fn.clone();
  SymbolTable(module).insert(copy); // renamed to a fresh symbol
  std::string error;
  Simulated out;
  FailureOr<StepActivations> again = analyze(copy, error);
  if (succeeded(again)) {
    RewriteSummary summary = rewrite(*again, keptSet(*again, choices, cheap));
    out.flops = summary.recomputedFlops;
  }
  out.peak = estimatePeakBytes(copy);
  copy.erase();
  return out;
}

/// The least-FLOPs choices whose kept bytes beyond full's fit `room`.
std::vector<LayerChoice> knapsack(const StepActivations &a, int64_t room) {
  const int64_t buckets = 4096;
  const size_t n = a.layers.size();
  int64_t unit = std::max<int64_t>(1, (room + buckets - 1) / buckets);
  int64_t capacity = room / unit;
  const double inf = std::numeric_limits<double>::infinity();
  // best[i][w]: least FLOPs of layers [0, i) using w buckets.
  std::vector<std::vector<double>> best(n + 1, std::vector<double>(size_t(capacity) + 1, inf));
  std::vector<std::vector<int8_t>> pick(n + 1, std::vector<int8_t>(size_t(capacity) + 1, -1));
  best[0][0] = 0;
  for (size_t i = 0; i < n; ++i) {
    const Layer &layer = a.layers[i];
    for (int64_t w = 0; w <= capacity; ++w) {
      if (best[i][size_t(w)] == inf)
        continue;
      for (int c = 0; c < kLayerChoices; ++c) {
        int64_t extra = layer.keptBytes[c] - layer.keptBytes[int(LayerChoice::Full)];
        int64_t units = (std::max<int64_t>(0, extra) + unit - 1) / unit;
        if (w + units > capacity)
          continue;
        double flops = best[i][size_t(w)] + layer.flops[c];
        if (flops < best[i + 1][size_t(w + units)]) {
          best[i + 1][size_t(w + units)] = flops;
          pick[i + 1][size_t(w + units)] = int8_t(c);
        }
      }
    }
  }
  int64_t at = 0;
  for (int64_t w = 1; w <= capacity; ++w)
    if (best[n][size_t(w)] < best[n][size_t(at)])
      at = w;
  std::vector<LayerChoice> choices(n, LayerChoice::Full);
  for (size_t i = n; i > 0; --i) {
    int c = pick[i][size_t(at)];
    choices[i - 1] = LayerChoice(c);
    int64_t extra = a.layers[i - 1].keptBytes[c] - a.layers[i - 1].keptBytes[int(LayerChoice::Full)];
    at -= (std::max<int64_t>(0, extra) + unit - 1) / unit;
  }
  return choices;
}

} // namespace

int64_t estimatePeakBytes(func::FuncOp fn) {
  Block &body = fn.getBody().front();
  llvm::DenseMap<Operation *, int64_t> position;
  int64_t n = 0;
  for (Operation &op : body)
    position[&op] = n++;
  // The buffer a value lives in: an alias's is its operand's.
  llvm::DenseMap<Value, Value> root;
  auto rootOf = [&](Value v) {
    auto it = root.find(v);
    return it == root.end() ? v : it->second;
  };
  llvm::DenseMap<Value, int64_t> lastUse;
  llvm::DenseSet<Value> returned;
  for (Operation &op : body) {
    if (isAlias(&op) && op.getNumOperands() > 0)
      root[op.getResult(0)] = rootOf(op.getOperand(0));
    for (Value v : op.getOperands()) {
      Value r = rootOf(v);
      lastUse[r] = std::max(lastUse.lookup(r), position[&op]);
      if (op.hasTrait<OpTrait::IsTerminator>())
        returned.insert(r);
    }
  }
  // Allocation and release events in program order.
  std::vector<int64_t> delta(size_t(n) + 1, 0);
  int64_t peak = 0;
  std::vector<int64_t> transient(size_t(n), 0);
  for (Operation &op : body) {
    int64_t at = position[&op];
    transient[size_t(at)] = transientBytes(&op);
    if (isAlias(&op) || op.hasTrait<OpTrait::ConstantLike>())
      continue;
    for (Value r : op.getResults()) {
      if (returned.contains(r) || fusedAway(r))
        continue; // written into the caller's output, or never stored
      int64_t bytes = analysis::tensorBytes(r.getType());
      delta[size_t(at)] += bytes;
      delta[size_t(std::max(at, lastUse.lookup(r))) + 1] -= bytes;
    }
  }
  int64_t live = 0;
  for (int64_t i = 0; i < n; ++i) {
    live += delta[size_t(i)];
    peak = std::max(peak, live + transient[size_t(i)]);
  }
  return peak;
}

FailureOr<Decision> decide(const StepActivations &a, Policy policy, int64_t budget,
                           std::string &error) {
  Decision d;
  d.policy = policy;
  const size_t n = a.layers.size();
  d.peakBefore = estimatePeakBytes(a.fn);
  auto take = [&](std::vector<LayerChoice> choices, bool cheap) {
    Simulated s = simulate(a, choices, cheap);
    d.choices = std::move(choices);
    d.cheap = cheap;
    d.peakAfter = s.peak;
    d.recomputedFlops = s.flops;
    return s;
  };
  switch (policy) {
  case Policy::None:
    d.choices.assign(n, LayerChoice::Keep);
    d.peakAfter = d.peakBefore;
    return d;
  case Policy::Selective:
    take(std::vector<LayerChoice>(n, LayerChoice::Selective), true);
    return d;
  case Policy::Full:
    take(std::vector<LayerChoice>(n, LayerChoice::Full), true);
    return d;
  case Policy::Budget:
    break;
  }
  if (d.peakBefore <= budget) {
    d.choices.assign(n, LayerChoice::Keep);
    d.peakAfter = d.peakBefore;
    return d;
  }
  Simulated full = simulate(a, std::vector<LayerChoice>(n, LayerChoice::Full), true);
  if (full.peak > budget) {
    error = "the memory budget of " + std::to_string(budget) +
            " bytes cannot be met: the smallest reachable peak is " +
            std::to_string(full.peak) + " bytes (every layer recomputed, as policy=full)";
    return failure();
  }
  if (take(std::vector<LayerChoice>(n, LayerChoice::Keep), true).peak <= budget)
    return d;
  int64_t room = budget - full.peak;
  for (int attempt = 0; attempt < 16 && room > 0; ++attempt) {
    Simulated s = take(knapsack(a, room), true);
    if (s.peak <= budget)
      return d;
    room -= s.peak - budget;
  }
  take(std::vector<LayerChoice>(n, LayerChoice::Full), true);
  return d;
}

} // namespace trc::recompute
