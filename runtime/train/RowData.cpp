//===- RowData.cpp - labelled examples as named arrays (--data rows.npz) --===//
//
// Reading, matching and bounds checks of row data, and the row order of
// its batches (see RowData.h).
//
//===----------------------------------------------------------------------===//
#include "runtime/train/RowData.h"

#include "runtime/formats/Npz.h"
#include "runtime/support/Names.h"

#include <cstring>
#include <limits>
#include <sys/stat.h>

namespace trc::rt {
namespace {

/// Element i of an integer array as int64 (u64 above INT64_MAX saturates,
/// which no bound accepts).
bool integerAt(const NamedTensor &a, int64_t i, int64_t &v) {
  const void *p = a.tensor.data();
  switch (a.tensor.dtype) {
  case DType::I1:
  case DType::U8: v = static_cast<const uint8_t *>(p)[i]; return true;
  case DType::I8: v = static_cast<const int8_t *>(p)[i]; return true;
  case DType::I16: v = static_cast<const int16_t *>(p)[i]; return true;
  case DType::U16: v = static_cast<const uint16_t *>(p)[i]; return true;
  case DType::I32: v = static_cast<const int32_t *>(p)[i]; return true;
  case DType::U32: v = static_cast<const uint32_t *>(p)[i]; return true;
  case DType::I64: v = static_cast<const int64_t *>(p)[i]; return true;
  case DType::U64: {
    uint64_t u = static_cast<const uint64_t *>(p)[i];
    v = u > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(u);
    return true;
  }
  default: return false;
  }
}

std::string quoted(const std::string &name) { return "'" + percentEncode(name) + "'"; }

} // namespace

bool isRowData(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return true;
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".npz") == 0;
}

StatusOr<std::unique_ptr<RowDataset>> RowDataset::open(const std::string &path) {
  struct stat st;
  bool folder = ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  StatusOr<std::vector<NamedTensor>> read = folder ? readNpyFolder(path) : readNpzFile(path);
  if (!read.ok())
    return read.status();
  return fromArrays(path, *std::move(read));
}

StatusOr<std::unique_ptr<RowDataset>> RowDataset::fromArrays(const std::string &path,
                                                             std::vector<NamedTensor> arrays) {
  std::unique_ptr<RowDataset> d(new RowDataset());
  d->path_ = path;
  d->arrays_ = std::move(arrays);
  const NamedTensor *first = nullptr;
  for (const NamedTensor &a : d->arrays_) {
    if (a.tensor.shape.empty())
      return Status::error(path + ": array " + quoted(a.name) +
                           " is a scalar; each array holds one row per example along its "
                           "first dimension");
    if (!first) {
      first = &a;
      d->rows_ = a.tensor.shape[0];
    } else if (a.tensor.shape[0] != d->rows_) {
      return Status::error(path + ": ragged first dimensions: array " + quoted(a.name) + " has " +
                           std::to_string(a.tensor.shape[0]) + " rows, array " +
                           quoted(first->name) + " has " + std::to_string(d->rows_) +
                           " (every array holds one row per example)");
    }
  }
  if (d->rows_ == 0)
    return Status::error(path + ": the arrays hold no rows");
  return d;
}

const NamedTensor *RowDataset::find(const std::string &name) const {
  for (const NamedTensor &a : arrays_)
    if (a.name == name)
      return &a;
  return nullptr;
}

size_t RowDataset::rowBytes(const NamedTensor &array) {
  return array.tensor.byteSize() / size_t(array.tensor.shape[0]);
}

void RowDataset::gatherRows(const NamedTensor &array, const int64_t *rowIds, int64_t count,
                            void *out) {
  size_t bytes = rowBytes(array);
  const char *from = static_cast<const char *>(array.tensor.data());
  char *to = static_cast<char *>(out);
  for (int64_t i = 0; i < count; ++i)
    std::memcpy(to + size_t(i) * bytes, from + size_t(rowIds[i]) * bytes, bytes);
}

Status RowDataset::checkValues(const std::string &name, int64_t limit,
                               std::optional<int64_t> allowed, const std::string &what) const {
  const NamedTensor *a = find(name);
  if (!a)
    return Status::error(path_ + ": no array " + quoted(name));
  int64_t perRow = a->tensor.numElements() / rows_, v = 0;
  for (int64_t i = 0, n = a->tensor.numElements(); i < n; ++i) {
    if (!integerAt(*a, i, v))
      return Status::error(path_ + ": array " + quoted(name) + " is " +
                           dtypeName(a->tensor.dtype) + ", expected integers");
    if ((v >= 0 && v < limit) || (allowed && v == *allowed))
      continue;
    std::string where = "row " + std::to_string(i / perRow);
    if (perRow > 1)
      where += ", element " + std::to_string(i % perRow);
    return Status::error(path_ + ": array " + quoted(name) + " " + where + ": " +
                         std::to_string(v) + " " + what);
  }
  return Status::success();
}

StatusOr<std::vector<RowFeed>> matchRowFeeds(const RowDataset &data,
                                             const std::vector<GraphInput> &inputs,
                                             const std::string &lossTargets) {
  const std::string &path = data.path();
  std::vector<RowFeed> feeds;
  std::vector<bool> used(data.arrays().size(), false);
  auto take = [&](const std::string &input, const std::string &array) {
    for (size_t i = 0; i < data.arrays().size(); ++i)
      if (data.arrays()[i].name == array) {
        used[i] = true;
        feeds.push_back({input, &data.arrays()[i]});
        return true;
      }
    return false;
  };
  for (const GraphInput &in : inputs) {
    if (!take(in.name, in.name))
      return Status::error(path + ": no array " + quoted(in.name) + " for the model's input " +
                           quoted(in.name) + " (the arrays are named after the inputs)");
    const NamedTensor &a = *feeds.back().array;
    if (!in.dtype.empty() && in.dtype != dtypeName(a.tensor.dtype))
      return Status::error(path + ": array " + quoted(a.name) + " is " +
                           dtypeName(a.tensor.dtype) + ", the model's input " + quoted(in.name) +
                           " is " + in.dtype);
    bool shapeOk = in.dims.size() == a.tensor.shape.size();
    for (size_t d = 1; shapeOk && d < in.dims.size(); ++d)
      shapeOk = in.dims[d] < 0 || in.dims[d] == a.tensor.shape[d];
    if (!in.dims.empty() && !shapeOk) {
      std::string dims;
      for (size_t d = 0; d < in.dims.size(); ++d)
        dims += (d ? ", " : "") + (in.dims[d] < 0 ? std::string("?") : std::to_string(in.dims[d]));
      return Status::error(path + ": array " + quoted(a.name) + " is " +
                           formatShape(a.tensor.shape) + ", the model's input " +
                           quoted(in.name) + " is [" + dims +
                           "] (rows along the first dimension, the rest the input's)");
    }
  }
  if (!lossTargets.empty()) {
    bool labels = data.find("labels"), targets = data.find("targets");
    if (labels == targets)
      return Status::error(path + ": the loss's targets (--loss) take the array 'labels' or "
                                  "'targets': " +
                           std::string(labels ? "both are there" : "neither is there"));
    take(lossTargets, labels ? "labels" : "targets");
    const NamedTensor &a = *feeds.back().array;
    if (a.tensor.dtype != DType::I64)
      return Status::error(path + ": array " + quoted(a.name) + " is " +
                           dtypeName(a.tensor.dtype) + ", the loss's targets are i64");
  }
  for (size_t i = 0; i < used.size(); ++i)
    if (!used[i])
      return Status::error(path + ": array " + quoted(data.arrays()[i].name) +
                           " matches no input of the model (its inputs: " + [&] {
                             std::string names;
                             for (const GraphInput &in : inputs)
                               names += (names.empty() ? "" : ", ") + quoted(in.name);
                             return names;
                           }() + ")");
  return feeds;
}

Status checkRowValues(const RowDataset &data, const std::vector<RowFeed> &feeds,
                      const TrainingModelInfo &info, std::optional<int64_t> ignoreIndex) {
  for (const RowFeed &feed : feeds) {
    const std::string &array = feed.array->name;
    if (auto table = info.tableRows.find(feed.input); table != info.tableRows.end()) {
      if (Status s = data.checkValues(array, table->second, std::nullopt,
                                      "is not a token id below " + std::to_string(table->second) +
                                          ", the rows of the embedding table input " +
                                          quoted(feed.input) + " indexes");
          !s)
        return s;
    } else if (feed.input == info.labelsInput && info.classes > 0) {
      std::string what = "is not a class of output " + quoted(info.logitsOutput) + " (" +
                         std::to_string(info.classes) + " classes: 0 to " +
                         std::to_string(info.classes - 1);
      if (ignoreIndex)
        what += ", or the ignore index " + std::to_string(*ignoreIndex);
      if (Status s = data.checkValues(array, info.classes, ignoreIndex, what + ")"); !s)
        return s;
    }
  }
  return Status::success();
}

int64_t RowLoader::rowAt(int64_t r) const {
  const int64_t n = data_.rows();
  int64_t k = r % n;
  return shuffle_ ? DataLoader::shuffledWindow(k, n, seed_, r / n) : k;
}

void RowLoader::next(const std::vector<std::pair<const NamedTensor *, void *>> &fills) {
  ids_.resize(size_t(batch_));
  for (int64_t i = 0; i < batch_; ++i)
    ids_[size_t(i)] = rowAt(counter_ + i);
  for (const auto &[array, out] : fills)
    RowDataset::gatherRows(*array, ids_.data(), batch_, out);
  counter_ += batch_;
}

DataLoaderState RowLoader::state() const {
  DataLoaderState s;
  s.position = counter_ % data_.rows();
  s.epoch = counter_ / data_.rows();
  s.batchTokens = batch_;
  s.numTokens = data_.rows();
  s.shuffle = shuffle_;
  s.seed = seed_;
  return s;
}

Status RowLoader::restore(const DataLoaderState &s) {
  std::string why;
  if (s.batchTokens != batch_)
    why = "it was saved with batches of " + std::to_string(s.batchTokens) + " rows, this run " +
          "reads " + std::to_string(batch_);
  else if (s.numTokens != data_.rows())
    why = "the data had " + std::to_string(s.numTokens) + " rows when it was saved, it has " +
          std::to_string(data_.rows()) + " now";
  else if (s.shuffle != shuffle_)
    why = std::string("it was saved with shuffle ") + (s.shuffle ? "on" : "off") +
          ", this run has it " + (shuffle_ ? "on" : "off");
  else if (s.shuffle && s.seed != seed_)
    why = "it was saved with shuffle seed " + std::to_string(s.seed) + ", this run has " +
          std::to_string(seed_);
  else if (s.epoch < 0 || s.position < 0 || s.position >= data_.rows() ||
           s.epoch > (std::numeric_limits<int64_t>::max() - s.position) / data_.rows())
    // The last test keeps the row counter below overflow (a forged epoch).
    why = "its position " + std::to_string(s.position) + " (epoch " + std::to_string(s.epoch) +
          ") is outside the data";
  if (!why.empty())
    return Status::error(data_.path() + ": cannot restore the data position: " + why);
  counter_ = s.epoch * data_.rows() + s.position;
  return Status::success();
}

} // namespace trc::rt
