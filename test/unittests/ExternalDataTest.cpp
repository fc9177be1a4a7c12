//===- ExternalDataTest.cpp - where external data may come from ------------===//
//
// ExternalDataReader must read only regular files inside the model's folder,
// and only ranges that exist.
//
//===----------------------------------------------------------------------===//
#include "ExternalData.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

using trc::import::ExternalBytes;
using trc::import::ExternalDataReader;

namespace {

class ExternalDataTest : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/trc-external-XXXXXX";
    root_ = mkdtemp(pattern);
    modelDir_ = root_ + "/model";
    ASSERT_EQ(system(("mkdir -p " + modelDir_ + "/sub").c_str()), 0);
    write(modelDir_ + "/weights.bin", "0123456789abcdef");
    write(modelDir_ + "/sub/more.bin", "ABCDEFGH");
    write(root_ + "/secret.bin", "do not read this");
    ASSERT_EQ(symlink((root_ + "/secret.bin").c_str(), (modelDir_ + "/escape.bin").c_str()),
              0);
    ASSERT_EQ(symlink((modelDir_ + "/weights.bin").c_str(),
                      (modelDir_ + "/inside.bin").c_str()),
              0);
  }
  void TearDown() override { (void)system(("rm -rf " + root_).c_str()); }

  static void write(const std::string &path, const std::string &text) {
    std::ofstream(path) << text;
  }
  bool read(const std::string &location, int64_t offset, int64_t length,
            int64_t expected, std::string &out, std::string &error) {
    ExternalDataReader reader(modelDir_);
    ExternalBytes bytes;
    if (!reader.read(location, offset, length, expected, bytes, error))
      return false;
    out.assign(bytes.bytes.begin(), bytes.bytes.end());
    return true;
  }

  std::string root_, modelDir_;
};

TEST_F(ExternalDataTest, ReadsRangesInsideTheFolder) {
  std::string out, error;
  ASSERT_TRUE(read("weights.bin", 4, 8, 8, out, error)) << error;
  EXPECT_EQ(out, "456789ab");
  ASSERT_TRUE(read("sub/more.bin", 0, -1, 8, out, error)) << error;
  EXPECT_EQ(out, "ABCDEFGH");
  // A symlink that stays inside the folder is fine.
  ASSERT_TRUE(read("inside.bin", 0, 4, 4, out, error)) << error;
  EXPECT_EQ(out, "0123");
}

TEST_F(ExternalDataTest, RefusesPathsLeavingTheFolder) {
  std::string out, error;
  EXPECT_FALSE(read(root_ + "/secret.bin", 0, 4, 4, out, error));
  EXPECT_NE(error.find("absolute path"), std::string::npos) << error;
  EXPECT_FALSE(read("../secret.bin", 0, 4, 4, out, error));
  EXPECT_NE(error.find("leaves the model's folder"), std::string::npos) << error;
  EXPECT_FALSE(read("sub/../../secret.bin", 0, 4, 4, out, error));
  EXPECT_NE(error.find("leaves the model's folder"), std::string::npos) << error;
  EXPECT_FALSE(read("escape.bin", 0, 4, 4, out, error));
  EXPECT_NE(error.find("outside the model's folder"), std::string::npos) << error;
}

TEST_F(ExternalDataTest, RefusesShortMissingAndOddFiles) {
  std::string out, error;
  EXPECT_FALSE(read("weights.bin", 10, 8, 8, out, error));
  EXPECT_NE(error.find("shorter than declared"), std::string::npos) << error;
  EXPECT_FALSE(read("weights.bin", 0, 4, 8, out, error));
  EXPECT_NE(error.find("needs 8 bytes"), std::string::npos) << error;
  EXPECT_FALSE(read("nope.bin", 0, 4, 4, out, error));
  EXPECT_NE(error.find("does not exist"), std::string::npos) << error;
  EXPECT_FALSE(read("sub", 0, 4, 4, out, error));
  EXPECT_NE(error.find("not a regular file"), std::string::npos) << error;
  EXPECT_FALSE(read("weights.bin", -1, 4, 4, out, error));
}

TEST(ExternalDataInMemory, ModelsWithoutAFolderReadNothing) {
  ExternalDataReader reader("");
  ExternalBytes bytes;
  std::string error;
  EXPECT_FALSE(reader.read("weights.bin", 0, 4, 4, bytes, error));
  EXPECT_NE(error.find("not in a file"), std::string::npos) << error;
}

} // namespace
