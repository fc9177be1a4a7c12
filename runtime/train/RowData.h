//===- RowData.h - labelled examples as named arrays (--data rows.npz) ----===//
//
// Row data is a set of arrays named after the model's inputs, each with
// one row per example along its first dimension: an .npz file (Npz.h) or
// a folder of NAME.npy files. trc-run --data and --eval-data read it.
//
// RowDataset::open reads every array and checks that there is at least
// one, that none is a scalar, and that all have the same number of rows
// (else "ragged first dimensions", naming two arrays). matchRowFeeds pairs
// the arrays with the step's inputs by name, both ways, and checks each
// array's dtype and row shape against its input. checkValues bounds the
// values of an integer array (token ids against the rows of the embedding
// they index, labels against the class count), naming the array and row.
//
// RowLoader cuts the rows into batches: step s reads the B rows at global
// row counter r = s*B .. s*B+B-1, row counter r being dataset row r mod N
// (so the last batch of an epoch wraps into the next one), or, with
// shuffle, row pi(seed, r / N)(r mod N): DataLoader::shuffledWindow's
// seeded permutation of [0, N), a new one per epoch. The order is a pure
// function of (seed, r), so a checkpoint holds only the counter
// (DataLoaderState: position = r mod N, epoch = r / N, and B and N in its
// batchTokens and numTokens, which restore() checks).
//
// Every message starts with the data's path.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_ROWDATA_H
#define TRC_RUNTIME_TRAIN_ROWDATA_H

#include "runtime/support/Status.h"
#include "runtime/support/Tensor.h"
#include "runtime/train/DataLoader.h"
#include "runtime/train/StepCompiler.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace trc::rt {

/// Whether --data PATH names row data (a .npz file or a folder) rather
/// than a token or text file.
bool isRowData(const std::string &path);

class RowDataset {
public:
  static StatusOr<std::unique_ptr<RowDataset>> open(const std::string &path);
  /// Rows made in memory (token windows of an eval text), checked as open's;
  /// `path` names where they came from in messages.
  static StatusOr<std::unique_ptr<RowDataset>> fromArrays(const std::string &path,
                                                          std::vector<NamedTensor> arrays);

  const std::string &path() const { return path_; }
  int64_t rows() const { return rows_; }
  const std::vector<NamedTensor> &arrays() const { return arrays_; }
  const NamedTensor *find(const std::string &name) const;

  /// Every value of integer array `name` must be in [0, limit), or equal
  /// `allowed`; else an error "PATH: array 'NAME' row R[, element E]:
  /// VALUE " + `what`. A float array is an error.
  Status checkValues(const std::string &name, int64_t limit, std::optional<int64_t> allowed,
                     const std::string &what) const;

  /// Copies rows first, first+1, ... (dataset rows from `rowIds`) of
  /// `array` into `out`, one row after another.
  static void gatherRows(const NamedTensor &array, const int64_t *rowIds, int64_t count,
                         void *out);
  /// The bytes of one row of `array`.
  static size_t rowBytes(const NamedTensor &array);

private:
  std::string path_;
  std::vector<NamedTensor> arrays_;
  int64_t rows_ = 0;
};

/// An input the steps feed from row data: the step's input name and the
/// array it takes.
struct RowFeed {
  std::string input;
  const NamedTensor *array = nullptr;
};

/// Pairs `data`'s arrays with `inputs` (a model's graph inputs) by name:
/// every input needs an array and every array an input, with the input's
/// dtype and, after the first dimension, its rank and static dims. With
/// `lossTargets` (an appended loss, --loss), that input takes the array
/// named "labels" or "targets" instead (exactly one of them).
StatusOr<std::vector<RowFeed>> matchRowFeeds(const RowDataset &data,
                                             const std::vector<GraphInput> &inputs,
                                             const std::string &lossTargets = "");

/// Bounds the values of `feeds`' integer arrays by what the compiler
/// learned of the model (`info`): token ids below the rows of the
/// embedding table their input indexes, labels below the class count of
/// the logits they pair with (`ignoreIndex` allowed: an appended loss's).
Status checkRowValues(const RowDataset &data, const std::vector<RowFeed> &feeds,
                      const TrainingModelInfo &info, std::optional<int64_t> ignoreIndex);

class RowLoader {
public:
  RowLoader(const RowDataset &data, int64_t batchSize, bool shuffle, uint64_t seed)
      : data_(data), batch_(batchSize), shuffle_(shuffle), seed_(seed) {}

  /// The dataset row that global row counter `r` reads (see above).
  int64_t rowAt(int64_t r) const;
  /// Fills each feed's `out` (B rows of its array) with the next batch
  /// and advances.
  void next(const std::vector<std::pair<const NamedTensor *, void *>> &fills);

  DataLoaderState state() const;
  /// Fails (naming the data) if `state` was saved with another batch size,
  /// row count, shuffle or seed, or is out of range.
  Status restore(const DataLoaderState &state);

private:
  const RowDataset &data_;
  int64_t batch_;
  bool shuffle_;
  uint64_t seed_;
  int64_t counter_ = 0; // the global row counter of the next batch
  std::vector<int64_t> ids_;
};

} // namespace trc::rt

#endif // TRC_RUNTIME_TRAIN_ROWDATA_H
