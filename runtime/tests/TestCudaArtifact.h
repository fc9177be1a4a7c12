//===- TestCudaArtifact.h - hand-written kernels and a cuda test artifact ---===//
//
// kTestPtx: two kernels in PTX (.target sm_50, so any newer GPU's driver
// compiles it), checked with ptxas -arch=sm_80/sm_90:
//   kernel 0 trc_test_axpy(x, y, z, a, n): z[i] = a * x[i] + y[i], i < n
//   kernel 1 trc_test_bias(t, b, y, cols, n): y[i] = t[i] + b[i % cols]
// (u64 device pointers, f32 a, u32 cols and n; one thread per i).
// writeTestCudaArtifact() writes a `target cuda` artifact folder with the
// slots and weights of TestArtifact.h, the host program TestCudaProgram.c
// (which launches them and calls cuBLASLt) and kernels.sm_50.ptx, plus any
// extra kernel files the test asks for; sizes and hashes are correct.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TESTS_TESTCUDAARTIFACT_H
#define TRC_RUNTIME_TESTS_TESTCUDAARTIFACT_H

#include "TestArtifact.h"
#include "runtime/backends/cuda/CudaBackend.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace trc::rt::test {

/// TRC_REQUIRE_GPU=1 (the GPU bundle's run.sh): a missing GPU fails instead of skipping.
inline bool gpuRequired() {
  const char *v = std::getenv("TRC_REQUIRE_GPU");
  return v && std::strcmp(v, "1") == 0;
}

// Skips the test (or fails it under TRC_REQUIRE_GPU=1) without a device.
#define REQUIRE_CUDA_DEVICE()                                                  \
  do {                                                                         \
    std::string why_;                                                          \
    if (!::trc::rt::cudaDevicePresent(why_)) {                                 \
      if (::trc::rt::test::gpuRequired())                                      \
        FAIL() << "TRC_REQUIRE_GPU=1 but " << why_;                            \
      GTEST_SKIP() << "no CUDA device: " << why_;                              \
    }                                                                          \
  } while (0)


inline const char kTestPtx[] = R"PTX(.version 7.0
.target sm_50
.address_size 64

// z[i] = a * x[i] + y[i] for i < n
.visible .entry trc_test_axpy(
	.param .u64 axpy_x,
	.param .u64 axpy_y,
	.param .u64 axpy_z,
	.param .f32 axpy_a,
	.param .u32 axpy_n
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<5>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<11>;

	ld.param.u64 	%rd1, [axpy_x];
	ld.param.u64 	%rd2, [axpy_y];
	ld.param.u64 	%rd3, [axpy_z];
	ld.param.f32 	%f1, [axpy_a];
	ld.param.u32 	%r2, [axpy_n];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.u32 	%p1, %r1, %r2;
	@%p1 bra 	AXPY_DONE;
	cvta.to.global.u64 	%rd4, %rd1;
	mul.wide.u32 	%rd5, %r1, 4;
	add.s64 	%rd6, %rd4, %rd5;
	cvta.to.global.u64 	%rd7, %rd2;
	add.s64 	%rd8, %rd7, %rd5;
	ld.global.f32 	%f2, [%rd6];
	ld.global.f32 	%f3, [%rd8];
	fma.rn.f32 	%f4, %f1, %f2, %f3;
	cvta.to.global.u64 	%rd9, %rd3;
	add.s64 	%rd10, %rd9, %rd5;
	st.global.f32 	[%rd10], %f4;
AXPY_DONE:
	ret;
}

// y[i] = t[i] + b[i % cols] for i < n
.visible .entry trc_test_bias(
	.param .u64 bias_t,
	.param .u64 bias_b,
	.param .u64 bias_y,
	.param .u32 bias_cols,
	.param .u32 bias_n
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<4>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<12>;

	ld.param.u64 	%rd1, [bias_t];
	ld.param.u64 	%rd2, [bias_b];
	ld.param.u64 	%rd3, [bias_y];
	ld.param.u32 	%r2, [bias_cols];
	ld.param.u32 	%r3, [bias_n];
	mov.u32 	%r4, %ctaid.x;
	mov.u32 	%r5, %ntid.x;
	mov.u32 	%r6, %tid.x;
	mad.lo.s32 	%r1, %r4, %r5, %r6;
	setp.ge.u32 	%p1, %r1, %r3;
	@%p1 bra 	BIAS_DONE;
	rem.u32 	%r7, %r1, %r2;
	cvta.to.global.u64 	%rd4, %rd1;
	mul.wide.u32 	%rd5, %r1, 4;
	add.s64 	%rd6, %rd4, %rd5;
	ld.global.f32 	%f1, [%rd6];
	cvta.to.global.u64 	%rd7, %rd2;
	mul.wide.u32 	%rd8, %r7, 4;
	add.s64 	%rd9, %rd7, %rd8;
	ld.global.f32 	%f2, [%rd9];
	add.f32 	%f3, %f1, %f2;
	cvta.to.global.u64 	%rd10, %rd3;
	add.s64 	%rd11, %rd10, %rd5;
	st.global.f32 	[%rd11], %f3;
BIAS_DONE:
	ret;
}
)PTX";

inline const char *const kTestKernelNames[] = {"trc_test_axpy", "trc_test_bias"};

struct CudaArtifactOptions {
  std::string program = fixturePath(TRC_TEST_CUDA_PROGRAM);
  // (record, file, bytes) of kernel files besides kernels.sm_50.ptx, e.g.
  // {"cubin sm_90", "kernels.sm_90.cubin", bytes}.
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> extraFiles;
  bool withPtx = true;
  // Kernel records (defaults to the two kernels above).
  std::vector<std::string> kernels = {"trc_test_axpy", "trc_test_bias"};
  ChecksumKind checksums = ChecksumKind::Xxh3;
};

inline std::string kernelFileRecord(const std::string &record, const std::string &file,
                                    const std::string &bytes,
                                    ChecksumKind kind = ChecksumKind::Xxh3) {
  return record + " " + file + " " + std::to_string(bytes.size()) + " " +
         manifestChecksum(bytes, kind) + "\n";
}

// The manifest of the cuda test artifact (slots of TestArtifact.h).
inline std::string testCudaManifest(const std::string &program, const std::string &weights,
                                    const CudaArtifactOptions &opt = {}) {
  std::string m;
  m += "trc-artifact 1\n";
  m += "target cuda\n";
  m += "program program.so " + std::to_string(program.size()) + " " +
       manifestChecksum(program, opt.checksums) + "\n";
  m += "entry trc_entry\n";
  m += "arena 64\n";
  m += "weights weights.bin " + std::to_string(weights.size()) + " " +
       manifestChecksum(weights, opt.checksums) + "\n";
  if (opt.withPtx)
    m += kernelFileRecord("ptx sm_50", "kernels.sm_50.ptx", kTestPtx, opt.checksums);
  for (const auto &[record, file] : opt.extraFiles)
    m += kernelFileRecord(record, file.first, file.second, opt.checksums);
  for (size_t i = 0; i < opt.kernels.size(); ++i)
    m += "kernel " + std::to_string(i) + " " + opt.kernels[i] + "\n";
  m += "slot 0 input x f32 2 4 3\n";
  m += "slot 1 param W f32 2 3 2 0 trainable\n";
  m += "slot 2 output y f32 2 4 2\n";
  m += "slot 3 param b f32 1 2 64 frozen\n";
  m += "slot 4 output out/sum f32 2 4 3\n";
  m += "slot 5 input in/two f32 2 4 3\n";
  m += "end\n";
  return m;
}

// Writes the artifact into `dir` (which must exist).
inline void writeTestCudaArtifact(const std::string &dir, const CudaArtifactOptions &opt = {}) {
  std::string program = readFile(opt.program);
  std::string weights = testWeights();
  writeFile(dir + "/program.so", program);
  writeFile(dir + "/weights.bin", weights);
  if (opt.withPtx)
    writeFile(dir + "/kernels.sm_50.ptx", kTestPtx);
  for (const auto &[record, file] : opt.extraFiles)
    writeFile(dir + "/" + file.first, file.second);
  writeFile(dir + "/manifest.trc", testCudaManifest(program, weights, opt));
}

} // namespace trc::rt::test

#endif // TRC_RUNTIME_TESTS_TESTCUDAARTIFACT_H
