//===- FusionPlannerImpl.h - the state of one fusion plan ------*- C++ -*-===//
//
// Private to lib/Analysis: the groups, views and iteration domains the
// fusion planner works with, and the Planner whose phases are defined by
// section in FusionPlanner*.cpp (FusionPlanner.cpp lists them). Only
// planFusion (include/trc/Analysis/FusionPlanner.h) is public.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_ANALYSIS_FUSIONPLANNERIMPL_H
#define TRC_LIB_ANALYSIS_FUSIONPLANNERIMPL_H

#include "trc/Analysis/FusionPlanner.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace trc::fusion::detail {

using namespace mlir;

using OpSet = llvm::SmallPtrSet<Operation *, 16>;

/// The iteration domain of a fusible group: ops work on `shape` or on
/// `kept()` (the shape without the reduced dimensions).
struct Domain {
  SmallVector<int64_t> shape;
  SmallVector<int64_t> reduced; // sorted; empty: elementwise
  bool hasShape = false;

  SmallVector<int64_t> kept() const {
    SmallVector<int64_t> k;
    for (int64_t i = 0, e = shape.size(); i < e; ++i)
      if (!llvm::is_contained(reduced, i))
        k.push_back(shape[i]);
    return k;
  }
  SmallVector<int64_t> keptPositions() const {
    SmallVector<int64_t> k;
    for (int64_t i = 0, e = shape.size(); i < e; ++i)
      if (!llvm::is_contained(reduced, i))
        k.push_back(i);
    return k;
  }
};

struct Group {
  bool alive = true;
  /// Elementwise and Reduction groups merge; Matmul groups take epilogues;
  /// Opaque and Broadcast (a broadcast some non-group op reads) stay alone.
  OpClass cls = OpClass::Opaque;
  SmallVector<Operation *> members; // block order
  SmallVector<Operation *> dups;    // block order
  OpSet dupSet;
  llvm::DenseSet<int> succ, pred;
  // Matmul epilogue.
  Value finalValue; // the value the epilogue ends with
  bool bias = false, gelu = false, accumulate = false;
  std::optional<double> alpha;

  bool fusible() const {
    return cls == OpClass::Elementwise || cls == OpClass::Reduction ||
           cls == OpClass::Matmul;
  }
  bool mergeable() const {
    return alive && (cls == OpClass::Elementwise || cls == OpClass::Reduction);
  }
};

/// A set of ops considered as one kernel: a group, or a hypothetical union
/// of groups, or a group with extra duplicated producers.
struct View {
  SmallVector<Operation *> ops; // block order
  OpSet set;
  OpSet dups; // the subset recomputed from other groups' ops
  bool fusible = true;
  SmallVector<int, 2> groups;
};

class Planner {
public:
  Planner(Block &block, const FusionOptions &options) : block(block), options(options) {}

  FusionPlan run() {
    init();
    if (options.matmulEpilogues)
      planEpilogues();
    mergeGroups();
    if (options.duplicate)
      duplicate();
    if (options.matmulEpilogues)
      extendEpiloguesWithGelu();
    return finish();
  }

private:
  Block &block;
  const FusionOptions &options;
  llvm::DenseMap<Operation *, unsigned> index;
  std::vector<Group> groups;
  llvm::DenseMap<Operation *, int> owner;
  /// The groups that recompute an op (besides its owner).
  llvm::DenseMap<Operation *, SmallVector<int, 2>> dupIn;
  /// Instances found dead at the end (no live reader): an op in its owner,
  /// or a recomputed copy in a group. They read nothing.
  llvm::DenseSet<Operation *> deadMembers;
  llvm::DenseSet<std::pair<int, Operation *>> deadDups;

  bool before(Operation *a, Operation *b) const { return index.lookup(a) < index.lookup(b); }
  void sortOps(SmallVectorImpl<Operation *> &ops) const {
    llvm::sort(ops, [&](Operation *a, Operation *b) { return before(a, b); });
  }
  int ownerOf(Operation *op) const {
    auto it = owner.find(op);
    return it == owner.end() ? -1 : it->second;
  }

  //===--------------------------------------------------------------------===//
  // Setup
  //===--------------------------------------------------------------------===//

  /// Whether a group reading `op`'s operands copies the broadcasts among them.
  static bool expandsOperands(Operation *op);

  /// A broadcast or iota some op reads whole: it stays a kernel.
  bool materialized(Operation *bcast, llvm::DenseSet<Operation *> &memo);

  int newGroup(OpClass cls, Operation *op);

  void init();

  //===--------------------------------------------------------------------===//
  // Group graph (for cycle checks)
  //===--------------------------------------------------------------------===//

  /// Groups reading a value `v` produces, looking through copied broadcasts
  /// and free ops (a reshape's readers read its operand).
  void readersOf(Value v, int self, llvm::SmallSetVector<int, 8> &out);

  SmallVector<int> successorsOf(int g);

  void addEdge(int from, int to);

  /// Whether a path leads from `from` to `to` through some third group.
  bool indirectPath(int from, int to);

  bool createsCycle(int a, int b) { return indirectPath(a, b) || indirectPath(b, a); }

  /// Moves b's ops and edges into a.
  void mergeInto(int a, int b);

  //===--------------------------------------------------------------------===//
  // Views, inputs, outputs and bytes
  //===--------------------------------------------------------------------===//

  View viewOf(ArrayRef<int> ids, ArrayRef<Operation *> extraDups = {});

  /// Whether the read of `v` by `user` (outside `view`) needs `v` in memory:
  /// not when the reader's group recomputes v's producer.
  bool readerNeedsValue(Operation *producer, Operation *user);

  /// Whether group `g`'s instance of `user` (its own op or a recomputed
  /// copy) reads `producer`'s result from memory.
  bool instanceReads(int g, Operation *user, Operation *producer, const View &view);

  /// Whether some op outside `view` reads `v` (the result of `producer`):
  /// an op outside it, or a copy of any op in a group that recomputes it.
  bool readOutside(Value v, Operation *producer, const View &view);

  /// Inputs of an op inside a fusible view: copied broadcasts and splat
  /// constants are looked through; `copied` collects them.
  void expand(Value w, const View &view, llvm::SetVector<Value> &inputs,
              llvm::SetVector<Operation *> *copied);

  /// Whether `v` is computed inside the view, possibly through broadcasts
  /// and reshapes the view copies.
  static bool derivedInside(Value v, const View &view);

  struct Traffic {
    llvm::SetVector<Value> inputs;
    SmallVector<Value> outputs;
    SmallVector<Operation *> live; // block order
    llvm::SetVector<Operation *> copied;
    int64_t bytes = 0;
  };

  /// Inputs, outputs and bytes of a view; only ops whose results are needed
  /// (outside, or by another needed op) count.
  Traffic traffic(const View &view);

  /// Whether `user`, a broadcast copied into the view, feeds a live op.
  bool usedThroughCopy(Operation *user, const OpSet &live, const View &view);

  int64_t bytesOf(ArrayRef<int> ids, ArrayRef<Operation *> extraDups = {});

  //===--------------------------------------------------------------------===//
  // Domains
  //===--------------------------------------------------------------------===//

  /// The one domain of a fusible view, or nullopt when its ops do not share
  /// one.
  std::optional<Domain> domainOf(const View &view);

  /// Whether `b` spreads a value of the kept shape over exactly the reduced
  /// dimensions of the domain (dimensions of size 1 aside).
  static bool isRowBroadcast(BroadcastInDimOp b, const Domain &d);

  //===--------------------------------------------------------------------===//
  // A. Matmul epilogues
  //===--------------------------------------------------------------------===//

  /// The only reader of `v`, when it is an elementwise op no other group
  /// has taken.
  Operation *onlyUser(Value v);

  static bool isBias(Value v, RankedTensorType resultType);

  void absorb(int g, Operation *op);

  void planEpilogues();

  void takeGelu(int g, const GeluMatch &match);

  //===--------------------------------------------------------------------===//
  // B. Merging
  //===--------------------------------------------------------------------===//

  struct Candidate {
    int a, b;
    int64_t saved;
    unsigned order;
  };

  /// Bytes saved by merging a and b, or nullopt when they may not merge.
  std::optional<int64_t> mergeGain(int a, int b);

  void mergeGroups();

  int64_t domainSize(int g);

  //===--------------------------------------------------------------------===//
  // C. Duplication
  //===--------------------------------------------------------------------===//

  /// Producers of `input` that group `g` would recompute: elementwise ops
  /// of mergeable groups, back to values g reads already or constants.
  SmallVector<Operation *> chainFor(Value input, const Traffic &t);

  void duplicate();

  bool duplicateOne(int g);

  /// Recomputes `chain` in group g when that saves more bytes than it costs.
  bool tryDuplicate(int g, ArrayRef<Operation *> chain);

  //===--------------------------------------------------------------------===//
  // D. GELU after recomputation
  //===--------------------------------------------------------------------===//

  /// Whether some live instance of `user` (its owner's, or a copy in a
  /// group that recomputes it) reads `def`'s result from memory.
  bool readsFromMemory(Operation *def, Operation *user);

  void extendEpiloguesWithGelu();

  //===--------------------------------------------------------------------===//
  // The plan
  //===--------------------------------------------------------------------===//

  /// Marks the instances no live op reads, until nothing changes (every
  /// reader of an op may recompute it; then its readers' inputs go too).
  void settleLiveness();

  FusionPlan finish();
};

} // namespace trc::fusion::detail

#endif // TRC_LIB_ANALYSIS_FUSIONPLANNERIMPL_H
