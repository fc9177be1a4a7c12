/*===- TestCudaProgram.c - a tiny hand-written trc program for target cuda -===//
 *
 * What a compiled `target cuda` program.so looks like, written by hand: host
 * code that only does pointer arithmetic, kernel launches and library calls
 * (docs/ARTIFACT.md "Target cuda"). Slots as TestProgram.c's (TestArtifact.h),
 * all device memory:
 *   0 input  x      f32 [4, 3]
 *   1 param  W      f32 [3, 2]
 *   2 output y      f32 [4, 2]   y = x * W + b   (x * W with cuBLASLt into
 *   3 param  b      f32 [2]                      the arena, then kernel 1)
 *   4 output out/sum f32 [4, 3]  s = x + in/two  (kernel 0 with a = 1)
 *   5 input  in/two f32 [4, 3]
 * Kernels (TestCudaArtifact.h): 0 trc_test_axpy, 1 trc_test_bias.
 *
 *===----------------------------------------------------------------------===*/
#include <stdint.h>

void trc_rt_cuda_launch(int32_t kernel, int64_t gridX, int64_t gridY, int64_t gridZ,
                        int64_t blockX, int64_t blockY, int64_t blockZ, int32_t sharedBytes,
                        void **params, int32_t numParams);
void trc_rt_cublaslt_matmul_f32(int64_t batch, int64_t m, int64_t n, int64_t k,
                                const float *a, int64_t lda, int64_t strideA, int32_t transA,
                                const float *b, int64_t ldb, int64_t strideB, int32_t transB,
                                float *c, int64_t ldc, int64_t strideC);

/* What the program was compiled for (runtime/formats/ProgramSignature.h):
 * the loader refuses a manifest that says otherwise. Tests of other kernel
 * tables compile this file with their manifest's signature instead
 * (TestArtifact.h's compileTestProgramFor). */
#ifndef TRC_TEST_SIGNATURE_ELSEWHERE
const char trc_signature[] =
    "trc-signature 1\n"
    "target cuda\n"
    "entry trc_entry\n"
    "arena 64\n"
    "kernel 0 trc_test_axpy\n"
    "kernel 1 trc_test_bias\n"
    "slot 0 input x f32 2 4 3\n"
    "slot 1 param W f32 2 3 2\n"
    "slot 2 output y f32 2 4 2\n"
    "slot 3 param b f32 1 2\n"
    "slot 4 output out/sum f32 2 4 3\n"
    "slot 5 input in/two f32 2 4 3\n";
#endif

void trc_entry(void **slots, void *arena) {
  void *x = slots[0], *w = slots[1], *y = slots[2], *b = slots[3], *s = slots[4];
  void *x2 = slots[5], *t = arena;
  trc_rt_cublaslt_matmul_f32(1, 4, 2, 3, (const float *)x, 3, 0, 0, (const float *)w, 2, 0,
                             0, (float *)t, 2, 0);
  uint32_t cols = 2, n = 8;
  void *bias[5] = {&t, &b, &y, &cols, &n};
  trc_rt_cuda_launch(1, 1, 1, 1, 32, 1, 1, 0, bias, 5);
  float one = 1.0f;
  uint32_t count = 12;
  void *axpy[5] = {&x, &x2, &s, &one, &count};
  trc_rt_cuda_launch(0, 1, 1, 1, 32, 1, 1, 0, axpy, 5);
}
