//===- PipelineIndexTest.cpp - pipeline.trc written and read back ----------===//
//
// formatPipelineIndex's text reads back as the same index, names every
// stage program's folder, and the reader refuses truncated indexes and
// transfers to stages that do not exist, naming the file.
//
//===----------------------------------------------------------------------===//
#include "runtime/spec/PipelineIndex.h"

#include "StatusTesting.h"
#include "TestArtifact.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

using ::testing::HasSubstr;
using namespace trc::rt;
using trc::rt::test::TempDir;

namespace {

PipelineIndex twoRanksTwoChunks() {
  PipelineIndex index;
  index.ranks = 2;
  index.chunks = 2;
  index.transfers = {{"t0", false, 0, 1}, {"t1", true, 3, 2}};
  return index;
}

void writeIndex(const std::string &dir, const std::string &text) {
  std::ofstream(dir + "/" + kPipelineIndexFile) << text;
}

} // namespace

TEST(PipelineIndex, WrittenTextReadsBack) {
  TempDir dir;
  EXPECT_FALSE(isPipelineArtifact(dir.path()));
  std::string text = formatPipelineIndex(twoRanksTwoChunks());
  EXPECT_THAT(text, HasSubstr("program 3 apply stage3/apply\n"));
  EXPECT_THAT(text, HasSubstr("transfer t1 backward 3 2\n"));
  writeIndex(dir.path(), text);
  EXPECT_TRUE(isPipelineArtifact(dir.path()));
  TRC_ASSERT_OK_AND_ASSIGN(PipelineIndex index, readPipelineIndex(dir.path()));
  EXPECT_EQ(index.ranks, 2);
  EXPECT_EQ(index.chunks, 2);
  ASSERT_EQ(index.transfers.size(), 2u);
  EXPECT_EQ(index.transfers[1].id, "t1");
  EXPECT_TRUE(index.transfers[1].backward);
  EXPECT_EQ(index.transfers[1].from, 3);
  EXPECT_EQ(index.transfers[1].to, 2);
  EXPECT_EQ(stageEntryName(3, "apply"), "stage3_apply");
  EXPECT_EQ(stageFolderName(3, "apply"), "stage3/apply");
}

TEST(PipelineIndex, TruncatedOrOutOfRangeIndexesAreErrors) {
  TempDir dir;
  std::string text = formatPipelineIndex(twoRanksTwoChunks());
  writeIndex(dir.path(), text.substr(0, text.size() - 4)); // no "end"
  Status s = readPipelineIndex(dir.path()).status();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("pipeline.trc: not a complete pipeline index"));

  PipelineIndex bad = twoRanksTwoChunks();
  bad.transfers.push_back({"t2", false, 0, 4});
  writeIndex(dir.path(), formatPipelineIndex(bad));
  s = readPipelineIndex(dir.path()).status();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("transfer t2 names a stage outside 0..3"));

  writeIndex(dir.path(), "trc-pipeline 2\nend\n");
  s = readPipelineIndex(dir.path()).status();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("pipeline.trc:1: bad record 'trc-pipeline 2'"));
}
