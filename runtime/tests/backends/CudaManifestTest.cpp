//===- CudaManifestTest.cpp - the `cubin`, `ptx` and `kernel` records -------===//
//
// docs/ARTIFACT.md "Target cuda": a valid cuda manifest parses into its
// kernel files and kernel table; every malformed record is rejected with a
// message naming the line and the field (one expectation per defect), with
// the strictness of the other records. No GPU needed.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/CudaProgram.h"
#include "runtime/formats/Manifest.h"

#include "StatusTesting.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using ::testing::HasSubstr;
using namespace trc::rt;

namespace {

const char *kHeader = "trc-artifact 1\n"
                      "target cuda\n"
                      "program program.so 1000 0123456789abcdef\n"
                      "entry trc_entry\n"
                      "arena 256\n"
                      "weights weights.bin 0 cbf29ce484222325\n";

const char *kKernelRecords = "cubin sm_80 kernels.sm_80.cubin 5000 00000000000000a1\n"
                             "ptx sm_80 kernels.sm_80.ptx 9000 00000000000000a2\n"
                             "cubin sm_90 kernels.sm_90.cubin 6000 00000000000000a3\n"
                             "ptx sm_90 kernels.sm_90.ptx 9100 00000000000000a4\n"
                             "kernel 0 main_k0_generic\n"
                             "kernel 1 main_k1_reduce\n";

const char *kSlots = "slot 0 input x f32 2 8 64\n"
                     "slot 1 output y f32 2 8 32\n"
                     "end\n";

std::string valid() { return std::string(kHeader) + kKernelRecords + kSlots; }

std::string with(const std::string &from, const std::string &to) {
  std::string m = valid();
  size_t pos = m.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos != std::string::npos)
    m.replace(pos, from.size(), to);
  return m;
}

std::string errorOf(const std::string &text) {
  StatusOr<Manifest> m = parseManifest(text);
  return m.ok() ? std::string() : std::string(m.status().message());
}

} // namespace

TEST(CudaManifest, ParsesKernelFilesAndTable) {
  TRC_ASSERT_OK_AND_ASSIGN(Manifest m, parseManifest(valid()));
  EXPECT_EQ(m.target, "cuda");
  ASSERT_EQ(m.kernelFiles.size(), 4u);
  EXPECT_FALSE(m.kernelFiles[0].ptx);
  EXPECT_EQ(m.kernelFiles[0].chip, "sm_80");
  EXPECT_EQ(m.kernelFiles[0].major, 8);
  EXPECT_EQ(m.kernelFiles[0].minor, 0);
  EXPECT_EQ(m.kernelFiles[0].file, "kernels.sm_80.cubin");
  EXPECT_EQ(m.kernelFiles[0].bytes, 5000u);
  EXPECT_EQ(m.kernelFiles[0].hash, (Checksum{ChecksumKind::Fnv1a64, 0xa1u}));
  EXPECT_EQ(m.kernelFiles[0].line, 7);
  EXPECT_TRUE(m.kernelFiles[1].ptx);
  EXPECT_EQ(m.kernelFiles[3].chip, "sm_90");
  EXPECT_EQ(m.kernelFiles[3].major, 9);
  EXPECT_EQ(m.kernels, (std::vector<std::string>{"main_k0_generic", "main_k1_reduce"}));
  ASSERT_EQ(m.slots.size(), 2u);
}

TEST(CudaManifest, KernelsInAnyOrderAndAnywhere) {
  // Records may come in any order (ARTIFACT.md puts them after weights).
  std::string text = std::string(kHeader) + "kernel 1 b\nslot 0 input x f32 0\n" +
                     "ptx sm_90 k.ptx 1 0000000000000001\nkernel 0 a\nend\n";
  TRC_ASSERT_OK_AND_ASSIGN(Manifest m, parseManifest(text));
  EXPECT_EQ(m.kernels, (std::vector<std::string>{"a", "b"}));
  // Only PTX, or only cubins, is allowed; so are newer chips.
  EXPECT_EQ(errorOf(with("cubin sm_80 kernels.sm_80.cubin 5000 00000000000000a1\n", "")), "");
  EXPECT_EQ(errorOf(with("sm_90 kernels.sm_90.cubin", "sm_100 kernels.sm_100.cubin")), "");
  EXPECT_EQ(errorOf(with("sm_90 kernels.sm_90.ptx", "sm_120 kernels.sm_120.ptx")), "");
  // Kernel names are percent-decoded like every name; '$' is a PTX symbol
  // character.
  TRC_ASSERT_OK_AND_ASSIGN(Manifest dollar, parseManifest(with("main_k1_reduce", "k%24tmp")));
  EXPECT_EQ(dollar.kernels[1], "k$tmp");
}

TEST(CudaManifest, NoKernelsNoRecords) {
  // A step of only library calls: no cubin, ptx or kernel records.
  std::string text = std::string(kHeader) + kSlots;
  TRC_ASSERT_OK_AND_ASSIGN(Manifest m, parseManifest(text));
  EXPECT_TRUE(m.kernelFiles.empty());
  EXPECT_TRUE(m.kernels.empty());
}

TEST(CudaManifest, RejectsMalformedKernelFiles) {
  const std::string cubin80 = "cubin sm_80 kernels.sm_80.cubin 5000 00000000000000a1";
  EXPECT_THAT(errorOf(with(cubin80, "cubin sm_80 kernels.sm_80.cubin 5000")),
              HasSubstr("line 7: cubin: expected 4 fields (chip, file, bytes, checksum), got 3"));
  EXPECT_THAT(errorOf(with(cubin80, cubin80 + " extra")),
              HasSubstr("line 7: cubin: expected 4 fields"));
  for (const char *chip : {"sm80", "sm_8", "sm_", "compute_80", "sm_90a", "sm_080", "SM_80",
                           "sm_1000", "sm_-80"})
    EXPECT_THAT(errorOf(with("cubin sm_80 ", std::string("cubin ") + chip + " ")),
                HasSubstr("line 7: cubin chip: '" + std::string(chip) + "' is not a chip name"));
  EXPECT_THAT(errorOf(with("ptx sm_80 kernels", "ptx sm_8a kernels")),
              HasSubstr("line 8: ptx chip: 'sm_8a' is not a chip name"));
  EXPECT_THAT(errorOf(with("kernels.sm_80.cubin", "../kernels.sm_80.cubin")),
              HasSubstr("line 7: cubin file: '../kernels.sm_80.cubin' is not a plain file name"));
  EXPECT_THAT(errorOf(with("kernels.sm_80.cubin", "/tmp/k.cubin")),
              HasSubstr("line 7: cubin file: '/tmp/k.cubin' is not a plain file name"));
  EXPECT_THAT(errorOf(with("kernels.sm_90.ptx", "sub/k.ptx")),
              HasSubstr("line 10: ptx file: 'sub/k.ptx' is not a plain file name"));
  EXPECT_THAT(errorOf(with("kernels.sm_80.cubin 5000", "kernels.sm_80.cubin -1")),
              HasSubstr("line 7: cubin bytes: '-1' is not a non-negative decimal integer"));
  EXPECT_THAT(errorOf(with("5000 00000000000000a1", "5000 00000000000000A1")),
              HasSubstr("line 7: cubin checksum: '00000000000000A1' is not xxh3:<16 lower-case hex "
                        "digits>"));
  EXPECT_THAT(errorOf(with("5000 00000000000000a1", "5000 a1")),
              HasSubstr("line 7: cubin checksum: 'a1' is not xxh3:<16 lower-case hex digits>"));
  EXPECT_THAT(errorOf(with("5000 00000000000000a1", "5000 xxh3:a1")),
              HasSubstr("line 7: cubin checksum: 'xxh3:a1' is not"));
}

TEST(CudaManifest, RejectsDuplicateChipsAndFiles) {
  EXPECT_THAT(errorOf(with("cubin sm_90 kernels.sm_90.cubin", "cubin sm_80 kernels.sm_90.cubin")),
              HasSubstr("line 9: cubin chip: duplicate cubin for sm_80 (first at line 7)"));
  EXPECT_THAT(errorOf(with("ptx sm_90 kernels.sm_90.ptx", "ptx sm_80 kernels.sm_90.ptx")),
              HasSubstr("line 10: ptx chip: duplicate ptx for sm_80 (first at line 8)"));
  EXPECT_THAT(errorOf(with("kernels.sm_90.cubin", "kernels.sm_80.cubin")),
              HasSubstr("line 9: cubin file: kernels.sm_80.cubin is already named at line 7"));
  EXPECT_THAT(errorOf(with("kernels.sm_80.ptx", "kernels.sm_80.cubin")),
              HasSubstr("line 8: ptx file: kernels.sm_80.cubin is already named at line 7"));
  EXPECT_THAT(errorOf(with("kernels.sm_80.ptx", "program.so")),
              HasSubstr("line 8: ptx file: program.so is already the program or weights file"));
  EXPECT_THAT(errorOf(with("kernels.sm_90.cubin", "weights.bin")),
              HasSubstr("line 9: cubin file: weights.bin is already the program or weights file"));
}

TEST(CudaManifest, RejectsMalformedKernels) {
  EXPECT_THAT(errorOf(with("kernel 0 main_k0_generic", "kernel 0")),
              HasSubstr("line 11: kernel: expected 2 fields (index, name), got 1"));
  EXPECT_THAT(errorOf(with("kernel 0 main_k0_generic", "kernel 0 a b")),
              HasSubstr("line 11: kernel: expected 2 fields (index, name), got 3"));
  EXPECT_THAT(errorOf(with("kernel 0 ", "kernel x ")),
              HasSubstr("line 11: kernel index: 'x' is not a kernel index"));
  EXPECT_THAT(errorOf(with("kernel 0 ", "kernel -1 ")),
              HasSubstr("line 11: kernel index: '-1' is not a kernel index"));
  EXPECT_THAT(errorOf(with("kernel 0 ", "kernel 99999999999 ")),
              HasSubstr("line 11: kernel index: '99999999999' is not a kernel index"));
  EXPECT_THAT(errorOf(with("main_k0_generic", "0main")),
              HasSubstr("line 11: kernel name: '0main' is not a kernel symbol"));
  EXPECT_THAT(errorOf(with("main_k0_generic", "main.k0")),
              HasSubstr("line 11: kernel name: 'main.k0' is not a kernel symbol"));
  EXPECT_THAT(errorOf(with("main_k0_generic", "main%20k0")),
              HasSubstr("line 11: kernel name: 'main%20k0' is not a kernel symbol"));
  EXPECT_THAT(errorOf(with("main_k0_generic", "bad%2")),
              HasSubstr("line 11: kernel name: 'bad%2': "));
  EXPECT_THAT(errorOf(with("kernel 1 ", "kernel 0 ")),
              HasSubstr("line 12: kernel index: duplicate kernel index 0 (first at line 11)"));
  EXPECT_THAT(
      errorOf(with("main_k1_reduce", "main_k0_generic")),
      HasSubstr("line 12: kernel name: duplicate kernel 'main_k0_generic' (first at line 11)"));
  EXPECT_THAT(errorOf(with("kernel 1 ", "kernel 2 ")),
              HasSubstr("line 12: kernel index: no kernel 1 (kernels must be numbered 0..1 "
                        "without gaps)"));
  EXPECT_THAT(errorOf(with("kernel 0 ", "kernel 3 ")),
              HasSubstr("line 12: kernel index: no kernel 0 (kernels must be numbered 0..1"));
}

TEST(CudaManifest, KernelsAndFilesGoTogether) {
  std::string noFiles = std::string(kHeader) + "kernel 0 a\n" + kSlots;
  EXPECT_THAT(errorOf(noFiles),
              HasSubstr("line 7: kernel: the manifest has kernels but no cubin or "
                        "ptx record to load them from"));
  std::string noKernels =
      std::string(kHeader) + "ptx sm_90 k.ptx 1 0000000000000001\n" + kSlots;
  EXPECT_THAT(errorOf(noKernels), HasSubstr("line 7: ptx: kernel files but no kernel records"));
}

TEST(CudaManifest, OnlyTargetCudaHasKernelRecords) {
  EXPECT_THAT(errorOf(with("target cuda", "target cpu")),
              HasSubstr("line 7: cubin: kernel records belong to target cuda, not cpu"));
  std::string kernelOnly = std::string(kHeader) + "kernel 0 a\n" + kSlots;
  size_t pos = kernelOnly.find("target cuda");
  kernelOnly.replace(pos, 11, "target cpu");
  EXPECT_THAT(errorOf(kernelOnly),
              HasSubstr("line 7: kernel: kernel records belong to target cuda"));
}

TEST(CudaManifest, TruncationNeverParses) {
  // Cut anywhere before `end`: an error, never a crash or a partial table.
  std::string text = valid();
  size_t endPos = text.rfind("end\n");
  for (size_t cut = 0; cut < endPos; ++cut)
    EXPECT_NE(errorOf(text.substr(0, cut)), "") << "cut at " << cut;
}

TEST(CudaChip, ParsesMajorAndMinor) {
  int major = 0, minor = 0;
  ASSERT_TRUE(parseCudaChip("sm_80", major, minor));
  EXPECT_EQ(major, 8);
  EXPECT_EQ(minor, 0);
  ASSERT_TRUE(parseCudaChip("sm_86", major, minor));
  EXPECT_EQ(minor, 6);
  ASSERT_TRUE(parseCudaChip("sm_100", major, minor));
  EXPECT_EQ(major, 10);
  EXPECT_EQ(minor, 0);
  ASSERT_TRUE(parseCudaChip("sm_121", major, minor));
  EXPECT_EQ(major, 12);
  EXPECT_EQ(minor, 1);
  for (const char *bad : {"", "sm_", "sm_8", "sm_08", "sm_90a", "compute_90", "sm_9x", "sm_1234"})
    EXPECT_FALSE(parseCudaChip(bad, major, minor)) << bad;
}

namespace {
CudaImage image(const char *chip, bool ptx) {
  CudaImage i;
  i.ptx = ptx;
  i.chip = chip;
  EXPECT_TRUE(parseCudaChip(chip, i.major, i.minor));
  i.file = std::string("kernels.") + chip + (ptx ? ".ptx" : ".cubin");
  return i;
}
std::string chosen(const CudaProgram &p, int major, int minor, bool preferPtx = false) {
  StatusOr<const CudaImage *> i = selectCudaImage(p, major, minor, preferPtx);
  return i.ok() ? (*i)->file : "error: " + std::string(i.status().message());
}
} // namespace

TEST(CudaImageChoice, FollowsTheArtifactRules) {
  CudaProgram p;
  p.images = {image("sm_80", false), image("sm_80", true), image("sm_86", false),
              image("sm_90", false), image("sm_90", true)};
  // Same major, highest minor not above the device's.
  EXPECT_EQ(chosen(p, 8, 0), "kernels.sm_80.cubin");
  EXPECT_EQ(chosen(p, 8, 6), "kernels.sm_86.cubin");
  EXPECT_EQ(chosen(p, 8, 9), "kernels.sm_86.cubin");
  EXPECT_EQ(chosen(p, 9, 0), "kernels.sm_90.cubin");
  // A newer major has no cubin: the highest PTX not above it (JIT).
  EXPECT_EQ(chosen(p, 10, 0), "kernels.sm_90.ptx");
  EXPECT_EQ(chosen(p, 12, 1), "kernels.sm_90.ptx");
  // preferPtx takes the PTX whenever one fits.
  EXPECT_EQ(chosen(p, 9, 0, true), "kernels.sm_90.ptx");
  EXPECT_EQ(chosen(p, 8, 6, true), "kernels.sm_80.ptx");
  // Older than every file: an error naming the device and the files.
  std::string old = chosen(p, 7, 5);
  EXPECT_THAT(old,
              HasSubstr("error: the artifact's kernels were not compiled for this GPU (sm_75): "
                        "it has sm_80 cubin, sm_80 ptx, sm_86 cubin, sm_90 cubin, sm_90 ptx"))
      << old;
}

TEST(CudaImageChoice, CubinsNeedTheSameMajor) {
  CudaProgram cubinsOnly;
  cubinsOnly.images = {image("sm_80", false), image("sm_90", false)};
  // Cubins are binary compatible within a major only, from their minor up.
  EXPECT_EQ(chosen(cubinsOnly, 9, 0), "kernels.sm_90.cubin");
  EXPECT_THAT(chosen(cubinsOnly, 10, 0), HasSubstr("error: "));
  CudaProgram minorTooNew;
  minorTooNew.images = {image("sm_86", false)};
  EXPECT_THAT(chosen(minorTooNew, 8, 0), HasSubstr("error: "));
  EXPECT_EQ(chosen(minorTooNew, 8, 9), "kernels.sm_86.cubin");
  CudaProgram none;
  EXPECT_THAT(chosen(none, 9, 0), HasSubstr("it has no kernel files"));
}

TEST(CudaProgramRegistry, LatestRegistrationWins) {
  auto entryA = reinterpret_cast<EntryFn>(0x1000);
  auto entryB = reinterpret_cast<EntryFn>(0x2000);
  auto a = std::make_shared<CudaProgram>();
  a->id = newCudaProgramId();
  auto a2 = std::make_shared<CudaProgram>();
  a2->id = newCudaProgramId();
  EXPECT_GT(a2->id, a->id);
  EXPECT_EQ(findCudaProgram(entryA), nullptr);
  registerCudaProgram(entryA, a);
  EXPECT_EQ(findCudaProgram(entryA), a);
  EXPECT_EQ(findCudaProgram(entryB), nullptr);
  registerCudaProgram(entryA, a2);
  EXPECT_EQ(findCudaProgram(entryA), a2);
  EXPECT_TRUE(isCudaProgramRegistered(a->id));
  unregisterCudaProgram(entryA, a2->id);
  EXPECT_EQ(findCudaProgram(entryA), a);
  EXPECT_FALSE(isCudaProgramRegistered(a2->id));
  unregisterCudaProgram(entryA, a->id);
  EXPECT_EQ(findCudaProgram(entryA), nullptr);
  unregisterCudaProgram(entryA, a->id); // unknown: nothing happens
}
