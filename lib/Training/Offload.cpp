//===- Offload.cpp - which activations go to the host, and when -----------===//
//
// planOffload(), rewrite() and describe() of include/trc/Training/Offload.h.
// The stash, the forward and the layers are trc-recompute's analysis
// (recompute::analyze), read on the function as it is now.
//
//===----------------------------------------------------------------------===//
#include "trc/Training/Offload.h"
#include "trc/Analysis/ValueFacts.h"
#include "trc/Dialect/Trc.h"
#include "trc/Parallel/Pipeline.h"
#include "trc/Training/Recompute.h"

#include "mlir/IR/IRMapping.h"

#include <algorithm>
#include <limits>
#include <optional>

using namespace mlir;

namespace trc::offload {

namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

int64_t bytesOf(Value v) { return analysis::tensorBytes(v.getType()); }

/// The function's top-level ops by position, and each one's position.
struct Positions {
  std::vector<Operation *> ops;
  DenseMap<Operation *, int64_t> of;
  explicit Positions(Block &body) {
    for (Operation &op : body) {
      of[&op] = int64_t(ops.size());
      ops.push_back(&op);
    }
  }
};

/// A stash value: its layer and where the forward and backward read it.
struct Use {
  Value value;
  int layer = 0;
  int64_t lastForward = 0;
  int64_t firstBackward = kNever;
  bool returned = false;
};

/// The reshapes from `root` to `view` (first to last), or empty when
/// `view` is not a chain of reshapes of `root`.
SmallVector<Operation *> reshapeChain(Value root, Value view) {
  SmallVector<Operation *> chain;
  while (view != root) {
    auto reshape = view.getDefiningOp<ReshapeOp>();
    if (!reshape)
      return {};
    chain.push_back(reshape);
    view = reshape.getOperand();
  }
  std::reverse(chain.begin(), chain.end());
  return chain;
}

} // namespace

FailureOr<Plan> planOffload(func::FuncOp fn, const Options &options, std::string &error) {
  if (options.horizon < 0 || options.minBytes < 0) {
    error = "horizon and min-bytes must not be negative";
    return failure();
  }
  Block &body = fn.getBody().front();
  for (Operation &op : body)
    if (op.hasAttr(parallel::kStageAttr)) {
      error = "@" + fn.getSymName().str() +
              " is split into pipeline stages (trc.stage): offloading activations does not "
              "combine with pipeline parallelism yet";
      return failure();
    }
  FailureOr<recompute::StepActivations> a = recompute::analyze(fn, error);
  if (failed(a))
    return failure();
  Positions pos(body);
  Plan plan;
  plan.options = options;
  const int layers = int(a->layers.size());
  plan.layers = layers;
  plan.layerBytes.assign(size_t(layers), 0);

  int64_t firstLayerOp = kNever, lastForward = -1;
  std::vector<int64_t> layerEnd(size_t(layers), -1);
  for (int l = 0; l < layers; ++l)
    for (Operation *op : a->layers[size_t(l)].ops) {
      firstLayerOp = std::min(firstLayerOp, pos.of[op]);
      layerEnd[size_t(l)] = std::max(layerEnd[size_t(l)], pos.of[op]);
    }
  for (Operation *op : a->forward)
    lastForward = std::max(lastForward, pos.of[op]);
  const int64_t backwardStart = lastForward + 1; // the terminator at least
  // The layer of a chain op: -1 for the prologue, `layers` for the head.
  auto chainLayer = [&](Operation *op) -> std::optional<int> {
    auto it = a->layerOf.find(op);
    if (it == a->layerOf.end())
      return std::nullopt;
    if (it->second >= 0)
      return it->second;
    return pos.of[op] < firstLayerOp ? -1 : layers;
  };

  std::vector<Use> uses;
  for (Value v : a->stash) {
    ++plan.stashValues;
    plan.stashBytes += bytesOf(v);
    std::optional<int> defined = chainLayer(v.getDefiningOp());
    if (!defined)
      continue; // outside the layer chain
    Use u{v, *defined, pos.of[v.getDefiningOp()]};
    for (OpOperand &use : v.getUses()) {
      Operation *top = analysis::topLevelIn(use.getOwner(), body);
      if (!top)
        continue;
      if (top->hasTrait<OpTrait::IsTerminator>()) {
        u.returned = true;
      } else if (a->forward.contains(top)) {
        u.lastForward = std::max(u.lastForward, pos.of[top]);
        if (std::optional<int> reader = chainLayer(top))
          u.layer = std::max(u.layer, *reader);
      } else {
        u.firstBackward = std::min(u.firstBackward, pos.of[top]);
      }
    }
    uses.push_back(u);
  }
  // Where each layer's backward starts (the head's: the backward's start).
  std::vector<int64_t> backwardOf(size_t(layers) + 1, kNever);
  backwardOf[size_t(layers)] = backwardStart;
  for (const Use &u : uses)
    if (u.layer >= 0 && u.layer < layers)
      backwardOf[size_t(u.layer)] = std::min(backwardOf[size_t(u.layer)], u.firstBackward);

  // Candidates; a reshape of an earlier candidate joins it as a view.
  DenseMap<Value, size_t> rootOf; // candidate value -> index in plan.values
  for (const Use &u : uses) {
    int64_t bytes = bytesOf(u.value);
    if (u.layer < 0 || u.layer >= layers || u.returned || u.firstBackward == kNever ||
        u.firstBackward <= lastForward || bytes == 0 || bytes < options.minBytes)
      continue;
    Value root = u.value;
    while (auto reshape = root.getDefiningOp<ReshapeOp>()) {
      root = reshape.getOperand();
      if (rootOf.count(root))
        break;
    }
    if (auto it = rootOf.find(root); it != rootOf.end() && root != u.value) {
      OffloadedValue &group = plan.values[it->second];
      group.views.push_back(u.value);
      group.layer = std::max(group.layer, u.layer);
      group.offloadBefore = std::max(group.offloadBefore, u.lastForward + 1);
      group.firstUse = std::min(group.firstUse, u.firstBackward);
      continue;
    }
    OffloadedValue v;
    v.value = u.value;
    v.layer = u.layer;
    v.bytes = bytes;
    v.defined = pos.of[u.value.getDefiningOp()];
    v.offloadBefore = u.lastForward + 1;
    v.firstUse = u.firstBackward;
    rootOf[u.value] = plan.values.size();
    plan.values.push_back(v);
  }

  // Waits and prefetches; values that would come back where they leave stay.
  std::vector<OffloadedValue> placed;
  for (OffloadedValue &v : plan.values) {
    int last = v.layer;
    if (std::optional<int> reader = chainLayer(pos.ops[size_t(v.offloadBefore - 1)]))
      last = std::max(last, std::min(*reader, layers));
    v.waitBefore = last + 1 < layers ? layerEnd[size_t(last + 1)] + 1 : backwardStart;
    v.waitBefore = std::max(v.waitBefore, v.offloadBefore);
    v.prefetchLayer = int(std::min<int64_t>(int64_t(v.layer) + options.horizon, layers));
    v.prefetchBefore = v.firstUse;
    for (int k = v.layer; k <= v.prefetchLayer; ++k)
      v.prefetchBefore = std::min(v.prefetchBefore, backwardOf[size_t(k)]);
    v.prefetchBefore = std::max(v.prefetchBefore, v.waitBefore);
    // Nothing runs between the wait and the prefetch: no device memory is
    // freed while the copies cost their time.
    if (v.prefetchBefore == v.waitBefore)
      continue;
    plan.offloadedBytes += v.bytes;
    plan.layerBytes[size_t(v.layer)] += v.bytes;
    placed.push_back(v);
  }
  plan.values = std::move(placed);
  return plan;
}

void rewrite(func::FuncOp fn, const Plan &plan) {
  Block &body = fn.getBody().front();
  Positions pos(body);
  int64_t firstBackward = kNever;
  for (const OffloadedValue &v : plan.values)
    firstBackward = std::min(firstBackward, v.firstUse);
  // Every top-level op from the first backward use on is backward work
  // (planOffload only offloads values whose backward uses follow the whole
  // forward); the copies made here have no position.
  auto isBackwardUse = [&](OpOperand &use) {
    Operation *top = analysis::topLevelIn(use.getOwner(), body);
    auto it = top ? pos.of.find(top) : pos.of.end();
    return it != pos.of.end() && it->second >= firstBackward;
  };

  enum Kind { OffloadStart, OffloadWait, PrefetchStart, PrefetchWait };
  struct Event {
    int64_t before;
    Kind kind;
    size_t value;
  };
  std::vector<Event> events;
  for (size_t i = 0; i < plan.values.size(); ++i) {
    const OffloadedValue &v = plan.values[i];
    events.push_back({v.offloadBefore, OffloadStart, i});
    events.push_back({v.waitBefore, OffloadWait, i});
    events.push_back({v.prefetchBefore, PrefetchStart, i});
    events.push_back({v.firstUse, PrefetchWait, i});
  }
  std::stable_sort(events.begin(), events.end(), [](const Event &x, const Event &y) {
    return std::tie(x.before, x.kind, x.value) < std::tie(y.before, y.kind, y.value);
  });

  struct Copies {
    Value started, host, prefetched;
  };
  std::vector<Copies> copies(plan.values.size());
  OpBuilder b(fn.getContext());
  for (const Event &e : events) {
    const OffloadedValue &v = plan.values[e.value];
    Copies &c = copies[e.value];
    Location loc = v.value.getLoc();
    b.setInsertionPoint(pos.ops[size_t(e.before)]);
    switch (e.kind) {
    case OffloadStart:
      c.started = OffloadOp::create(b, loc, v.value).getResult();
      break;
    case OffloadWait:
      c.host = CopyWaitOp::create(b, loc, c.started, v.value).getResult();
      break;
    case PrefetchStart:
      c.prefetched = PrefetchOp::create(b, loc, c.host).getResult();
      break;
    case PrefetchWait: {
      Value back = CopyWaitOp::create(b, loc, c.prefetched, c.host).getResult();
      // The views first: their chains read the root's forward value.
      for (Value view : v.views) {
        IRMapping map;
        map.map(v.value, back);
        for (Operation *reshape : reshapeChain(v.value, view))
          b.clone(*reshape, map);
        view.replaceUsesWithIf(map.lookup(view), isBackwardUse);
      }
      Value value = v.value;
      value.replaceUsesWithIf(back, isBackwardUse);
      break;
    }
    }
  }
}

DictionaryAttr describe(Builder &b, const Plan &plan) {
  SmallVector<Attribute> values;
  for (const OffloadedValue &v : plan.values)
    values.push_back(b.getDictionaryAttr({
        b.getNamedAttr("layer", b.getI64IntegerAttr(v.layer)),
        b.getNamedAttr("prefetch_layer", b.getI64IntegerAttr(v.prefetchLayer)),
        b.getNamedAttr("bytes", b.getI64IntegerAttr(v.bytes)),
        b.getNamedAttr("type", TypeAttr::get(v.value.getType())),
        b.getNamedAttr("defined_by", b.getStringAttr(v.value.getDefiningOp()->getName()
                                                         .getStringRef())),
        b.getNamedAttr("defined", b.getI64IntegerAttr(v.defined)),
        b.getNamedAttr("offload", b.getI64IntegerAttr(v.offloadBefore)),
        b.getNamedAttr("wait", b.getI64IntegerAttr(v.waitBefore)),
        b.getNamedAttr("prefetch", b.getI64IntegerAttr(v.prefetchBefore)),
        b.getNamedAttr("first_use", b.getI64IntegerAttr(v.firstUse)),
        b.getNamedAttr("views", b.getI64IntegerAttr(int64_t(v.views.size()))),
    }));
  return b.getDictionaryAttr({
      b.getNamedAttr("horizon", b.getI64IntegerAttr(plan.options.horizon)),
      b.getNamedAttr("min_bytes", b.getI64IntegerAttr(plan.options.minBytes)),
      b.getNamedAttr("layers", b.getI64IntegerAttr(plan.layers)),
      b.getNamedAttr("stash_values", b.getI64IntegerAttr(plan.stashValues)),
      b.getNamedAttr("stash_bytes", b.getI64IntegerAttr(plan.stashBytes)),
      b.getNamedAttr("offloaded_bytes", b.getI64IntegerAttr(plan.offloadedBytes)),
      b.getNamedAttr("layer_bytes", b.getDenseI64ArrayAttr(plan.layerBytes)),
      b.getNamedAttr("values", b.getArrayAttr(values)),
  });
}

} // namespace trc::offload
