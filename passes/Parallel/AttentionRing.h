//===- AttentionRing.h - one attention computed as a ring ------*- C++ -*-===//
//
// The computation trc-ring-attention (RingAttention.cpp) puts in place of an
// attention whose keys and values are all-gathered over the context group:
// C steps, each on one rank's block of keys and values, merged with an
// online softmax (running max m, sum l, output accumulator in f32), the
// blocks moving one rank on between steps; the backward passes them round
// again with their dK/dV accumulators. With the head-tail layout (a
// mirrored split, Sharding.h) a block is the chunk pair (s, 2C-1-s); when
// the mask is also proven to hide later chunks (trc.causal_chunk), the
// first step (the rank's own block) skips its head queries x tail keys, and
// each later step computes only the two of its four chunk x chunk
// sub-blocks that causality leaves: the queries' tail against the block's
// head, and head x head (block from an earlier rank) or tail x tail (a
// later one), chosen by a per-rank table, so every rank does the same
// (2C+1)/(4C) of the full ring's work.
// Preconditions: static shapes; q, k, v [b..., T/C, D] this rank's rows
// (the head-tail layout's two chunks in order when mirrored); the mask the
// scores' rank with its key dim whole (T, natural order), one block (it
// travels with the keys) or 1.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PASSES_PARALLEL_ATTENTIONRING_H
#define TRC_PASSES_PARALLEL_ATTENTIONRING_H

#include "trc/Dialect/CoreBuilder.h"

#include <optional>
#include <tuple>

namespace trc::parallel {

/// `full` all-gathered over the context group along dim `d` from the
/// rank's block (Reshard.cpp's chain, with its reorder when mirrored).
struct Gathered {
  mlir::Value block;
  AllGatherOp gather;
  bool mirrored = false;
};
std::optional<Gathered> gatheredOverContext(mlir::Value full, int64_t d);

/// The chain reduce-scattering `full` (a partial sum over the context
/// group) along dim `d` to this rank's block, first op to last; its last
/// op's result is the block. Empty when `full` is used otherwise.
llvm::SmallVector<mlir::Operation *> scatterChain(mlir::Value full, int64_t d);

/// What the forward ring leaves for the backward.
struct RingForward {
  mlir::Value result; // the attention's output, the operands' type
  mlir::Value lse;    // each query row's logsumexp, f32 [b..., Tq]
};

struct RingLayout {
  int64_t shards = 1;      // C, the context group's size
  bool mirrored = false;   // blocks are head-tail chunk pairs
  bool skipHidden = false; // with mirrored: the mask hides later chunks
};

class AttentionRing {
public:
  AttentionRing(mlir::OpBuilder &b, mlir::Location loc, mlir::Value q, mlir::Value k,
                mlir::Value v, mlir::Value mask, RingLayout layout, double scale, double fill,
                bool fillWhereTrue);

  RingForward forward();
  /// dq and this rank's dk, dv blocks (summed over every rank's queries).
  std::tuple<mlir::Value, mlir::Value, mlir::Value> backward(const RingForward &fwd,
                                                             mlir::Value resultGrad);

private:
  /// A block's softmax statistics over its rows, f32.
  struct Softmax {
    mlir::Value m, l, acc;
  };
  /// One half of a dim of two chunks: a fixed one (0 head, 1 tail) or the
  /// one a per-rank index tensor<1xi64> picks.
  struct Half {
    int64_t fixed = 0;
    mlir::Value picked;
  };
  /// A sub-block's operands: queries, keys, values and mask (or null).
  struct Part {
    mlir::Value q, k, v, mask;
  };

  Part part(std::optional<Half> rows, std::optional<Half> keys, mlir::Value kb, mlir::Value vb,
            mlir::Value mask);
  Softmax partial(mlir::Value q, mlir::Value k, mlir::Value v, mlir::Value mask);
  Softmax merge(const Softmax &a, const Softmax &b);
  Softmax weighted(const Softmax &s, mlir::Value w);
  std::tuple<mlir::Value, mlir::Value, mlir::Value> gradBlock(mlir::Value q, mlir::Value g,
                                                              mlir::Value lse,
                                                              mlir::Value rowDot, mlir::Value k,
                                                              mlir::Value v, mlir::Value mask);
  mlir::Value scores(mlir::Value q, mlir::Value k, mlir::Value mask);
  mlir::Value stretch(mlir::Value mask, mlir::RankedTensorType scores);
  mlir::Value permute(mlir::Value x);
  mlir::Value lowest(mlir::Value like);
  mlir::Value half(mlir::Value x, int64_t d, Half h);
  mlir::Value join(mlir::Value head, mlir::Value tail, int64_t d);
  mlir::Value weightLike(mlir::Value w, mlir::Value like);
  llvm::SmallVector<mlir::Value> maskBlocks(mlir::Value mask);
  void stepChoices();

  CoreBuilder c;
  mlir::Value q, k, v;
  llvm::SmallVector<mlir::Value> masks; // per step; empty without a mask
  RingLayout layout;
  double scale, fill;
  bool fillWhereTrue;
  int64_t rank;
  mlir::Type element, f32;
  // With skipHidden, per step j >= 1: the half (0 head, 1 tail) of the
  // queries and of the block the second sub-block takes, tensor<1xi64>,
  // and its weight on the head rows (1 - half), f32 scalar.
  llvm::SmallVector<mlir::Value> halves, headWeights;
};

} // namespace trc::parallel

#endif // TRC_PASSES_PARALLEL_ATTENTIONRING_H
