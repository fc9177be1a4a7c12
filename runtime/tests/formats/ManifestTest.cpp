//===- ManifestTest.cpp - manifest.trc parsing ------------------------------===//
//
// A valid manifest parses into the expected fields; every malformed one is
// rejected with a message naming the line and the field (one expectation
// per defect); a manifest cut at any byte before `end` is rejected; random
// byte flips never crash the parser. Checksums are read in both spellings
// (xxh3:<hex>, and bare hex for FNV-1a 64). Also percent-decoding of names.
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/Manifest.h"
#include "runtime/support/Names.h"

#include "StatusTesting.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace trc::rt;

namespace {

const char *kHeader = "trc-artifact 1\n"
                      "target cpu\n"
                      "program program.so 1000 xxh3:0123456789abcdef\n"
                      "entry trc_entry\n"
                      "arena 256\n"
                      "weights weights.bin 128 fedcba9876543210\n";

std::string valid() {
  return std::string(kHeader) + "slot 0 input x f32 2 4 3\n"
                                "slot 1 param W f32 2 3 2 0 trainable\n"
                                "slot 2 output y f32 2 4 2\n"
                                "slot 3 param b f32 1 2 64 frozen\n"
                                "end\n";
}

// Replaces the first occurrence of `from` in the valid manifest by `to`.
std::string with(const std::string &from, const std::string &to) {
  std::string m = valid();
  size_t pos = m.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos)
    m.replace(pos, from.size(), to);
  return m;
}

// The error of parsing `text` ("" if it parsed).
std::string errorOf(const std::string &text) {
  Status s = parseManifest(text).status();
  return s ? std::string() : s.message();
}

} // namespace

// `host_arena` (offloaded activations) is optional: absent, the host arena
// is empty (manifests written before offloading load as they did).
TEST(Manifest, HostArenaIsOptionalAndOnce) {
  TRC_ASSERT_OK_AND_ASSIGN(Manifest without, parseManifest(valid()));
  EXPECT_EQ(without.hostArenaBytes, 0u);
  TRC_ASSERT_OK_AND_ASSIGN(Manifest with_,
                           parseManifest(with("arena 256\n", "arena 256\nhost_arena 4096\n")));
  EXPECT_EQ(with_.hostArenaBytes, 4096u);
  EXPECT_EQ(with_.arenaBytes, 256u);
  EXPECT_THAT(errorOf(with("arena 256\n", "arena 256\nhost_arena 64\nhost_arena 64\n")),
              HasSubstr("line 7: duplicate 'host_arena' record (first at line 6)"));
  EXPECT_THAT(errorOf(with("arena 256\n", "arena 256\nhost_arena -5\n")),
              HasSubstr("line 6: host_arena bytes: '-5' is not a non-negative decimal integer"));
  EXPECT_THAT(errorOf(with("arena 256\n", "arena 256\nhost_arena 1 2\n")),
              HasSubstr("line 6: host_arena: expected one field (bytes), got 2"));
  EXPECT_THAT(errorOf(with("arena 256\n", "arena 256\nhost_arena 1152921504606846976\n")),
              HasSubstr("is absurd (more than 2^48 bytes)"));
}

// `bound` (an index input's table rows) and `labels` (a loss's classes and
// ignore index) follow an integer input, once each.
TEST(Manifest, BoundAndLabelsRecordsBoundIntegerInputs) {
  const std::string ids = "slot 4 input ids i64 1 8\n";
  TRC_ASSERT_OK_AND_ASSIGN(
      Manifest m, parseManifest(with("end\n", ids + "bound 4 50257\nlabels 4 10 -100\nend\n")));
  const Slot *slot = m.find(SlotKind::Input, "ids");
  ASSERT_NE(slot, nullptr);
  EXPECT_EQ(slot->indexBound, 50257);
  EXPECT_EQ(slot->labelClasses, 10);
  EXPECT_EQ(slot->labelIgnore, std::optional<int64_t>(-100));
  TRC_ASSERT_OK_AND_ASSIGN(Manifest plain, parseManifest(with("end\n", ids + "labels 4 3\nend\n")));
  EXPECT_EQ(plain.find(SlotKind::Input, "ids")->indexBound, 0);
  EXPECT_EQ(plain.find(SlotKind::Input, "ids")->labelIgnore, std::nullopt);
  EXPECT_THAT(errorOf(with("end\n", "bound 0 5\nend\n")),
              HasSubstr("bound: slot 0 is not an integer input"));
  EXPECT_THAT(errorOf(with("end\n", "bound 2 5\nend\n")),
              HasSubstr("bound: slot 2 is not an integer input"));
  EXPECT_THAT(errorOf(with("end\n", "bound 9 5\nend\n")),
              HasSubstr("bound: no slot 9 declared before this record"));
  EXPECT_THAT(errorOf(with("end\n", ids + "bound 4 0\nend\n")),
              HasSubstr("bound rows: '0' is not a number of rows"));
  EXPECT_THAT(errorOf(with("end\n", ids + "bound 4 -3\nend\n")),
              HasSubstr("bound: expected slot index and rows"));
  EXPECT_THAT(errorOf(with("end\n", ids + "bound 4 5\nbound 4 5\nend\n")),
              HasSubstr("bound: slot 4 is already bounded"));
  EXPECT_THAT(errorOf(with("end\n", ids + "labels 4 3 x\nend\n")),
              HasSubstr("labels ignore index: 'x' is not an integer"));
  EXPECT_THAT(errorOf(with("end\n", ids + "labels 4 3 1 2\nend\n")),
              HasSubstr("labels: expected slot index, classes and an optional ignore index"));
  EXPECT_THAT(errorOf(with("end\n", ids + "labels 4 3\nlabels 4 3\nend\n")),
              HasSubstr("labels: slot 4 already has its classes"));
}

TEST(Manifest, ParsesAValidManifest) {
  TRC_ASSERT_OK_AND_ASSIGN(Manifest m, parseManifest(valid()));
  EXPECT_EQ(m.version, 1);
  EXPECT_EQ(m.target, "cpu");
  EXPECT_EQ(m.programFile, "program.so");
  EXPECT_EQ(m.programBytes, 1000u);
  EXPECT_EQ(m.programHash,
            (Checksum{ChecksumKind::Xxh3, 0x0123456789abcdefULL}));
  EXPECT_EQ(m.entry, "trc_entry");
  EXPECT_EQ(m.arenaBytes, 256u);
  EXPECT_EQ(m.weightsFile, "weights.bin");
  EXPECT_EQ(m.weightsBytes, 128u);
  // Bare hex digits: a manifest written before XXH3 (FNV-1a 64).
  EXPECT_EQ(m.weightsHash,
            (Checksum{ChecksumKind::Fnv1a64, 0xfedcba9876543210ULL}));
  ASSERT_EQ(m.slots.size(), 4u);
  EXPECT_EQ(m.slots[0].kind, SlotKind::Input);
  EXPECT_EQ(m.slots[0].name, "x");
  EXPECT_EQ(m.slots[0].shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(m.slots[0].byteSize, 48u);
  EXPECT_EQ(m.slots[1].kind, SlotKind::Param);
  EXPECT_TRUE(m.slots[1].trainable);
  EXPECT_EQ(m.slots[1].offset, 0u);
  EXPECT_EQ(m.slots[3].offset, 64u);
  EXPECT_FALSE(m.slots[3].trainable);
  EXPECT_EQ(m.slots[3].line, 10);
  EXPECT_NE(m.find(SlotKind::Output, "y"), nullptr);
  EXPECT_EQ(m.find(SlotKind::Input, "y"), nullptr);
  EXPECT_EQ(m.slotsOfKind(SlotKind::Param).size(), 2u);
}

TEST(Manifest, AcceptsSlotsInAnyOrderCommentsAndCrlf) {
  std::string text = "# a comment first\r\ntrc-artifact 1\r\n"
                     "slot 1 output y i64 0\r\n"
                     "# another\r\n"
                     "target cpu\r\nentry e\r\narena 0\r\n"
                     "program p.so 0 0000000000000000\r\n"
                     "weights w.bin 0 0000000000000000\r\n"
                     "slot 0 input a%20b%2Fc i1 1 0\r\n"
                     "end\r\n";
  TRC_ASSERT_OK_AND_ASSIGN(Manifest m, parseManifest(text));
  ASSERT_EQ(m.slots.size(), 2u);
  EXPECT_EQ(m.slots[0].name, "a b/c");
  EXPECT_EQ(m.slots[0].numElements, 0);
  EXPECT_EQ(m.slots[1].shape.size(), 0u); // a scalar
  EXPECT_EQ(m.slots[1].numElements, 1);
  EXPECT_EQ(m.slots[1].byteSize, 8u);
}

TEST(Manifest, AnInputAndAnOutputMayShareAName) {
  EXPECT_EQ(errorOf(with("slot 2 output y", "slot 2 output x")), "");
}

TEST(Manifest, AcceptsEveryDType) {
  for (const char *dt : {"f32", "f64", "f16", "bf16", "i1", "i8", "i16", "i32",
                         "i64", "u8", "u16", "u32", "u64"})
    EXPECT_EQ(errorOf(with("input x f32", std::string("input x ") + dt)), "")
        << dt;
}

TEST(Manifest, RejectsBadHeaders) {
  EXPECT_THAT(errorOf(""), HasSubstr("line 1: the manifest is empty"));
  EXPECT_THAT(errorOf("hello world\n"),
              HasSubstr("line 1: expected 'trc-artifact 1' as the first record, "
                        "got 'hello world' (not a trc manifest)"));
  // clang-format off
  EXPECT_THAT(errorOf(std::string("\x7f" "ELF\x02\x01", 6)),
              HasSubstr("line 1: expected 'trc-artifact 1'"));
  // clang-format on
  EXPECT_THAT(errorOf(with("trc-artifact 1", "trc-artifact 2")),
              HasSubstr("line 1: trc-artifact version: unsupported format "
                        "version '2' (this runtime reads format 1)"));
  EXPECT_THAT(errorOf(with("trc-artifact 1", "trc-artifact")),
              HasSubstr("line 1: trc-artifact: expected one field"));
  EXPECT_THAT(errorOf("# only a comment\n"), HasSubstr("the manifest has only comments"));
  EXPECT_THAT(errorOf(with("target cpu", "trc-artifact 1")),
              HasSubstr("line 2: duplicate 'trc-artifact' record"));
}

TEST(Manifest, RejectsBadRecordStructure) {
  EXPECT_THAT(errorOf(with("target cpu", "target  cpu")),
              HasSubstr("line 2: empty field (fields are separated by single "
                        "spaces)"));
  EXPECT_THAT(errorOf(with("target cpu", "target cpu ")), HasSubstr("line 2: empty field"));
  EXPECT_THAT(errorOf(with("target cpu", "frobnicate 3")),
              HasSubstr("line 2: unknown record 'frobnicate'"));
  EXPECT_THAT(errorOf(with("entry trc_entry", "target cpu")),
              HasSubstr("line 4: duplicate 'target' record (first at line 2)"));
  EXPECT_THAT(errorOf(with("target cpu\n", "")), HasSubstr("line 10: missing 'target' record"));
  EXPECT_THAT(errorOf(with("entry trc_entry\n", "")), HasSubstr("missing 'entry' record"));
  EXPECT_THAT(errorOf(with("arena 256\n", "")), HasSubstr("missing 'arena' record"));
  EXPECT_THAT(errorOf(with("program program.so 1000 xxh3:0123456789abcdef\n", "")),
              HasSubstr("missing 'program' record"));
  EXPECT_THAT(errorOf(with("weights weights.bin 128 fedcba9876543210\n", "")),
              HasSubstr("missing 'weights' record"));
  EXPECT_THAT(errorOf(with("end\n", "")),
              HasSubstr("line 10: missing 'end' record (the manifest is "
                        "truncated)"));
  EXPECT_THAT(errorOf(valid() + "slot 4 input z f32 0\n"),
              HasSubstr("line 12: record 'slot' after 'end' (end must be the "
                        "last record)"));
  EXPECT_THAT(errorOf(with("end", "end now")),
              HasSubstr("line 11: end: expected no fields, got 1"));
  EXPECT_THAT(errorOf(with("target cpu", "target cpu cuda")),
              HasSubstr("line 2: target: expected one field, got 2"));
  EXPECT_THAT(errorOf(with("target cpu", "target CPU!")),
              HasSubstr("line 2: target name: 'CPU!' is not a target name"));
}

TEST(Manifest, RejectsBadFileRecords) {
  EXPECT_THAT(errorOf(with("program.so 1000", "program.so 12x")),
              HasSubstr("line 3: program bytes: '12x' is not a non-negative "
                        "decimal integer"));
  EXPECT_THAT(errorOf(with("program.so 1000", "program.so -1000")),
              HasSubstr("line 3: program bytes: '-1000' is not"));
  EXPECT_THAT(errorOf(with("program.so 1000", "program.so 99999999999999999999")),
              HasSubstr("line 3: program bytes: '99999999999999999999' is not"));
  EXPECT_THAT(errorOf(with("0123456789abcdef", "0123456789ABCDEF")),
              HasSubstr("line 3: program checksum: 'xxh3:0123456789ABCDEF' is "
                        "not xxh3:<16 lower-case hex digits> (or 16 hex "
                        "digits alone, FNV-1a 64)"));
  EXPECT_THAT(errorOf(with("0123456789abcdef", "0123456789abcde")),
              HasSubstr("line 3: program checksum: 'xxh3:0123456789abcde' is not"));
  EXPECT_THAT(errorOf(with("xxh3:", "xxh4:")),
              HasSubstr("line 3: program checksum: 'xxh4:0123456789abcdef' is not"));
  EXPECT_THAT(errorOf(with("xxh3:", "XXH3:")),
              HasSubstr("line 3: program checksum: 'XXH3:0123456789abcdef' is not"));
  // Bare hex (FNV-1a 64, the old spelling) and fnv1a64: are accepted.
  EXPECT_EQ(errorOf(with("xxh3:", "")), "");
  EXPECT_EQ(errorOf(with("xxh3:", "fnv1a64:")), "");
  EXPECT_THAT(errorOf(with("program program.so", "program ../program.so")),
              HasSubstr("line 3: program file: '../program.so' is not a plain "
                        "file name inside the artifact folder"));
  EXPECT_THAT(errorOf(with("program program.so", "program /etc/passwd")),
              HasSubstr("line 3: program file: '/etc/passwd' is not a plain"));
  EXPECT_THAT(
      errorOf(with("program program.so 1000 xxh3:0123456789abcdef", "program program.so 1000")),
      HasSubstr("line 3: program: expected 3 fields (file, bytes, "
                "checksum), got 2"));
  EXPECT_THAT(errorOf(with("weights.bin 128", "weights.bin 12.8")),
              HasSubstr("line 6: weights bytes: '12.8' is not"));
  EXPECT_THAT(errorOf(with("fedcba9876543210", "fedcba987654321g")),
              HasSubstr("line 6: weights checksum: 'fedcba987654321g' is not"));
  EXPECT_THAT(errorOf(with("entry trc_entry", "entry 1abc")),
              HasSubstr("line 4: entry symbol: '1abc' is not a C identifier"));
  EXPECT_THAT(errorOf(with("entry trc_entry", "entry")),
              HasSubstr("line 4: entry: expected one field (the symbol), got 0"));
  EXPECT_THAT(errorOf(with("arena 256", "arena -1")),
              HasSubstr("line 5: arena bytes: '-1' is not a non-negative "
                        "decimal integer"));
  EXPECT_THAT(errorOf(with("arena 256", "arena 1152921504606846976")),
              HasSubstr("line 5: arena bytes: 1152921504606846976 is absurd "
                        "(more than 2^48 bytes)"));
  EXPECT_THAT(errorOf(with("arena 256", "arena 0x100")),
              HasSubstr("line 5: arena bytes: '0x100' is not"));
}

TEST(Manifest, RejectsBadSlots) {
  EXPECT_THAT(errorOf(with("slot 0 input x f32 2 4 3", "slot 0 input x f32")),
              HasSubstr("line 7: slot: expected at least 5 fields (index, kind, "
                        "name, dtype, rank), got 4"));
  EXPECT_THAT(errorOf(with("slot 0 input", "slot a input")),
              HasSubstr("line 7: slot index: 'a' is not a slot index"));
  EXPECT_THAT(errorOf(with("slot 0 input", "slot -1 input")),
              HasSubstr("line 7: slot index: '-1' is not a slot index"));
  EXPECT_THAT(errorOf(with("slot 0 input", "slot 0 weird")),
              HasSubstr("line 7: slot kind: unknown kind 'weird' (expected "
                        "input, output or param)"));
  EXPECT_THAT(errorOf(with("input x f32", "input x f128")),
              HasSubstr("line 7: slot dtype: unknown dtype 'f128' (expected one "
                        "of f32 f64 f16 bf16 i1 i8 i16 i32 i64 u8 u16 u32 u64)"));
  EXPECT_THAT(errorOf(with("input x f32", "input x F32")),
              HasSubstr("line 7: slot dtype: unknown dtype 'F32'"));
  EXPECT_THAT(errorOf(with("input x f32 2 4 3", "input x f32 x 4 3")),
              HasSubstr("line 7: slot rank: 'x' is not a non-negative decimal"));
  EXPECT_THAT(errorOf(with("input x f32 2 4 3", "input x f32 65 4 3")),
              HasSubstr("line 7: slot rank: rank 65 is more than the maximum "
                        "of 64"));
  EXPECT_THAT(errorOf(with("input x f32 2 4 3", "input x f32 2 4")),
              HasSubstr("line 7: slot dims: rank 2 needs 2 fields after the "
                        "rank (2 dims), got 1"));
  EXPECT_THAT(errorOf(with("input x f32 2 4 3", "input x f32 2 4 3 5")),
              HasSubstr("line 7: slot dims: rank 2 needs 2 fields after the "
                        "rank (2 dims), got 3"));
  EXPECT_THAT(errorOf(with("W f32 2 3 2 0 trainable", "W f32 2 3 2 0")),
              HasSubstr("line 8: slot dims: rank 2 needs 4 fields after the "
                        "rank (2 dims, then offset and trainable|frozen), got 3"));
  EXPECT_THAT(errorOf(with("input x f32 2 4 3", "input x f32 2 4 -3")),
              HasSubstr("line 7: slot dim 1: '-3' is not a non-negative decimal "
                        "integer"));
  EXPECT_THAT(errorOf(with("input x f32 2 4 3", "input x f32 2 2000000000000 3")),
              HasSubstr("line 7: slot dim 0: 2000000000000 is absurd (more than "
                        "2^40)"));
  EXPECT_THAT(errorOf(with("input x f32 2 4 3", "input x f32 3 1048576 1048576 2")),
              HasSubstr("line 7: slot shape: [1048576, 1048576, 2] has more "
                        "than 2^40 elements"));
  EXPECT_THAT(errorOf(with("W f32 2 3 2 0 trainable", "W f32 2 3 2 32 trainable")),
              HasSubstr("line 8: slot offset: 32 is not a multiple of 64"));
  EXPECT_THAT(errorOf(with("W f32 2 3 2 0 trainable", "W f32 2 3 2 -64 trainable")),
              HasSubstr("line 8: slot offset: '-64' is not"));
  EXPECT_THAT(errorOf(with("b f32 1 2 64 frozen", "b f32 1 2 128 frozen")),
              HasSubstr("line 10: slot offset: param 'b' (8 bytes at offset "
                        "128) lies past the end of weights.bin (128 bytes)"));
  EXPECT_THAT(errorOf(with("b f32 1 2 64 frozen", "b f32 1 32 64 frozen")),
              HasSubstr("line 10: slot offset: param 'b' (128 bytes at offset "
                        "64) lies past the end of weights.bin (128 bytes)"));
  EXPECT_THAT(errorOf(with("b f32 1 2 64 frozen", "b f32 1 2 18446744073709551552 frozen")),
              HasSubstr("line 10: slot offset: param 'b' (8 bytes at offset "
                        "18446744073709551552) lies past the end"));
  EXPECT_THAT(errorOf(with("64 frozen", "64 maybe")),
              HasSubstr("line 10: slot trainable: expected 'trainable' or "
                        "'frozen', got 'maybe'"));
}

TEST(Manifest, RejectsBadSlotNumbering) {
  EXPECT_THAT(errorOf(with("slot 2 output", "slot 1 output")),
              HasSubstr("line 9: slot index: duplicate slot index 1 (first at "
                        "line 8)"));
  EXPECT_THAT(errorOf(with("slot 2 output", "slot 7 output")),
              HasSubstr("line 11: slot index: no slot 2 (slots must be numbered "
                        "0..3 without gaps)"));
  EXPECT_THAT(errorOf(with("slot 0 input", "slot 4 input")),
              HasSubstr("slot index: no slot 0 (slots must be numbered 0..3"));
  EXPECT_THAT(errorOf(with("slot 0 input", "slot 99999999999 input")),
              HasSubstr("line 7: slot index: '99999999999' is not a slot index"));
  // An output may share a param's name (names are unique per kind).
  EXPECT_EQ(errorOf(with("output y", "output W")), "");
  EXPECT_THAT(errorOf(with("param b", "param W")),
              HasSubstr("line 10: slot name: duplicate param name 'W' (first "
                        "at line 8)"));
}

TEST(Manifest, RejectsBadNames) {
  EXPECT_THAT(errorOf(with("input x ", "input a%2 ")),
              HasSubstr("line 7: slot name: 'a%2': malformed percent escape at "
                        "byte 1 (expected %XX with two hex digits)"));
  EXPECT_THAT(errorOf(with("input x ", "input a%zz ")),
              HasSubstr("line 7: slot name: 'a%zz': malformed percent escape"));
  EXPECT_THAT(errorOf(with("input x ", "input a+b ")),
              HasSubstr("line 7: slot name: 'a+b': byte %2B at position 1 must "
                        "be percent-encoded"));
  EXPECT_THAT(errorOf(with("input x ", "input a\tb ")),
              HasSubstr("line 7: slot name: 'a\\x09b': byte %09 at position 1"));
  EXPECT_THAT(errorOf(with("input x ", "input a%00 ")),
              HasSubstr("line 7: slot name: 'a%00': the name contains a NUL "
                        "byte (%00)"));
}

TEST(Manifest, QuotesHostileFieldsBounded) {
  std::string longName(10000, 'A');
  std::string err = errorOf(with("target cpu", "target " + longName + "!"));
  EXPECT_THAT(err, HasSubstr("line 2: target name: 'AAAA")) << err;
  EXPECT_LT(err.size(), 200u);
}

TEST(Manifest, EveryTruncationBeforeEndIsRejected) {
  std::string text = valid();
  size_t endPos = text.rfind("end");
  for (size_t len = 0; len < endPos + 3; ++len)
    EXPECT_FALSE(parseManifest(text.substr(0, len)).ok()) << "prefix " << len;
  EXPECT_TRUE(parseManifest(text.substr(0, endPos + 3)).ok());
}

TEST(Manifest, RandomCorruptionNeverCrashes) {
  std::mt19937 rng(1234);
  std::string base = valid();
  int rejected = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string text = base;
    int flips = 1 + int(rng() % 4);
    for (int f = 0; f < flips; ++f)
      text[rng() % text.size()] = char(rng() % 256);
    Status s = parseManifest(text).status();
    if (!s) {
      ++rejected;
      EXPECT_THAT(s.message(), StartsWith("line ")) << s.message();
    }
  }
  EXPECT_GT(rejected, 2500);
}

TEST(Names, PercentDecodingAndEncoding) {
  std::string name, problem;
  ASSERT_TRUE(percentDecode("model.layers.0/attn:q_proj-1", name, problem));
  EXPECT_EQ(name, "model.layers.0/attn:q_proj-1");
  ASSERT_TRUE(percentDecode("a%20b%2fc%25", name, problem));
  EXPECT_EQ(name, "a b/c%");
  EXPECT_FALSE(percentDecode("", name, problem));
  EXPECT_EQ(problem, "the name is empty");
  EXPECT_FALSE(percentDecode("%", name, problem));
  EXPECT_EQ(percentEncode("a b/c%\n"), "a%20b/c%25%0A");
  std::string decoded;
  ASSERT_TRUE(percentDecode(percentEncode("x y\xff"), decoded, problem));
  EXPECT_EQ(decoded, "x y\xff");
  EXPECT_EQ(outputFileName("logits"), "logits.npy");
  EXPECT_EQ(outputFileName("a/b%c d"), "a%2Fb%25c d.npy");
}

// `shard` records: a slot holding one rank's 1-D chunk of a larger tensor.
TEST(Manifest, ParsesShardRecords) {
  // W: 6 elements over 4 ranks -> chunks of 2; its weights hold all 6.
  std::string text = std::string(kHeader) +
                     "slot 0 param W f32 1 2 0 trainable\n"
                     "shard 0 4 2 2 3\n"
                     "slot 1 input adam.m:W f32 1 2\n"
                     "shard 1 4 2 2 3\n"
                     "end\n";
  TRC_ASSERT_OK_AND_ASSIGN(Manifest m, parseManifest(text));
  EXPECT_EQ(m.slots[0].shardDegree, 4);
  EXPECT_EQ(m.slots[0].fullShape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(m.slots[0].fullElements, 6);
  EXPECT_EQ(m.slots[0].byteSize, 8u);
  EXPECT_EQ(m.slots[0].weightBytes(), 24u); // the full tensor
  EXPECT_EQ(m.slots[1].shardDegree, 4);
  EXPECT_EQ(m.slots[1].weightBytes(), 24u);
}

TEST(Manifest, RejectsBadShardRecords) {
  std::string head = std::string(kHeader) + "slot 0 param W f32 1 2 0 trainable\n";
  EXPECT_THAT(errorOf(head + "shard 0 4 2 2 5\nend\n"),
              HasSubstr("is not a 1/4 shard of [2, 5] (expected [3])"));
  EXPECT_THAT(errorOf(head + "shard 1 4 2 2 3\nend\n"), HasSubstr("no slot 1 declared before"));
  EXPECT_THAT(errorOf(head + "shard 0 0 2 2 3\nend\n"), HasSubstr("shard degree"));
  EXPECT_THAT(errorOf(head + "shard 0 4 2 2\nend\n"), HasSubstr("needs that many dims"));
  EXPECT_THAT(errorOf(head + "shard 0 4 2 2 3\nshard 0 4 2 2 3\nend\n"),
              HasSubstr("already sharded"));
  EXPECT_THAT(errorOf(head + "shard 0 4\nend\n"), HasSubstr("expected slot index, degree, rank"));
  // The full tensor must lie inside the weights (128 bytes here).
  EXPECT_THAT(errorOf(std::string(kHeader) + "slot 0 param W f32 1 9 64 trainable\n"
                                             "shard 0 4 1 36\nend\n"),
              HasSubstr("lies past the end of weights.bin"));
}

// `split` records: a slot holding one tensor rank's part of a logical
// tensor (tensor parallelism), alone or ZeRO-sharded after the split.
TEST(Manifest, ParsesSplitRecords) {
  // qkv: logical [2, 12] split on dim 1 in 3 blocks over 2 ranks -> [2, 6];
  // its weights hold all 24 elements (96 bytes). adam.m:qkv is the same
  // part, then sharded over 4 ranks ([12] -> chunks of 3).
  std::string text = std::string(kHeader) +
                     "slot 0 param qkv f32 2 2 6 0 trainable\n"
                     "split 0 1 3 2 2 2 12\n"
                     "slot 1 input adam.m:qkv f32 1 3\n"
                     "split 1 1 3 2 2 2 12\n"
                     "shard 1 4 2 2 6\n"
                     "slot 2 param W f32 2 3 2 - trainable\n"
                     "split 2 0 1 1 2 3 2\n"
                     "init 2 constant 1\n"
                     "end\n";
  TRC_ASSERT_OK_AND_ASSIGN(Manifest m, parseManifest(text));
  const Slot &qkv = m.slots[0];
  EXPECT_TRUE(qkv.isSplit());
  EXPECT_EQ(qkv.split.dim, 1);
  EXPECT_EQ(qkv.split.blocks, 3);
  EXPECT_EQ(qkv.split.degree, 2);
  EXPECT_EQ(qkv.splitShape, (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(qkv.splitElements, 24);
  EXPECT_EQ(qkv.splitLine, 8);
  EXPECT_EQ(qkv.localShape(), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(qkv.logicalShape(), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(qkv.byteSize, 48u);
  EXPECT_EQ(qkv.tensorElements(), 24);
  EXPECT_EQ(qkv.weightBytes(), 96u); // the logical tensor
  const Slot &state = m.slots[1];
  EXPECT_TRUE(state.isSplit());
  EXPECT_EQ(state.shardDegree, 4);
  EXPECT_EQ(state.localShape(), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(state.logicalShape(), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(state.tensorElements(), 24);
  EXPECT_EQ(m.slots[2].split.degree, 1);
  EXPECT_EQ(m.slots[2].weightBytes(), 0u);
  EXPECT_FALSE(m.slots[2].shardDegree);
  EXPECT_FALSE(qkv.split.mirrored);
}

// Context parallelism's head-tail split of a data input ends in `mirrored`.
TEST(Manifest, ParsesMirroredSplits) {
  TRC_ASSERT_OK_AND_ASSIGN(Manifest m, parseManifest(std::string(kHeader) +
                                                     "slot 0 input ids i64 2 2 8\n"
                                                     "split 0 1 2 2 2 2 16 mirrored\n"
                                                     "end\n"));
  EXPECT_TRUE(m.slots[0].split.mirrored);
  EXPECT_EQ(m.slots[0].split.blocks, 2);
  EXPECT_EQ(m.slots[0].logicalShape(), (std::vector<int64_t>{2, 16}));
  EXPECT_THAT(errorOf(std::string(kHeader) + "slot 0 input ids i64 2 2 8\n"
                                             "split 0 1 1 2 2 2 16 mirrored\nend\n"),
              HasSubstr("a mirrored split needs an even number of blocks, got 1"));
  EXPECT_THAT(errorOf(std::string(kHeader) + "slot 0 input ids i64 2 2 8\n"
                                             "split 0 1 2 2 2 2 16 twisted\nend\n"),
              HasSubstr("split dims: rank 2 needs that many dims, got 3"));
}

TEST(Manifest, RejectsBadSplitRecords) {
  std::string head = std::string(kHeader) + "slot 0 param W f32 2 3 2 0 trainable\n";
  EXPECT_EQ(errorOf(head + "split 0 1 1 2 2 3 4\nend\n"), "");
  EXPECT_EQ(errorOf(head + "split 0 0 1 1 2 3 2\nend\n"), "");
  // The local dim times the degree must be the logical dim.
  EXPECT_THAT(errorOf(head + "split 0 1 1 2 2 3 6\nend\n"),
              HasSubstr("line 8: split: slot 0 [3, 2] is not one of 2 parts of [3, 6] split on "
                        "dim 1 (expected [3, 3])"));
  // The other dims must be the logical ones.
  EXPECT_THAT(errorOf(head + "split 0 1 1 2 2 4 4\nend\n"),
              HasSubstr("is not one of 2 parts of [4, 4] split on dim 1 (expected [4, 2])"));
  EXPECT_THAT(errorOf(head + "split 0 1 1 2 3 3 4 1\nend\n"),
              HasSubstr("(expected [3, 2, 1])"));
  EXPECT_THAT(errorOf(head + "split 0 1 3 2 2 3 4\nend\n"),
              HasSubstr("line 8: split: slot 0: dim 1 of [3, 4] (4) is not 3 block(s) of 2 "
                        "equal chunks"));
  EXPECT_THAT(errorOf(head + "split 0 2 1 2 2 3 4\nend\n"),
              HasSubstr("split: slot 0: split dim 2 is not a dim of [3, 4]"));
  EXPECT_THAT(errorOf(head + "split 0 1 1 0 2 3 4\nend\n"),
              HasSubstr("line 8: split degree: '0' is not a number of ranks"));
  EXPECT_THAT(errorOf(head + "split 0 1 0 2 2 3 4\nend\n"),
              HasSubstr("split blocks: '0' is not a number of blocks"));
  EXPECT_THAT(errorOf(head + "split 0 1 1 2 2 3\nend\n"),
              HasSubstr("split dims: rank 2 needs that many dims, got 1"));
  EXPECT_THAT(errorOf(head + "split 0 1 1 2\nend\n"),
              HasSubstr("split: expected slot index, dim, blocks, degree, rank and dims"));
  EXPECT_THAT(errorOf(head + "split 1 1 1 2 2 3 4\nend\n"),
              HasSubstr("split: no slot 1 declared before this record"));
  EXPECT_THAT(errorOf(head + "split 0 1 1 2 2 3 4\nsplit 0 1 1 2 2 3 4\nend\n"),
              HasSubstr("line 9: split: slot 0 is already split (line 8)"));
  EXPECT_THAT(errorOf(std::string(kHeader) + "slot 0 output y f32 2 3 2\n"
                                             "split 0 1 1 2 2 3 4\nend\n"),
              HasSubstr("split: slot 0 is an output; params and inputs are split"));
  // Shard and init records of the slot come after its split record.
  EXPECT_THAT(errorOf(std::string(kHeader) + "slot 0 param W f32 1 3 0 trainable\n"
                                             "shard 0 2 2 3 2\nsplit 0 1 1 2 2 3 4\nend\n"),
              HasSubstr("split: slot 0: the split record comes before the slot's shard record"));
  EXPECT_THAT(errorOf(std::string(kHeader) + "slot 0 param W f32 2 3 2 - trainable\n"
                                             "init 0 constant 1\nsplit 0 1 1 2 2 3 4\nend\n"),
              HasSubstr("the split record comes before the slot's init record"));
  // Sharded after the split: the shard's full shape is the part.
  EXPECT_THAT(errorOf(std::string(kHeader) + "slot 0 param W f32 1 6 0 trainable\n"
                                             "split 0 1 1 2 2 3 4\nshard 0 2 2 3 4\nend\n"),
              HasSubstr("split: slot 0 [3, 4] (its shard record's full shape) is not one of 2 "
                        "parts of [3, 4] split on dim 1 (expected [3, 2])"));
  // The logical tensor must lie inside the weights (128 bytes here).
  EXPECT_THAT(errorOf(std::string(kHeader) + "slot 0 param W f32 2 3 8 64 trainable\n"
                                             "split 0 1 1 2 2 3 16\nend\n"),
              HasSubstr("(192 bytes at offset 64) lies past the end of weights.bin"));
}

// `init` records: a param (offset '-') made from a recipe, not weights.bin.
TEST(Manifest, ParsesInitRecords) {
  std::string text = std::string(kHeader) +
                     "slot 0 param W f32 2 3 2 - trainable\n"
                     "init 0 normal -0.5 0.02 18446744073709551615\n"
                     "slot 1 param b bf16 1 2 - trainable\n"
                     "init 1 constant 1\n"
                     "slot 2 param S f16 1 3 - trainable\n"
                     "shard 2 2 1 5\n"
                     "init 2 uniform -1e-3 2.5E+1 7\n"
                     "slot 3 param mask f32 1 4 0 frozen\n"
                     "end\n";
  TRC_ASSERT_OK_AND_ASSIGN(Manifest m, parseManifest(text));
  EXPECT_TRUE(m.slots[0].initialized);
  EXPECT_EQ(m.slots[0].init.kind, InitKind::Normal);
  EXPECT_EQ(m.slots[0].init.a, -0.5);
  EXPECT_EQ(m.slots[0].init.b, 0.02);
  EXPECT_EQ(m.slots[0].init.seed, ~uint64_t(0));
  EXPECT_EQ(m.slots[0].initLine, 8);
  EXPECT_EQ(m.slots[0].weightBytes(), 0u);
  EXPECT_EQ(m.slots[1].init.kind, InitKind::Constant);
  EXPECT_EQ(m.slots[1].init.a, 1.0);
  EXPECT_EQ(m.slots[2].init.kind, InitKind::Uniform);
  EXPECT_EQ(m.slots[2].init.a, -1e-3);
  EXPECT_EQ(m.slots[2].init.b, 25.0);
  EXPECT_EQ(m.slots[2].init.seed, 7u);
  EXPECT_EQ(m.slots[2].tensorElements(), 5);
  EXPECT_FALSE(m.slots[3].initialized);
  EXPECT_EQ(m.slots[3].weightBytes(), 16u);
}

TEST(Manifest, RejectsBadInitRecords) {
  std::string head = std::string(kHeader) + "slot 0 param W f32 2 3 2 - trainable\n";
  auto bad = [&](const std::string &records) { return head + records + "end\n"; };
  EXPECT_THAT(errorOf(bad("init 0 normal 0 0.02 1\ninit 0 constant 1\n")),
              HasSubstr("line 9: init: slot 0 already has an initializer (line 8)"));
  EXPECT_THAT(errorOf(bad("init 1 constant 1\n")),
              HasSubstr("line 8: init: no slot 1 declared before"));
  EXPECT_THAT(errorOf(bad("")),
              HasSubstr("line 7: slot offset: param 'W' has offset '-' but no init record"));
  EXPECT_THAT(
      errorOf(bad("init 0 gaussian 0 1 1\n")),
      HasSubstr(
          "line 8: init kind: unknown kind 'gaussian' (expected constant, normal or uniform)"));
  EXPECT_THAT(
      errorOf(bad("init 0 normal 0 1\n")),
      HasSubstr("line 8: init normal: expected 5 fields (slot, kind, mean, std, seed), got 4"));
  EXPECT_THAT(errorOf(bad("init 0 constant 1 2\n")),
              HasSubstr("line 8: init constant: expected 3 fields (slot, kind, value), got 4"));
  EXPECT_THAT(errorOf(bad("init 0\n")), HasSubstr("line 8: init: expected a slot index, a kind"));
  EXPECT_THAT(errorOf(bad("init x constant 1\n")),
              HasSubstr("line 8: init slot: 'x' is not a slot index"));
  EXPECT_THAT(errorOf(bad("init 0 normal 0 nan 1\n")),
              HasSubstr("line 8: init std: 'nan' is not a finite decimal number"));
  EXPECT_THAT(errorOf(bad("init 0 normal 0x1 1 1\n")),
              HasSubstr("line 8: init mean: '0x1' is not a finite decimal number"));
  EXPECT_THAT(errorOf(bad("init 0 constant inf\n")),
              HasSubstr("line 8: init value: 'inf' is not a finite decimal number"));
  EXPECT_THAT(errorOf(bad("init 0 normal 0 -1 1\n")),
              HasSubstr("line 8: init std: -1 is negative"));
  EXPECT_THAT(errorOf(bad("init 0 uniform 1 -1 1\n")),
              HasSubstr("line 8: init uniform: low 1 is above high -1"));
  EXPECT_THAT(errorOf(bad("init 0 uniform -1e308 1e308 1\n")), HasSubstr("out of range for f32"));
  EXPECT_THAT(errorOf(bad("init 0 constant 1e39\n")),
              HasSubstr("line 8: init value: 1e39 is out of range for f32"));
  EXPECT_THAT(errorOf(bad("init 0 normal 0 1 -1\n")),
              HasSubstr("line 8: init seed: '-1' is not a 64-bit unsigned decimal integer"));
  EXPECT_THAT(errorOf(bad("init 0 normal 0 1 18446744073709551616\n")),
              HasSubstr("line 8: init seed"));
  // Only params made by their record, and only floating ones.
  EXPECT_THAT(errorOf(std::string(kHeader) + "slot 0 param W f32 1 2 0 trainable\n"
                                             "init 0 constant 1\nend\n"),
              HasSubstr("line 8: init: slot 0: param 'W' has its value in weights.bin (offset 0); "
                        "a param made by an init record has offset '-'"));
  EXPECT_THAT(errorOf(std::string(kHeader) + "slot 0 input x f32 1 2\ninit 0 constant 1\nend\n"),
              HasSubstr("line 8: init: slot 0 is an input; only params have initializers"));
  EXPECT_THAT(errorOf(std::string(kHeader) + "slot 0 param n i64 1 2 - trainable\n"
                                             "init 0 constant 1\nend\n"),
              HasSubstr("line 8: init: slot 0: param 'n' is i64; initializers make f32, f64, f16 "
                        "and bf16 params"));
  EXPECT_THAT(errorOf(std::string(kHeader) + "slot 0 param h f16 1 2 - trainable\n"
                                             "init 0 constant 70000\nend\n"),
              HasSubstr("line 8: init value: 70000 is out of range for f16"));
  EXPECT_THAT(errorOf(std::string(kHeader) + "slot 0 param W f32 1 2 x trainable\nend\n"),
              HasSubstr("line 7: slot offset: 'x' is not a non-negative decimal integer (or '-'"));
}

TEST(Manifest, ReadsProfileSpans) {
  TRC_ASSERT_OK_AND_ASSIGN(
      Manifest m, parseManifest(with("end\n", "span 0 MatMul%20%28blas%29 /h/c_fc/MatMul trc_rt_matmul_f32\n"
                                              "span 1 other%20%28loop%29 - main_loop3\n"
                                              "end\n")));
  ASSERT_EQ(m.spans.size(), 2u);
  EXPECT_EQ(m.spans[0].name, "MatMul (blas)");
  EXPECT_EQ(m.spans[0].node, "/h/c_fc/MatMul");
  EXPECT_EQ(m.spans[0].function, "trc_rt_matmul_f32");
  EXPECT_EQ(m.spans[1].node, ""); // '-' is no node
  // Artifacts without spans have none.
  TRC_ASSERT_OK_AND_ASSIGN(Manifest plain, parseManifest(valid()));
  EXPECT_TRUE(plain.spans.empty());
  EXPECT_THAT(errorOf(with("end\n", "span 1 a b c\nend\n")),
              HasSubstr("span id: '1' is not the next span id (0)"));
  EXPECT_THAT(errorOf(with("end\n", "span 0 a b\nend\n")),
              HasSubstr("span: expected 4 fields (id, name, node, function), got 3"));
  EXPECT_THAT(errorOf(with("end\n", "span 0 a%zz b c\nend\n")), HasSubstr("span field:"));
}

TEST(Manifest, ReadsAnomalySites) {
  const std::string codes = "slot 4 output trc.anomaly f32 1 3\n";
  const std::string sites = "site 0 - x input -\n"
                            "site 1 trc.log /Log forward 0\n"
                            "site 2 trc.mul /Mul backward 0%2C1\n";
  TRC_ASSERT_OK_AND_ASSIGN(Manifest m, parseManifest(with("end\n", codes + sites + "end\n")));
  ASSERT_EQ(m.anomalySites.size(), 3u);
  EXPECT_EQ(m.anomalySites[0].op, ""); // '-' is empty
  EXPECT_EQ(m.anomalySites[0].node, "x");
  EXPECT_EQ(m.anomalySites[0].phase, "input");
  EXPECT_TRUE(m.anomalySites[0].operands.empty());
  EXPECT_EQ(m.anomalySites[1].op, "trc.log");
  EXPECT_EQ(m.anomalySites[2].operands, (std::vector<uint32_t>{0, 1}));
  TRC_ASSERT_OK_AND_ASSIGN(Manifest plain, parseManifest(valid()));
  EXPECT_TRUE(plain.anomalySites.empty());
  // Ids in order; operands earlier sites (comma-separated, percent-encoded
  // like every field); known phases; whole fields.
  auto bad = [&](const std::string &records) {
    return errorOf(with("end\n", codes + records + "end\n"));
  };
  EXPECT_THAT(bad("site 1 a b forward -\n"), HasSubstr("site id: '1' is not the next site id (0)"));
  EXPECT_THAT(bad("site 0 a b forward\n"),
              HasSubstr("site: expected 5 fields (id, op, node, phase, operands), got 4"));
  EXPECT_THAT(bad("site 0 a b sideways -\n"),
              HasSubstr("site phase: 'sideways' is not input, parameter, forward, backward or "
                        "optimizer"));
  EXPECT_THAT(bad("site 0 a b forward 0\n"),
              HasSubstr("site operands: '0' is not an earlier site's id (site 0)"));
  EXPECT_THAT(bad("site 0 a b forward -\nsite 1 a b forward 0%2C7\n"),
              HasSubstr("site operands: '7' is not an earlier site's id (site 1)"));
  EXPECT_THAT(bad("site 0 a b forward -\nsite 1 a b forward 0%2C\n"),
              HasSubstr("site operands: '0%2C' ends with a comma"));
  EXPECT_THAT(bad("site 0 a b forward -\nsite 1 a b forward x\n"),
              HasSubstr("site operands: 'x' is not an earlier site's id"));
  EXPECT_THAT(bad("site 0 a%zz b forward -\n"), HasSubstr("site field:"));
  // The codes' output and the sites come together, one code per site.
  EXPECT_THAT(errorOf(with("end\n", "site 0 a b forward -\nend\n")),
              HasSubstr("site: site records without the output 'trc.anomaly' that holds their "
                        "codes"));
  EXPECT_THAT(errorOf(with("end\n", codes + "site 0 a b forward -\nend\n")),
              HasSubstr("slot: output 'trc.anomaly' must be f32 [1], one code per site record"));
  EXPECT_THAT(errorOf(with("end\n", codes + "end\n")),
              HasSubstr("slot: output 'trc.anomaly' must be f32 [0]"));
}
