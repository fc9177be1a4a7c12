//===- ArtifactTest.cpp - loading artifact folders --------------------------===//
//
// A real artifact (TestProgram.c compiled to a shared object, weights and
// manifest written here) loads; every way it can be broken is reported with
// the file and the problem: missing folder/files, a manifest error, target
// mismatch, size and checksum mismatches of program.so and weights.bin, a
// program that is not an ELF file, a missing entry symbol and an import the
// process does not export.
//
//===----------------------------------------------------------------------===//
#include "runtime/artifact/Artifact.h"

#include "StatusTesting.h"
#include "TestArtifact.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using ::testing::HasSubstr;
using ::testing::StartsWith;
using namespace trc::rt;
using namespace trc::rt::test;

namespace {

std::string loadError(const std::string &dir, const std::string &target = "cpu") {
  StatusOr<std::unique_ptr<Artifact>> a = Artifact::load(dir, target);
  if (a.ok()) {
    EXPECT_NE(*a, nullptr);
    return "";
  }
  return errorOf(a);
}

void flipByte(const std::string &path, size_t offset) {
  std::string bytes = readFile(path);
  ASSERT_LT(offset, bytes.size());
  bytes[offset] ^= 0x20;
  writeFile(path, bytes);
}

} // namespace

TEST(Artifact, LoadsARealArtifact) {
  TempDir dir;
  writeTestArtifact(dir.path());
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Artifact> a, Artifact::load(dir.path(), "cpu"));
  EXPECT_NE(a->entry(), nullptr);
  EXPECT_EQ(a->weightsSize(), 128u);
  EXPECT_EQ(std::memcmp(a->weights(), kW, sizeof(kW)), 0);
  EXPECT_EQ(a->manifest().slots.size(), 6u);
  EXPECT_EQ(a->dir(), dir.path());
}

TEST(Artifact, MissingFolderAndFiles) {
  TempDir dir;
  EXPECT_EQ(loadError(dir.file("nope")),
            dir.file("nope") + ": cannot open artifact folder: No such file or "
                               "directory");
  writeFile(dir.file("plain"), "x");
  EXPECT_EQ(loadError(dir.file("plain")),
            dir.file("plain") + ": not an artifact folder (expected a folder "
                                "with manifest.trc, program.so and weights.bin)");
  EXPECT_EQ(loadError(dir.path()),
            dir.file("manifest.trc") + ": cannot open: No such file or directory");

  writeTestArtifact(dir.path());
  std::filesystem::remove(dir.file("program.so"));
  EXPECT_EQ(loadError(dir.path()),
            dir.file("program.so") + ": cannot open: No such file or directory");
  writeTestArtifact(dir.path());
  std::filesystem::remove(dir.file("weights.bin"));
  EXPECT_EQ(loadError(dir.path()),
            dir.file("weights.bin") + ": cannot open: No such file or directory");
  writeTestArtifact(dir.path());
  std::filesystem::remove(dir.file("weights.bin"));
  std::filesystem::create_directory(dir.file("weights.bin"));
  EXPECT_EQ(loadError(dir.path()), dir.file("weights.bin") + ": not a regular file");
}

TEST(Artifact, ManifestErrorsNameTheFileAndLine) {
  TempDir dir;
  writeTestArtifact(dir.path());
  std::string m = readFile(dir.file("manifest.trc"));
  writeFile(dir.file("manifest.trc"), m.substr(0, m.size() / 2));
  std::string err = loadError(dir.path());
  EXPECT_THAT(err, StartsWith(dir.file("manifest.trc") + ": line ")) << err;
  writeFile(dir.file("manifest.trc"), m.substr(0, m.size() - 4));
  EXPECT_EQ(loadError(dir.path()),
            dir.file("manifest.trc") +
                ": line 13: missing 'end' record (the manifest is truncated)");
  writeFile(dir.file("manifest.trc"), "");
  EXPECT_EQ(loadError(dir.path()),
            dir.file("manifest.trc") + ": line 1: the manifest is empty");
}

TEST(Artifact, RefusesAnotherTarget) {
  TempDir dir;
  writeTestArtifact(dir.path(), {"cuda"});
  EXPECT_EQ(loadError(dir.path(), "cpu"),
            "artifact " + dir.path() + " was built for target cuda, not cpu");
  writeTestArtifact(dir.path());
  EXPECT_EQ(loadError(dir.path(), "cuda"),
            "artifact " + dir.path() + " was built for target cpu, not cuda");
}

TEST(Artifact, ManifestsWriteXxh3AndOldFnvManifestsStillLoad) {
  TempDir dir;
  writeTestArtifact(dir.path());
  std::string weights = testWeights();
  EXPECT_THAT(readFile(dir.file("manifest.trc")),
              HasSubstr("weights weights.bin 128 xxh3:" +
                        toHex16(xxh3_64(weights.data(), weights.size())) + "\n"));
  EXPECT_EQ(loadError(dir.path()), "");

  // A manifest written before XXH3: bare hex digits, FNV-1a 64.
  ArtifactOptions old;
  old.checksums = ChecksumKind::Fnv1a64;
  writeTestArtifact(dir.path(), old);
  EXPECT_THAT(readFile(dir.file("manifest.trc")),
              HasSubstr("weights weights.bin 128 " +
                        toHex16(fnv1a64(weights.data(), weights.size())) + "\n"));
  TRC_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Artifact> a, Artifact::load(dir.path(), "cpu"));
  EXPECT_EQ(a->manifest().weightsHash.kind, ChecksumKind::Fnv1a64);

  // The spelling names the function: an FNV value labelled xxh3 is a
  // mismatch, not accepted.
  std::string m = readFile(dir.file("manifest.trc"));
  std::string fnvHex = toHex16(fnv1a64(weights.data(), weights.size()));
  m.replace(m.find(fnvHex), 16, "xxh3:" + fnvHex);
  writeFile(dir.file("manifest.trc"), m);
  EXPECT_EQ(loadError(dir.path()),
            dir.file("weights.bin") + ": checksum mismatch: xxh3 is " +
                toHex16(xxh3_64(weights.data(), weights.size())) +
                ", the manifest says " + fnvHex + " (corrupt artifact)");
}

TEST(Artifact, DetectsChecksumMismatches) {
  TempDir dir;
  for (ChecksumKind kind : {ChecksumKind::Xxh3, ChecksumKind::Fnv1a64}) {
    SCOPED_TRACE(checksumKindName(kind));
    ArtifactOptions opt;
    opt.checksums = kind;
    writeTestArtifact(dir.path(), opt);
    std::string weights = readFile(dir.file("weights.bin"));
    flipByte(dir.file("weights.bin"), 5);
    std::string flipped = readFile(dir.file("weights.bin"));
    EXPECT_EQ(loadError(dir.path()),
              dir.file("weights.bin") + ": checksum mismatch: " +
                  checksumKindName(kind) + " is " +
                  toHex16(checksumOf(kind, flipped.data(), flipped.size()).value) +
                  ", the manifest says " +
                  toHex16(checksumOf(kind, weights.data(), weights.size()).value) +
                  " (corrupt artifact)");

    writeTestArtifact(dir.path(), opt);
    flipByte(dir.file("program.so"), readFile(dir.file("program.so")).size() / 2);
    std::string err = loadError(dir.path());
    EXPECT_THAT(err, StartsWith(dir.file("program.so") +
                                ": checksum mismatch: " + checksumKindName(kind) + " is "))
        << err;
  }

  writeTestArtifact(dir.path());
  std::string w = readFile(dir.file("weights.bin"));
  writeFile(dir.file("weights.bin"), w.substr(0, 127));
  EXPECT_EQ(loadError(dir.path()),
            dir.file("weights.bin") +
                ": size is 127 bytes, the manifest says 128 (truncated or "
                "corrupt artifact)");

  writeTestArtifact(dir.path());
  std::string p = readFile(dir.file("program.so"));
  writeFile(dir.file("program.so"), p + "x");
  EXPECT_EQ(loadError(dir.path()),
            dir.file("program.so") + ": size is " + std::to_string(p.size() + 1) +
                " bytes, the manifest says " + std::to_string(p.size()) +
                " (truncated or corrupt artifact)");
}

TEST(Artifact, ReportsProgramsThatCannotLoad) {
  TempDir dir;
  // Not an ELF file, but with a matching size and hash.
  ArtifactOptions text;
  text.program = dir.file("text.so");
  writeFile(text.program, "this is not a shared object\n");
  writeTestArtifact(dir.path(), text);
  std::string err = loadError(dir.path());
  EXPECT_THAT(err, StartsWith(dir.file("program.so") + ": cannot load the program: ")) << err;

  // A program that imports a function the process does not export.
  TempDir dir2;
  ArtifactOptions undefined;
  undefined.program = fixturePath(TRC_TEST_PROGRAM_UNDEFINED);
  writeTestArtifact(dir2.path(), undefined);
  err = loadError(dir2.path());
  EXPECT_THAT(err, StartsWith(dir2.file("program.so") + ": cannot load the program: ")) << err;
  EXPECT_THAT(err, HasSubstr("undefined symbol: trc_rt_does_not_exist")) << err;

  // A program compiled for an entry it does not define.
  TempDir dir3;
  ArtifactOptions entry;
  entry.entry = "no_such_entry";
  writeTestArtifact(dir3.path(), entry);
  std::string error;
  ASSERT_TRUE(compileTestProgramFor(dir3.path(), error)) << error;
  EXPECT_EQ(loadError(dir3.path()),
            dir3.file("program.so") +
                ": the program has no entry symbol 'no_such_entry'");
}

// The program's signature (ProgramSignature.h) against its manifest, with
// every checksum right: what a program was not compiled for is refused
// before it runs, naming the first record that differs.
TEST(Artifact, RefusesAManifestTheProgramWasNotCompiledFor) {
  auto forged = [](const std::string &from, const std::string &to) {
    TempDir dir;
    writeTestArtifact(dir.path());
    std::string manifest = readFile(dir.file("manifest.trc"));
    size_t at = manifest.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    manifest.replace(at, from.size(), to);
    writeFile(dir.file("manifest.trc"), manifest);
    std::string err = loadError(dir.path());
    std::string prefix = dir.file("program.so") +
                         ": the program was compiled for another manifest (another model's "
                         "program, or an edited manifest.trc): ";
    EXPECT_THAT(err, StartsWith(prefix)) << err;
    return err.substr(std::min(err.size(), prefix.size()));
  };
  EXPECT_EQ(forged("arena 64\n", "arena 8\n"),
            "the program has 'arena 64' where the manifest has 'arena 8'");
  EXPECT_EQ(forged("slot 0 input x f32 2 4 3\n", "slot 0 input x f32 2 2 3\n"),
            "the program has 'slot 0 input x f32 2 4 3' where the manifest has "
            "'slot 0 input x f32 2 2 3'");
  EXPECT_EQ(forged("slot 1 param W f32 2 3 2 0", "slot 1 param W f64 2 3 2 0"),
            "the program has 'slot 1 param W f32 2 3 2' where the manifest has "
            "'slot 1 param W f64 2 3 2'");
  EXPECT_EQ(forged("slot 3 param b f32 1 2 64", "slot 3 param b f32 1 1 64"),
            "the program has 'slot 3 param b f32 1 2' where the manifest has "
            "'slot 3 param b f32 1 1'");
  EXPECT_EQ(forged("slot 5 input in/two f32 2 4 3\n", ""),
            "the program has 'slot 5 input in/two f32 2 4 3' where the manifest has nothing more");
  EXPECT_EQ(forged("entry trc_entry\n", "entry trc_rt_matmul_f32\n"),
            "the program has 'entry trc_entry' where the manifest has 'entry trc_rt_matmul_f32'");
  EXPECT_EQ(forged("slot 5 input in/two f32 2 4 3\n",
                   "slot 5 input in/two f32 2 4 3\nslot 6 input more f32 0\n"),
            "the program has nothing more where the manifest has 'slot 6 input more f32 0'");
}

TEST(Artifact, RefusesAProgramWithoutASignature) {
  TempDir dir;
  ArtifactOptions unsigned_;
  unsigned_.program = fixturePath(TRC_TEST_PROGRAM_UNSIGNED);
  writeTestArtifact(dir.path(), unsigned_);
  EXPECT_EQ(loadError(dir.path()),
            dir.file("program.so") +
                ": the program has no signature (trc_signature): it was not compiled by this "
                "trc's compiler; compile the model again");
}
