//===- CostModel.h - step time and memory of one plan, analytically ----------===//
//
// The one cost model (DESIGN.md "One cost model"), used by the search, by
// trc-plan --plan (the simulator) and by trc-run --config auto:
// - kernels priced by the device profile (DeviceTimes.h): on spec sheets
//   matrix products by shape as a roofline, max(FLOPs / (peak x
//   kMatmulEfficiency), bytes / (HBM bandwidth x kMemoryEfficiency)), and
//   memory-bound kernels (softmax, dropout, layer norm, GeLU, residuals,
//   cross-entropy) by the bytes they move; on a measured profile
//   (trc-run --calibrate) the runtime's own constants: matrix products by
//   FLOPs, bytes and calls as fitted over shapes, trc's compiled kernels by
//   the bytes and ops of the step's unfused traffic (StepWork.h): counted
//   from the model's own compiled step when a CompiledWorkSource gives it
//   (an exported model), else from the GPT formulas;
// - collectives as ring algorithms (per step latency + bytes / bandwidth,
//   over NVLink inside a node and the network between nodes), or as
//   measured per operation and group size: TP collectives per layer, DP
//   all-reduce / reduce-scatter / all-gather, PP p2p;
// - the pipeline from per-stage slot times t_i (the first stage holds the
//   embeddings, the last the logits and the loss): busy m x max t_i, bubble
//   (sum t_i - max t_i) / v (GPipe, 1F1B; interleaved 1F1B with v virtual
//   stages, plus v times the p2p traffic); ZB-H1 defers each stage's
//   weight gradients W into the bubble, which shrinks to
//   sum (t_i - 2 W_i) - that of the slowest, as (p-1)(F+B-W) says;
// - data-parallel gradient traffic after the pipeline, not overlapped
//   (Megatron-LM 2104.04473's setting; trc's CPU runtime buckets gradients
//   into 25 MiB all-reduces, each with its latency);
// - context parallelism (C ranks share a row's positions): from a compiled
//   step, the rank's own step (its positions' work and stashes, the context
//   group's collectives among its counts); from the formulas, every rank's
//   work, activations and tensor-parallel traffic are 1/C of the plan's
//   without it (each rank computes its positions' [T/C, T] attention
//   scores), plus per layer and microbatch an all-gather of K and V forward
//   and a reduce-scatter of their gradients backward over the context group
//   ((C-1)/C of them in and out: the ring's volume), and the parameters'
//   gradients all-reduced over it once per step; parameters stay whole;
// - memory per rank: weights and gradients at the profile's element size
//   plus the optimizer (bf16 with fp32 master weights and Adam moments:
//   2 + 2 + 12 bytes per parameter; fp32: 4 + 4 + 8), sharded over the
//   shard group per ZeRO stage (1: optimizer state, 2: + gradients,
//   3: + weights); activations per Korthikanti et al. 2205.05198 (none /
//   selective / full recomputation, with TP and SP; bf16, scaled for fp32)
//   times the microbatches in flight (1F1B and ZB-H1: min(m, p); GPipe: m;
//   interleaved: x (1 + (p-1)/(p v))); the logits; the device's reserve.
//   From a compiled step: per pipeline rank the parameters its pieces
//   read and the activations they stash (times the microbatches in flight,
//   plus the largest piece's unrecomputed activations when recomputing),
//   the fullest rank's counting; model FLOPs are the step's products.
//
// Spec-sheet constants (against Megatron-LM's Table 1 on A100 80 GB;
// test/Plan/megatron-table1.test):
//   kMatmulEfficiency = 0.70: large bf16 GEMMs reach 70-75% of A100's
//     312 TFLOP/s in cuBLAS. With it the ten published plans (1F1B,
//     microbatches of one, full recomputation) are predicted within 7% of
//     the paper's TFLOP/s per GPU (small models under-predicted by ~6%,
//     large ones within 3%). It was set from the cuBLAS figure and checked
//     against the table, not fitted row by row.
//   kMemoryEfficiency = 0.80: streaming kernels reach ~80% of HBM peak.
// The byte counts of memory-bound kernels are Megatron's fused kernels'
// (fp16/bf16 reads and writes, 1-byte dropout masks), not fitted. Measured
// profiles have no tuned constant: every rate comes from trc-run
// --calibrate, every count from the IR trc compiles (StepWork.h).
//
// Model FLOPs (what TFLOP/s per device reports) follow Megatron's
// accounting: forward + backward (3x forward) + the recomputation the plan
// does; with full recomputation 96 B s l h^2 (1 + s/(6h) + V/(16 l h)).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PLAN_COSTMODEL_H
#define TRC_PLAN_COSTMODEL_H

#include "trc/Plan/Cluster.h"
#include "trc/Plan/CompiledWork.h"
#include "trc/Plan/Model.h"

#include <optional>
#include <string>

namespace trc::plan {

constexpr double kMatmulEfficiency = 0.70;
constexpr double kMemoryEfficiency = 0.80;

enum class Recompute { None, Selective, Full };
enum class Schedule { GPipe, OneFOneB, Interleaved, ZeroBubbleH1 };
const char *recomputeName(Recompute r);
// ParallelPlan's spelling: gpipe, 1f1b, interleaved_1f1b, zb_h1.
const char *scheduleName(Schedule s);

// One point of the plan space. world = data x context x tensor x pipeline.
struct Candidate {
  int data = 1, tensor = 1, pipeline = 1;
  int context = 1;         // each row's positions split over this many ranks
  bool contextRing = false; // cp_comm_type p2p: K/V blocks passed round a ring
  int microbatches = 1;    // per step, per data-parallel rank
  int microbatchSize = 1;  // samples: globalBatch / (data x microbatches)
  int zeroStage = 0;
  int shardDegree = 1;     // ranks a ZeRO shard spans (divides shardSpan())
  bool sequenceParallel = false;
  Recompute recompute = Recompute::Full;
  Schedule schedule = Schedule::OneFOneB;
  int virtualStages = 1;
  // Ranks holding whole parameters alike, which ZeRO shards over (as
  // ParallelPlan::shardSpan): data x context.
  int shardSpan() const { return data * context; }
  // SageMaker-keyed JSON (ParallelPlan's keys) plus "recompute".
  std::string toJson() const;
  std::string describe() const; // one line
};

// The recomputation a layer's work and memory follow: the ring (fused
// attention) recomputes the attention core in the backward and keeps no
// scores, as selective recomputation does.
Recompute attentionRecompute(const Candidate &c);

struct Prediction {
  double stepTime = 0;          // seconds
  double computeTime = 0;       // the pipeline's busy time on the slowest stage
  double bubbleTime = 0;        // idle slots of the pipeline
  double tensorCommTime = 0;    // TP collectives (inside the pipeline)
  double contextCommTime = 0;   // CP: keys and values gathered, their gradients scattered
  double p2pTime = 0;           // pipeline sends
  double dataCommTime = 0;      // DP / ZeRO collectives
  double optimizerTime = 0;
  double modelFlops = 0;        // per step, all devices (Megatron's accounting)
  double tflopsPerDevice = 0;
  double memoryBytes = 0;       // the fullest rank
  double paramBytes = 0, gradBytes = 0, optimizerBytes = 0, activationBytes = 0;
  double deviceMemoryBytes = 0; // what a rank may use (Cluster::deviceMemory)
  bool fits = false;            // memoryBytes <= deviceMemoryBytes
};

// The training step as the compiler builds it for a candidate's tensor
// layout, recomputation and microbatch size, one stage per piece between
// layer boundaries (trc/Plan/CompiledWork.h; lib/Driver compiles it). With
// one, trc's CPU kernels are priced from these counts instead of the GPT
// formulas of StepWork.h, and pipeline stages are cut as
// trc-pipeline-stages cuts them.
class CompiledWorkSource {
public:
  virtual ~CompiledWorkSource() = default;
  // Null when the step cannot be compiled that way (the formulas price it).
  virtual const CompiledWork *work(const Candidate &c) = 0;
  // The step at the model's own input shapes (what does not depend on the
  // candidate: its pieces, its state updates); null when it does not compile.
  virtual const CompiledWork *probe() { return work(Candidate()); }
};

// Precondition: `c` is consistent (degrees multiply to the cluster's size,
// divide the model's layers/heads and the batch).
Prediction evaluate(const GptModel &model, const Cluster &cluster, const Candidate &c,
                    CompiledWorkSource *compiled = nullptr);

// A model known only by its compiled steps (any model trc trains: a CNN, a
// ViT, a transformer whose shape the formulas cannot read): kernels,
// collectives, parameters, activations and model FLOPs all counted from the
// step, on any device profile. Nullopt when the step does not compile for
// `c`.
std::optional<Prediction> evaluateCompiled(CompiledWorkSource &compiled, const Cluster &cluster,
                                           const Candidate &c);

} // namespace trc::plan

#endif // TRC_PLAN_COSTMODEL_H
