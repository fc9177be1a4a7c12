//===- ChecksumTest.cpp - FNV-1a 64 -----------------------------------------===//
//
// Published FNV-1a 64 test vectors, incremental == one-shot hashing, and the
// 16-hex-digit spelling used by the manifest.
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/Checksum.h"

#include <gtest/gtest.h>

#include <string>

using namespace trc::rt;

TEST(Checksum, KnownVectors) {
  EXPECT_EQ(fnv1a64("", 0), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a", 1), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar", 6), 0x85944171f73967e8ULL);
}

TEST(Checksum, IncrementalMatchesOneShot) {
  std::string data;
  for (int i = 0; i < 10000; ++i)
    data += char(i * 31 + 7);
  Fnv1a64 h;
  h.update(data.data(), 1);
  h.update(data.data() + 1, 4096);
  h.update(data.data() + 4097, data.size() - 4097);
  EXPECT_EQ(h.value(), fnv1a64(data.data(), data.size()));
}

TEST(Checksum, OneFlippedBitChangesTheHash) {
  std::string data(1000, 'x');
  uint64_t before = fnv1a64(data.data(), data.size());
  data[500] ^= 1;
  EXPECT_NE(before, fnv1a64(data.data(), data.size()));
}

TEST(Checksum, HexSpelling) {
  EXPECT_EQ(toHex16(0), "0000000000000000");
  EXPECT_EQ(toHex16(0xcbf29ce484222325ULL), "cbf29ce484222325");
  uint64_t v = 0;
  ASSERT_TRUE(parseHex16("cbf29ce484222325", v));
  EXPECT_EQ(v, 0xcbf29ce484222325ULL);
  EXPECT_FALSE(parseHex16("CBF29CE484222325", v));
  EXPECT_FALSE(parseHex16("cbf29ce48422232", v));
  EXPECT_FALSE(parseHex16("cbf29ce4842223250", v));
  EXPECT_FALSE(parseHex16("cbf29ce48422232x", v));
}
