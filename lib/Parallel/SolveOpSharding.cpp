//===- SolveOpSharding.cpp - an op's rule applied to known shardings -------===//
//
// solveOpSharding (include/trc/Parallel/Sharding.h). A split dim made of
// several factors splits exactly one of them: the one holding the dim's
// block boundary (a [2,16,64] -> [2,16,4,16] reshape's dim 64 split in one
// block splits the 4 heads, not the 16 features). A factor's split is kept
// as (axis, block size within the factor): a Sliced factor has a different
// size in every tensor, and whole blocks are what a slice may take.
// A mirrored split (DimSplit) stays mirrored only where the factor holds an
// even number of its blocks, so a block's parity is the same in every dim
// the factor appears in (and a slice starts at an even block).
//
//===----------------------------------------------------------------------===//
#include "trc/Parallel/Sharding.h"
#include "trc/Analysis/ElementBytes.h"

using namespace mlir;

namespace trc::parallel {
namespace {

struct FactorSplit {
  std::string axis;
  int64_t blockSize = 0;
  bool mirrored = false;
  double weight = 0;
};

using DimFactors = SmallVector<int64_t, 2>;

/// Factor sizes within one dim of a tensor (a Sliced factor takes the dim's size).
int64_t factorSize(const ShardingRule &rule, int64_t f, int64_t dimSize) {
  return rule.kinds[f] == FactorKind::Sliced ? dimSize : rule.sizes[f];
}

/// Elements of the dim per step of factor position i: the product of the
/// factors after it.
int64_t stride(const ShardingRule &rule, const DimFactors &factors, size_t i, int64_t dimSize) {
  int64_t s = 1;
  for (size_t j = i + 1; j < factors.size(); ++j)
    s *= factorSize(rule, factors[j], dimSize);
  return s;
}

struct Solver {
  Operation *op;
  const ShardingRule &rule;
  const Grid &grid;
  SmallVector<std::optional<FactorSplit>> chosen;
  ArrayRef<RankedTensorType> operandTypes; // full types, if the op's are per-rank

  Solver(Operation *op, const ShardingRule &rule, const Grid &grid,
         ArrayRef<RankedTensorType> operandTypes)
      : op(op), rule(rule), grid(grid), chosen(rule.sizes.size()),
        operandTypes(operandTypes) {}

  ArrayRef<int64_t> shape(Value v) const {
    if (!operandTypes.empty())
      for (unsigned i = 0; i < op->getNumOperands(); ++i)
        if (op->getOperand(i) == v)
          return operandTypes[i].getShape();
    return cast<RankedTensorType>(v.getType()).getShape();
  }

  /// The factor a split dim splits, with its block size, if the split is
  /// one the dim's factors can express (mirrored: in an even number of
  /// blocks of the factor).
  std::optional<std::pair<int64_t, int64_t>> factorOfSplit(const DimFactors &factors,
                                                           int64_t dimSize,
                                                           const DimSplit &split) {
    int64_t t = grid.size(split.axis);
    if (factors.empty() || dimSize % split.blocks)
      return std::nullopt;
    int64_t block = dimSize / split.blocks;
    for (size_t i = 0; i < factors.size(); ++i) {
      int64_t s = stride(rule, factors, i, dimSize);
      int64_t size = factorSize(rule, factors[i], dimSize);
      if (block % s)
        continue;
      int64_t bs = block / s;
      if (bs <= size && size % bs == 0 && bs % t == 0 &&
          !(split.mirrored && (size / bs) % 2))
        return std::pair(factors[i], bs);
      return std::nullopt;
    }
    return std::nullopt;
  }

  void offer(const ShardingRule::Dims &dims, Value v, const Sharding &s, double weight) {
    if (dims.size() != s.dims.size())
      return;
    for (size_t d = 0; d < dims.size(); ++d) {
      if (!s.dims[d].split())
        continue;
      auto found = factorOfSplit(dims[d], shape(v)[d], s.dims[d]);
      if (!found)
        continue;
      auto [f, bs] = *found;
      if (!chosen[f] || chosen[f]->weight < weight)
        chosen[f] = FactorSplit{s.dims[d].axis, bs, s.dims[d].mirrored, weight};
    }
  }

  /// Whether the chosen split of factor f is expressible in every dim it
  /// appears in (and, for a slice, takes whole blocks).
  bool fits(int64_t f) {
    const FactorSplit &c = *chosen[f];
    int64_t t = grid.size(c.axis);
    auto check = [&](const ShardingRule::Dims &dims, Value v) {
      for (size_t d = 0; d < dims.size(); ++d) {
        for (size_t i = 0; i < dims[d].size(); ++i) {
          if (dims[d][i] != f)
            continue;
          int64_t size = factorSize(rule, f, shape(v)[d]);
          if (size % c.blockSize || c.blockSize % t || (c.mirrored && (size / c.blockSize) % 2))
            return false;
          // Another split factor in the same dim: not expressible.
          for (size_t j = 0; j < dims[d].size(); ++j)
            if (j != i && chosen[dims[d][j]])
              return false;
        }
      }
      return true;
    };
    for (auto [i, dims] : llvm::enumerate(rule.operands))
      if (i < op->getNumOperands() && !check(dims, op->getOperand(i)))
        return false;
    for (auto [i, dims] : llvm::enumerate(rule.results))
      if (!check(dims, op->getResult(i)))
        return false;
    if (auto slice = dyn_cast<SliceOp>(op)) {
      for (size_t d = 0; d < rule.operands[0].size(); ++d)
        if (llvm::is_contained(rule.operands[0][d], f) && rule.kinds[f] == FactorKind::Sliced &&
            slice.getStartIndices()[d] % (c.mirrored ? 2 * c.blockSize : c.blockSize))
          return false;
    }
    return true;
  }

  void settle() {
    for (size_t f = 0; f < chosen.size(); ++f)
      if (chosen[f] && rule.kinds[f] == FactorKind::Replicated)
        chosen[f].reset();
    // One factor per axis: the heaviest; between equals, one that leaves
    // no partial sum (a product keeps its rows rather than splitting its
    // contraction: context parallelism's scores . values, when the
    // sequence happens to equal the head size), then the first.
    auto sum = [&](size_t f) { return rule.kinds[f] == FactorKind::Sum; };
    for (size_t f = 0; f < chosen.size(); ++f)
      for (size_t g = 0; g < chosen.size(); ++g)
        if (f != g && chosen[f] && chosen[g] && chosen[f]->axis == chosen[g]->axis &&
            (chosen[g]->weight < chosen[f]->weight ||
             (chosen[g]->weight == chosen[f]->weight &&
              (sum(g) != sum(f) ? sum(g) : g > f))))
          chosen[g].reset();
    for (size_t f = 0; f < chosen.size(); ++f)
      if (chosen[f] && !fits(int64_t(f)))
        chosen[f].reset();
  }

  Sharding shardingOf(const ShardingRule::Dims &dims, Value v) {
    ArrayRef<int64_t> s = shape(v);
    Sharding out = Sharding::whole(int64_t(s.size()));
    if (dims.size() != s.size())
      return out;
    for (size_t d = 0; d < dims.size(); ++d)
      for (size_t i = 0; i < dims[d].size(); ++i)
        if (const auto &c = chosen[dims[d][i]])
          out.dims[d] = {c->axis, s[d] / (c->blockSize * stride(rule, dims[d], i, s[d])),
                         c->mirrored};
    return out;
  }
};

} // namespace

OpSharding solveOpSharding(Operation *op, const ShardingRule &rule,
                           ArrayRef<std::optional<Sharding>> operands,
                           ArrayRef<std::optional<Sharding>> results, const Grid &grid,
                           bool resultsFirst, ArrayRef<RankedTensorType> operandTypes) {
  Solver solver(op, rule, grid, operandTypes);
  auto bytes = [&](Value v) {
    ArrayRef<int64_t> s = solver.shape(v);
    int64_t n = 1;
    for (int64_t d : s)
      n *= d;
    auto element = cast<RankedTensorType>(v.getType()).getElementType();
    return double(n) * elementBytes(element);
  };
  for (auto [i, s] : llvm::enumerate(results))
    if (s && i < rule.results.size())
      solver.offer(rule.results[i], op->getResult(i), *s,
                   bytes(op->getResult(i)) + (resultsFirst ? 1e30 : 0));
  for (auto [i, s] : llvm::enumerate(operands))
    if (s && i < rule.operands.size())
      solver.offer(rule.operands[i], op->getOperand(i), *s, bytes(op->getOperand(i)));
  solver.settle();

  OpSharding out;
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    out.operands.push_back(
        i < rule.operands.size()
            ? solver.shardingOf(rule.operands[i], op->getOperand(i))
            : Sharding::whole(int64_t(solver.shape(op->getOperand(i)).size())));
  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    Sharding r = solver.shardingOf(rule.results[i], op->getResult(i));
    // A split factor the result does not have, summed or looked up:
    // the result is a partial over its axis. A parallel factor missing from
    // a result is summed over too (scatter_add's index dims; attention_grad's
    // key gradient sums over the queries): rules mark dims whose values
    // must not be summed Replicated.
    for (size_t f = 0; f < solver.chosen.size(); ++f) {
      const auto &c = solver.chosen[f];
      if (!c || r.partial())
        continue;
      bool inResult = llvm::any_of(rule.results[i], [&](const DimFactors &factors) {
        return llvm::is_contained(factors, int64_t(f));
      });
      if (inResult)
        continue;
      FactorKind kind = rule.kinds[f];
      if (kind == FactorKind::Sum || kind == FactorKind::Gathered ||
          kind == FactorKind::Parallel) {
        r.partialAxis = c->axis;
        r.partialKind = CollectiveReduction::Sum;
      } else if (kind == FactorKind::Max) {
        r.partialAxis = c->axis;
        r.partialKind = CollectiveReduction::Max;
      }
    }
    out.results.push_back(r);
  }
  // Linear ops pass partial sums through when every operand is one.
  if (rule.linear && !operands.empty()) {
    bool allPartial = llvm::all_of(operands, [&](const std::optional<Sharding> &s) {
      return s && s->partial() && s->partialKind == CollectiveReduction::Sum &&
             s->partialAxis == operands[0]->partialAxis;
    });
    if (allPartial && !out.results[0].partial() &&
        out.results[0].dimSplitOver(operands[0]->partialAxis) < 0) {
      for (Sharding &s : out.operands)
        s.partialAxis = operands[0]->partialAxis;
      for (Sharding &s : out.results)
        s.partialAxis = operands[0]->partialAxis;
    }
  }
  return out;
}

} // namespace trc::parallel
