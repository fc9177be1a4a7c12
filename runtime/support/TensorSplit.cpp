//===- TensorSplit.cpp - a tensor-parallel parameter's part on one rank ---===//
//
// See TensorSplit.h. Viewed as [outer, N, inner] (the dims before, at and
// after the split dim), rank t's part is, for each outer index and each
// block b, the rows [b*N/blocks + k*c, b*N/blocks + (k+1)*c) with
// c = N / (blocks * degree) and k = t (degree-1-t in a mirrored split's odd
// blocks): one contiguous run of c * inner elements.
//
//===----------------------------------------------------------------------===//
#include "runtime/support/TensorSplit.h"

#include <cstring>

namespace trc::rt {

Status checkSplit(const std::vector<int64_t> &fullShape, const TensorSplit &split) {
  if (split.dim < 0 || split.dim >= int64_t(fullShape.size()))
    return Status::error("split dim " + std::to_string(split.dim) + " is not a dim of " +
                         formatShape(fullShape));
  if (split.blocks < 1 || split.degree < 1)
    return Status::error("split blocks " + std::to_string(split.blocks) + " and degree " +
                         std::to_string(split.degree) + " must be at least 1");
  if (split.mirrored && split.blocks % 2)
    return Status::error("a mirrored split needs an even number of blocks, got " +
                         std::to_string(split.blocks));
  int64_t n = fullShape[size_t(split.dim)];
  if (n % (split.blocks * split.degree) != 0)
    return Status::error("dim " + std::to_string(split.dim) + " of " + formatShape(fullShape) +
                         " (" + std::to_string(n) + ") is not " + std::to_string(split.blocks) +
                         " block(s) of " + std::to_string(split.degree) + " equal chunks");
  return Status::success();
}

std::vector<int64_t> splitPartShape(std::vector<int64_t> fullShape, const TensorSplit &split) {
  fullShape[size_t(split.dim)] /= split.degree;
  return fullShape;
}

void forEachSplitRun(const std::vector<int64_t> &fullShape, const TensorSplit &split,
                     int64_t index,
                     const std::function<void(int64_t, int64_t, int64_t)> &run) {
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < int64_t(fullShape.size()); ++i) {
    if (i < split.dim)
      outer *= fullShape[size_t(i)];
    else if (i > split.dim)
      inner *= fullShape[size_t(i)];
  }
  const int64_t n = fullShape[size_t(split.dim)];
  const int64_t blockRows = n / split.blocks, chunkRows = blockRows / split.degree;
  const int64_t count = chunkRows * inner;
  if (count == 0)
    return;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t b = 0; b < split.blocks; ++b)
      run((o * n + b * blockRows +
           (split.mirrored && b % 2 ? split.degree - 1 - index : index) * chunkRows) *
              inner,
          (o * (n / split.degree) + b * chunkRows) * inner, count);
}

void takeSplitPart(const void *full, void *part, const std::vector<int64_t> &fullShape,
                   size_t elementSize, const TensorSplit &split, int64_t index) {
  forEachSplitRun(fullShape, split, index, [&](int64_t fullFirst, int64_t partFirst, int64_t n) {
    std::memcpy(static_cast<char *>(part) + size_t(partFirst) * elementSize,
                static_cast<const char *>(full) + size_t(fullFirst) * elementSize,
                size_t(n) * elementSize);
  });
}

void placeSplitPart(const void *part, void *full, const std::vector<int64_t> &fullShape,
                    size_t elementSize, const TensorSplit &split, int64_t index) {
  forEachSplitRun(fullShape, split, index, [&](int64_t fullFirst, int64_t partFirst, int64_t n) {
    std::memcpy(static_cast<char *>(full) + size_t(fullFirst) * elementSize,
                static_cast<const char *>(part) + size_t(partFirst) * elementSize,
                size_t(n) * elementSize);
  });
}

StatusOr<HostTensor> splitPart(const HostTensor &full, const TensorSplit &split, int64_t index) {
  if (Status s = checkSplit(full.shape, split); !s)
    return s;
  if (index < 0 || index >= split.degree)
    return Status::error("tensor rank " + std::to_string(index) + " has no part of a split over " +
                         std::to_string(split.degree) + " ranks");
  HostTensor part;
  if (Status s = part.allocate(full.dtype, splitPartShape(full.shape, split)); !s)
    return s;
  takeSplitPart(full.data(), part.data(), full.shape, dtypeSize(full.dtype), split, index);
  return part;
}

StatusOr<HostTensor> assembleSplit(const std::vector<HostTensor> &parts,
                                   const std::vector<int64_t> &fullShape,
                                   const TensorSplit &split) {
  if (Status s = checkSplit(fullShape, split); !s)
    return s;
  if (int64_t(parts.size()) != split.degree)
    return Status::error("a split over " + std::to_string(split.degree) + " ranks needs " +
                         std::to_string(split.degree) + " parts, got " +
                         std::to_string(parts.size()));
  std::vector<int64_t> partShape = splitPartShape(fullShape, split);
  HostTensor full;
  if (parts.empty())
    return full;
  if (Status s = full.allocate(parts[0].dtype, fullShape); !s)
    return s;
  for (size_t t = 0; t < parts.size(); ++t) {
    if (parts[t].dtype != full.dtype || parts[t].shape != partShape)
      return Status::error("part " + std::to_string(t) + " is " +
                           formatType(parts[t].dtype, parts[t].shape) + ", expected " +
                           formatType(full.dtype, partShape));
    placeSplitPart(parts[t].data(), full.data(), fullShape, dtypeSize(full.dtype), split,
                   int64_t(t));
  }
  return full;
}

} // namespace trc::rt
