//===- FusionPlannerMerging.cpp - greedy merging of groups ------------------===//
//
// Fusion planner phases (the overview is in FusionPlanner.cpp):
//   B. Merging
//
//===----------------------------------------------------------------------===//
#include "FusionPlannerImpl.h"

#include "llvm/ADT/MapVector.h"

#include <algorithm>

namespace trc::fusion::detail {

//===----------------------------------------------------------------------===//
// B. Merging
//===----------------------------------------------------------------------===//

std::optional<int64_t> Planner::mergeGain(int a, int b) {
  View both = viewOf({a, b});
  if (!domainOf(both))
    return std::nullopt;
  int64_t saved = bytesOf({a}) + bytesOf({b}) - traffic(both).bytes;
  if (saved <= 0)
    return std::nullopt;
  return saved;
}

void Planner::mergeGroups() {
  for (int round = 0; round < 10000; ++round) {
    SmallVector<Candidate> candidates;
    llvm::DenseSet<std::pair<int, int>> seenPairs;
    // Insertion-ordered: iterating a pointer-keyed map would order the
    // sibling candidates differently on every run.
    llvm::MapVector<Value, SmallVector<int, 4>> readers;
    auto consider = [&](int a, int b) {
      if (a == b || !groups[a].mergeable() || !groups[b].mergeable())
        return;
      if (a > b)
        std::swap(a, b);
      if (!seenPairs.insert({a, b}).second)
        return;
      if (auto saved = mergeGain(a, b))
        candidates.push_back({a, b, *saved, index.lookup(groups[b].members.front())});
    };
    for (int g = 0, e = groups.size(); g < e; ++g) {
      if (!groups[g].mergeable())
        continue;
      Traffic t = traffic(viewOf({g}));
      for (Value in : t.inputs) {
        // The producer, through the reshapes a merge would copy.
        Value source = in;
        while (auto reshape = source.getDefiningOp<ReshapeOp>())
          source = reshape.getOperand();
        if (Operation *def = source.getDefiningOp())
          if (int p = ownerOf(def); p >= 0)
            consider(p, g);
        readers[in].push_back(g);
      }
    }
    if (options.siblings) {
      for (auto &[value, readerGroups] : readers) {
        if (readerGroups.size() < 2 || readerGroups.size() > 32)
          continue;
        int64_t n = cast<RankedTensorType>(value.getType()).getNumElements();
        for (size_t i = 0; i < readerGroups.size(); ++i)
          for (size_t j = i + 1; j < readerGroups.size(); ++j) {
            int64_t widest = std::max(domainSize(readerGroups[i]), domainSize(readerGroups[j]));
            if (2 * n >= widest)
              consider(readerGroups[i], readerGroups[j]);
          }
      }
    }
    if (candidates.empty())
      return;
    // Candidates are gathered in a fixed order (producer-consumer pairs by
    // group index, then siblings by first read); a stable sort keeps it for
    // equal candidates, so the plan (and the kernels compiled from it) is
    // the same on every run. Among equals the last gathered goes first:
    // sibling merges before producer-consumer ones, which keeps a softmax's
    // or cross-entropy's row statistics and gradient in one pass over the
    // rows (test/Passes/Fusion/fuse-reduction.mlir).
    std::reverse(candidates.begin(), candidates.end());
    llvm::stable_sort(candidates, [](const Candidate &x, const Candidate &y) {
      return x.saved != y.saved ? x.saved > y.saved : x.order < y.order;
    });
    llvm::DenseSet<int> touched;
    bool merged = false;
    for (const Candidate &c : candidates) {
      if (touched.contains(c.a) || touched.contains(c.b))
        continue;
      if (createsCycle(c.a, c.b))
        continue;
      mergeInto(c.a, c.b);
      touched.insert(c.a);
      touched.insert(c.b);
      merged = true;
    }
    if (!merged)
      return;
  }
}

int64_t Planner::domainSize(int g) {
  auto d = domainOf(viewOf({g}));
  if (!d)
    return 0;
  int64_t n = 1;
  for (int64_t s : d->shape)
    n *= s;
  return n;
}

} // namespace trc::fusion::detail
