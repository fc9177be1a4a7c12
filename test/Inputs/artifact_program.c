/* A hand-written trc program for the trc-run lit tests (test/Runtime/):
 * what `trc-opt --trc-compile="target=cpu"` would put in program.so, small
 * enough to check by hand. make_artifact.py compiles it with
 * `cc -shared -fPIC` and writes the manifest that goes with it:
 *   slot 0 input  x       f32 [4, 3]
 *   slot 1 param  W       f32 [3, 2]
 *   slot 2 output y       f32 [4, 2]   y = x @ W + b  (trc_rt_matmul_f32,
 *   slot 3 param  b       f32 [2]                      temporary in the arena)
 *   slot 4 output out/sum f32 [4, 3]   out/sum = x + in/two
 *   slot 5 input  in/two  f32 [4, 3]
 */
#include <stdint.h>

void trc_rt_matmul_f32(int64_t batch, int64_t m, int64_t n, int64_t k,
                       const float *a, int64_t lda, int64_t strideA,
                       int32_t transA, const float *b, int64_t ldb,
                       int64_t strideB, int32_t transB, float *c, int64_t ldc,
                       int64_t strideC);

void trc_entry(void **slots, void *arena) {
  const float *x = (const float *)slots[0];
  const float *w = (const float *)slots[1];
  float *y = (float *)slots[2];
  const float *b = (const float *)slots[3];
  float *sum = (float *)slots[4];
  const float *two = (const float *)slots[5];
  float *t = (float *)arena;
  trc_rt_matmul_f32(1, 4, 2, 3, x, 3, 0, 0, w, 2, 0, 0, t, 2, 0);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      y[i * 2 + j] = t[i * 2 + j] + b[j];
  for (int i = 0; i < 12; ++i)
    sum[i] = x[i] + two[i];
}
