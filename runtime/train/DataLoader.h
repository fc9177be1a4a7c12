//===- DataLoader.h - token batches from a data file, llm.c style -----------===//
//
// A DataLoader memory-maps one data file and cuts it into training batches.
//
// File formats (chosen by content):
//   * llm.c token file: a header of 256 little-endian int32 whose first is
//     the magic 20240520; header[1] is the version (must be 1), header[2]
//     the token count N (> 0); then N little-endian uint16 tokens. The file
//     must be exactly 1024 + 2*N bytes. A file starting with the magic that
//     breaks any of this is an error ("bad token-file header: ...").
//   * anything else is text: every byte is one token (vocabulary 256).
//
// Batching (llm.c's): with B = batchSize and T = seqLen, a step reads the
// B*T+1 tokens at the cursor p; row b's inputs are tokens [p+b*T, p+b*T+T)
// and its targets tokens [p+b*T+1, p+b*T+T+1). Then p advances by B*T and
// wraps to 0 (a new epoch) when fewer than B*T+1 tokens remain after it.
// An epoch is therefore W = floor((N-1) / (B*T)) windows, at token offsets
// 0, B*T, 2*B*T, ... (and N must be at least B*T+1).
//
// Shuffle (optional): epoch e visits the same W windows in the order of a
// seeded permutation: step k of the epoch reads window pi(seed, e)(k) *
// B*T. pi is a bijection of [0, W) computed per index, without tables:
// a 6-round balanced Feistel network on the smallest even number of bits
// 2h >= 2 with 2^(2h) >= W, with cycle-walking (apply again until the value
// is below W); its round function is the SplitMix64 finalizer keyed by
// SplitMix64 of (seed, epoch, round). So the order is a pure function of
// (seed, epoch, k): a checkpoint needs only the epoch and k.
//
// Data parallelism: every rank opens the file with the same global B and
// reads rows [rowBegin, rowEnd) of each global batch; the union of the
// ranks' rows is exactly the 1-device batch.
//
// Validation: missing or empty file, too few tokens, bad header and bad
// options fail open(); a token id not below vocabSize fails next(), which
// checks the whole window of B*T+1 tokens (so every rank fails alike) and
// names the file and the token's offset. Every message starts with the
// file's path.
//
// Checkpoints: state() is the cursor, the epoch and what they depend on
// (B*T, N, shuffle, seed); restore() refuses a state saved with different
// ones. The cursor is a token offset in epoch order: the next window's
// start without shuffle, k*B*T with it.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_DATALOADER_H
#define TRC_RUNTIME_DATALOADER_H

#include "runtime/formats/FileOps.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <memory>
#include <string>

namespace trc::rt {

enum class DataFormat { Text, TokenFile };

struct DataLoaderOptions {
  int64_t batchSize = 0; // B, the global batch
  int64_t seqLen = 0;    // T
  // This rank reads rows [rowBegin, rowEnd) of each batch (-1: B).
  int64_t rowBegin = 0;
  int64_t rowEnd = -1;
  // Tokens must be below this (0: the format's range, 256 or 65536).
  int64_t vocabSize = 0;
  bool shuffle = false;
  uint64_t seed = 0;
};

struct DataLoaderState {
  int64_t position = 0; // the cursor (see above)
  int64_t epoch = 0;
  // What the cursor depends on; restore() checks them.
  int64_t batchTokens = 0; // B*T
  int64_t numTokens = 0;
  bool shuffle = false;
  uint64_t seed = 0;
};

class DataLoader {
public:
  static constexpr int32_t kTokenFileMagic = 20240520;
  static constexpr int32_t kTokenFileVersion = 1;
  static constexpr size_t kTokenFileHeaderBytes = 256 * 4;

  /// A loader of `path` (see above for the formats and what is checked).
  static StatusOr<std::unique_ptr<DataLoader>> open(const std::string &path,
                                                    const DataLoaderOptions &options);

  // Fills `inputs` and `targets`, each rows() x T int64 row-major, with the
  // next batch and advances. On error the loader does not advance.
  Status next(int64_t *inputs, int64_t *targets);

  const std::string &path() const { return path_; }
  DataFormat format() const { return format_; }
  int64_t numTokens() const { return numTokens_; }
  int64_t vocabSize() const { return vocab_; }
  int64_t batchSize() const { return options_.batchSize; }
  int64_t seqLen() const { return options_.seqLen; }
  int64_t rows() const { return options_.rowEnd - options_.rowBegin; }
  int64_t batchTokens() const { return batchTokens_; }
  int64_t windowsPerEpoch() const { return windows_; }

  int64_t position() const { return position_; }
  int64_t epoch() const { return epoch_; }
  // Token offset of the window the next call to next() reads.
  int64_t nextWindowStart() const;
  // Token i of the file (0 <= i < numTokens()).
  int64_t token(int64_t i) const;

  DataLoaderState state() const;
  // Moves the cursor within the current epoch. Without shuffle: any
  // position with position + B*T + 1 <= N; with shuffle: a multiple of B*T
  // below W*B*T.
  Status seek(int64_t position);
  // Restores a state from state(); fails (naming the file) if it was saved
  // with another B*T, token count, shuffle or seed, or is out of range.
  Status restore(const DataLoaderState &state);

  // The shuffle permutation: window of step k (< windows) in `epoch`.
  static int64_t shuffledWindow(int64_t k, int64_t windows, uint64_t seed,
                                int64_t epoch);

private:
  DataLoader() = default;

  std::string path_;
  DataLoaderOptions options_;
  MappedFile file_;
  DataFormat format_ = DataFormat::Text;
  const unsigned char *tokens_ = nullptr; // first token byte
  int64_t numTokens_ = 0;
  int64_t vocab_ = 0;
  int64_t batchTokens_ = 0;
  int64_t windows_ = 0;
  int64_t position_ = 0;
  int64_t epoch_ = 0;
};

} // namespace trc::rt

#endif // TRC_RUNTIME_DATALOADER_H
