//===- MemoryPlan.cpp - liveness and arena offsets --------------------------===//
//
// Liveness: an allocation is live from its memref.alloc to the last use of
// it, of any view derived from it (subview, reshape, view, cast...), or of a
// pointer extracted from it (runtime calls take buffers as integers: the
// call, not the extraction, is the last read; and CSE lets two calls share
// one extraction). A use nested in a region counts at its top-level
// ancestor. Placement, per arena (device; host: kHostPoolAttr): largest
// first, each at the lowest 64-byte-aligned offset that does not collide
// with an already placed allocation whose live range intersects.
//
//===----------------------------------------------------------------------===//
#include "trc/Analysis/MemoryPlan.h"
#include "trc/Analysis/ElementBytes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/Support/Format.h"

#include <algorithm>
#include <map>

using namespace mlir;

namespace trc {

namespace {
int64_t alignUp(int64_t v) {
  return (v + MemoryPlan::kAlignment - 1) / MemoryPlan::kAlignment * MemoryPlan::kAlignment;
}

// The last top-level position at which `root` or a view of it is used.
int64_t lastUse(Value root, Block &body, const DenseMap<Operation *, int64_t> &position) {
  int64_t last = 0;
  SmallVector<Value> worklist{root};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      Operation *top = body.findAncestorOpInBlock(*user);
      if (!top)
        continue;
      last = std::max(last, position.lookup(top));
      // Views alias their source: follow them.
      if (auto view = dyn_cast<ViewLikeOpInterface>(user);
          view && view.getViewSource() == v)
        for (Value r : user->getResults())
          if (isa<BaseMemRefType>(r.getType()))
            worklist.push_back(r);
      // Pointers taken from it, and integers cast from those, are uses too.
      if (isa<memref::ExtractAlignedPointerAsIndexOp, arith::IndexCastOp,
              arith::IndexCastUIOp>(user))
        worklist.push_back(user->getResult(0));
    }
  }
  return last;
}

struct ArenaSizes {
  int64_t arena = 0, lowerBound = 0, noReuse = 0;
};

/// Offsets for `allocations` (live ranges set) in one arena.
ArenaSizes place(std::vector<Allocation> &allocations) {
  ArenaSizes sizes;
  for (auto &a : allocations)
    sizes.noReuse += a.bytes;
  // Largest first; ties by program order for determinism.
  std::vector<Allocation *> order;
  for (auto &a : allocations)
    order.push_back(&a);
  std::stable_sort(order.begin(), order.end(),
                   [](Allocation *x, Allocation *y) { return x->bytes > y->bytes; });
  std::vector<Allocation *> placed;
  for (Allocation *a : order) {
    // Occupied intervals of placed allocations live at the same time.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (Allocation *p : placed)
      if (p->first <= a->last && a->first <= p->last)
        busy.push_back({p->offset, p->offset + p->bytes});
    std::sort(busy.begin(), busy.end());
    int64_t candidate = 0, bestOffset = -1, bestGap = INT64_MAX;
    for (auto [lo, hi] : busy) {
      if (lo - candidate >= a->bytes && lo - candidate < bestGap) {
        bestGap = lo - candidate; // best fit: the smallest gap that holds it
        bestOffset = candidate;
      }
      candidate = std::max(candidate, hi);
    }
    a->offset = bestOffset >= 0 ? bestOffset : candidate;
    sizes.arena = std::max(sizes.arena, a->offset + a->bytes);
    placed.push_back(a);
  }

  // The most bytes live at once: a lower bound for any placement.
  std::map<int64_t, int64_t> delta;
  for (auto &a : allocations) {
    delta[a.first] += a.bytes;
    delta[a.last + 1] -= a.bytes;
  }
  int64_t live = 0;
  for (auto [pos, d] : delta)
    sizes.lowerBound = std::max(sizes.lowerBound, live += d);
  return sizes;
}

/// The first violated invariant of one arena, or "".
std::string verifyArena(const std::vector<Allocation> &allocations, int64_t arenaBytes,
                        int64_t lowerBoundBytes, int64_t noReuseBytes) {
  int64_t end = 0;
  for (size_t i = 0; i < allocations.size(); ++i) {
    const auto &a = allocations[i];
    if (a.offset < 0 || a.offset % MemoryPlan::kAlignment != 0)
      return "allocation " + std::to_string(i) + " has an unaligned offset";
    end = std::max(end, a.offset + a.bytes);
    for (size_t j = i + 1; j < allocations.size(); ++j) {
      const auto &b = allocations[j];
      bool together = a.first <= b.last && b.first <= a.last;
      bool overlap = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      if (together && overlap)
        return "allocations " + std::to_string(i) + " and " + std::to_string(j) +
               " are live together and overlap";
    }
  }
  if (end > arenaBytes)
    return "an allocation ends past the arena";
  if (lowerBoundBytes > arenaBytes || arenaBytes > noReuseBytes)
    return "arena size is outside [lower bound, no reuse]";
  return "";
}

void printArena(llvm::raw_ostream &os, const char *what,
                const std::vector<Allocation> &allocations, int64_t arenaBytes,
                int64_t lowerBoundBytes, int64_t noReuseBytes) {
  auto ratio = [](int64_t a, int64_t b) {
    return b ? llvm::format("%.3f", double(a) / double(b)) : llvm::format("%.3f", 1.0);
  };
  os << what << allocations.size() << " buffers, arena " << arenaBytes
     << " bytes, lower bound " << lowerBoundBytes << " (arena/bound "
     << ratio(arenaBytes, lowerBoundBytes) << "), no reuse " << noReuseBytes
     << " (arena/no-reuse " << ratio(arenaBytes, noReuseBytes) << ")\n";
  for (size_t i = 0; i < allocations.size(); ++i) {
    const auto &a = allocations[i];
    os << "  buffer " << i << ": offset " << a.offset << " size " << a.bytes
       << " live [" << a.first << ", " << a.last << "] "
       << cast<memref::AllocOp>(a.op).getType() << "\n";
  }
}
} // namespace

MemoryPlan MemoryPlan::compute(func::FuncOp func) {
  MemoryPlan plan;
  if (func.getBody().empty())
    return plan;
  Block &body = func.getBody().front();
  DenseMap<Operation *, int64_t> position;
  int64_t index = 0;
  for (Operation &op : body)
    position[&op] = index++;

  for (Operation &op : body) {
    auto alloc = dyn_cast<memref::AllocOp>(op);
    if (!alloc || !alloc.getType().hasStaticShape() ||
        !alloc.getType().getLayout().isIdentity())
      continue;
    Allocation a;
    a.op = &op;
    a.bytes = alignUp(std::max<int64_t>(storageBytes(alloc.getType()), 1));
    a.first = position[&op];
    a.last = std::max(a.first, lastUse(alloc.getResult(), body, position));
    (op.hasAttr(kHostPoolAttr) ? plan.hostAllocations : plan.allocations).push_back(a);
  }
  ArenaSizes device = place(plan.allocations);
  plan.arenaBytes = device.arena;
  plan.lowerBoundBytes = device.lowerBound;
  plan.noReuseBytes = device.noReuse;
  ArenaSizes host = place(plan.hostAllocations);
  plan.hostArenaBytes = host.arena;
  plan.hostLowerBoundBytes = host.lowerBound;
  plan.hostNoReuseBytes = host.noReuse;
  return plan;
}

std::string MemoryPlan::verify() const {
  std::string device = verifyArena(allocations, arenaBytes, lowerBoundBytes, noReuseBytes);
  if (!device.empty())
    return device;
  std::string host =
      verifyArena(hostAllocations, hostArenaBytes, hostLowerBoundBytes, hostNoReuseBytes);
  return host.empty() ? host : "host arena: " + host;
}

void MemoryPlan::print(llvm::raw_ostream &os) const {
  printArena(os, "memory plan: ", allocations, arenaBytes, lowerBoundBytes, noReuseBytes);
  if (!hostAllocations.empty())
    printArena(os, "host arena: ", hostAllocations, hostArenaBytes, hostLowerBoundBytes,
               hostNoReuseBytes);
}

} // namespace trc
