//===- CausalMask.h - proving an attention mask hides later keys -*- C++ -*-===//
//
// Context parallelism's causal load balancing skips the blocks of scores
// whose keys come after every query of the block (trc-ring-attention).
// That is exact only where the mask hides them: this proves it at compile
// time, before partitioning, by bounding the mask over boxes of indices
// from what is known (constants, iota, frozen parameters' initial values;
// graph inputs such as a padding mask are unknown, and `or` with a known
// true, `and` with a known false, settle an element anyway). A mask
// combining a causal mask with a padding mask is proven; one that depends
// on the data where a later key would be visible is not.
// Preconditions: static shapes; `func` is a whole (unpartitioned) function
// of the module holding its parameters.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PARALLEL_CAUSALMASK_H
#define TRC_PARALLEL_CAUSALMASK_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Value.h"

namespace trc::parallel {

/// Whether `mask` (an attention's, [..., T, T]; an element equal to
/// `fillWhereTrue` hides its key) hides, for every query position q, every
/// key position k in a later chunk of `chunk` positions (k / chunk >
/// q / chunk). False when not proven (unknown elements, a broadcast query
/// or key dim, a non-square mask).
bool hidesLaterChunks(mlir::func::FuncOp func, mlir::Value mask, bool fillWhereTrue,
                      int64_t chunk);

} // namespace trc::parallel

#endif // TRC_PARALLEL_CAUSALMASK_H
