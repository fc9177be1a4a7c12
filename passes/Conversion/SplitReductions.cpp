//===- SplitReductions.cpp - trc-split-reductions --------------------------===//
//
// A reduction with few output points over many values -> partial results
// over many threads, a short tail, and a combining reduction (split again
// while it qualifies); see Passes.td. trc-linalg-to-gpu gives a reduction
// one thread per output point, so without this a sum to a scalar is serial.
// Preconditions: linalg on tensors with static shapes (the CUDA pipeline,
// before one-shot-bufferize: the partials become arena buffers like any
// other tensor).
//
//===----------------------------------------------------------------------===//
#include "trc/Conversion/GpuKernels.h"
#include "trc/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace trc {
#define GEN_PASS_DEF_SPLITREDUCTIONS
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using trc::gpukernels::cloneCombiner;
using trc::gpukernels::soleCombiner;

namespace {

// Each thread of the partial op reduces at least this many values: fewer
// and the extra launches and partials cost more than the parallelism gains.
constexpr int64_t kMinValuesPerThread = 32;

struct SplitReductions : trc::impl::SplitReductionsBase<SplitReductions> {
  using SplitReductionsBase::SplitReductionsBase;

  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> work;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (isa<linalg::GenericOp, linalg::ReduceOp>(op))
        work.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    while (!work.empty()) {
      linalg::LinalgOp op = work.pop_back_val();
      if (std::optional<linalg::GenericOp> combine = split(rewriter, op))
        work.push_back(*combine); // split again while it qualifies
    }
  }

  /// Whether `op` is worth splitting: few output points, many values each.
  bool qualifies(linalg::LinalgOp op) {
    if (!op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 ||
        op->getNumResults() != 1 || op.getNumReductionLoops() == 0 || op.hasDynamicShape())
      return false;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t points = 1, reduced = 1;
    for (auto [range, it] : llvm::zip(ranges, op.getIteratorTypesArray()))
      (linalg::isParallelIterator(it) ? points : reduced) *= range;
    return points < minPoints && reduced >= minReduced;
  }

  /// Splits `op` when it qualifies; the combining op it made, if any.
  std::optional<linalg::GenericOp> split(IRRewriter &rewriter, linalg::LinalgOp op) {
    if (!qualifies(op))
      return std::nullopt;
    rewriter.setInsertionPoint(op);
    linalg::GenericOp generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    TypedAttr neutral;
    if (!generic) {
      // A named reduction: its payload must be checked as a generic's.
      FailureOr<linalg::GenericOp> g = linalg::generalizeNamedOp(rewriter, op);
      if (failed(g))
        return std::nullopt;
      generic = *g;
    }
    if (!soleCombiner(generic, neutral) || hasIndexOps(generic))
      return std::nullopt;
    // One reduction dimension: collapse adjacent ones.
    SmallVector<unsigned> reductionDims;
    generic.getReductionDims(reductionDims);
    if (reductionDims.size() > 1) {
      ReassociationIndices group(reductionDims.begin(), reductionDims.end());
      for (size_t i = 1; i < group.size(); ++i)
        if (group[i] != group[i - 1] + 1)
          return std::nullopt;
      if (!linalg::areDimSequencesPreserved(generic.getIndexingMapsArray(), {group}))
        return std::nullopt;
      FailureOr<linalg::CollapseResult> collapsed =
          linalg::collapseOpIterationDims(generic, {group}, rewriter);
      if (failed(collapsed))
        return std::nullopt;
      rewriter.replaceOp(generic, collapsed->results);
      generic = cast<linalg::GenericOp>(collapsed->collapsedOp.getOperation());
      rewriter.setInsertionPoint(generic);
      reductionDims.clear();
      generic.getReductionDims(reductionDims);
    }
    return splitOneDim(rewriter, generic, reductionDims.front(), neutral);
  }

  static bool hasIndexOps(linalg::GenericOp op) {
    return !op.getBody()->getOps<linalg::IndexOp>().empty();
  }

  /// `op` reduces one dimension `r` of R values: the partial op (r -> j, s),
  /// the tail, and the combining op that replaces it.
  std::optional<linalg::GenericOp> splitOneDim(IRRewriter &rewriter, linalg::GenericOp op,
                                               unsigned r, TypedAttr neutral) {
    MLIRContext *ctx = op.getContext();
    Location loc = op.getLoc();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t reduced = ranges[r];
    int64_t points = computeProduct(ranges) / reduced;
    // J values per thread, S threads per output point, rem (< J) left over.
    int64_t perThread =
        std::max(kMinValuesPerThread, (reduced * points + threads - 1) / threads);
    int64_t slices = reduced / perThread;
    if (slices < 2)
      return std::nullopt;
    int64_t rem = reduced - slices * perThread;

    // Every operand that reads r must index one result with d_r alone.
    AffineExpr dr = getAffineDimExpr(r, ctx);
    SmallVector<int> rPosition; // per input: the result indexed by d_r, or -1
    for (OpOperand *input : op.getDpsInputOperands()) {
      AffineMap map = op.getMatchingIndexingMap(input);
      int position = -1;
      for (auto [k, e] : llvm::enumerate(map.getResults())) {
        if (e == dr)
          position = k;
        else if (e.isFunctionOfDim(r))
          return std::nullopt;
      }
      if (position >= 0 && !isa<RankedTensorType>(input->get().getType()))
        return std::nullopt;
      rPosition.push_back(position);
    }
    AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    if (!outMap.isProjectedPermutation())
      return std::nullopt;

    // Inputs sliced along r: [0, S*J) viewed as [J, S], and [S*J, R).
    auto slice = [&](Value v, int position, int64_t begin, int64_t size) -> Value {
      auto type = cast<RankedTensorType>(v.getType());
      SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> sizes, strides(type.getRank(), rewriter.getIndexAttr(1));
      for (int64_t d : type.getShape())
        sizes.push_back(rewriter.getIndexAttr(d));
      offsets[position] = rewriter.getIndexAttr(begin);
      sizes[position] = rewriter.getIndexAttr(size);
      if (begin == 0 && size == type.getDimSize(position))
        return v;
      return tensor::ExtractSliceOp::create(rewriter, loc, v, offsets, sizes, strides);
    };

    // The partial op's dims: r's place taken by (j, s); d > r shifts by one.
    unsigned dims = ranges.size() + 1;
    unsigned dj = r, ds = r + 1;
    SmallVector<AffineExpr> shifted; // old dim -> partial dim (r's own is unused)
    for (unsigned d = 0; d < ranges.size(); ++d)
      shifted.push_back(getAffineDimExpr(d < r ? d : d + 1, ctx));
    auto shift = [&](AffineExpr e) { return e.replaceDims(shifted); };
    SmallVector<Value> partialInputs;
    SmallVector<AffineMap> partialMaps;
    for (auto [input, position] : llvm::zip(op.getDpsInputOperands(), rPosition)) {
      AffineMap map = op.getMatchingIndexingMap(input);
      SmallVector<AffineExpr> results;
      for (auto [k, e] : llvm::enumerate(map.getResults())) {
        if (int(k) == position) {
          results.push_back(getAffineDimExpr(dj, ctx));
          results.push_back(getAffineDimExpr(ds, ctx));
        } else {
          results.push_back(shift(e)); // other dims renumbered around (j, s)
        }
      }
      partialMaps.push_back(AffineMap::get(dims, 0, results, ctx));
      Value v = input->get();
      if (position >= 0) {
        auto type = cast<RankedTensorType>(v.getType());
        Value head = slice(v, position, 0, slices * perThread);
        SmallVector<int64_t> shape;
        SmallVector<ReassociationIndices> groups;
        for (int64_t k = 0; k < type.getRank(); ++k) {
          if (k == position) {
            groups.push_back({int64_t(shape.size()), int64_t(shape.size()) + 1});
            shape.push_back(perThread);
            shape.push_back(slices);
          } else {
            groups.push_back({int64_t(shape.size())});
            shape.push_back(type.getDimSize(k));
          }
        }
        v = tensor::ExpandShapeOp::create(
            rewriter, loc, RankedTensorType::get(shape, type.getElementType()), head, groups);
      }
      partialInputs.push_back(v);
    }
    // The partials: one per (output point, s), laid out in iteration order.
    SmallVector<int64_t> partialShape;
    SmallVector<AffineExpr> partialOut;
    SmallVector<utils::IteratorType> partialIters;
    for (unsigned d = 0; d < dims; ++d) {
      partialIters.push_back(d == dj ? utils::IteratorType::reduction
                                     : utils::IteratorType::parallel);
      if (d == dj)
        continue;
      partialShape.push_back(d == ds ? slices : ranges[d < r ? d : d - 1]);
      partialOut.push_back(getAffineDimExpr(d, ctx));
    }
    partialMaps.push_back(AffineMap::get(dims, 0, partialOut, ctx));
    Type element = cast<RankedTensorType>(op->getResult(0).getType()).getElementType();
    Value empty = tensor::EmptyOp::create(rewriter, loc, partialShape, element);
    Value identity = arith::ConstantOp::create(rewriter, loc, neutral);
    Value filled = linalg::FillOp::create(rewriter, loc, identity, empty).getResult(0);
    auto partial = linalg::GenericOp::create(rewriter, loc, filled.getType(), partialInputs,
                                             ValueRange{filled}, partialMaps, partialIters);
    rewriter.cloneRegionBefore(op.getRegion(), partial.getRegion(), partial.getRegion().end());

    // The tail: the original op over the last `rem` values, from its init.
    Value start = op.getDpsInitOperand(0)->get();
    if (rem > 0) {
      SmallVector<Value> tailInputs;
      for (auto [input, position] : llvm::zip(op.getDpsInputOperands(), rPosition))
        tailInputs.push_back(position < 0 ? input->get()
                                          : slice(input->get(), position,
                                                  slices * perThread, rem));
      auto tail = linalg::GenericOp::create(rewriter, loc, start.getType(), tailInputs,
                                            ValueRange{start}, op.getIndexingMapsArray(),
                                            op.getIteratorTypesArray());
      rewriter.cloneRegionBefore(op.getRegion(), tail.getRegion(), tail.getRegion().end());
      start = tail.getResult(0);
    }

    // The combining op over (the partial's dims), s reduced, into start.
    unsigned combineDims = dims - 1;
    auto inCombine = [&](unsigned d) { return d < dj ? d : d - 1; }; // partial dim -> here
    SmallVector<utils::IteratorType> combineIters;
    for (unsigned d = 0; d < dims; ++d)
      if (d != dj)
        combineIters.push_back(d == ds ? utils::IteratorType::reduction
                                       : utils::IteratorType::parallel);
    SmallVector<AffineExpr> combineOut;
    for (AffineExpr e : outMap.getResults())
      combineOut.push_back(getAffineDimExpr(inCombine(cast<AffineDimExpr>(shift(e)).getPosition()),
                                            ctx));
    SmallVector<AffineMap> combineMaps = {
        AffineMap::getMultiDimIdentityMap(combineDims, ctx),
        AffineMap::get(combineDims, 0, combineOut, ctx)};
    Operation *combiner = soleCombinerOf(op);
    Value acc = op.getRegionOutputArgs().front();
    auto combine = linalg::GenericOp::create(
        rewriter, loc, start.getType(), ValueRange{partial.getResult(0)}, ValueRange{start},
        combineMaps, combineIters, [&](OpBuilder &b, Location l, ValueRange args) {
          linalg::YieldOp::create(b, l, cloneCombiner(b, combiner, acc, args[1], args[0]));
        });
    rewriter.replaceOp(op, combine.getResult(0));
    return combine;
  }

  static Operation *soleCombinerOf(linalg::GenericOp op) {
    TypedAttr unused;
    return soleCombiner(op, unused);
  }
};

} // namespace
