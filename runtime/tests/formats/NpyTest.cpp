//===- NpyTest.cpp - NumPy .npy reading and writing -------------------------===//
//
// Round trips of every dtype NumPy has (scalars, empty and n-d shapes), in
// memory and through files (atomic write, no temp left, and nothing partial
// when the disk fills up or an fsync or rename fails: FailingFileSystem.h),
// headers exactly as NumPy writes them in versions 1.0, 2.0 and 3.0, and
// malformed files: each rejected with a message naming the file and the
// defect.
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/Npy.h"
#include "runtime/formats/FileOps.h"

#include "FailingFileSystem.h"
#include "StatusTesting.h"
#include "TestArtifact.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace trc::rt;
using trc::rt::test::FailingFs;
using trc::rt::test::readFile;
using trc::rt::test::TempDir;

namespace {

HostTensor makeTensor(DType dt, std::vector<int64_t> shape, unsigned seed) {
  HostTensor t;
  EXPECT_TRUE(t.allocate(dt, std::move(shape)));
  std::mt19937 rng(seed);
  unsigned char *p = static_cast<unsigned char *>(t.data());
  for (size_t i = 0; i < t.byteSize(); ++i)
    p[i] = dt == DType::I1 ? (rng() & 1) : (rng() & 0xff);
  return t;
}

// A .npy image with the given version and header dict (padded like NumPy)
// followed by `data`.
std::string npyImage(int major, const std::string &dict, const std::string &data) {
  size_t lenBytes = major == 1 ? 2 : 4;
  std::string header = dict;
  size_t total = 8 + lenBytes + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string img = "\x93NUMPY";
  img += char(major);
  img += '\0';
  for (size_t i = 0; i < lenBytes; ++i)
    img += char((header.size() >> (8 * i)) & 0xff);
  return img + header + data;
}

std::string floats(std::initializer_list<float> values) {
  std::string s;
  for (float v : values)
    s.append(reinterpret_cast<const char *>(&v), 4);
  return s;
}

std::string errorOf(const std::string &image) {
  Status s = parseNpy(image, "x.npy").status();
  return s ? std::string() : s.message();
}

const char *kF4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";

} // namespace

TEST(Npy, RoundTripsEveryDType) {
  DType dtypes[] = {DType::F32, DType::F64, DType::F16, DType::I1,
                    DType::I8,  DType::I16, DType::I32, DType::I64,
                    DType::U8,  DType::U16, DType::U32, DType::U64};
  std::vector<std::vector<int64_t>> shapes = {{}, {0}, {5}, {2, 3}, {2, 0, 4},
                                              {1, 2, 3, 4}};
  unsigned seed = 0;
  for (DType dt : dtypes) {
    for (const auto &shape : shapes) {
      HostTensor t = makeTensor(dt, shape, seed++);
      TRC_ASSERT_OK_AND_ASSIGN(std::string image, encodeNpy(t));
      EXPECT_EQ((image.size() - t.byteSize()) % 64, 0u);
      TRC_ASSERT_OK_AND_ASSIGN(HostTensor back, parseNpy(image, "t.npy"));
      EXPECT_EQ(back.dtype, dt);
      EXPECT_EQ(back.shape, shape);
      ASSERT_EQ(back.byteSize(), t.byteSize());
      EXPECT_EQ(std::memcmp(back.data(), t.data(), t.byteSize()), 0);
    }
  }
}

TEST(Npy, WritesTheHeaderNumPyWrites) {
  HostTensor t = makeTensor(DType::F32, {2, 3}, 1);
  TRC_ASSERT_OK_AND_ASSIGN(std::string image, encodeNpy(t));
  EXPECT_EQ(image.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(image.substr(10, std::strlen(kF4)), std::string(kF4));
  EXPECT_EQ(image[127], '\n');
  HostTensor v = makeTensor(DType::I1, {7}, 2);
  TRC_ASSERT_OK_AND_ASSIGN(image, encodeNpy(v));
  EXPECT_THAT(
      image,
      HasSubstr("{'descr': '|b1', 'fortran_order': False, 'shape': (7,), }"));
  HostTensor s = makeTensor(DType::I8, {}, 3);
  TRC_ASSERT_OK_AND_ASSIGN(image, encodeNpy(s));
  EXPECT_THAT(image, HasSubstr("'descr': '|i1'"));
  EXPECT_THAT(image, HasSubstr("'shape': (), }"));
}

TEST(Npy, ReadsVersions1To3AndNumPySpellings) {
  std::string data = floats({1, 2, 3, 4, 5, 6});
  for (int major : {1, 2, 3}) {
    StatusOr<HostTensor> t = parseNpy(npyImage(major, kF4, data), "v.npy");
    ASSERT_TRUE(t.ok()) << major << ": " << t.status().message();
    EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(t->as<float>()[5], 6.0f);
  }
  // Key order, quotes and spacing vary between writers.
  TRC_ASSERT_OK_AND_ASSIGN(HostTensor t,
                           parseNpy(npyImage(1,
                                             "{\"shape\":(3,),\"fortran_order\":False,"
                                             "\"descr\":\"<i1\"}",
                                             "abc"),
                                    "o.npy"));
  EXPECT_EQ(t.dtype, DType::I8);
  TRC_ASSERT_OK_AND_ASSIGN(t, parseNpy(npyImage(1,
                                                "{'descr': '|u1', 'fortran_order': False, "
                                                "'shape': (1L, 2L), }",
                                                "ab"),
                                       "o.npy"));
  EXPECT_EQ(t.dtype, DType::U8);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{1, 2}));
}

TEST(Npy, RejectsMalformedFiles) {
  std::string data = floats({1, 2, 3, 4, 5, 6});
  EXPECT_THAT(errorOf(""),
              HasSubstr("x.npy: the file is empty (not a .npy file)"));
  EXPECT_THAT(
      errorOf("PK\x03\x04 a zip file"),
      HasSubstr("x.npy: not a .npy file (bad magic; expected \\x93NUMPY)"));
  EXPECT_THAT(errorOf(std::string("\x93NUMPY\x01", 7)),
              HasSubstr("x.npy: truncated .npy preamble"));
  EXPECT_THAT(
      errorOf(std::string("\x93NUMPY\x04\x00\x10\x00", 10)),
      HasSubstr("x.npy: unsupported .npy format version 4.0 (reads 1.0, 2.0 "
                "and 3.0)"));
  EXPECT_THAT(
      errorOf(std::string("\x93NUMPY\x02\x00\x00\x00\x00\x10", 12)),
      HasSubstr("x.npy: header length 268435456 is larger than the limit of "
                "65536 bytes"));
  EXPECT_THAT(
      errorOf(npyImage(1, kF4, data).substr(0, 40)),
      HasSubstr("x.npy: truncated header (118 bytes announced, 30 present)"));
  EXPECT_THAT(errorOf(npyImage(1, "[1, 2]", "")),
              HasSubstr("x.npy: malformed header: expected '{'"));
  EXPECT_THAT(
      errorOf(npyImage(1, "{'descr': '<f4', 'shape': (2, 3), }", data)),
      HasSubstr("x.npy: malformed header: the dict must have the keys"));
  EXPECT_THAT(errorOf(npyImage(1,
                               "{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (2, 3), 'extra': 1}",
                               data)),
              HasSubstr("x.npy: malformed header: unexpected key 'extra'"));
  EXPECT_THAT(errorOf(npyImage(1,
                               "{'descr': '<f4', 'descr': '<f4', "
                               "'fortran_order': False, 'shape': (2, 3)}",
                               data)),
              HasSubstr("x.npy: malformed header: duplicate key 'descr'"));
  EXPECT_THAT(
      errorOf(npyImage(1,
                       "{'descr': [('a', '<f4')], 'fortran_order': "
                       "False, 'shape': (2,)}",
                       data)),
      HasSubstr(
          "'descr' is not a string (structured dtypes are not supported)"));
  EXPECT_THAT(errorOf(npyImage(1,
                               "{'descr': '<f4', 'fortran_order': 0, "
                               "'shape': (2, 3)}",
                               data)),
              HasSubstr("'fortran_order' is not True or False"));
  EXPECT_THAT(
      errorOf(npyImage(1,
                       "{'descr': '<f4', 'fortran_order': True, "
                       "'shape': (2, 3), }",
                       data)),
      HasSubstr("x.npy: fortran_order True is not supported (only C order"));
  EXPECT_THAT(errorOf(npyImage(1,
                               "{'descr': '>f4', 'fortran_order': False, "
                               "'shape': (2, 3), }",
                               data)),
              HasSubstr("x.npy: big-endian dtype '>f4' is not supported"));
  EXPECT_THAT(errorOf(npyImage(1,
                               "{'descr': '<c8', 'fortran_order': False, "
                               "'shape': (3,), }",
                               data)),
              HasSubstr("x.npy: unsupported dtype '<c8' (supported:"));
  EXPECT_THAT(
      errorOf(npyImage(1,
                       "{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (6), }",
                       data)),
      HasSubstr("'shape' is not a tuple (a 1-element tuple needs a trailing "
                "comma)"));
  EXPECT_THAT(errorOf(npyImage(1,
                               "{'descr': '<f4', 'fortran_order': False, "
                               "'shape': [2, 3], }",
                               data)),
              HasSubstr("x.npy: malformed header: 'shape' is not a tuple"));
  EXPECT_THAT(
      errorOf(npyImage(1,
                       "{'descr': '<f4', 'fortran_order': False, "
                       "'shape': (-6,), }",
                       data)),
      HasSubstr("'shape' holds something other than non-negative integers"));
  EXPECT_THAT(errorOf(npyImage(1,
                               "{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (2 3), }",
                               data)),
              HasSubstr("'shape' is not a tuple of integers"));
  EXPECT_THAT(errorOf(npyImage(1,
                               "{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (99999999999999999999999,), }",
                               data)),
              HasSubstr("'shape' has a dimension over 2^40"));
  EXPECT_THAT(errorOf(npyImage(1,
                               "{'descr': '<f4', 'fortran_order': False, "
                               "'shape': (1048576, 1048576, 4), }",
                               data)),
              HasSubstr("x.npy: shape [1048576, 1048576, 4] has more than 2^40 "
                        "elements"));
  std::string deep = "(";
  for (int i = 0; i < 70; ++i)
    deep += "1, ";
  EXPECT_THAT(errorOf(npyImage(1,
                               "{'descr': '<f4', 'fortran_order': False, "
                               "'shape': " +
                                   deep + "), }",
                               data)),
              HasSubstr("'shape' has more than 64 dimensions"));
  EXPECT_THAT(
      errorOf(npyImage(1, std::string(kF4) + " junk", data)),
      HasSubstr("x.npy: malformed header: trailing characters after the dict"));
  EXPECT_THAT(errorOf(npyImage(1, std::string("{'descr': '<f4'\0", 16), data)),
              HasSubstr("x.npy: malformed header: it contains a NUL byte"));
  EXPECT_THAT(
      errorOf(npyImage(1, kF4, data.substr(0, 20))),
      HasSubstr("x.npy: data is 20 bytes, but f32 [2, 3] needs 24 (truncated "
                "file)"));
  EXPECT_THAT(
      errorOf(npyImage(1, kF4, data + "!")),
      HasSubstr("x.npy: data is 25 bytes, but f32 [2, 3] needs 24 (trailing "
                "bytes)"));
  EXPECT_THAT(errorOf(npyImage(1,
                               "{'descr': '|b1', 'fortran_order': False, "
                               "'shape': (3,), }",
                               std::string("\x01\x00\x02", 3))),
              HasSubstr("x.npy: bool element 2 is 2, not 0 or 1"));
}

TEST(Npy, RandomCorruptionNeverCrashes) {
  HostTensor t = makeTensor(DType::F32, {3, 4}, 9);
  TRC_ASSERT_OK_AND_ASSIGN(std::string image, encodeNpy(t));
  std::mt19937 rng(42);
  for (int i = 0; i < 5000; ++i) {
    std::string bad = image.substr(0, rng() % (image.size() + 1));
    if (!bad.empty())
      bad[rng() % bad.size()] = char(rng() & 0xff);
    Status s = parseNpy(bad, "r.npy").status();
    if (!s) {
      EXPECT_THAT(s.message(), StartsWith("r.npy: ")) << s.message();
    }
  }
}

TEST(Npy, FilesRoundTripAtomically) {
  TempDir dir;
  HostTensor t = makeTensor(DType::F64, {3, 2}, 5);
  std::string path = dir.file("out.npy");
  ASSERT_TRUE(writeNpyFile(path, t));
  TRC_ASSERT_OK_AND_ASSIGN(HostTensor back, readNpyFile(path));
  EXPECT_EQ(back.shape, t.shape);
  EXPECT_EQ(std::memcmp(back.data(), t.data(), t.byteSize()), 0);
  size_t entries = 0;
  for (auto &e : std::filesystem::directory_iterator(dir.path())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1u); // no temporary file left behind
}

// A killed writer (SIGKILL) leaves `<file>.tmp-<pid>`: the next atomic write
// of that file removes it (its process is gone); another file's stays.
TEST(Npy, AtomicWritesRemoveTheTemporaryFilesOfKilledWriters) {
  TempDir dir;
  std::string path = dir.file("out.npy");
  test::writeFile(path + ".tmp-99999999", "left by a killed run");
  test::writeFile(dir.file("other.npy.tmp-99999999"), "another file's");
  ASSERT_TRUE(writeNpyFile(path, makeTensor(DType::F32, {2}, 1)));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp-99999999"));
  EXPECT_TRUE(std::filesystem::exists(dir.file("other.npy.tmp-99999999")));
}

TEST(Npy, FileErrorsNameTheFile) {
  TempDir dir;
  HostTensor t;
  Status s = readNpyFile(dir.file("missing.npy")).status();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), dir.file("missing.npy") +
                             ": cannot open: No such file or directory");
  s = readNpyFile(dir.path()).status();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), dir.path() + ": not a regular file");
  trc::rt::test::writeFile(dir.file("short.npy"),
                           npyImage(1, kF4, floats({1, 2})));
  s = readNpyFile(dir.file("short.npy")).status();
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(),
              HasSubstr("short.npy: data is 8 bytes, but f32 [2, 3] needs 24"));

  HostTensor bf;
  ASSERT_TRUE(bf.allocate(DType::BF16, {2}));
  s = writeNpyFile(dir.file("bf.npy"), bf);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("dtype bf16 has no NumPy equivalent"));
  EXPECT_FALSE(std::filesystem::exists(dir.file("bf.npy")));
  s = writeNpyFile(dir.file("no/such/dir/x.npy"), t);
  EXPECT_FALSE(s);
}

namespace {

std::vector<std::string> names(const std::string &dir) {
  std::vector<std::string> out;
  for (const auto &e : std::filesystem::directory_iterator(dir))
    out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace

// Every write, fsync and rename of writeNpyFile goes through the hooks: a
// disk that fills up after any number of bytes, or a failing fsync or
// rename, leaves the old file as it was and no temporary file.
// A FIFO without a writer blocked every reader forever; a device or a
// folder is no file either. Each reader refuses them at once (the test
// would hang otherwise), and the flags' check names the flag.
TEST(Npy, NonRegularFilesAreRefusedWithoutBlocking) {
  TempDir dir;
  std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(readNpyFile(fifo).status().message(), fifo + ": not a regular file");
  EXPECT_EQ(readSmallFile(fifo, 1024).status().message(), fifo + ": not a regular file");
  MappedFile mapped;
  EXPECT_EQ(mapped.open(fifo).message(), fifo + ": not a regular file");
  EXPECT_EQ(readSmallFile("/dev/zero", 1024).status().message(), "/dev/zero: not a regular file");
  EXPECT_EQ(checkRegularFile("--data", fifo, true).message(),
            "--data " + fifo + ": not a regular file or folder");
  EXPECT_EQ(checkRegularFile("--config", dir.path()).message(),
            "--config " + dir.path() + ": not a regular file");
  EXPECT_EQ(checkRegularFile("--input x=", "/dev/null").message(),
            "--input x=/dev/null: not a regular file");
  EXPECT_TRUE(checkRegularFile("--data", dir.path(), true));
  EXPECT_TRUE(checkRegularFile("--data", dir.file("missing")));
  trc::rt::test::writeFile(dir.file("x.npy"), npyImage(1, kF4, floats({1, 2, 3, 4, 5, 6})));
  EXPECT_TRUE(checkRegularFile("--input x=", dir.file("x.npy")));
}

// An output that is an input: the same file by device and inode (through a
// symlink, or "./"), a file of an input folder, or another output.
TEST(Npy, OutputsThatAreInputsAreRefused) {
  TempDir dir;
  trc::rt::test::writeFile(dir.file("data.bin"), "tokens");
  ASSERT_EQ(::mkdir(dir.file("model").c_str(), 0755), 0);
  trc::rt::test::writeFile(dir.file("model/manifest.trc"), "trc-artifact 1\n");
  ASSERT_EQ(::symlink("data.bin", dir.file("link").c_str()), 0);
  std::vector<NamedPath> inputs = {{"model", dir.file("model"), "the model"},
                                   {"--data", dir.file("data.bin"), "the --data file"},
                                   {"--eval-data", "", "the --eval-data file"}};
  auto error = [&](std::vector<NamedPath> outputs) {
    Status s = checkOutputsAreNotInputs(outputs, inputs);
    return s ? std::string() : std::string(s.message());
  };
  EXPECT_EQ(error({{"--metrics", dir.file("data.bin"), ""}}),
            "--metrics " + dir.file("data.bin") + " is also the --data file");
  EXPECT_EQ(error({{"--metrics", dir.file("link"), ""}}),
            "--metrics " + dir.file("link") + " is also the --data file");
  EXPECT_EQ(error({{"--profile", dir.path() + "/./data.bin", ""}}),
            "--profile " + dir.path() + "/./data.bin is also the --data file");
  EXPECT_EQ(error({{"--save-artifact", dir.file("model") + "/", ""}}),
            "--save-artifact " + dir.file("model") + "/ is also the model");
  EXPECT_EQ(error({{"--export-onnx", dir.file("model/manifest.trc"), ""}}),
            "--export-onnx " + dir.file("model/manifest.trc") +
                " is the file 'manifest.trc' of the model");
  EXPECT_EQ(error({{"--metrics", dir.file("m.jsonl"), ""}, {"--profile", "", ""},
                   {"--checkpoint-dir", dir.path() + "/./m.jsonl", ""}}),
            "--checkpoint-dir " + dir.path() + "/./m.jsonl is also the --metrics output");
  EXPECT_EQ(error({{"--metrics", dir.file("m.jsonl"), ""}, {"--profile", dir.file("p.json"), ""}}),
            "");
  // Nothing was written or changed.
  EXPECT_FALSE(std::filesystem::exists(dir.file("m.jsonl")));
}

TEST(Npy, FailedWritesLeaveNothingPartial) {
  TempDir dir;
  std::string path = dir.file("out.npy");
  ASSERT_TRUE(writeNpyFile(path, makeTensor(DType::F32, {4}, 1)));
  std::string old = readFile(path);
  HostTensor t = makeTensor(DType::F32, {20, 30}, 2);

  FailingFs probe; // a write that succeeds: what it does
  TempDir other;
  ASSERT_TRUE(writeNpyFile(other.file("out.npy"), t, probe));
  EXPECT_EQ(probe.written, readFile(other.file("out.npy")).size());
  EXPECT_EQ(probe.fsyncs, 1);
  EXPECT_EQ(probe.renames, 1);

  for (uint64_t budget = 0; budget < probe.written;
       budget += budget < 200 ? 1 : 97) {
    FailingFs fs;
    fs.budget = int64_t(budget);
    Status s = writeNpyFile(path, t, fs);
    ASSERT_FALSE(s) << "budget " << budget;
    EXPECT_THAT(s.message(), StartsWith(path + ".tmp-")) << s.message();
    EXPECT_THAT(s.message(),
                HasSubstr(": write failed: No space left on device"))
        << s.message();
    ASSERT_EQ(names(dir.path()), std::vector<std::string>{"out.npy"})
        << "budget " << budget;
    ASSERT_EQ(readFile(path), old) << "budget " << budget;
  }
  FailingFs fsyncFails;
  fsyncFails.failFsyncAt = 0;
  EXPECT_THAT(writeNpyFile(path, t, fsyncFails).message(),
              HasSubstr(": fsync failed: Input/output error"));
  EXPECT_EQ(names(dir.path()), std::vector<std::string>{"out.npy"});
  FailingFs renameFails;
  renameFails.failRenameAt = 0;
  EXPECT_THAT(writeNpyFile(path, t, renameFails).message(),
              HasSubstr(path + ": cannot rename " + path + ".tmp-"));
  EXPECT_EQ(names(dir.path()), std::vector<std::string>{"out.npy"});
  EXPECT_EQ(readFile(path), old);

  // A new file: nothing at all is left.
  FailingFs full;
  full.budget = 100;
  EXPECT_FALSE(writeNpyFile(dir.file("new.npy"), t, full));
  EXPECT_EQ(names(dir.path()), std::vector<std::string>{"out.npy"});

  // writeNpyTemp (the first half, for all-or-nothing groups of files)
  // removes its temp file on failure and names the final file.
  FailingFs half;
  half.budget = 1000;
  Status s = writeNpyTemp(dir.file(".y.tmp"), dir.file("y.npy"), t, half);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), dir.file("y.npy") + ": " + dir.file(".y.tmp") +
                             ": write failed: No space left on device");
  EXPECT_EQ(names(dir.path()), std::vector<std::string>{"out.npy"});

  // With space again, the write goes through.
  ASSERT_TRUE(writeNpyFile(path, t));
  TRC_ASSERT_OK_AND_ASSIGN(HostTensor back, readNpyFile(path));
  EXPECT_EQ(std::memcmp(back.data(), t.data(), t.byteSize()), 0);
}
