//===- NpzTest.cpp - NumPy .npz archives and folders of .npy ---------------===//
//
// Archives written here (stored members, with and without NumPy's zip64
// records) and by NumPy itself (np.savez and np.savez_compressed, through
// the project's Python when it is there) read back to the same arrays;
// damaged archives (a flipped byte, a cut file, a member that is not .npy,
// a name twice, nothing inside) are errors naming the archive and member.
// A folder of NAME.npy files reads as the same arrays, sorted by name.
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/Npz.h"

#include "runtime/formats/Npy.h"

#include "StatusTesting.h"
#include "TestArtifact.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace trc::rt;
using trc::rt::test::TempDir;

namespace {

uint32_t crc32(const std::string &bytes) { // the zip CRC-32 (reflected 0xEDB88320)
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : bytes) {
    crc ^= c;
    for (int k = 0; k < 8; ++k)
      crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

template <typename T> void put(std::string &out, T v) {
  out.append(reinterpret_cast<const char *>(&v), sizeof v);
}

/// A zip of stored members. With `zip64`, as NumPy writes them: the
/// central directory's sizes and offset saturated at 0xFFFFFFFF with a zip64
/// extra field holding them, and zip64 end records.
std::string zipStored(const std::vector<std::pair<std::string, std::string>> &members,
                      bool zip64 = false) {
  std::string out, directory;
  for (const auto &[name, data] : members) {
    uint64_t offset = out.size();
    put<uint32_t>(out, 0x04034b50);
    put<uint16_t>(out, 20);
    put<uint16_t>(out, 0); // flags
    put<uint16_t>(out, 0); // stored
    put<uint32_t>(out, 0); // time, date
    put<uint32_t>(out, crc32(data));
    put<uint32_t>(out, uint32_t(data.size()));
    put<uint32_t>(out, uint32_t(data.size()));
    put<uint16_t>(out, uint16_t(name.size()));
    put<uint16_t>(out, 0);
    out += name + data;
    std::string extra;
    if (zip64) {
      put<uint16_t>(extra, 1);
      put<uint16_t>(extra, 24);
      put<uint64_t>(extra, data.size());
      put<uint64_t>(extra, data.size());
      put<uint64_t>(extra, offset);
    }
    uint32_t saturated = 0xFFFFFFFFu;
    put<uint32_t>(directory, 0x02014b50);
    put<uint16_t>(directory, 45);
    put<uint16_t>(directory, 45);
    put<uint16_t>(directory, 0);
    put<uint16_t>(directory, 0);
    put<uint32_t>(directory, 0);
    put<uint32_t>(directory, crc32(data));
    put<uint32_t>(directory, zip64 ? saturated : uint32_t(data.size()));
    put<uint32_t>(directory, zip64 ? saturated : uint32_t(data.size()));
    put<uint16_t>(directory, uint16_t(name.size()));
    put<uint16_t>(directory, uint16_t(extra.size()));
    put<uint16_t>(directory, 0); // comment
    put<uint16_t>(directory, 0); // disk
    put<uint16_t>(directory, 0);
    put<uint32_t>(directory, 0);
    put<uint32_t>(directory, zip64 ? saturated : uint32_t(offset));
    directory += name + extra;
  }
  uint64_t dirOffset = out.size();
  out += directory;
  if (zip64) {
    uint64_t endOffset = out.size();
    put<uint32_t>(out, 0x06064b50);
    put<uint64_t>(out, 44);
    put<uint16_t>(out, 45);
    put<uint16_t>(out, 45);
    put<uint32_t>(out, 0);
    put<uint32_t>(out, 0);
    put<uint64_t>(out, members.size());
    put<uint64_t>(out, members.size());
    put<uint64_t>(out, directory.size());
    put<uint64_t>(out, dirOffset);
    put<uint32_t>(out, 0x07064b50);
    put<uint32_t>(out, 0);
    put<uint64_t>(out, endOffset);
    put<uint32_t>(out, 1);
  }
  put<uint32_t>(out, 0x06054b50);
  put<uint32_t>(out, 0); // disks
  put<uint16_t>(out, zip64 ? 0xFFFF : uint16_t(members.size()));
  put<uint16_t>(out, zip64 ? 0xFFFF : uint16_t(members.size()));
  put<uint32_t>(out, zip64 ? 0xFFFFFFFFu : uint32_t(directory.size()));
  put<uint32_t>(out, zip64 ? 0xFFFFFFFFu : uint32_t(dirOffset));
  put<uint16_t>(out, 0);
  return out;
}

HostTensor iota(DType dtype, std::vector<int64_t> shape) {
  HostTensor t;
  EXPECT_TRUE(t.allocate(dtype, std::move(shape)));
  for (int64_t i = 0; i < t.numElements(); ++i) {
    if (dtype == DType::I64)
      t.as<int64_t>()[i] = 3 * i - 5;
    else
      t.as<float>()[i] = 0.5f * float(i);
  }
  return t;
}

std::string npyOf(const HostTensor &t) {
  StatusOr<std::string> bytes = encodeNpy(t);
  EXPECT_TRUE(bytes.ok());
  return bytes.ok() ? *bytes : "";
}

void expectSame(const HostTensor &got, const HostTensor &want) {
  EXPECT_EQ(got.dtype, want.dtype);
  EXPECT_EQ(got.shape, want.shape);
  ASSERT_EQ(got.byteSize(), want.byteSize());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.byteSize()), 0);
}

} // namespace

TEST(Npz, ReadsStoredMembersInOrder) {
  HostTensor ids = iota(DType::I64, {3, 2}), scores = iota(DType::F32, {3});
  for (bool zip64 : {false, true}) {
    std::string zip = zipStored({{"ids.npy", npyOf(ids)}, {"scores.npy", npyOf(scores)}}, zip64);
    TRC_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> arrays, parseNpz(zip, "rows.npz"));
    ASSERT_EQ(arrays.size(), 2u) << "zip64 " << zip64;
    EXPECT_EQ(arrays[0].name, "ids");
    EXPECT_EQ(arrays[1].name, "scores");
    expectSame(arrays[0].tensor, ids);
    expectSame(arrays[1].tensor, scores);
  }
}

TEST(Npz, DamagedArchivesAreErrorsNamingTheMember) {
  HostTensor ids = iota(DType::I64, {4});
  std::string good = zipStored({{"ids.npy", npyOf(ids)}});
  auto problem = [](const std::string &zip) {
    StatusOr<std::vector<NamedTensor>> read = parseNpz(zip, "rows.npz");
    EXPECT_FALSE(read.ok());
    return read.ok() ? std::string() : std::string(read.status().message());
  };
  EXPECT_THAT(problem(good.substr(0, good.size() / 2)), StartsWith("rows.npz: not a zip"));
  EXPECT_THAT(problem("PK"), StartsWith("rows.npz: not a zip (.npz) file"));
  EXPECT_THAT(problem(zipStored({{"ids.txt", npyOf(ids)}})),
              HasSubstr("member 'ids.txt': not a .npy file"));
  EXPECT_THAT(problem(zipStored({{"ids.npy", npyOf(ids)}, {"ids.npy", npyOf(ids)}})),
              HasSubstr("member 'ids.npy': the archive holds it twice"));
  EXPECT_THAT(problem(zipStored({})), HasSubstr("holds no arrays"));
  EXPECT_THAT(problem(zipStored({{"ids.npy", "not an npy image"}})),
              StartsWith("rows.npz: member 'ids.npy': "));
  // The last data byte flipped: its CRC no longer matches (zlib's check).
  std::string flipped = good;
  flipped[30 + 7 + npyOf(ids).size() - 1] ^= 1;
  if (npzSupportsDeflate())
    EXPECT_THAT(problem(flipped), HasSubstr("member 'ids.npy': CRC-32 mismatch"));
  // The local header naming another file than the directory does (the
  // local name starts at byte 30).
  std::string renamed = good;
  renamed[30] = 'x';
  EXPECT_THAT(problem(renamed), HasSubstr("member 'ids.npy': its local header names another file"));
}

TEST(Npz, AgreesWithNumPy) {
  TempDir dir;
  std::string script =
      "import numpy as np, sys\n"
      "a = {'input_ids': np.arange(40, dtype=np.int64).reshape(10, 4),\n"
      "     'labels': (np.arange(10) % 2).astype(np.int64),\n"
      "     'mask': np.arange(30, dtype=np.float32).reshape(10, 3)}\n"
      "np.savez(sys.argv[1] + '/stored.npz', **a)\n"
      "np.savez_compressed(sys.argv[1] + '/deflated.npz', **a)\n";
  std::ofstream(dir.file("write.py")) << script;
  std::string cmd = std::string("'") + TRC_TEST_PYTHON + "' '" + dir.file("write.py") + "' '" +
                    dir.path() + "' >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0)
    GTEST_SKIP() << TRC_TEST_PYTHON << " cannot run NumPy (bash scripts/setup.sh)";
  for (const char *file : {"stored.npz", "deflated.npz"}) {
    StatusOr<std::vector<NamedTensor>> read = readNpzFile(dir.file(file));
    if (std::string(file) == "deflated.npz" && !npzSupportsDeflate()) {
      ASSERT_FALSE(read.ok());
      EXPECT_THAT(read.status().message(), HasSubstr("built without zlib"));
      continue;
    }
    ASSERT_TRUE(read.ok()) << read.status().message();
    ASSERT_EQ(read->size(), 3u) << file;
    EXPECT_EQ((*read)[0].name, "input_ids");
    EXPECT_EQ((*read)[2].tensor.shape, (std::vector<int64_t>{10, 3}));
    EXPECT_EQ((*read)[0].tensor.as<int64_t>()[39], 39) << file;
    EXPECT_EQ((*read)[1].tensor.as<int64_t>()[9], 1) << file;
    EXPECT_EQ((*read)[2].tensor.as<float>()[29], 29.0f) << file;
  }
}

TEST(Npz, ReadsAFolderOfNpyFilesSortedByName) {
  TempDir dir;
  HostTensor ids = iota(DType::I64, {2, 3}), labels = iota(DType::I64, {2});
  ASSERT_TRUE(writeNpyFile(dir.file("labels.npy"), labels));
  ASSERT_TRUE(writeNpyFile(dir.file("input_ids.npy"), ids));
  std::ofstream(dir.file("README.txt")) << "not an array";
  TRC_ASSERT_OK_AND_ASSIGN(std::vector<NamedTensor> arrays, readNpyFolder(dir.path()));
  ASSERT_EQ(arrays.size(), 2u);
  EXPECT_EQ(arrays[0].name, "input_ids");
  EXPECT_EQ(arrays[1].name, "labels");
  expectSame(arrays[0].tensor, ids);
  TempDir empty;
  StatusOr<std::vector<NamedTensor>> none = readNpyFolder(empty.path());
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("holds no .npy files"));
}
