//===- FusionPlanner.cpp - which ops of a function run as one kernel ------===//
//
// Every kernel op starts as a group of its own. Then, in order:
//
//  A. Matmul epilogues: a dot_general takes what cuBLASLt can apply to its
//     result: a constant scale (alpha), a bias add (a vector broadcast along
//     the rows), a residual add (beta = 1 with C the residual) and a GELU,
//     in that order. The GELU's input may also be used elsewhere (gelu_aux:
//     the library writes it too); other intermediates may not.
//  B. Greedy merging of elementwise and reduction groups: producer-consumer
//     pairs, and siblings reading the same large input, best byte savings
//     first. A merged group must have one iteration domain (a shape S and
//     reduced dimensions D: its ops work on S or on S without D, reductions
//     reduce D, broadcasts map S without D back onto S) and may not create a
//     cycle between groups.
//  C. Duplication: a chain of cheap elementwise producers is recomputed in
//     a consumer group when the bytes saved (the intermediate no longer read,
//     and no longer written when no one else reads it) exceed the cost of
//     recomputing it.
//  D. A GELU left as its own group after C (in training its intermediates
//     are read by the backward pass until C recomputes them there) joins the
//     epilogue of the matrix product that feeds it.
//
// broadcast_in_dim, iota and splat constants are never kernels inside a
// group: every group that reads one copies it and reads its operand instead.
//
//===----------------------------------------------------------------------===//
#include "FusionPlanner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>

using namespace mlir;

namespace trc::fusion {
namespace {

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

ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

/// The domain a reducing op imposes: (shape, reduced dimensions).
std::optional<std::pair<SmallVector<int64_t>, SmallVector<int64_t>>>
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
                          SmallVector<int64_t>{s.getAxis()});
  if (auto s = dyn_cast<LogSoftmaxOp>(op))
    return std::make_pair(llvm::to_vector(shapeOf(s.getOperand())),
                          SmallVector<int64_t>{s.getAxis()});
  if (auto l = dyn_cast<LayerNormOp>(op)) {
    auto shape = llvm::to_vector(shapeOf(l.getOperand()));
    return std::make_pair(shape, dims(l.getAxis(), shape.size()));
  }
  if (auto c = dyn_cast<CrossEntropyOp>(op))
    return std::make_pair(llvm::to_vector(shapeOf(c.getLogits())), SmallVector<int64_t>{1});
  return std::nullopt;
}

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
  static bool expandsOperands(Operation *op) {
    OpClass c = classify(op);
    return c == OpClass::Elementwise || c == OpClass::Reduction;
  }

  /// A broadcast or iota some op reads whole: it stays a kernel.
  bool materialized(Operation *bcast, llvm::DenseSet<Operation *> &memo) {
    for (Operation *user : bcast->getUsers()) {
      if (user->hasTrait<OpTrait::IsTerminator>() || !expandsOperands(user)) {
        if (classify(user) == OpClass::Broadcast && !memo.contains(user))
          continue; // a broadcast of a broadcast that is itself copied
        return true;
      }
    }
    return false;
  }

  int newGroup(OpClass cls, Operation *op) {
    groups.emplace_back();
    Group &g = groups.back();
    g.cls = cls;
    g.members.push_back(op);
    owner[op] = groups.size() - 1;
    return groups.size() - 1;
  }

  void init() {
    unsigned i = 0;
    SmallVector<Operation *> broadcasts;
    for (Operation &op : block) {
      index[&op] = i++;
      if (op.hasTrait<OpTrait::IsTerminator>())
        continue;
      OpClass c = classify(&op);
      if (c == OpClass::Free) {
        // Reshapes are views a group may copy; an op that reads values
        // (a call) still orders the groups around it.
        if (isa<ReshapeOp>(op) || op.getNumOperands() == 0)
          continue;
        c = OpClass::Opaque;
      }
      if (c == OpClass::Broadcast) {
        broadcasts.push_back(&op);
        continue;
      }
      if (op.getNumRegions() || op.getNumResults() != 1 ||
          !isa<RankedTensorType>(op.getResult(0).getType()))
        c = c == OpClass::Elementwise || c == OpClass::Reduction || c == OpClass::Matmul
                ? OpClass::Opaque
                : c;
      int g = newGroup(c, &op);
      if (c == OpClass::Matmul)
        groups[g].finalValue = op.getResult(0);
    }
    // Broadcasts some non-group op reads whole stay kernels (latest first,
    // so a broadcast of a broadcast knows whether its reader stays).
    llvm::DenseSet<Operation *> kept;
    for (Operation *b : llvm::reverse(broadcasts))
      if (materialized(b, kept)) {
        kept.insert(b);
        newGroup(OpClass::Broadcast, b);
      }
    for (Group &g : groups)
      sortOps(g.members);
    for (int g = 0, e = groups.size(); g < e; ++g)
      for (int s : successorsOf(g))
        addEdge(g, s);
  }

  //===--------------------------------------------------------------------===//
  // Group graph (for cycle checks)
  //===--------------------------------------------------------------------===//

  /// Groups reading a value `v` produces, looking through copied broadcasts
  /// and free ops (a reshape's readers read its operand).
  void readersOf(Value v, int self, llvm::SmallSetVector<int, 8> &out) {
    for (Operation *user : v.getUsers()) {
      if (user->hasTrait<OpTrait::IsTerminator>())
        continue;
      int g = ownerOf(user);
      if (g >= 0 && g != self)
        out.insert(g);
      if (classify(user) == OpClass::Broadcast || isa<ReshapeOp>(user))
        readersOf(user->getResult(0), self, out);
    }
  }

  SmallVector<int> successorsOf(int g) {
    llvm::SmallSetVector<int, 8> out;
    for (Operation *op : groups[g].members)
      for (Value r : op->getResults())
        readersOf(r, g, out);
    return SmallVector<int>(out.begin(), out.end());
  }

  void addEdge(int from, int to) {
    if (from == to)
      return;
    groups[from].succ.insert(to);
    groups[to].pred.insert(from);
  }

  /// Whether a path leads from `from` to `to` through some third group.
  bool indirectPath(int from, int to) {
    llvm::DenseSet<int> seen;
    SmallVector<int> stack;
    for (int s : groups[from].succ)
      if (s != to)
        stack.push_back(s);
    while (!stack.empty()) {
      int g = stack.pop_back_val();
      if (g == to)
        return true;
      if (!seen.insert(g).second)
        continue;
      for (int s : groups[g].succ)
        stack.push_back(s);
    }
    return false;
  }

  bool createsCycle(int a, int b) { return indirectPath(a, b) || indirectPath(b, a); }

  /// Moves b's ops and edges into a.
  void mergeInto(int a, int b) {
    Group &ga = groups[a], &gb = groups[b];
    for (Operation *op : gb.members) {
      ga.members.push_back(op);
      owner[op] = a;
    }
    sortOps(ga.members);
    for (Operation *op : gb.dups) {
      llvm::erase(dupIn[op], b);
      if (ga.dupSet.insert(op).second) {
        ga.dups.push_back(op);
        dupIn[op].push_back(a);
      }
    }
    sortOps(ga.dups);
    if (gb.cls == OpClass::Reduction)
      ga.cls = OpClass::Reduction;
    for (int p : gb.pred) {
      groups[p].succ.erase(b);
      if (p != a) {
        groups[p].succ.insert(a);
        ga.pred.insert(p);
      }
    }
    for (int s : gb.succ) {
      groups[s].pred.erase(b);
      if (s != a) {
        groups[s].pred.insert(a);
        ga.succ.insert(s);
      }
    }
    ga.succ.erase(a);
    ga.pred.erase(a);
    ga.succ.erase(b);
    ga.pred.erase(b);
    gb.alive = false;
    gb.members.clear();
    gb.dups.clear();
    gb.dupSet.clear();
    gb.succ.clear();
    gb.pred.clear();
  }

  //===--------------------------------------------------------------------===//
  // Views, inputs, outputs and bytes
  //===--------------------------------------------------------------------===//

  View viewOf(ArrayRef<int> ids, ArrayRef<Operation *> extraDups = {}) {
    View v;
    for (int g : ids) {
      v.groups.push_back(g);
      v.fusible = v.fusible && groups[g].fusible();
      for (Operation *op : groups[g].members)
        if (v.set.insert(op).second)
          v.ops.push_back(op);
      for (Operation *op : groups[g].dups)
        if (v.set.insert(op).second) {
          v.ops.push_back(op);
          v.dups.insert(op);
        }
    }
    for (Operation *op : extraDups)
      if (v.set.insert(op).second) {
        v.ops.push_back(op);
        v.dups.insert(op);
      }
    sortOps(v.ops);
    return v;
  }

  /// Whether the read of `v` by `user` (outside `view`) needs `v` in memory:
  /// not when the reader's group recomputes v's producer.
  bool readerNeedsValue(Operation *producer, Operation *user) {
    int g = ownerOf(user);
    return g < 0 || !groups[g].dupSet.contains(producer);
  }

  /// Whether group `g`'s instance of `user` (its own op or a recomputed
  /// copy) reads `producer`'s result from memory.
  bool instanceReads(int g, Operation *user, Operation *producer, const View &view) {
    if (llvm::is_contained(view.groups, g))
      return false; // inside the view
    if (groups[g].dupSet.contains(producer))
      return false; // g recomputes the producer too
    return !deadDups.contains({g, user});
  }

  /// Whether some op outside `view` reads `v` (the result of `producer`):
  /// an op outside it, or a copy of any op in a group that recomputes it.
  bool readOutside(Value v, Operation *producer, const View &view) {
    for (Operation *user : v.getUsers()) {
      if (user->hasTrait<OpTrait::IsTerminator>())
        return true;
      if (auto it = dupIn.find(user); it != dupIn.end())
        for (int g : it->second)
          if (instanceReads(g, user, producer, view))
            return true;
      if (view.set.contains(user))
        continue;
      OpClass c = classify(user);
      if (c == OpClass::Broadcast) {
        if (ownerOf(user) >= 0)
          return true; // a broadcast that stays a kernel reads it
        if (readOutside(user->getResult(0), producer, view))
          return true;
        continue;
      }
      if (isa<ReshapeOp>(user)) {
        if (readOutside(user->getResult(0), producer, view))
          return true;
        continue;
      }
      if (deadMembers.contains(user))
        continue;
      if (readerNeedsValue(producer, user))
        return true;
    }
    return false;
  }

  /// Inputs of an op inside a fusible view: copied broadcasts and splat
  /// constants are looked through; `copied` collects them.
  void expand(Value w, const View &view, llvm::SetVector<Value> &inputs,
              llvm::SetVector<Operation *> *copied) {
    Operation *def = w.getDefiningOp();
    if (def && view.set.contains(def))
      return;
    if (isImmediate(w)) {
      if (copied)
        copied->insert(def);
      return;
    }
    if (def && (classify(def) == OpClass::Broadcast ||
                (isa<ReshapeOp>(def) && derivedInside(def->getOperand(0), view)))) {
      if (copied)
        copied->insert(def);
      for (Value operand : def->getOperands())
        expand(operand, view, inputs, copied);
      return;
    }
    inputs.insert(w);
  }

  /// Whether `v` is computed inside the view, possibly through broadcasts
  /// and reshapes the view copies.
  static bool derivedInside(Value v, const View &view) {
    Operation *def = v.getDefiningOp();
    if (!def)
      return false;
    if (view.set.contains(def))
      return true;
    if (isa<BroadcastInDimOp, ReshapeOp>(def))
      return derivedInside(def->getOperand(0), view);
    return false;
  }

  struct Traffic {
    llvm::SetVector<Value> inputs;
    SmallVector<Value> outputs;
    SmallVector<Operation *> live; // block order
    llvm::SetVector<Operation *> copied;
    int64_t bytes = 0;
  };

  /// Inputs, outputs and bytes of a view; only ops whose results are needed
  /// (outside, or by another needed op) count.
  Traffic traffic(const View &view) {
    Traffic t;
    OpSet live;
    for (Operation *op : llvm::reverse(view.ops)) {
      bool needed = false;
      for (Value r : op->getResults()) {
        bool outside = !view.dups.contains(op) && readOutside(r, op, view);
        if (outside)
          t.outputs.push_back(r);
        needed = needed || outside ||
                 llvm::any_of(r.getUsers(), [&](Operation *u) {
                   return live.contains(u) || usedThroughCopy(u, live, view);
                 });
      }
      if (needed)
        live.insert(op);
    }
    std::reverse(t.outputs.begin(), t.outputs.end());
    for (Operation *op : view.ops) {
      if (!live.contains(op))
        continue;
      t.live.push_back(op);
      bool expands = view.fusible && expandsOperands(op);
      for (Value operand : op->getOperands()) {
        if (expands) {
          expand(operand, view, t.inputs, &t.copied);
          continue;
        }
        Operation *def = operand.getDefiningOp();
        if (def && view.set.contains(def))
          continue;
        t.inputs.insert(operand);
      }
    }
    SmallVector<Value> inputs(t.inputs.begin(), t.inputs.end());
    t.bytes = kernelBytes(inputs, t.outputs);
    return t;
  }

  /// Whether `user`, a broadcast copied into the view, feeds a live op.
  bool usedThroughCopy(Operation *user, const OpSet &live, const View &view) {
    if (!view.fusible || view.set.contains(user) ||
        (classify(user) != OpClass::Broadcast && !isa<ReshapeOp>(user)))
      return false;
    for (OpOperand &use : user->getResult(0).getUses()) {
      Operation *u = use.getOwner();
      if ((live.contains(u) && expandsOperands(u)) || usedThroughCopy(u, live, view))
        return true;
    }
    return false;
  }

  int64_t bytesOf(ArrayRef<int> ids, ArrayRef<Operation *> extraDups = {}) {
    return traffic(viewOf(ids, extraDups)).bytes;
  }

  //===--------------------------------------------------------------------===//
  // Domains
  //===--------------------------------------------------------------------===//

  /// The one domain of a fusible view, or nullopt when its ops do not share
  /// one.
  std::optional<Domain> domainOf(const View &view) {
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

  /// Whether `b` spreads a value of the kept shape over exactly the reduced
  /// dimensions of the domain (dimensions of size 1 aside).
  static bool isRowBroadcast(BroadcastInDimOp b, const Domain &d) {
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

  //===--------------------------------------------------------------------===//
  // A. Matmul epilogues
  //===--------------------------------------------------------------------===//

  /// The only reader of `v`, when it is an elementwise op no other group
  /// has taken.
  Operation *onlyUser(Value v) {
    if (!v.hasOneUse())
      return nullptr;
    Operation *user = *v.user_begin();
    int g = ownerOf(user);
    if (g < 0 || groups[g].cls != OpClass::Elementwise || groups[g].members.size() != 1)
      return nullptr;
    return user;
  }

  static bool isBias(Value v, RankedTensorType resultType) {
    auto b = v.getDefiningOp<BroadcastInDimOp>();
    if (!b || resultType.getRank() == 0)
      return false;
    auto in = cast<RankedTensorType>(b.getOperand().getType());
    return in.getRank() == 1 && in.getDimSize(0) == resultType.getShape().back() &&
           b.getBroadcastDimensions() == ArrayRef<int64_t>{resultType.getRank() - 1};
  }

  void absorb(int g, Operation *op) {
    int old = ownerOf(op);
    if (old >= 0 && old != g)
      mergeInto(g, old);
  }

  void planEpilogues() {
    for (int g = 0, e = groups.size(); g < e; ++g) {
      Group &m = groups[g];
      if (!m.alive || m.cls != OpClass::Matmul)
        continue;
      auto type = cast<RankedTensorType>(m.finalValue.getType());
      if (!isa<FloatType>(type.getElementType()))
        continue;
      Value cur = m.finalValue;
      // alpha * A B
      if (auto mul = dyn_cast_or_null<MulOp>(onlyUser(cur))) {
        Value other = mul.getLhs() == cur ? mul.getRhs() : mul.getLhs();
        if (other != cur && isImmediate(other)) {
          auto dense = cast<DenseElementsAttr>(other.getDefiningOp<ConstantOp>().getValue());
          groups[g].alpha = dense.getSplatValue<APFloat>().convertToDouble();
          absorb(g, mul);
          cur = mul.getResult();
        }
      }
      // + bias, + residual (C with beta = 1), either order
      while (auto add = dyn_cast_or_null<AddOp>(onlyUser(cur))) {
        Value other = add.getLhs() == cur ? add.getRhs() : add.getLhs();
        if (other == cur)
          break;
        if (!groups[g].bias && isBias(other, type)) {
          groups[g].bias = true;
        } else if (!groups[g].accumulate && !isImmediate(other) &&
                   !other.getDefiningOp<BroadcastInDimOp>() &&
                   !other.getDefiningOp<IotaOp>()) {
          groups[g].accumulate = true;
        } else {
          break;
        }
        absorb(g, add);
        cur = add.getResult();
      }
      groups[g].finalValue = cur;
      // gelu, its input possibly also written (gelu_aux)
      if (auto match = matchGelu(cur, [](OpOperand &) { return false; })) {
        bool free = llvm::all_of(match->ops, [&](Operation *op) {
          int o = ownerOf(op);
          return o >= 0 && groups[o].cls == OpClass::Elementwise && groups[o].members.size() == 1;
        });
        if (free)
          takeGelu(g, *match);
      }
    }
  }

  void takeGelu(int g, const GeluMatch &match) {
    for (Operation *op : match.ops)
      absorb(g, op);
    groups[g].gelu = true;
    groups[g].finalValue = match.ops.back()->getResult(0);
  }

  //===--------------------------------------------------------------------===//
  // B. Merging
  //===--------------------------------------------------------------------===//

  struct Candidate {
    int a, b;
    int64_t saved;
    unsigned order;
  };

  /// Bytes saved by merging a and b, or nullopt when they may not merge.
  std::optional<int64_t> mergeGain(int a, int b) {
    View both = viewOf({a, b});
    if (!domainOf(both))
      return std::nullopt;
    int64_t saved = bytesOf({a}) + bytesOf({b}) - traffic(both).bytes;
    if (saved <= 0)
      return std::nullopt;
    return saved;
  }

  void mergeGroups() {
    for (int round = 0; round < 10000; ++round) {
      SmallVector<Candidate> candidates;
      llvm::DenseSet<std::pair<int, int>> seenPairs;
      llvm::DenseMap<Value, SmallVector<int, 4>> readers;
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
      llvm::sort(candidates, [](const Candidate &x, const Candidate &y) {
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

  int64_t domainSize(int g) {
    auto d = domainOf(viewOf({g}));
    if (!d)
      return 0;
    int64_t n = 1;
    for (int64_t s : d->shape)
      n *= s;
    return n;
  }

  //===--------------------------------------------------------------------===//
  // C. Duplication
  //===--------------------------------------------------------------------===//

  /// Producers of `input` that group `g` would recompute: elementwise ops
  /// of mergeable groups, back to values g reads already or constants.
  SmallVector<Operation *> chainFor(Value input, const Traffic &t) {
    SmallVector<Operation *> chain;
    SmallVector<Value> stack{input};
    OpSet seen;
    while (!stack.empty()) {
      Value v = stack.pop_back_val();
      Operation *def = v.getDefiningOp();
      if (!def || isImmediate(v))
        continue;
      if (v != input && t.inputs.contains(v))
        continue; // read already
      OpClass c = classify(def);
      if (c == OpClass::Broadcast) {
        for (Value operand : def->getOperands())
          stack.push_back(operand);
        continue;
      }
      int o = ownerOf(def);
      if (c != OpClass::Elementwise || o < 0 || !groups[o].mergeable())
        continue; // read as an input (the cost decides whether that pays)
      if (!seen.insert(def).second)
        continue;
      chain.push_back(def);
      if (chain.size() > options.maxDuplicateOps)
        return {};
      for (Value operand : def->getOperands())
        stack.push_back(operand);
    }
    sortOps(chain);
    return chain;
  }

  void duplicate() {
    for (int round = 0; round < 4; ++round) {
      bool changed = false;
      for (int g = 0, e = groups.size(); g < e; ++g) {
        if (!groups[g].mergeable())
          continue;
        // Each success changes g's inputs: look again.
        for (int attempt = 0; attempt < 16 && duplicateOne(g); ++attempt)
          changed = true;
      }
      if (!changed)
        return;
    }
  }

  bool duplicateOne(int g) {
    Traffic t = traffic(viewOf({g}));
    for (Value input : t.inputs) {
      Operation *def = input.getDefiningOp();
      if (!def || classify(def) != OpClass::Elementwise)
        continue;
      SmallVector<Operation *> chain = chainFor(input, t);
      if (!chain.empty() && tryDuplicate(g, chain))
        return true;
    }
    return false;
  }

  /// Recomputes `chain` in group g when that saves more bytes than it costs.
  bool tryDuplicate(int g, ArrayRef<Operation *> chain) {
    // Groups whose traffic may change: g and the owners of the chain's ops
    // and of what the chain reads.
    llvm::SmallSetVector<int, 8> affected;
    affected.insert(g);
    for (Operation *op : chain) {
      affected.insert(ownerOf(op));
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (int o = ownerOf(def); o >= 0)
            affected.insert(o);
    }
    View with = viewOf({g}, chain);
    if (!domainOf(with))
      return false;
    int64_t before = 0;
    for (int a : affected)
      before += bytesOf({a});
    // Apply, measure, and undo when it does not pay.
    Group &group = groups[g];
    SmallVector<Operation *> added;
    for (Operation *op : chain)
      if (group.dupSet.insert(op).second) {
        group.dups.push_back(op);
        dupIn[op].push_back(g);
        added.push_back(op);
      }
    sortOps(group.dups);
    int64_t after = 0;
    for (int a : affected)
      after += bytesOf({a});
    if (!added.empty() && duplicationPays(before - after, chain, options.cost))
      return true;
    for (Operation *op : added) {
      group.dupSet.erase(op);
      llvm::erase(dupIn[op], g);
    }
    llvm::erase_if(group.dups, [&](Operation *op) { return llvm::is_contained(added, op); });
    return false;
  }

  //===--------------------------------------------------------------------===//
  // D. GELU after recomputation
  //===--------------------------------------------------------------------===//

  /// Whether some live instance of `user` (its owner's, or a copy in a
  /// group that recomputes it) reads `def`'s result from memory.
  bool readsFromMemory(Operation *def, Operation *user) {
    OpClass c = classify(user);
    if (user->hasTrait<OpTrait::IsTerminator>())
      return true;
    if ((c == OpClass::Broadcast && ownerOf(user) < 0) || isa<ReshapeOp>(user))
      return llvm::any_of(user->getUsers(),
                          [&](Operation *u) { return readsFromMemory(def, u); });
    int o = ownerOf(user);
    if (o < 0 || (!deadMembers.contains(user) && !groups[o].dupSet.contains(def)))
      return true;
    if (auto it = dupIn.find(user); it != dupIn.end())
      for (int h : it->second)
        if (!deadDups.contains({h, user}) && !groups[h].dupSet.contains(def))
          return true;
    return false;
  }

  void extendEpiloguesWithGelu() {
    settleLiveness();
    for (int g = 0, e = groups.size(); g < e; ++g) {
      Group &m = groups[g];
      if (!m.alive || m.cls != OpClass::Matmul || m.gelu || !m.finalValue)
        continue;
      auto match = matchGelu(m.finalValue, [&](OpOperand &use) {
        Operation *def = use.get().getDefiningOp();
        return def && !readsFromMemory(def, use.getOwner());
      });
      if (!match)
        continue;
      // The GELU must be all of one group that reads only the epilogue's value.
      int ge = ownerOf(match->ops.front());
      if (ge < 0 || !groups[ge].mergeable())
        continue;
      Traffic t = traffic(viewOf({ge}));
      OpSet matched(match->ops.begin(), match->ops.end());
      bool exact = t.live.size() == match->ops.size() &&
                   llvm::all_of(t.live, [&](Operation *op) { return matched.contains(op); }) &&
                   t.inputs.size() == 1 && t.inputs[0] == m.finalValue;
      if (!exact)
        continue;
      takeGelu(g, *match);
    }
  }

  //===--------------------------------------------------------------------===//
  // The plan
  //===--------------------------------------------------------------------===//

  /// Marks the instances no live op reads, until nothing changes (every
  /// reader of an op may recompute it; then its readers' inputs go too).
  void settleLiveness() {
    for (int round = 0; round < 64; ++round) {
      bool changed = false;
      for (int g = 0, e = groups.size(); g < e; ++g) {
        if (!groups[g].alive || !groups[g].fusible())
          continue;
        Traffic t = traffic(viewOf({g}));
        OpSet live(t.live.begin(), t.live.end());
        for (Operation *op : groups[g].members)
          if (!live.contains(op) && deadMembers.insert(op).second)
            changed = true;
        for (Operation *op : groups[g].dups)
          if (!live.contains(op) && deadDups.insert({g, op}).second)
            changed = true;
      }
      if (!changed)
        return;
    }
  }

  FusionPlan finish() {
    settleLiveness();
    FusionPlan plan;
    // Ops no one reads any more (every reader recomputes them) go away.
    for (Operation &op : block)
      if (deadMembers.contains(&op))
        plan.erased.push_back(&op);
    for (int g = 0, e = groups.size(); g < e; ++g) {
      Group &group = groups[g];
      if (!group.alive || !group.fusible())
        continue;
      View view = viewOf({g});
      Traffic t = traffic(view);
      if (t.live.empty())
        continue;
      size_t kernels = t.live.size() +
                       llvm::count_if(t.copied, [](Operation *op) { return !isa<ConstantOp>(op); });
      if (kernels < 2)
        continue;
      PlannedFusion f;
      bool reduction = false, product = false;
      for (Operation *op : t.live) {
        OpClass c = classify(op);
        reduction = reduction || c == OpClass::Reduction;
        product = product || c == OpClass::Matmul;
      }
      f.kind = product     ? FusionKind::MatmulEpilogue
               : reduction ? FusionKind::Reduction
                           : FusionKind::Elementwise;
      if (product) {
        f.epilogue = group.bias && group.gelu ? "bias_gelu"
                     : group.bias             ? "bias"
                     : group.gelu             ? "gelu"
                                              : "none";
        f.alpha = group.alpha;
        f.accumulate = group.accumulate;
        if (group.gelu) {
          // The pre-activation also written: the GELU's input is an output.
          Value final = group.finalValue;
          f.geluAux = llvm::any_of(t.outputs, [&](Value v) { return v != final; });
        }
      }
      SmallVector<Operation *> body(t.live.begin(), t.live.end());
      body.append(t.copied.begin(), t.copied.end());
      sortOps(body);
      f.bodyOps = std::move(body);
      f.outputs = t.outputs;
      for (Operation *op : t.live)
        if (!view.dups.contains(op))
          plan.erased.push_back(op);
      plan.fusions.push_back(std::move(f));
    }
    return plan;
  }
};

} // namespace

FusionPlan planFusion(Block &block, const FusionOptions &options) {
  return Planner(block, options).run();
}

} // namespace trc::fusion
