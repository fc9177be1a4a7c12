//===- Recompute.h - activation recomputation of a training step -*- C++ -*-===//
//
// What trc-recompute decides and does to @main_grad (trc-autodiff's output:
// the forward, then the backward, in one block).
//
// The forward is the ops the loss depends on; the stash is the forward values
// the backward reads, which the step keeps from their definition to their
// last backward use (the activation memory). A policy picks the kept set K;
// every other stash value is recomputed in the backward from K, the
// arguments and constants: its ops are cloned right before the first
// backward op that reads one of them, each group reading K through a
// trc.optimization_barrier so that CSE cannot merge the copies back.
//
// Layers come from trc/Analysis/Layers.h: the chain's pieces, grouped so that
// each layer starts at a piece holding an attention core (the pieces before
// the first are the prologue; after the last layer, as many pieces as the
// layer before it had belong to it, the rest are the epilogue). A layer's
// inputs (chain values of other pieces it reads: the residual stream) are
// always kept, as are the prologue's and epilogue's values (the head and
// the loss: recomputing the vocabulary projection would cost more than a
// layer). Ops outside the chain (weight transposes, masks, dropout's random
// numbers, which are a pure function of the step's key) are recomputed by
// every policy but none, unless they are matrix products.
//
// Per layer: keep (nothing recomputed), selective (Megatron's choice: the
// attention core, from the q·kᵀ product through softmax and dropout to the
// product with v; a fused trc.attention already recomputes its
// probabilities, so there selective keeps everything) or full (only the
// inputs kept; the layer's forward runs again in the backward).
// Policy budget solves a multiple-choice knapsack over the layers (dynamic
// programming: least recomputed FLOPs whose kept bytes fit), checked and
// tightened against the simulated peak of the rewritten step.
//
// Memory is estimated at the tensor level (estimatePeakBytes): each op's
// result is live from its definition to its last use (reshapes, slices and
// barriers alias their operand; constants, returned values and pointwise
// results whose one consumer is pointwise, which elementwise fusion never
// stores, are not temporaries), plus the score-sized temporaries of attention. The arena the
// memory plan finally places is what trc-opt and trc-run print; the
// estimate tracks it closely enough to rank and to budget (trc-run
// calibrates the budget by the arena it measures).
// Preconditions: `fn` has one block, its first result is the loss, and ops
// staged for pipelines carry trc.stage (clones of them get trc.backward).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_TRAINING_RECOMPUTE_H
#define TRC_TRAINING_RECOMPUTE_H

#include "trc/Abi/AttrNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

#include <optional>
#include <string>
#include <vector>

namespace trc::recompute {

enum class Policy { None, Selective, Full, Budget };
enum class LayerChoice { Keep = 0, Selective = 1, Full = 2 };
constexpr int kLayerChoices = 3;

/// "none", "selective", "full", "budget"; false on anything else.
bool parsePolicy(llvm::StringRef text, Policy &out);
const char *policyName(Policy p);
const char *choiceName(LayerChoice c);

// Attributes (trc/Abi/AttrNames.h): on each op trc-recompute makes, its
// group (i64, abi::kRecomputeAttr); on the module, the decisions (a
// dictionary, abi::kRecomputePlanAttr; test-trc-print-recompute prints it).

/// One layer of the forward and what each choice would keep and redo.
struct Layer {
  llvm::SmallVector<mlir::Operation *> ops;  // chain ops, program order
  llvm::DenseSet<mlir::Operation *> core;    // selective's recomputed ops
  bool fusedAttention = false;               // a trc.attention (selective = keep)
  // Per choice: bytes of this layer's stash values kept, FLOPs redone.
  int64_t keptBytes[kLayerChoices] = {0, 0, 0};
  double flops[kLayerChoices] = {0, 0, 0};
};

/// The analysis of a training step's activations.
struct StepActivations {
  mutable mlir::func::FuncOp fn; // a handle: const analyses still read it
  llvm::DenseSet<mlir::Operation *> forward;
  llvm::SetVector<mlir::Value> stash;          // program order
  std::vector<Layer> layers;
  llvm::DenseMap<mlir::Operation *, int> layerOf;  // chain ops; -1: prologue/epilogue
  llvm::DenseSet<mlir::Value> alwaysKept;      // layer inputs, prologue, epilogue
  double stepFlops = 0;                        // matrix products and attention
};

/// Analyzes `fn`; fails with `error` when it has no layer structure.
mlir::FailureOr<StepActivations> analyze(mlir::func::FuncOp fn, std::string &error);

/// The kept set of a choice per layer (`cheap`: recompute the ops outside
/// the chain). Choices of size layers.size().
llvm::DenseSet<mlir::Value> keptSet(const StepActivations &a,
                                    llvm::ArrayRef<LayerChoice> choices, bool cheap);

/// What a rewrite did.
struct RewriteSummary {
  int64_t groups = 0;
  int64_t clonedOps = 0;
  double recomputedFlops = 0;
};

/// Clones the ops of every stash value not in `kept` into the backward
/// (see the banner). `a` is invalid afterwards.
RewriteSummary rewrite(const StepActivations &a, const llvm::DenseSet<mlir::Value> &kept);

/// The estimated peak of live temporaries of `fn`, in bytes.
int64_t estimatePeakBytes(mlir::func::FuncOp fn);

/// The matrix-product FLOPs of one op (dot_general, attention, its grad).
double matmulFlops(mlir::Operation *op);

/// The decisions for a policy.
struct Decision {
  Policy policy = Policy::None;
  std::vector<LayerChoice> choices;
  bool cheap = false;
  int64_t peakBefore = 0;   // estimated, policy none
  int64_t peakAfter = 0;    // estimated, after the rewrite
  double recomputedFlops = 0;
};

/// Chooses for `policy` (`budget` in estimated peak bytes, for Budget), on
/// a clone of `a.fn` where it needs to simulate. Fails with `error` when the
/// budget is below the smallest reachable peak (which the error gives).
mlir::FailureOr<Decision> decide(const StepActivations &a, Policy policy, int64_t budget,
                                 std::string &error);

} // namespace trc::recompute

#endif // TRC_TRAINING_RECOMPUTE_H
