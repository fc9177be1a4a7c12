//===- TokenWindows.cpp - an eval text as rows of token windows -----------===//
//
// See TokenWindows.h. A DataLoader of one row per batch reads the windows
// in order, so the token formats and their checks are the training data's.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/TokenWindows.h"

#include "runtime/train/DataLoader.h"

#include <algorithm>

namespace trc::rt {

StatusOr<std::unique_ptr<RowDataset>> readTokenWindows(const TokenWindowOptions &o) {
  DataLoaderOptions loader;
  loader.batchSize = 1;
  loader.seqLen = o.seqLen;
  loader.vocabSize = o.vocab;
  StatusOr<std::unique_ptr<DataLoader>> data = DataLoader::open(o.path, loader);
  if (!data.ok())
    return data.status();
  const int64_t windows = (*data)->windowsPerEpoch();
  NamedTensor inputs{o.inputs, {}}, targets{o.targets, {}};
  for (NamedTensor *array : {&inputs, &targets})
    if (Status s = array->tensor.allocate(DType::I64, {windows, o.seqLen}); !s)
      return s;
  for (int64_t w = 0; w < windows; ++w) {
    int64_t *in = inputs.tensor.as<int64_t>() + w * o.seqLen;
    int64_t *next = targets.tensor.as<int64_t>() + w * o.seqLen;
    if (Status s = (*data)->next(in, next); !s)
      return s;
    if (o.targetsAreWindow)
      std::copy_n(in, o.seqLen, next);
  }
  std::vector<NamedTensor> arrays;
  arrays.push_back(std::move(inputs));
  arrays.push_back(std::move(targets));
  return RowDataset::fromArrays(o.path, std::move(arrays));
}

} // namespace trc::rt
