//===- RecomputeAnalysis.cpp - forward, stash, layers and their choices ----===//
//
// analyze() and keptSet() of include/trc/Training/Recompute.h.
//
//===----------------------------------------------------------------------===//
#include "trc/Training/Recompute.h"
#include "trc/Analysis/Layers.h"
#include "trc/Analysis/ValueFacts.h"
#include "trc/Dialect/Trc.h"


using namespace mlir;

namespace trc::recompute {

namespace {

using analysis::inputsOf;

int64_t bytesOf(Value v) { return analysis::tensorBytes(v.getType()); }

/// Ops in `layer` reachable from `from` through `next`, stopping after the
/// first dot_general on each path (the attention core's two products).
template <typename Next>
void collectToProduct(Operation *from, const llvm::DenseSet<Operation *> &layer,
                      llvm::DenseSet<Operation *> &out, Next next) {
  SmallVector<Operation *> worklist{from};
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    for (Operation *n : next(op)) {
      if (!n || !layer.contains(n) || !out.insert(n).second)
        continue;
      if (!isa<DotGeneralOp>(n))
        worklist.push_back(n);
    }
  }
}

/// Megatron's selective set of one layer: from the q·kᵀ product through the
/// softmax (and what follows it: dropout) to the product with v.
void findCore(Layer &layer) {
  llvm::DenseSet<Operation *> members(layer.ops.begin(), layer.ops.end());
  for (Operation *op : layer.ops) {
    if (isa<AttentionOp>(op))
      layer.fusedAttention = true;
    if (!isa<SoftmaxOp>(op))
      continue;
    layer.core.insert(op);
    collectToProduct(op, members, layer.core, [](Operation *o) {
      SmallVector<Operation *> users;
      for (Operation *u : o->getUsers())
        users.push_back(u);
      return users;
    });
    collectToProduct(op, members, layer.core, [](Operation *o) {
      SmallVector<Operation *> defs;
      for (Value v : o->getOperands())
        defs.push_back(v.getDefiningOp());
      return defs;
    });
  }
}

/// Whether stash value `v` is kept when layer l makes choice choiceOf(l).
template <typename ChoiceOf>
bool isKept(const StepActivations &a, Value v, ChoiceOf choiceOf, bool cheap) {
  if (a.alwaysKept.contains(v))
    return true;
  Operation *def = v.getDefiningOp();
  auto it = a.layerOf.find(def);
  // Outside the chain: recomputed when cheap, unless a product, or a view
  // (a reshape or slice of an argument costs no memory to keep, and
  // recomputing it only hides it from CSE).
  if (it == a.layerOf.end() || it->second < 0)
    return !cheap || matmulFlops(def) > 0 || isa<ReshapeOp, SliceOp>(def);
  switch (choiceOf(it->second)) {
  case LayerChoice::Keep: return true;
  case LayerChoice::Selective: return !a.layers[size_t(it->second)].core.contains(def);
  case LayerChoice::Full: return false;
  }
  return true;
}

/// The forward ops recomputing `v` clones, as rewrite() finds them: back
/// from `v` through values neither kept, arguments nor constants.
template <typename ChoiceOf>
void collectClones(const StepActivations &a, Value v, ChoiceOf choiceOf,
                   llvm::SetVector<Operation *> &out) {
  SmallVector<Value> worklist{v};
  while (!worklist.empty()) {
    Value x = worklist.pop_back_val();
    Operation *def = x.getDefiningOp();
    if (!def || def->hasTrait<OpTrait::ConstantLike>() || out.contains(def))
      continue;
    if (x != v && (a.alwaysKept.contains(x) ||
                   (a.stash.contains(x) && isKept(a, x, choiceOf, /*cheap=*/true))))
      continue;
    out.insert(def);
    for (Value in : def->getOperands())
      worklist.push_back(in);
  }
}

} // namespace

bool parsePolicy(llvm::StringRef text, Policy &out) {
  if (text == "none")
    out = Policy::None;
  else if (text == "selective")
    out = Policy::Selective;
  else if (text == "full")
    out = Policy::Full;
  else if (text == "budget")
    out = Policy::Budget;
  else
    return false;
  return true;
}

const char *policyName(Policy p) {
  switch (p) {
  case Policy::None: return "none";
  case Policy::Selective: return "selective";
  case Policy::Full: return "full";
  case Policy::Budget: return "budget";
  }
  return "";
}

const char *choiceName(LayerChoice c) {
  switch (c) {
  case LayerChoice::Keep: return "keep";
  case LayerChoice::Selective: return "selective";
  case LayerChoice::Full: return "full";
  }
  return "";
}

double matmulFlops(Operation *op) {
  return isa<DotGeneralOp, AttentionOp, AttentionGradOp>(op) ? analysis::opCost(op) : 0.0;
}

FailureOr<StepActivations> analyze(func::FuncOp fn, std::string &error) {
  StepActivations a;
  a.fn = fn;
  Block &body = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() == 0) {
    error = "@" + fn.getSymName().str() + " returns no loss";
    return failure();
  }
  // The forward: the loss's cone.
  SmallVector<Value> worklist{ret.getOperand(0)};
  while (!worklist.empty()) {
    Operation *def = worklist.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != &body || !a.forward.insert(def).second)
      continue;
    for (Value v : inputsOf(*def))
      worklist.push_back(v);
  }
  for (Operation &op : body.without_terminator()) {
    if (a.forward.contains(&op))
      continue;
    a.stepFlops += matmulFlops(&op);
    for (Value v : inputsOf(op))
      if (Operation *def = v.getDefiningOp(); def && a.forward.contains(def))
        a.stash.insert(v);
  }
  for (Operation *op : a.forward)
    a.stepFlops += matmulFlops(op);
  // Sort the stash by program order (inputsOf visits operands in op order,
  // but a later op can read an earlier value first).
  SmallVector<Value> ordered(a.stash.begin(), a.stash.end());
  llvm::sort(ordered, [](Value x, Value y) {
    Operation *dx = x.getDefiningOp(), *dy = y.getDefiningOp();
    if (dx != dy)
      return dx->isBeforeInBlock(dy);
    return cast<OpResult>(x).getResultNumber() < cast<OpResult>(y).getResultNumber();
  });
  a.stash = llvm::SetVector<Value>(ordered.begin(), ordered.end());

  FailureOr<analysis::LayerChain> chain = analysis::findLayerChain(
      fn, error, [&](Operation *op) { return a.forward.contains(op); });
  if (failed(chain))
    return failure();
  // Pieces into layers (see the header).
  SmallVector<int64_t> corePieces;
  for (int64_t p = 0; p < chain->pieces(); ++p)
    if (llvm::any_of(chain->piece(p), analysis::isLayerCore))
      corePieces.push_back(p);
  for (Operation *op : chain->chain)
    a.layerOf[op] = -1;
  for (size_t i = 0; i < corePieces.size(); ++i) {
    int64_t first = corePieces[i];
    int64_t end;
    if (i + 1 < corePieces.size())
      end = corePieces[i + 1];
    else if (i > 0)
      end = std::min(chain->pieces(), first + (corePieces[i] - corePieces[i - 1]));
    else
      end = std::max(first + 1, chain->pieces() - 1);
    Layer layer;
    for (int64_t p = first; p < end; ++p)
      for (Operation *op : chain->piece(p)) {
        layer.ops.push_back(op);
        a.layerOf[op] = int(a.layers.size());
      }
    findCore(layer);
    a.layers.push_back(std::move(layer));
  }
  // Always kept: prologue and epilogue values, and every chain value read
  // by another layer or by the prologue or epilogue (a layer's input, its
  // output to the head).
  for (Operation *op : chain->chain) {
    int own = a.layerOf.lookup(op);
    if (own < 0)
      for (Value r : op->getResults())
        a.alwaysKept.insert(r);
    for (Value v : inputsOf(*op)) {
      Operation *def = v.getDefiningOp();
      auto it = def ? a.layerOf.find(def) : a.layerOf.end();
      if (it != a.layerOf.end() && it->second != own)
        a.alwaysKept.insert(v);
    }
  }
  // Each choice's kept bytes and redone FLOPs per layer (the ops the
  // rewrite would clone: those its non-kept stash values need).
  for (size_t l = 0; l < a.layers.size(); ++l) {
    Layer &layer = a.layers[l];
    for (Operation *op : layer.ops)
      for (Value r : op->getResults())
        if (a.stash.contains(r) && !a.alwaysKept.contains(r)) {
          layer.keptBytes[int(LayerChoice::Keep)] += bytesOf(r);
          if (!layer.core.contains(op))
            layer.keptBytes[int(LayerChoice::Selective)] += bytesOf(r);
        }
    for (LayerChoice c : {LayerChoice::Selective, LayerChoice::Full}) {
      auto choiceOf = [&](int) { return c; };
      llvm::SetVector<Operation *> cloned;
      for (Operation *op : layer.ops)
        for (Value r : op->getResults())
          if (a.stash.contains(r) && !isKept(a, r, choiceOf, /*cheap=*/true))
            collectClones(a, r, choiceOf, cloned);
      for (Operation *op : cloned)
        layer.flops[int(c)] += matmulFlops(op);
    }
  }
  return a;
}

llvm::DenseSet<Value> keptSet(const StepActivations &a, ArrayRef<LayerChoice> choices,
                              bool cheap) {
  // Layer inputs stay alive into the backward even where the backward
  // itself does not read them: recomputation starts there.
  llvm::DenseSet<Value> kept(a.alwaysKept.begin(), a.alwaysKept.end());
  auto choiceOf = [&](int layer) { return choices[size_t(layer)]; };
  for (Value v : a.stash)
    if (isKept(a, v, choiceOf, cheap))
      kept.insert(v);
  return kept;
}

} // namespace trc::recompute
