//===- RowDataTest.cpp - labelled rows: checks, matching, batch order ------===//
//
// RowDataset (ragged and scalar arrays refused naming the arrays; value
// bounds naming array, row and element), matchRowFeeds (names both ways,
// dtype, row shape, an appended loss's labels), RowLoader's order (in
// order with wrap-around; shuffled: each epoch a permutation of every row,
// a new one per epoch, the same for the same seed; a restored state
// continues the same rows; a state of other data refused) and logitsSums
// (the evaluator's cross-entropy and argmax accuracy).
//
//===----------------------------------------------------------------------===//
#include "runtime/train/Evaluator.h"
#include "runtime/train/RowData.h"

#include "runtime/formats/Npy.h"

#include "StatusTesting.h"
#include "TestArtifact.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

using ::testing::HasSubstr;
using namespace trc::rt;
using trc::rt::test::TempDir;

namespace {

HostTensor i64(std::vector<int64_t> shape, int64_t scale = 1) {
  HostTensor t;
  EXPECT_TRUE(t.allocate(DType::I64, std::move(shape)));
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.as<int64_t>()[i] = i * scale;
  return t;
}

/// A folder of .npy files: `arrays` by name.
std::unique_ptr<RowDataset> rowsOf(TempDir &dir, const std::vector<NamedTensor> &arrays) {
  for (const NamedTensor &a : arrays)
    EXPECT_TRUE(writeNpyFile(dir.file(a.name + ".npy"), a.tensor));
  StatusOr<std::unique_ptr<RowDataset>> opened = RowDataset::open(dir.path());
  EXPECT_TRUE(opened.ok()) << opened.status().message();
  return opened.ok() ? *std::move(opened) : nullptr;
}

std::string openProblem(TempDir &dir, std::vector<NamedTensor> arrays) {
  for (const NamedTensor &a : arrays)
    EXPECT_TRUE(writeNpyFile(dir.file(a.name + ".npy"), a.tensor));
  StatusOr<std::unique_ptr<RowDataset>> opened = RowDataset::open(dir.path());
  EXPECT_FALSE(opened.ok());
  return opened.ok() ? "" : std::string(opened.status().message());
}

/// Every dataset row of the next `steps` batches.
std::vector<int64_t> rowsRead(RowLoader &loader, const NamedTensor &index, int64_t batch,
                              int64_t steps) {
  std::vector<int64_t> out;
  std::vector<int64_t> buffer(static_cast<size_t>(batch));
  for (int64_t s = 0; s < steps; ++s) {
    loader.next({{&index, static_cast<void *>(buffer.data())}});
    out.insert(out.end(), buffer.begin(), buffer.end());
  }
  return out;
}

} // namespace

TEST(RowData, RaggedAndScalarArraysAreRefusedByName) {
  {
    TempDir dir;
    std::vector<NamedTensor> a;
    a.push_back({"input_ids", i64({5, 3})});
    a.push_back({"labels", i64({4})});
    EXPECT_THAT(openProblem(dir, std::move(a)),
                HasSubstr("ragged first dimensions: array 'labels' has 4 rows, array "
                          "'input_ids' has 5"));
  }
  {
    TempDir dir;
    std::vector<NamedTensor> a;
    a.push_back({"scale", i64({})});
    EXPECT_THAT(openProblem(dir, std::move(a)), HasSubstr("array 'scale' is a scalar"));
  }
  EXPECT_TRUE(isRowData("rows.npz"));
  EXPECT_FALSE(isRowData("tokens.bin"));
}

TEST(RowData, ValuesAreBoundedNamingArrayRowAndElement) {
  TempDir dir;
  std::vector<NamedTensor> a;
  a.push_back({"ids", i64({4, 3})});    // 0..11
  a.push_back({"labels", i64({4}, 1)}); // 0..3
  auto data = rowsOf(dir, a);
  ASSERT_TRUE(data);
  EXPECT_TRUE(data->checkValues("ids", 12, std::nullopt, "too big").ok());
  Status ids = data->checkValues("ids", 11, std::nullopt, "is too big");
  ASSERT_FALSE(ids.ok());
  EXPECT_THAT(ids.message(), HasSubstr("array 'ids' row 3, element 2: 11 is too big"));
  Status labels = data->checkValues("labels", 2, std::nullopt, "is not a class");
  ASSERT_FALSE(labels.ok());
  EXPECT_THAT(labels.message(), HasSubstr("array 'labels' row 2: 2 is not a class"));
  // The ignore index is allowed where it is given.
  TrainingModelInfo info;
  info.labelsInput = "labels";
  info.logitsOutput = "logits";
  info.classes = 3;
  std::vector<RowFeed> feeds{{"labels", data->find("labels")}};
  Status refused = checkRowValues(*data, feeds, info, std::nullopt);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.message(), HasSubstr("row 3: 3 is not a class of output 'logits' (3 "
                                           "classes: 0 to 2)"));
  EXPECT_TRUE(checkRowValues(*data, feeds, info, int64_t(3)).ok());
}

TEST(RowData, ArraysMatchInputsByNameDtypeAndShape) {
  TempDir dir;
  std::vector<NamedTensor> a;
  a.push_back({"input_ids", i64({4, 3})});
  a.push_back({"labels", i64({4})});
  auto data = rowsOf(dir, a);
  ASSERT_TRUE(data);
  GraphInput ids{"input_ids", true, "i64", {-1, -1}}, labels{"labels", true, "i64", {-1}};
  TRC_ASSERT_OK_AND_ASSIGN(std::vector<RowFeed> feeds, matchRowFeeds(*data, {ids, labels}));
  ASSERT_EQ(feeds.size(), 2u);
  EXPECT_EQ(feeds[1].input, "labels");
  EXPECT_EQ(feeds[1].array, data->find("labels"));
  auto problem = [&](std::vector<GraphInput> inputs, const std::string &loss = "") {
    StatusOr<std::vector<RowFeed>> m = matchRowFeeds(*data, inputs, loss);
    EXPECT_FALSE(m.ok());
    return m.ok() ? std::string() : std::string(m.status().message());
  };
  EXPECT_THAT(problem({ids}), HasSubstr("array 'labels' matches no input of the model (its "
                                        "inputs: 'input_ids')"));
  GraphInput mask{"mask", false, "f32", {-1, -1}};
  EXPECT_THAT(problem({ids, labels, mask}),
              HasSubstr("no array 'mask' for the model's input 'mask'"));
  GraphInput ids32{"input_ids", true, "i32", {-1, -1}};
  EXPECT_THAT(problem({ids32, labels}),
              HasSubstr("array 'input_ids' is i64, the model's input 'input_ids' is i32"));
  GraphInput ids5{"input_ids", true, "i64", {-1, 5}};
  EXPECT_THAT(problem({ids5, labels}), HasSubstr("array 'input_ids' is [4, 3], the model's "
                                                 "input 'input_ids' is [?, 5]"));
  // An appended loss's targets take 'labels' (or 'targets').
  TRC_ASSERT_OK_AND_ASSIGN(std::vector<RowFeed> withLoss,
                           matchRowFeeds(*data, {ids}, "loss.targets"));
  ASSERT_EQ(withLoss.size(), 2u);
  EXPECT_EQ(withLoss[1].input, "loss.targets");
  EXPECT_EQ(withLoss[1].array->name, "labels");
}

TEST(RowData, InOrderBatchesWrapAcrossEpochs) {
  TempDir dir;
  std::vector<NamedTensor> a;
  a.push_back({"index", i64({5})});
  auto data = rowsOf(dir, a);
  ASSERT_TRUE(data);
  RowLoader loader(*data, 3, /*shuffle=*/false, 0);
  // Step s reads rows [3s, 3s+3) mod 5.
  EXPECT_EQ(rowsRead(loader, *data->find("index"), 3, 3),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1, 2, 3}));
  DataLoaderState s = loader.state();
  EXPECT_EQ(s.position, 4);
  EXPECT_EQ(s.epoch, 1);
}

TEST(RowData, ShuffledEpochsArePermutationsThatRestoreExactly) {
  TempDir dir;
  const int64_t n = 37, batch = 37;
  std::vector<NamedTensor> a;
  a.push_back({"index", i64({n})});
  auto data = rowsOf(dir, a);
  ASSERT_TRUE(data);
  const NamedTensor &index = *data->find("index");
  RowLoader loader(*data, batch, /*shuffle=*/true, 7);
  std::vector<int64_t> first = rowsRead(loader, index, batch, 1),
                       second = rowsRead(loader, index, batch, 1);
  EXPECT_EQ(std::set<int64_t>(first.begin(), first.end()).size(), size_t(n));
  EXPECT_EQ(std::set<int64_t>(second.begin(), second.end()).size(), size_t(n));
  EXPECT_NE(first, second); // a new order per epoch
  std::vector<int64_t> inOrder(first);
  std::sort(inOrder.begin(), inOrder.end());
  EXPECT_NE(first, inOrder);
  // Same seed, same order; a restored state continues it.
  RowLoader again(*data, batch, true, 7);
  EXPECT_EQ(rowsRead(again, index, batch, 1), first);
  DataLoaderState saved = again.state();
  RowLoader resumed(*data, batch, true, 7);
  ASSERT_TRUE(resumed.restore(saved));
  EXPECT_EQ(rowsRead(resumed, index, batch, 1), second);
  RowLoader otherSeed(*data, batch, true, 8);
  Status refused = otherSeed.restore(saved);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.message(), HasSubstr("saved with shuffle seed 7, this run has 8"));
  RowLoader otherBatch(*data, 4, true, 7);
  EXPECT_THAT(otherBatch.restore(saved).message(), HasSubstr("batches of 37 rows"));
  // Forged positions (the checkpoint's own checksum re-signed): refused,
  // an epoch whose row counter would overflow included.
  for (auto [epoch, position] : {std::pair<int64_t, int64_t>{-1, 0}, {0, n}, {0, -1},
                                 {std::numeric_limits<int64_t>::max(), 0},
                                 {std::numeric_limits<int64_t>::max() / n, n - 1}}) {
    DataLoaderState forged = saved;
    forged.epoch = epoch;
    forged.position = position;
    RowLoader target(*data, batch, true, 7);
    EXPECT_THAT(target.restore(forged).message(), HasSubstr("is outside the data"))
        << epoch << " " << position;
  }
}

TEST(RowData, LogitsSumsAreCrossEntropyAndArgmaxHits) {
  // Row 0: logits (0, ln 3), label 1: p = 3/4, loss -ln(3/4), argmax 1.
  // Row 1: (2, 0), label 1: loss -ln(1/(1+e^2)), argmax 0 (wrong).
  // Row 2: ignored (-100).
  const float logits[] = {0.0f, std::log(3.0f), 2.0f, 0.0f, 5.0f, 1.0f};
  const int64_t labels[] = {1, 1, -100};
  LogitsSums sums = logitsSums(logits, labels, 3, 2, int64_t(-100));
  EXPECT_EQ(sums.counted, 2);
  EXPECT_EQ(sums.correct, 1);
  EXPECT_NEAR(sums.lossSum, -std::log(0.75) + std::log(1.0 + std::exp(2.0)), 1e-6);
  // Ties go to the first maximum.
  const float tie[] = {1.0f, 1.0f};
  const int64_t zero[] = {0};
  EXPECT_EQ(logitsSums(tie, zero, 1, 2, std::nullopt).correct, 1);
}
