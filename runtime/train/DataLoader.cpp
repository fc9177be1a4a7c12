//===- DataLoader.cpp - token batches from a data file, llm.c style ---------===//
//
// Format detection and header checks, the llm.c cursor, the Feistel
// shuffle permutation and the vocabulary check (see DataLoader.h).
//
//===----------------------------------------------------------------------===//
#include "runtime/train/DataLoader.h"
#include "runtime/support/SplitMix64.h"

#include <cstring>

namespace trc::rt {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the data loader assumes a little-endian host");

namespace {

// Largest B*T accepted (the runtime's element cap).
constexpr int64_t kMaxBatchTokens = int64_t(1) << 40;

int32_t readI32(const unsigned char *p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

} // namespace

int64_t DataLoader::shuffledWindow(int64_t k, int64_t windows, uint64_t seed,
                                   int64_t epoch) {
  if (windows <= 1)
    return 0;
  unsigned bits = 64 - unsigned(__builtin_clzll(uint64_t(windows - 1)));
  if (bits < 2)
    bits = 2;
  bits += bits & 1;
  unsigned half = bits / 2;
  uint64_t mask = (uint64_t(1) << half) - 1;
  uint64_t base = splitmix64(seed ^ splitmix64(uint64_t(epoch)));
  uint64_t keys[6];
  for (int r = 0; r < 6; ++r)
    keys[r] = splitmix64(base + uint64_t(r) * 0x632be59bd9b4e019ULL);
  uint64_t x = uint64_t(k);
  do {
    uint64_t left = x >> half, right = x & mask;
    for (int r = 0; r < 6; ++r) {
      uint64_t f = splitmix64(right ^ keys[r]) & mask;
      uint64_t newLeft = right;
      right = left ^ f;
      left = newLeft;
    }
    x = (left << half) | right;
  } while (x >= uint64_t(windows));
  return int64_t(x);
}

StatusOr<std::unique_ptr<DataLoader>> DataLoader::open(const std::string &path,
                                                       const DataLoaderOptions &options) {
  DataLoaderOptions opt = options;
  if (opt.batchSize <= 0)
    return Status::error(path + ": batch size must be positive, got " +
                         std::to_string(opt.batchSize));
  if (opt.seqLen <= 0)
    return Status::error(path + ": sequence length must be positive, got " +
                         std::to_string(opt.seqLen));
  if (opt.batchSize > kMaxBatchTokens / opt.seqLen)
    return Status::error(path + ": batch size " +
                         std::to_string(opt.batchSize) + " x sequence length " +
                         std::to_string(opt.seqLen) + " is too large");
  if (opt.rowEnd < 0)
    opt.rowEnd = opt.batchSize;
  if (opt.rowBegin < 0 || opt.rowBegin >= opt.rowEnd ||
      opt.rowEnd > opt.batchSize)
    return Status::error(path + ": rows [" + std::to_string(opt.rowBegin) +
                         ", " + std::to_string(opt.rowEnd) +
                         ") are not a non-empty range inside the batch of " +
                         std::to_string(opt.batchSize));
  if (opt.vocabSize < 0)
    return Status::error(path + ": vocabulary size must not be negative, got " +
                         std::to_string(opt.vocabSize));

  std::unique_ptr<DataLoader> dl(new DataLoader());
  dl->path_ = path;
  if (Status s = dl->file_.open(path); !s)
    return s;
  const unsigned char *data = dl->file_.data();
  size_t size = dl->file_.size();
  if (size == 0)
    return Status::error(path + ": the data file is empty");

  if (size >= 4 && readI32(data) == kTokenFileMagic) {
    std::string bad = path + ": bad token-file header: ";
    if (size < kTokenFileHeaderBytes)
      return Status::error(bad + "the file is " + std::to_string(size) +
                           " bytes, shorter than the " +
                           std::to_string(kTokenFileHeaderBytes) +
                           "-byte header");
    int32_t version = readI32(data + 4);
    if (version != kTokenFileVersion)
      return Status::error(bad + "version " + std::to_string(version) +
                           ", expected " + std::to_string(kTokenFileVersion) +
                           " (uint16 tokens)");
    int32_t count = readI32(data + 8);
    if (count <= 0)
      return Status::error(bad + "token count " + std::to_string(count) +
                           " is not positive");
    uint64_t expected = kTokenFileHeaderBytes + 2 * uint64_t(count);
    if (expected != size)
      return Status::error(bad + "it declares " + std::to_string(count) +
                           " tokens (a file of " + std::to_string(expected) +
                           " bytes) but the file is " + std::to_string(size) +
                           " bytes");
    dl->format_ = DataFormat::TokenFile;
    dl->tokens_ = data + kTokenFileHeaderBytes;
    dl->numTokens_ = count;
    dl->vocab_ = 65536;
  } else {
    dl->format_ = DataFormat::Text;
    dl->tokens_ = data;
    dl->numTokens_ = int64_t(size);
    dl->vocab_ = 256;
  }
  if (opt.vocabSize > 0)
    dl->vocab_ = opt.vocabSize;

  dl->options_ = opt;
  dl->batchTokens_ = opt.batchSize * opt.seqLen;
  if (dl->numTokens_ < dl->batchTokens_ + 1)
    return Status::error(
        path + ": " + std::to_string(dl->numTokens_) +
        " tokens are too few for batch size " + std::to_string(opt.batchSize) +
        " x sequence length " + std::to_string(opt.seqLen) +
        " (a step reads B*T+1 = " + std::to_string(dl->batchTokens_ + 1) +
        " tokens)");
  dl->windows_ = (dl->numTokens_ - 1) / dl->batchTokens_;
  return dl;
}

int64_t DataLoader::token(int64_t i) const {
  if (format_ == DataFormat::Text)
    return tokens_[i];
  uint16_t v;
  std::memcpy(&v, tokens_ + 2 * i, 2);
  return v;
}

int64_t DataLoader::nextWindowStart() const {
  if (!options_.shuffle)
    return position_;
  return shuffledWindow(position_ / batchTokens_, windows_, options_.seed,
                        epoch_) *
         batchTokens_;
}

Status DataLoader::next(int64_t *inputs, int64_t *targets) {
  int64_t start = nextWindowStart();
  // Check the whole window, so that every rank fails alike.
  if (vocab_ < (format_ == DataFormat::Text ? 256 : 65536)) {
    for (int64_t i = start; i <= start + batchTokens_; ++i) {
      int64_t t = token(i);
      if (t >= vocab_) {
        int64_t byte = format_ == DataFormat::Text
                           ? i
                           : int64_t(kTokenFileHeaderBytes) + 2 * i;
        return Status::error(path_ + ": token id " + std::to_string(t) +
                             " at token offset " + std::to_string(i) +
                             " (byte " + std::to_string(byte) +
                             ") is not below the vocabulary size " +
                             std::to_string(vocab_));
      }
    }
  }
  const int64_t T = options_.seqLen;
  for (int64_t b = options_.rowBegin; b < options_.rowEnd; ++b) {
    int64_t row = b - options_.rowBegin;
    int64_t first = start + b * T;
    int64_t *in = inputs + row * T;
    int64_t *tg = targets + row * T;
    if (format_ == DataFormat::Text) {
      const unsigned char *p = tokens_ + first;
      for (int64_t t = 0; t < T; ++t) {
        in[t] = p[t];
        tg[t] = p[t + 1];
      }
    } else {
      for (int64_t t = 0; t < T; ++t) {
        in[t] = token(first + t);
        tg[t] = token(first + t + 1);
      }
    }
  }
  // Advance the cursor.
  if (!options_.shuffle) {
    position_ += batchTokens_;
    if (position_ + batchTokens_ + 1 > numTokens_) {
      position_ = 0;
      ++epoch_;
    }
  } else {
    position_ += batchTokens_;
    if (position_ / batchTokens_ >= windows_) {
      position_ = 0;
      ++epoch_;
    }
  }
  return Status::success();
}

DataLoaderState DataLoader::state() const {
  DataLoaderState s;
  s.position = position_;
  s.epoch = epoch_;
  s.batchTokens = batchTokens_;
  s.numTokens = numTokens_;
  s.shuffle = options_.shuffle;
  s.seed = options_.seed;
  return s;
}

Status DataLoader::seek(int64_t position) {
  if (!options_.shuffle) {
    // Compared without adding to `position` (a forged one may be near 2^63).
    if (position < 0 || position > numTokens_ - batchTokens_ - 1)
      return Status::error(
          path_ + ": data position " + std::to_string(position) +
          " is outside the file (a step there reads tokens " +
          std::to_string(position) + " to " +
          std::to_string(position + batchTokens_) + ", the file has " +
          std::to_string(numTokens_) + ")");
  } else if (position < 0 || position % batchTokens_ != 0 ||
             position / batchTokens_ >= windows_) {
    return Status::error(path_ + ": data position " +
                         std::to_string(position) +
                         " is not a multiple of B*T = " +
                         std::to_string(batchTokens_) + " below " +
                         std::to_string(windows_ * batchTokens_) +
                         " (shuffled epochs have " + std::to_string(windows_) +
                         " windows)");
  }
  position_ = position;
  return Status::success();
}

Status DataLoader::restore(const DataLoaderState &s) {
  std::string why;
  if (s.batchTokens != batchTokens_)
    why = "it was saved with B*T = " + std::to_string(s.batchTokens) +
          " tokens per step, this run reads " + std::to_string(batchTokens_);
  else if (s.numTokens != numTokens_)
    why = "the data file had " + std::to_string(s.numTokens) +
          " tokens when it was saved, it has " + std::to_string(numTokens_) +
          " now";
  else if (s.shuffle != options_.shuffle)
    why = std::string("it was saved with shuffle ") +
          (s.shuffle ? "on" : "off") + ", this run has it " +
          (options_.shuffle ? "on" : "off");
  else if (s.shuffle && s.seed != options_.seed)
    why = "it was saved with shuffle seed " + std::to_string(s.seed) +
          ", this run has " + std::to_string(options_.seed);
  else if (s.epoch < 0)
    why = "its epoch " + std::to_string(s.epoch) + " is negative";
  if (!why.empty())
    return Status::error(path_ + ": cannot restore the data position: " + why);
  if (Status st = seek(s.position); !st)
    return st;
  epoch_ = s.epoch;
  return Status::success();
}

} // namespace trc::rt
