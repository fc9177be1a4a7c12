/*===- TestProgram.c - a tiny hand-written trc program ---------------------===//
 *
 * The runtime tests' fixture: what a compiled program.so looks like, written
 * by hand. Slots (see TestArtifact.h):
 *   0 input  x      f32 [4, 3]
 *   1 param  W      f32 [3, 2]
 *   2 output y      f32 [4, 2]   y = x * W + b   (x * W via trc_rt_matmul_f32,
 *   3 param  b      f32 [2]                      into the arena)
 *   4 output out/sum f32 [4, 3]  s = x + in/two  (elementwise)
 *   5 input  in/two f32 [4, 3]
 * The arena holds the 4x2 temporary x * W. The trc-run lit tests use it too
 * (test/Inputs/make_artifact.py).
 *
 *===----------------------------------------------------------------------===*/
#include <stdint.h>

void trc_rt_matmul_f32(int64_t batch, int64_t m, int64_t n, int64_t k,
                       const float *a, int64_t lda, int64_t strideA,
                       int32_t transA, const float *b, int64_t ldb,
                       int64_t strideB, int32_t transB, float *c, int64_t ldc,
                       int64_t strideC);

/* What the program was compiled for (runtime/formats/ProgramSignature.h):
 * the loader refuses a manifest that says otherwise. Tests of other slot
 * layouts compile this file with their manifest's signature instead
 * (TestArtifact.h's compileTestProgramFor). */
#ifndef TRC_TEST_SIGNATURE_ELSEWHERE
const char trc_signature[] =
    "trc-signature 1\n"
    "target cpu\n"
    "entry trc_entry\n"
    "arena 64\n"
    "slot 0 input x f32 2 4 3\n"
    "slot 1 param W f32 2 3 2\n"
    "slot 2 output y f32 2 4 2\n"
    "slot 3 param b f32 1 2\n"
    "slot 4 output out/sum f32 2 4 3\n"
    "slot 5 input in/two f32 2 4 3\n";
#endif

void trc_entry(void **slots, void *arena) {
  const float *x = (const float *)slots[0];
  const float *w = (const float *)slots[1];
  float *y = (float *)slots[2];
  const float *b = (const float *)slots[3];
  float *s = (float *)slots[4];
  const float *x2 = (const float *)slots[5];
  float *t = (float *)arena;
  trc_rt_matmul_f32(1, 4, 2, 3, x, 3, 0, 0, w, 2, 0, 0, t, 2, 0);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      y[i * 2 + j] = t[i * 2 + j] + b[j];
  for (int i = 0; i < 12; ++i)
    s[i] = x[i] + x2[i];
}
