//===- TensorSplit.h - a tensor-parallel parameter's part on one rank -----===//
//
// The one place that maps a full (logical) tensor to the part a tensor rank
// holds, and back (docs/ARTIFACT.md, manifest `split`). A split is
// (dim, blocks, degree): the full tensor's dim `dim` (size N) is `blocks`
// equal contiguous blocks, each cut into `degree` equal contiguous chunks;
// tensor rank t holds, along `dim`, chunk t of block 0, then chunk t of
// block 1, ... (size N / degree); every other dim is whole. blocks = 1 is a
// plain Megatron row/column split; blocks = 3 is a fused QKV weight whose
// rank-local rows are its heads' q, k and v. Mirrored (an even number of
// blocks): rank t holds chunk degree-1-t of the odd blocks, so with two
// blocks of a sequence rank t holds its chunks t and 2*degree-1-t (context
// parallelism's head-tail layout, which evens out causal attention).
//
// Session (loading weights and initializers), DistributedRun (checkpoints,
// export) and the tests all go through these functions.
// Preconditions: checkSplit(fullShape, split) holds for the byte-level
// functions (the HostTensor ones check it themselves).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_SUPPORT_TENSORSPLIT_H
#define TRC_RUNTIME_SUPPORT_TENSORSPLIT_H

#include "runtime/support/Status.h"
#include "runtime/support/Tensor.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace trc::rt {

struct TensorSplit {
  int64_t dim = 0;
  int64_t blocks = 1;
  int64_t degree = 1;
  bool mirrored = false;
};

/// Whether `split` applies to a tensor of `fullShape`: dim in range,
/// blocks and degree >= 1, the dim's size a multiple of blocks x degree,
/// an even number of blocks when mirrored.
Status checkSplit(const std::vector<int64_t> &fullShape, const TensorSplit &split);

/// The shape of one rank's part (the split dim divided by the degree).
std::vector<int64_t> splitPartShape(std::vector<int64_t> fullShape, const TensorSplit &split);

/// Calls `run(fullFirst, partFirst, count)` for each contiguous run of
/// elements rank `index` holds, in the part's order: elements
/// [fullFirst, fullFirst + count) of the flattened full tensor are elements
/// [partFirst, partFirst + count) of the flattened part.
void forEachSplitRun(const std::vector<int64_t> &fullShape, const TensorSplit &split,
                     int64_t index,
                     const std::function<void(int64_t fullFirst, int64_t partFirst,
                                              int64_t count)> &run);

/// Copies rank `index`'s part out of a full tensor's bytes, or (place)
/// puts a part's bytes into its place in the full tensor.
void takeSplitPart(const void *full, void *part, const std::vector<int64_t> &fullShape,
                   size_t elementSize, const TensorSplit &split, int64_t index);
void placeSplitPart(const void *part, void *full, const std::vector<int64_t> &fullShape,
                    size_t elementSize, const TensorSplit &split, int64_t index);

/// Rank `index`'s part of `full` (errors: a split that does not apply, an
/// index outside [0, degree)).
StatusOr<HostTensor> splitPart(const HostTensor &full, const TensorSplit &split, int64_t index);
/// The full tensor of `fullShape` from the `degree` parts in tensor-rank
/// order (errors: a count, dtype or shape that does not fit).
StatusOr<HostTensor> assembleSplit(const std::vector<HostTensor> &parts,
                                   const std::vector<int64_t> &fullShape,
                                   const TensorSplit &split);

} // namespace trc::rt

#endif // TRC_RUNTIME_SUPPORT_TENSORSPLIT_H
