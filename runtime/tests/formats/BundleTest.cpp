//===- BundleTest.cpp - packing an artifact folder into one file ------------===//
//
// packBundle's exact layout and its round trip through unpackBundle, and
// failures injected through FileSystemHooks (FailingFileSystem.h): a pack
// that runs out of space, or whose fsync or rename fails, leaves an existing
// bundle intact and no temp file; a failed unpack leaves only whole members,
// each listed for the caller to remove.
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/Bundle.h"

#include "FailingFileSystem.h"
#include "TestArtifact.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

using ::testing::HasSubstr;
using namespace trc::rt;
using namespace trc::rt::test;

namespace {

std::vector<std::string> names(const std::string &dir) {
  std::vector<std::string> out;
  for (const auto &e : std::filesystem::directory_iterator(dir))
    out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// An artifact folder (the bundle does not look inside the files).
void writeFolder(const std::string &dir, char fill) {
  writeFile(dir + "/manifest.trc", "trc-artifact 1\n");
  writeFile(dir + "/program.so", std::string(3000, fill));
  writeFile(dir + "/weights.bin", std::string(5000, char(fill + 1)));
  writeFile(dir + "/kernels.sm_90.cubin", std::string(700, char(fill + 2)));
}

} // namespace

TEST(Bundle, PacksAndUnpacks) {
  TempDir src, out, back;
  writeFolder(src.path(), 'a');
  std::string bundle = out.file("a.trc");
  ASSERT_TRUE(packBundle(src.path(), bundle));
  EXPECT_EQ(readFile(bundle),
            "trc-bundle 2\nmanifest.trc 15\nprogram.so 3000\nweights.bin 5000\n"
            "kernels.sm_90.cubin 700\nend\ntrc-artifact 1\n" +
                std::string(3000, 'a') + std::string(5000, 'b') +
                std::string(700, 'c'));
  EXPECT_EQ(names(out.path()), std::vector<std::string>{"a.trc"});
  std::vector<std::string> written;
  ASSERT_TRUE(unpackBundle(bundle, back.path(), &written));
  EXPECT_EQ(written, (std::vector<std::string>{"manifest.trc", "program.so",
                                               "weights.bin",
                                               "kernels.sm_90.cubin"}));
  for (const std::string &name : written)
    EXPECT_EQ(readFile(back.file(name)), readFile(src.file(name))) << name;
}

TEST(Bundle, FailedPackLeavesTheOldBundle) {
  TempDir a, b, out;
  writeFolder(a.path(), 'a');
  writeFolder(b.path(), 'x');
  std::string bundle = out.file("m.trc");
  ASSERT_TRUE(packBundle(a.path(), bundle));
  std::string old = readFile(bundle);

  FailingFs probe;
  TempDir other;
  ASSERT_TRUE(packBundle(b.path(), other.file("m.trc"), probe));
  EXPECT_EQ(probe.written, old.size());
  for (uint64_t budget = 0; budget < probe.written;
       budget += budget < 128 ? 1 : 61) {
    FailingFs fs;
    fs.budget = int64_t(budget);
    Status s = packBundle(b.path(), bundle, fs);
    ASSERT_FALSE(s) << "budget " << budget;
    EXPECT_THAT(s.message(), HasSubstr("write failed: No space left on device"))
        << s.message();
    ASSERT_EQ(names(out.path()), std::vector<std::string>{"m.trc"});
    ASSERT_EQ(readFile(bundle), old);
  }
  for (int i = 0; i < probe.fsyncs; ++i) {
    FailingFs fs;
    fs.failFsyncAt = i;
    EXPECT_FALSE(packBundle(b.path(), bundle, fs));
    EXPECT_EQ(names(out.path()), std::vector<std::string>{"m.trc"});
  }
  for (int i = 0; i < probe.renames; ++i) {
    FailingFs fs;
    fs.failRenameAt = i;
    EXPECT_FALSE(packBundle(b.path(), bundle, fs));
    EXPECT_EQ(names(out.path()), std::vector<std::string>{"m.trc"});
  }
  EXPECT_EQ(readFile(bundle), old);
  ASSERT_TRUE(packBundle(b.path(), bundle));
  EXPECT_NE(readFile(bundle), old);
}

TEST(Bundle, FailedUnpackLeavesOnlyWholeListedMembers) {
  TempDir src, out;
  writeFolder(src.path(), 'a');
  std::string bundle = out.file("a.trc");
  ASSERT_TRUE(packBundle(src.path(), bundle));
  // Space for the manifest and the program, not the weights.
  for (int64_t budget : {int64_t(0), int64_t(15), int64_t(3015), int64_t(6000)}) {
    TempDir dir;
    FailingFs fs;
    fs.budget = budget;
    std::vector<std::string> written;
    Status s = unpackBundle(bundle, dir.path(), &written, fs);
    ASSERT_FALSE(s) << budget;
    EXPECT_THAT(s.message(), HasSubstr("write failed: No space left on device"))
        << s.message();
    std::vector<std::string> sorted = written;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(names(dir.path()), sorted) << "budget " << budget;
    EXPECT_EQ(written.size(), budget < 15 ? 0u : budget < 3015 ? 1u : 2u);
    for (const std::string &name : written)
      EXPECT_EQ(readFile(dir.file(name)), readFile(src.file(name)));
  }
}
