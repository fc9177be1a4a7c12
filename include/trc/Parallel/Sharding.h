//===- Sharding.h - shardings of values and the rules that relate them -*- C++ -*-===//
//
// The tensor-parallel half of DESIGN.md's "Parallel plans": the device grid
// (module attribute `trc.grid`), each value's sharding (#trc.sharding, kept
// here as the plain struct Sharding while passes work on it), and
// solveOpSharding, which applies an op's factor rule
// (ShardingRuleOpInterface) to the shardings known around it. Propagation
// (trc-propagate-sharding) and partitioning (trc-partition) both go through
// solveOpSharding, so an op is partitioned exactly as propagation assumed.
// Preconditions: static shapes; one axis per split dim.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PARALLEL_SHARDING_H
#define TRC_PARALLEL_SHARDING_H

#include "trc/Abi/AttrNames.h"
#include "trc/Dialect/Trc.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <string>

namespace trc::parallel {

// trc.grid, trc.sharding; on a partitioned function's parameter arguments,
// for the artifact's `split` records: [dim, blocks, degree] and the full
// (logical) shape (trc/Abi/AttrNames.h).
using abi::kGridAttr;
using abi::kShardingAttr;
using abi::kSplitAttr;
using abi::kSplitOfAttr;
constexpr llvm::StringLiteral kTensorAxis = "tensor";
/// Context parallelism's axis: the sequence split over the ranks that share
/// their rows (trc-shard-context-parallel).
constexpr llvm::StringLiteral kContextAxis = "context";

/// A trc value's type (trc ops take and give ranked tensors).
inline mlir::RankedTensorType tensorType(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType());
}
/// An op's axis attribute counted from the front (negative counts from the end).
inline int64_t axisFromFront(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

/// Attaches the sharding rules (ShardingRules.cpp) to the trc dialect.
void registerShardingRules(mlir::DialectRegistry &registry);

/// The device grid: named axes and their sizes.
struct Grid {
  llvm::SmallVector<std::pair<std::string, int64_t>> axes;
  /// The axis' size (1 for an axis the grid does not have).
  int64_t size(llvm::StringRef axis) const;
  static Grid read(mlir::ModuleOp module);
  void write(mlir::ModuleOp module) const;
};

/// A dim's split: `blocks` equal blocks, each cut into one chunk per rank of
/// `axis` (rank r holds chunk r of every block). Mirrored: the odd blocks'
/// chunks go in reverse (rank r holds chunk t-1-r of them), so with two
/// blocks rank r holds the sequence's chunks r and 2t-1-r (context
/// parallelism's head-tail layout, Reshard.cpp).
struct DimSplit {
  std::string axis; // empty: the dim is whole
  int64_t blocks = 1;
  bool mirrored = false;
  bool split() const { return !axis.empty(); }
  /// The chunk of block `block` that rank `r` of `t` holds.
  int64_t chunkOf(int64_t block, int64_t r, int64_t t) const {
    return mirrored && block % 2 ? t - 1 - r : r;
  }
  bool operator==(const DimSplit &o) const {
    return axis == o.axis && blocks == o.blocks && mirrored == o.mirrored;
  }
};

struct Sharding {
  llvm::SmallVector<DimSplit, 4> dims;
  std::string partialAxis; // empty: not partial
  CollectiveReduction partialKind = CollectiveReduction::Sum;

  static Sharding whole(int64_t rank);
  bool partial() const { return !partialAxis.empty(); }
  /// Split somewhere or partial: worth propagating.
  bool informative() const;
  /// The dim split over `axis`, or -1.
  int64_t dimSplitOver(llvm::StringRef axis) const;
  Sharding withoutPartial() const;
  bool operator==(const Sharding &o) const {
    return dims == o.dims && partialAxis == o.partialAxis &&
           (partialAxis.empty() || partialKind == o.partialKind);
  }
  bool operator!=(const Sharding &o) const { return !(*this == o); }
  /// "[-, -, 3x tensor] partial sum(tensor)".
  std::string str() const;
};

ShardingAttr toAttr(mlir::MLIRContext *context, const Sharding &s);
Sharding fromAttr(ShardingAttr attr);

/// The per-rank type of a value of `full` type sharded as `s`.
mlir::RankedTensorType localType(mlir::RankedTensorType full, const Sharding &s,
                                 const Grid &grid);

/// The `trc.sharding` annotation of a value (an op result's entry in the
/// op's array, or a function argument's attribute), if any.
std::optional<Sharding> readSharding(mlir::Value v);
void writeSharding(mlir::Value v, const Sharding &s);
/// Whether any argument or op of `func` carries a `trc.sharding` annotation.
bool hasShardings(mlir::func::FuncOp func);

/// The shardings an op computes in, given what is known around it.
struct OpSharding {
  llvm::SmallVector<Sharding> operands; // what each operand must be
  llvm::SmallVector<Sharding> results;  // what the op produces from them
};

/// Applies the op's rule: each factor takes the split the known shardings
/// give it (the heaviest tensor wins a disagreement; with `resultsFirst`
/// the results win, as partitioning needs), factors that may not be split
/// or would split one tensor twice over an axis are dropped, and the
/// operand and result shardings follow. Unknown values are std::nullopt.
/// `operandTypes` are the operands' full types where the op's operands
/// already have per-rank types (trc-partition); empty: the op's own.
OpSharding solveOpSharding(mlir::Operation *op, const ShardingRule &rule,
                           llvm::ArrayRef<std::optional<Sharding>> operands,
                           llvm::ArrayRef<std::optional<Sharding>> results, const Grid &grid,
                           bool resultsFirst,
                           llvm::ArrayRef<mlir::RankedTensorType> operandTypes = {});

/// trc-propagate-sharding's work on one function: from the annotated values
/// (seeds) to every value, to a fixpoint; values nothing reaches are whole.
/// Writes every value's annotation (with `finish` false, only those it
/// found, so that a later round with more seeds can decide the others: a
/// lower-priority seed cannot take a value a higher one reaches). Fails
/// (with an error naming the op) on an op without a sharding rule.
mlir::LogicalResult propagateShardings(mlir::func::FuncOp func, const Grid &grid,
                                       bool finish = true);

/// Regroups sums that mix partial sums with whole values (autodiff adds the
/// q, k and v projections' input gradients to the residual's in whatever
/// order it met them): the partial terms first, then the whole ones, so one
/// all-reduce resolves them all. Keeps the annotations consistent.
void groupPartialSums(mlir::func::FuncOp func);

/// trc-partition returns a parameter's gradient under context parallelism
/// as a sum over the context axis of this rank's part (trc.all_reduce sum,
/// group context); trc-data-parallel folds those sums into its buckets (and
/// the planner prices them there). The summed part of `returned`, else null.
mlir::Value contextSummand(mlir::Value returned);
/// The results of @main_grad `grad` that are parameters' gradients returned
/// as such sums.
llvm::SmallVector<unsigned> contextSummedGradients(mlir::func::FuncOp grad);

} // namespace trc::parallel

#endif // TRC_PARALLEL_SHARDING_H
