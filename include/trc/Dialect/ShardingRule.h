//===- ShardingRule.h - an op's dims as factors ------------------*- C++ -*-===//
//
// What ShardingRuleOpInterface returns (dialects/Trc/TrcInterfaces.td): the
// op's factors, each with a size and a kind, and for every dim of every
// operand and result the factors it is made of, major to minor. A
// dot_general [b,m,k] x [k,n] -> [b,m,n] has factors b, m, k (summed), n;
// a reshape [2,16,64] -> [2,16,4,16] has factors 2, 16, 4, 16 with the
// operand's dim 2 made of the last two. A dim of size 1 that broadcasts has
// no factors. No MLIR dependencies beyond ADT.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_DIALECT_SHARDINGRULE_H
#define TRC_DIALECT_SHARDINGRULE_H

#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace trc {

enum class FactorKind : uint8_t {
  Parallel,   // each rank computes its part of the dim
  Sum,        // reduced by summation: split, the results are partial sums
  Max,        // reduced by max: split, the results are partial maxima
  Replicated, // must be whole on every rank (a normalized or sorted dim)
  Gathered,   // gather's / scatter_add's table dim: a masked local lookup,
              // the gather's result a partial sum
  Sliced,     // slice / concatenate / pad along it: sizes differ per tensor,
              // splittable only in whole blocks
};

struct ShardingRule {
  using Dims = llvm::SmallVector<llvm::SmallVector<int64_t, 2>, 4>;
  llvm::SmallVector<int64_t> sizes; // per factor (0 for Sliced: per tensor)
  llvm::SmallVector<FactorKind> kinds;
  llvm::SmallVector<Dims> operands, results; // [tensor][dim] -> factors
  // add, sub, neg, convert-free linear ops: operands that are all partial
  // sums over one axis give a partial-sum result without communication.
  bool linear = false;

  int64_t addFactor(int64_t size, FactorKind kind) {
    sizes.push_back(size);
    kinds.push_back(kind);
    return int64_t(sizes.size()) - 1;
  }
};

} // namespace trc

#endif // TRC_DIALECT_SHARDINGRULE_H
