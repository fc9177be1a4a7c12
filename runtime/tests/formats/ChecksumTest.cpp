//===- ChecksumTest.cpp - XXH3 and FNV-1a 64 checksums ----------------------===//
//
// Published FNV-1a 64 and XXH3-64 test vectors, incremental == one-shot
// hashing for both (XXH3 across its internal block sizes), and the
// spellings: xxh3:<hex> written, bare hex and fnv1a64:<hex> read as FNV-1a.
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

TEST(Checksum, Xxh3KnownVectorAndDifferentFromFnv) {
  // XXH3_64bits of no bytes (xxHash's own sanity check).
  EXPECT_EQ(xxh3_64("", 0), 0x2d06800538d394c2ULL);
  EXPECT_EQ(checksumOf(ChecksumKind::Xxh3, "", 0),
            (Checksum{ChecksumKind::Xxh3, 0x2d06800538d394c2ULL}));
  EXPECT_EQ(checksumOf(ChecksumKind::Fnv1a64, "foobar", 6),
            (Checksum{ChecksumKind::Fnv1a64, 0x85944171f73967e8ULL}));
  EXPECT_NE(xxh3_64("foobar", 6), fnv1a64("foobar", 6));
}

TEST(Checksum, HasherMatchesOneShotForEverySplit) {
  std::string data;
  for (int i = 0; i < 5000; ++i)
    data += char(i * 131 + i / 7);
  // Sizes around XXH3's short-input (16, 128, 240 bytes) and stripe/block
  // (64, 1024) boundaries, each split at several points.
  for (size_t size : {0, 1, 15, 16, 17, 128, 129, 240, 241, 1023, 1024, 1025,
                      4097, 5000}) {
    for (ChecksumKind kind : {ChecksumKind::Xxh3, ChecksumKind::Fnv1a64}) {
      Checksum whole = checksumOf(kind, data.data(), size);
      for (size_t cut : {size_t(0), size / 3, size / 2, size}) {
        Hasher h(kind);
        h.update(data.data(), cut);
        h.update(data.data() + cut, size - cut);
        EXPECT_EQ(h.checksum(), whole)
            << checksumKindName(kind) << " size " << size << " cut " << cut;
      }
      // Byte by byte, and read in the middle without disturbing the state.
      Hasher h(kind);
      for (size_t i = 0; i < size; ++i) {
        h.update(data.data() + i, 1);
        if (i == size / 2)
          EXPECT_EQ(h.checksum(), checksumOf(kind, data.data(), i + 1));
      }
      EXPECT_EQ(h.checksum(), whole);
      h.reset();
      EXPECT_EQ(h.checksum(), checksumOf(kind, "", 0));
      Hasher moved = std::move(h);
      moved.update(data.data(), size);
      EXPECT_EQ(moved.checksum(), whole);
    }
  }
}

TEST(Checksum, Xxh3DetectsAFlippedBit) {
  std::string data(100000, 'x');
  uint64_t before = xxh3_64(data.data(), data.size());
  for (size_t at : {size_t(0), size_t(777), data.size() - 1}) {
    data[at] ^= 1;
    EXPECT_NE(before, xxh3_64(data.data(), data.size())) << at;
    data[at] ^= 1;
  }
}

TEST(Checksum, Spellings) {
  Checksum x{ChecksumKind::Xxh3, 0x0123456789abcdefULL};
  EXPECT_EQ(formatChecksum(x), "xxh3:0123456789abcdef");
  Checksum f{ChecksumKind::Fnv1a64, 0xcbf29ce484222325ULL};
  EXPECT_EQ(formatChecksum(f), "fnv1a64:cbf29ce484222325");

  Checksum c;
  ASSERT_TRUE(parseChecksum("xxh3:0123456789abcdef", c));
  EXPECT_EQ(c, x);
  ASSERT_TRUE(parseChecksum("fnv1a64:cbf29ce484222325", c));
  EXPECT_EQ(c, f);
  // Bare hex: the spelling of every checksum before XXH3, FNV-1a 64.
  ASSERT_TRUE(parseChecksum("cbf29ce484222325", c));
  EXPECT_EQ(c, f);

  c = x;
  for (const char *bad :
       {"", "xxh3:", "xxh3:0123456789ABCDEF", "xxh3:0123456789abcde",
        "xxh3:0123456789abcdef0", "XXH3:0123456789abcdef",
        "xxh64:0123456789abcdef", "xxh3 0123456789abcdef",
        "fnv1a64:", "sha256:0123456789abcdef", "0123456789abcdeg",
        ":0123456789abcdef", " xxh3:0123456789abcdef"}) {
    EXPECT_FALSE(parseChecksum(bad, c)) << bad;
    EXPECT_EQ(c, x) << "changed by a failed parse of " << bad;
  }
}
