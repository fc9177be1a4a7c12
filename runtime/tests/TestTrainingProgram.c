/*===- TestTrainingProgram.c - a tiny hand-written training step ----------===//
 *
 * The trainer tests' fixture: what a compiled training step (program.so)
 * looks like to the runtime, written by hand (TestTrainingStep.h writes its
 * artifact folder and training.trc). Slots:
 *   0 input  ids        i64 [2, 8]   token ids (a micro-batch of 2 rows)
 *   1 input  targets    i64 [2, 8]
 *   2 input  trc.lr     f32 []
 *   3 input  trc.step   f32 []
 *   4 param  W          f32 [64]     one weight per token id
 *   5 output loss       f32 []       mean of (W[id] - target / 100)^2
 *   6 output grad_norm  f32 []
 *   7 output update:W   f32 [64]     W - lr * grad (plain SGD)
 * Its gradient and loss are averaged over the data axis ("world") with
 * trc_rt_all_reduce, and the loss over the tensor group, as a compiled
 * data- or tensor-parallel step would; alone, those are local copies.
 * The arena holds the gradient and the loss.
 *
 *===----------------------------------------------------------------------===*/
#include <math.h>
#include <stdint.h>

void trc_rt_all_reduce(int64_t group, int64_t dtype, int64_t reduction, int64_t count,
                       int64_t send, int64_t recv);

enum { kRows = 2, kSeq = 8, kVocab = 64 };
/* CollectiveAbi.h's codes. */
enum { kGroupWorld = 0, kGroupTensor = 3, kReduceAvg = 1, kF32 = 0 };

/* What the program was compiled for (runtime/formats/ProgramSignature.h):
 * the loader refuses a manifest that says otherwise. */
const char trc_signature[] =
    "trc-signature 1\n"
    "target cpu\n"
    "entry trc_entry\n"
    "arena 320\n"
    "slot 0 input ids i64 2 2 8\n"
    "slot 1 input targets i64 2 2 8\n"
    "slot 2 input trc.lr f32 0\n"
    "slot 3 input trc.step f32 0\n"
    "slot 4 param W f32 1 64\n"
    "slot 5 output loss f32 0\n"
    "slot 6 output grad_norm f32 0\n"
    "slot 7 output update:W f32 1 64\n";

void trc_entry(void **slots, void *arena) {
  const int64_t *ids = (const int64_t *)slots[0];
  const int64_t *targets = (const int64_t *)slots[1];
  float lr = *(const float *)slots[2];
  const float *w = (const float *)slots[4];
  float *loss = (float *)slots[5], *norm = (float *)slots[6], *updated = (float *)slots[7];
  float *grad = (float *)arena, *sum = grad + kVocab;
  const int n = kRows * kSeq;
  for (int j = 0; j < kVocab; ++j)
    grad[j] = 0;
  *sum = 0;
  for (int i = 0; i < n; ++i) {
    int64_t id = ids[i] & (kVocab - 1);
    float diff = w[id] - (float)targets[i] / 100.0f;
    *sum += diff * diff / n;
    grad[id] += 2 * diff / n;
  }
  trc_rt_all_reduce(kGroupWorld, kF32, kReduceAvg, kVocab, (int64_t)(intptr_t)grad,
                    (int64_t)(intptr_t)grad);
  trc_rt_all_reduce(kGroupWorld, kF32, kReduceAvg, 1, (int64_t)(intptr_t)sum,
                    (int64_t)(intptr_t)sum);
  trc_rt_all_reduce(kGroupTensor, kF32, kReduceAvg, 1, (int64_t)(intptr_t)sum,
                    (int64_t)(intptr_t)loss);
  float squares = 0;
  for (int j = 0; j < kVocab; ++j) {
    squares += grad[j] * grad[j];
    updated[j] = w[j] - lr * grad[j];
  }
  *norm = sqrtf(squares);
}
