//===- StepWork.h - the work of one layer, stage and optimizer step -*- C++ -*-===//
//
// Internal to lib/Plan (CostModel.cpp assembles these into a step). The
// seconds one rank spends on one microbatch of one transformer layer, split
// as the zero-bubble schedules split it: F (forward), B (backward for the
// layer's input, with any recomputation) and W (backward for its weights),
// plus its tensor-parallel collectives; the same for what the first stage
// (embeddings) and the last stage (final norm, logits, loss) add; the
// optimizer step. Two kernel accountings, chosen by DeviceTimes::trcKernels:
//
// - Megatron's (GPUs): fused kernels moving bf16 bytes (Megatron-LM's own
//   counts: 24 T h + 6 T f + 8 T h bytes of elementwise traffic per layer,
//   9 bytes per attention score, 20 per logit, 36 per parameter in the
//   optimizer), tensor parallelism as 4 all-reduces per layer (6 with
//   full recomputation).
// - trc's CPU backend: each op of the training step reading its operands
//   and writing its result (trc-print-fusion-summary's "before" traffic),
//   per layer and microbatch, in elements:
//     T (159 h + 14.5 h/t + 54.8 f/t + 21.8 a s/t) + 2.2 w/t     (no SP)
//     T (258 h/t + 55.7 f/t + 20.9 a s/t) + 0.7 w/t             (SP)
//   (w = 4h^2 + 2hf weights), 143 ops (147 with TP, 173 with SP); outside
//   the layers T (78.9 h + 52.4 V/t) elements (T (94.5 h + 62.8 V/t) with
//   SP) and 56 ops (121 with TP, 142 with SP). The optimizer (41 unfused
//   elements per parameter and 27 ops per parameter tensor in the IR) is
//   elementwise on one shape and fuses into a loop per tensor (and one for
//   the gradient norm): it streams 7 elements per parameter, the norm 1,
//   the host's copies of the updated parameters and moments 6, at the
//   measured stream bandwidth.
//   In a pipeline each layer adds, per microbatch, 8.6 w/t elements (its
//   stage programs transpose the weights again and accumulate their
//   gradients: 10.8 w/t in all) and 11.0 T h (stash, send and receive
//   buffers).
//   These coefficients are counted from the IR trc compiles, not fitted to
//   timings: least squares over 90 GPT-2 training steps (6 shapes x 3
//   batch/sequence sizes x tensor degrees 1/2/4 with and without SP,
//   trc-opt --trc-training-pipeline --trc-print-fusion-summary, matrix
//   products' bytes taken out), within 3.2% (4.5% SP) of every one, and 3
//   microbatch sizes of a 4-stage pipeline's middle stage;
//   bench/plan_traffic.py reproduces them. Matrix products are priced by
//   shape (forward, then dA = dC B^T and dB = A^T dC), tensor parallelism
//   as trc's collectives: 4 all-reduces of T h per layer, or 4
//   all-gathers and 4 reduce-scatters with SP, 2 more for the embedding and
//   5 of T floats for the vocabulary-parallel loss.
// - a compiled step (pieceWork: an exported model's own counts,
//   CompiledWork.h): each piece's products by their shapes and its other
//   kernels by their unfused bytes and count, phase by phase, its tensor
//   group's collectives as counted; in a pipeline the constants above for
//   what stage programs add, on the piece's own parameter and send bytes.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_PLAN_STEPWORK_H
#define TRC_LIB_PLAN_STEPWORK_H

#include "DeviceTimes.h"

#include "trc/Plan/CostModel.h"

namespace trc::plan {

struct Work {
  double F = 0, B = 0, W = 0; // seconds
  double tpComm = 0;          // tensor-parallel collectives, fwd + bwd (+ recompute)
  double cpComm = 0;          // context-parallel collectives (a compiled step's)
  double compute() const { return F + B + W; }
  Work &operator+=(const Work &o) {
    F += o.F, B += o.B, W += o.W, tpComm += o.tpComm, cpComm += o.cpComm;
    return *this;
  }
  Work scaled(double k) const { return {F * k, B * k, W * k, tpComm * k, cpComm * k}; }
};

// One transformer layer, one microbatch, one rank.
Work layerWork(const GptModel &m, const Candidate &c, const DeviceTimes &dt);
// Megatron's attention core of one layer and microbatch on one tensor rank
// (the two score products and 9 bytes per score), forward, for whole rows
// of m.seq positions: what the context ring's block moves overlap.
double attentionCoreSeconds(const GptModel &m, const Candidate &c, const DeviceTimes &dt);
// What the first stage adds (embeddings) and the last (final norm,
// logits, loss), per microbatch; with one stage both.
Work firstStageWork(const GptModel &m, const Candidate &c, const DeviceTimes &dt);
Work lastStageWork(const GptModel &m, const Candidate &c, const DeviceTimes &dt);
// One piece of a compiled step (CompiledWork.h), one microbatch, one rank:
// its products by shape, its other kernels by unfused bytes and count, its
// tensor-group collectives; in a pipeline (`pipelined`) what its stage
// programs add per microbatch (the weights transposed again and their
// gradients accumulated, the activations through stash, send and receive
// buffers: the constants the GPT layer uses, on the piece's own parameter
// and send bytes).
Work pieceWork(const StageWork &piece, const Candidate &c, const DeviceTimes &dt, bool pipelined);
// Ops no stage owns (masks, positions), priced as forward work.
Work unstagedWork(const PhaseWork &ops, const Candidate &c, const DeviceTimes &dt);
// The optimizer step over `params` parameters in `tensors` tensors.
double optimizerSeconds(double params, double tensors, const DeviceTimes &dt);
// trc's gradient buckets: copying `gradElements` in and out, on the CPU.
double bucketCopySeconds(double gradElements, double tensors, const DeviceTimes &dt);

} // namespace trc::plan

#endif // TRC_LIB_PLAN_STEPWORK_H
