//===- GroupPartialSums.cpp - one all-reduce per sum of partial sums -------===//
//
// groupPartialSums (include/trc/Parallel/Sharding.h). Preconditions: every
// value annotated (after propagation), before trc-partition.
//
//===----------------------------------------------------------------------===//
#include "trc/Parallel/Sharding.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace trc::parallel {

/// Sums that mix partial sums with whole values (the backward pass adds the
/// q, k and v projections' input gradients, each a partial sum, to the
/// residual's whole gradient in whatever order autodiff met them) are
/// regrouped: the partial leaves first, then the whole ones, so one
/// all-reduce resolves them all instead of one per partial leaf.
void groupPartialSums(func::FuncOp func) {
  SmallVector<AddOp> roots;
  func.walk([&](AddOp add) { roots.push_back(add); });
  DenseSet<Operation *> erased; // regrouped sums' inner adds, among `roots`
  for (AddOp root : llvm::reverse(roots)) {
    if (erased.contains(root))
      continue;
    std::optional<Sharding> rootSharding = readSharding(root);
    if (!rootSharding || rootSharding->partial())
      continue;
    SmallVector<Value> leaves;
    SmallVector<AddOp> inner;
    SmallVector<Value> work{root.getLhs(), root.getRhs()};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      auto add = v.getDefiningOp<AddOp>();
      std::optional<Sharding> s = readSharding(v);
      if (add && v.hasOneUse() && s && !s->partial()) {
        inner.push_back(add);
        work.append({add.getLhs(), add.getRhs()});
      } else {
        leaves.push_back(v);
      }
    }
    SmallVector<Value> partials, wholes;
    std::optional<Sharding> partialSharding;
    for (Value leaf : leaves) {
      std::optional<Sharding> s = readSharding(leaf);
      if (s && s->partial() && s->partialKind == CollectiveReduction::Sum &&
          (!partialSharding || *partialSharding == *s)) {
        partialSharding = s;
        partials.push_back(leaf);
      } else {
        wholes.push_back(leaf);
      }
    }
    if (partials.size() < 2 || wholes.empty())
      continue;
    OpBuilder b(root);
    auto sum = [&](ArrayRef<Value> terms, const Sharding &s) {
      Value total = terms.front();
      for (Value t : terms.drop_front()) {
        total = b.create<AddOp>(root.getLoc(), total, t);
        writeSharding(total, s);
      }
      return total;
    };
    Value grouped = b.create<AddOp>(root.getLoc(), sum(partials, *partialSharding),
                                    sum(wholes, *rootSharding));
    writeSharding(grouped, *rootSharding);
    root.replaceAllUsesWith(grouped);
    erased.insert(root);
    root.erase();
    for (AddOp add : inner)
      if (add->use_empty()) {
        erased.insert(add);
        add.erase();
      }
  }
}

} // namespace trc::parallel
