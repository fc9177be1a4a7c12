//===- DataLoaderTest.cpp - llm.c-style batches from text and token files ---===//
//
// Batches exactly as llm.c cuts them (text and token files, the wrap to 0),
// row slices of data-parallel ranks, the shuffle permutation (a bijection
// per epoch, a pure function of seed and epoch), checkpoint determinism (a
// loader restored to a saved state reads the same batches as one that ran
// through), and every bad input with its message.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/DataLoader.h"

#include "TestArtifact.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>
#include <set>
#include <vector>

using ::testing::HasSubstr;
using namespace trc::rt;
using trc::rt::test::TempDir;
using trc::rt::test::writeFile;

namespace {

// An llm.c token file: the 256-int32 header, then uint16 tokens.
std::string tokenFile(const std::vector<uint16_t> &tokens, int32_t magic = 20240520,
                      int32_t version = 1, int64_t count = INT64_MIN) {
  std::vector<int32_t> header(256, 0);
  header[0] = magic;
  header[1] = version;
  header[2] = int32_t(count == INT64_MIN ? int64_t(tokens.size()) : count);
  std::string out(reinterpret_cast<const char *>(header.data()), 1024);
  out.append(reinterpret_cast<const char *>(tokens.data()), tokens.size() * 2);
  return out;
}

std::string text(size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i)
    s += char('a' + i % 26);
  return s;
}

struct Batch {
  std::vector<int64_t> inputs, targets;
  bool operator==(const Batch &o) const {
    return inputs == o.inputs && targets == o.targets;
  }
};

Batch next(DataLoader &dl) {
  Batch b;
  b.inputs.assign(size_t(dl.rows() * dl.seqLen()), -1);
  b.targets.assign(size_t(dl.rows() * dl.seqLen()), -1);
  Status s = dl.next(b.inputs.data(), b.targets.data());
  EXPECT_TRUE(s) << s.message();
  return b;
}

std::unique_ptr<DataLoader> open(const std::string &path,
                                 DataLoaderOptions opt) {
  StatusOr<std::unique_ptr<DataLoader>> dl = DataLoader::open(path, opt);
  EXPECT_TRUE(dl.ok()) << dl.status().message();
  return dl.ok() ? *std::move(dl) : nullptr;
}

std::string openError(const std::string &path, DataLoaderOptions opt) {
  Status s = DataLoader::open(path, opt).status();
  return s ? std::string() : s.message();
}

DataLoaderOptions bt(int64_t b, int64_t t) {
  DataLoaderOptions o;
  o.batchSize = b;
  o.seqLen = t;
  return o;
}

} // namespace

TEST(DataLoader, TextBatchesAreLlmCs) {
  TempDir dir;
  std::string path = dir.file("data.txt");
  writeFile(path, text(20)); // a..t
  auto dl = open(path, bt(2, 3));
  ASSERT_TRUE(dl);
  EXPECT_EQ(dl->format(), DataFormat::Text);
  EXPECT_EQ(dl->numTokens(), 20);
  EXPECT_EQ(dl->vocabSize(), 256);
  EXPECT_EQ(dl->windowsPerEpoch(), 3); // (20 - 1) / 6
  Batch b = next(*dl);
  auto c = [](char ch) { return int64_t(ch); };
  EXPECT_EQ(b.inputs, (std::vector<int64_t>{c('a'), c('b'), c('c'), c('d'),
                                             c('e'), c('f')}));
  EXPECT_EQ(b.targets, (std::vector<int64_t>{c('b'), c('c'), c('d'), c('e'),
                                              c('f'), c('g')}));
  EXPECT_EQ(dl->position(), 6);
  b = next(*dl);
  EXPECT_EQ(b.inputs[0], c('g'));
  EXPECT_EQ(b.targets[5], c('m'));
  b = next(*dl); // p = 12 reads tokens 12..18
  EXPECT_EQ(b.inputs[0], c('m'));
  EXPECT_EQ(b.targets[5], c('s'));
  // p = 18: 18 + 7 > 20, so the cursor wrapped to 0 in a new epoch.
  EXPECT_EQ(dl->position(), 0);
  EXPECT_EQ(dl->epoch(), 1);
  EXPECT_EQ(next(*dl).inputs[0], c('a'));
}

TEST(DataLoader, ExactlyOneWindow) {
  TempDir dir;
  std::string path = dir.file("data.txt");
  writeFile(path, text(7));
  auto dl = open(path, bt(2, 3));
  ASSERT_TRUE(dl);
  Batch first = next(*dl);
  EXPECT_EQ(dl->epoch(), 1);
  EXPECT_EQ(next(*dl), first);
  EXPECT_EQ(dl->epoch(), 2);
}

TEST(DataLoader, TokenFileBatches) {
  TempDir dir;
  std::string path = dir.file("data.bin");
  std::vector<uint16_t> tokens;
  for (int i = 0; i < 100; ++i)
    tokens.push_back(uint16_t(1000 + i * 500));
  writeFile(path, tokenFile(tokens));
  DataLoaderOptions opt = bt(3, 4);
  auto dl = open(path, opt);
  ASSERT_TRUE(dl);
  EXPECT_EQ(dl->format(), DataFormat::TokenFile);
  EXPECT_EQ(dl->numTokens(), 100);
  EXPECT_EQ(dl->vocabSize(), 65536);
  for (int step = 0; step < 20; ++step) {
    int64_t p = dl->position();
    Batch b = next(*dl);
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t t = 0; t < 4; ++t) {
        EXPECT_EQ(b.inputs[size_t(r * 4 + t)], tokens[size_t(p + r * 4 + t)]);
        EXPECT_EQ(b.targets[size_t(r * 4 + t)],
                  tokens[size_t(p + r * 4 + t + 1)]);
      }
  }
}

TEST(DataLoader, RowSlicesMakeTheGlobalBatch) {
  TempDir dir;
  std::string path = dir.file("data.txt");
  writeFile(path, text(1000));
  for (bool shuffle : {false, true}) {
    DataLoaderOptions opt = bt(4, 5);
    opt.shuffle = shuffle;
    opt.seed = 3;
    auto whole = open(path, opt);
    opt.rowBegin = 0, opt.rowEnd = 1;
    auto r0 = open(path, opt);
    opt.rowBegin = 1, opt.rowEnd = 4;
    auto r1 = open(path, opt);
    ASSERT_TRUE(whole && r0 && r1);
    EXPECT_EQ(r1->rows(), 3);
    for (int step = 0; step < 120; ++step) {
      Batch w = next(*whole), a = next(*r0), b = next(*r1);
      a.inputs.insert(a.inputs.end(), b.inputs.begin(), b.inputs.end());
      a.targets.insert(a.targets.end(), b.targets.begin(), b.targets.end());
      ASSERT_EQ(a, w) << "step " << step << " shuffle " << shuffle;
    }
  }
}

TEST(DataLoader, ShuffleIsASeededPermutationPerEpoch) {
  for (int64_t windows : {1, 2, 3, 4, 5, 7, 16, 17, 100, 257, 1000}) {
    for (uint64_t seed : {0ull, 1ull, 99ull}) {
      for (int64_t epoch : {0, 1, 5}) {
        std::vector<int64_t> seen;
        for (int64_t k = 0; k < windows; ++k)
          seen.push_back(DataLoader::shuffledWindow(k, windows, seed, epoch));
        std::sort(seen.begin(), seen.end());
        for (int64_t k = 0; k < windows; ++k)
          ASSERT_EQ(seen[size_t(k)], k) << windows << " " << seed << " " << epoch;
      }
    }
  }
  auto order = [](uint64_t seed, int64_t epoch) {
    std::vector<int64_t> v;
    for (int64_t k = 0; k < 100; ++k)
      v.push_back(DataLoader::shuffledWindow(k, 100, seed, epoch));
    return v;
  };
  EXPECT_EQ(order(1, 0), order(1, 0));
  EXPECT_NE(order(1, 0), order(1, 1));
  EXPECT_NE(order(1, 0), order(2, 0));
  std::vector<int64_t> identity(100);
  for (int64_t k = 0; k < 100; ++k)
    identity[size_t(k)] = k;
  EXPECT_NE(order(1, 0), identity);

  // A shuffled loader visits every window once per epoch.
  TempDir dir;
  std::string path = dir.file("data.txt");
  writeFile(path, text(1001)); // 100 windows of 10
  DataLoaderOptions opt = bt(2, 5);
  opt.shuffle = true;
  opt.seed = 42;
  auto dl = open(path, opt);
  ASSERT_TRUE(dl);
  EXPECT_EQ(dl->windowsPerEpoch(), 100);
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    std::set<int64_t> starts;
    for (int k = 0; k < 100; ++k) {
      EXPECT_EQ(dl->epoch(), epoch);
      int64_t start = dl->nextWindowStart();
      Batch b = next(*dl);
      EXPECT_EQ(b.inputs[0], int64_t('a' + start % 26));
      starts.insert(start);
    }
    EXPECT_EQ(starts.size(), 100u);
    EXPECT_EQ(*starts.rbegin(), 990);
  }
  EXPECT_EQ(dl->epoch(), 2);
}

TEST(DataLoader, RestoredLoaderContinuesIdentically) {
  TempDir dir;
  std::string path = dir.file("data.bin");
  std::vector<uint16_t> tokens;
  for (int i = 0; i < 5000; ++i)
    tokens.push_back(uint16_t((i * 7919) % 50257));
  writeFile(path, tokenFile(tokens));
  for (bool shuffle : {false, true}) {
    DataLoaderOptions opt = bt(4, 16);
    opt.vocabSize = 50257;
    opt.shuffle = shuffle;
    opt.seed = 7;
    opt.rowBegin = 1;
    opt.rowEnd = 3;
    auto a = open(path, opt);
    ASSERT_TRUE(a);
    std::vector<Batch> ran;
    DataLoaderState saved;
    // 78 windows per epoch: run across two epoch boundaries.
    for (int step = 0; step < 200; ++step) {
      if (step == 150)
        saved = a->state();
      ran.push_back(next(*a));
    }
    EXPECT_EQ(saved.epoch, 1);
    auto b = open(path, opt);
    ASSERT_TRUE(b);
    Status s = b->restore(saved);
    ASSERT_TRUE(s) << s.message();
    for (int step = 150; step < 200; ++step)
      ASSERT_EQ(next(*b), ran[size_t(step)]) << "step " << step;
    EXPECT_EQ(b->position(), a->position());
    EXPECT_EQ(b->epoch(), a->epoch());
  }
}

TEST(DataLoader, SeekMovesTheCursor) {
  TempDir dir;
  std::string path = dir.file("data.txt");
  writeFile(path, text(100));
  auto dl = open(path, bt(2, 3));
  ASSERT_TRUE(dl);
  ASSERT_TRUE(dl->seek(5));
  EXPECT_EQ(next(*dl).inputs[0], int64_t('f'));
  EXPECT_EQ(dl->position(), 11);
  ASSERT_TRUE(dl->seek(93)); // the last start: 93 + 7 = 100
  next(*dl);
  EXPECT_EQ(dl->position(), 0);
  EXPECT_THAT(
      dl->seek(94).message(),
      HasSubstr("data.txt: data position 94 is outside the file (a step there "
                "reads tokens 94 to 100, the file has 100)"));
  EXPECT_THAT(dl->seek(-1).message(),
              HasSubstr("data position -1 is outside the file"));
  // A forged position near 2^63 (position + B*T overflowed and passed).
  EXPECT_THAT(dl->seek(std::numeric_limits<int64_t>::max() - 3).message(),
              HasSubstr("is outside the file"));

  DataLoaderOptions opt = bt(2, 3);
  opt.shuffle = true;
  auto sh = open(path, opt);
  ASSERT_TRUE(sh);
  EXPECT_TRUE(sh->seek(96 - 6));
  EXPECT_THAT(sh->seek(5).message(),
              HasSubstr("data position 5 is not a multiple of B*T = 6 below 96 "
                        "(shuffled epochs have 16 windows)"));
  EXPECT_THAT(sh->seek(96).message(),
              HasSubstr("data position 96 is not a multiple"));
}

TEST(DataLoader, RejectsMismatchedStates) {
  TempDir dir;
  std::string path = dir.file("data.txt");
  writeFile(path, text(100));
  DataLoaderOptions opt = bt(2, 3);
  opt.shuffle = true;
  opt.seed = 5;
  auto dl = open(path, opt);
  ASSERT_TRUE(dl);
  DataLoaderState good = dl->state();
  auto restoreError = [&](DataLoaderState s) {
    Status st = dl->restore(s);
    return st ? std::string() : st.message();
  };
  DataLoaderState s = good;
  s.batchTokens = 8;
  EXPECT_THAT(
      restoreError(s),
      HasSubstr("data.txt: cannot restore the data position: it was saved with "
                "B*T = 8 tokens per step, this run reads 6"));
  s = good;
  s.numTokens = 99;
  EXPECT_THAT(restoreError(s),
              HasSubstr("the data file had 99 tokens when it was "
                        "saved, it has 100 now"));
  s = good;
  s.shuffle = false;
  EXPECT_THAT(restoreError(s),
              HasSubstr("it was saved with shuffle off, this run has "
                        "it on"));
  s = good;
  s.seed = 6;
  EXPECT_THAT(restoreError(s),
              HasSubstr("it was saved with shuffle seed 6, this run "
                        "has 5"));
  s = good;
  s.epoch = -1;
  EXPECT_THAT(restoreError(s), HasSubstr("its epoch -1 is negative"));
  s = good;
  s.position = 7;
  EXPECT_THAT(restoreError(s), HasSubstr("data position 7 is not a multiple"));
  EXPECT_EQ(restoreError(good), "");
}

TEST(DataLoader, RejectsBadFiles) {
  TempDir dir;
  std::string path;
  EXPECT_THAT(openError(dir.file("missing.txt"), bt(1, 1)),
              HasSubstr("missing.txt: cannot open: No such file or directory"));
  EXPECT_THAT(openError(dir.path(), bt(1, 1)),
              HasSubstr(": not a regular file"));
  writeFile(path = dir.file("empty.txt"), "");
  EXPECT_THAT(openError(path, bt(1, 1)),
              HasSubstr("empty.txt: the data file is empty"));
  writeFile(path = dir.file("short.txt"), text(16));
  EXPECT_THAT(
      openError(path, bt(4, 4)),
      HasSubstr("short.txt: 16 tokens are too few for batch size 4 x sequence "
                "length 4 (a step reads B*T+1 = 17 tokens)"));
  EXPECT_EQ(openError(dir.file("short.txt"), bt(3, 5)), "");

  std::vector<uint16_t> tokens(50, 7);
  writeFile(path = dir.file("v2.bin"), tokenFile(tokens, 20240520, 2));
  EXPECT_THAT(
      openError(path, bt(1, 1)),
      HasSubstr("v2.bin: bad token-file header: version 2, expected 1 (uint16 "
                "tokens)"));
  writeFile(path = dir.file("zero.bin"), tokenFile({}, 20240520, 1, 0));
  EXPECT_THAT(
      openError(path, bt(1, 1)),
      HasSubstr(
          "zero.bin: bad token-file header: token count 0 is not positive"));
  writeFile(path = dir.file("neg.bin"), tokenFile(tokens, 20240520, 1, -3));
  EXPECT_THAT(openError(path, bt(1, 1)),
              HasSubstr("token count -3 is not positive"));
  writeFile(path = dir.file("long.bin"), tokenFile(tokens, 20240520, 1, 60));
  EXPECT_THAT(
      openError(path, bt(1, 1)),
      HasSubstr(
          "long.bin: bad token-file header: it declares 60 tokens (a file "
          "of 1144 bytes) but the file is 1124 bytes"));
  writeFile(path = dir.file("extra.bin"), tokenFile(tokens) + "x");
  EXPECT_THAT(
      openError(path, bt(1, 1)),
      HasSubstr("it declares 50 tokens (a file of 1124 bytes) but the file is "
                "1125 bytes"));
  writeFile(path = dir.file("cut.bin"), tokenFile(tokens).substr(0, 600));
  EXPECT_THAT(
      openError(path, bt(1, 1)),
      HasSubstr(
          "cut.bin: bad token-file header: the file is 600 bytes, shorter "
          "than the 1024-byte header"));
  // Another magic is text (its bytes are tokens).
  writeFile(path = dir.file("other.bin"), tokenFile(tokens, 20240521));
  auto dl = open(path, bt(1, 1));
  ASSERT_TRUE(dl);
  EXPECT_EQ(dl->format(), DataFormat::Text);
  EXPECT_EQ(dl->numTokens(), 1124);
}

TEST(DataLoader, RejectsTokensOutsideTheVocabulary) {
  TempDir dir;
  std::string path = dir.file("data.txt");
  std::string t = text(40);
  t[25] = char(200);
  writeFile(path, t);
  DataLoaderOptions opt = bt(2, 4);
  opt.vocabSize = 128;
  auto dl = open(path, opt);
  ASSERT_TRUE(dl);
  next(*dl);
  next(*dl);
  next(*dl); // tokens 16..24: fine
  std::vector<int64_t> in(8), tg(8);
  Status s = dl->next(in.data(), tg.data()); // tokens 24..32
  EXPECT_EQ(s.message(), path + ": token id 200 at token offset 25 (byte 25) "
                                "is not below the vocabulary size 128");
  EXPECT_EQ(dl->position(), 24); // did not advance

  std::vector<uint16_t> tokens(30, 5);
  tokens[29] = 50257;
  writeFile(path = dir.file("data.bin"), tokenFile(tokens));
  opt = bt(1, 28);
  opt.vocabSize = 50257;
  dl = open(path, opt);
  ASSERT_TRUE(dl);
  next(*dl); // tokens 0..28
  ASSERT_TRUE(dl->seek(1));
  s = dl->next(in.data(), tg.data());
  EXPECT_EQ(s.message(), path + ": token id 50257 at token offset 29 (byte "
                                "1082) is not below the vocabulary size 50257");
  // Rows of other ranks are checked too (every rank fails alike).
  opt = bt(2, 14);
  opt.vocabSize = 50257;
  opt.rowEnd = 1;
  dl = open(path, opt);
  ASSERT_TRUE(dl);
  ASSERT_TRUE(dl->seek(1));
  EXPECT_FALSE(dl->next(in.data(), tg.data()));
}

TEST(DataLoader, RejectsBadOptions) {
  TempDir dir;
  std::string path = dir.file("data.txt");
  writeFile(path, text(100));
  EXPECT_THAT(openError(path, bt(0, 4)),
              HasSubstr("data.txt: batch size must be positive, got 0"));
  EXPECT_THAT(openError(path, bt(2, -1)),
              HasSubstr("data.txt: sequence length must be positive, got -1"));
  EXPECT_THAT(
      openError(path, bt(int64_t(1) << 30, int64_t(1) << 30)),
      HasSubstr(
          "batch size 1073741824 x sequence length 1073741824 is too large"));
  DataLoaderOptions opt = bt(4, 4);
  opt.rowBegin = 2, opt.rowEnd = 2;
  EXPECT_THAT(
      openError(path, opt),
      HasSubstr("data.txt: rows [2, 2) are not a non-empty range inside the "
                "batch of 4"));
  opt.rowBegin = 0, opt.rowEnd = 5;
  EXPECT_THAT(openError(path, opt), HasSubstr("rows [0, 5) are not"));
  opt.rowBegin = -1, opt.rowEnd = 2;
  EXPECT_THAT(openError(path, opt), HasSubstr("rows [-1, 2) are not"));
  opt = bt(4, 4);
  opt.vocabSize = -5;
  EXPECT_THAT(openError(path, opt),
              HasSubstr("vocabulary size must not be negative, got -5"));
}
