//===- CostModel.cpp - the analytical step time and memory of a plan ---------===//
//
// See CostModel.h for the model and its constants; the per-layer work is
// StepWork.cpp's (from the GPT formulas, or from the compiled step's pieces
// when a CompiledWorkSource gives them), the kernels' and collectives'
// seconds DeviceTimes.cpp's.
// Rank placement follows Megatron-LM: tensor-parallel ranks are
// consecutive (inside a node), then data-parallel, then pipeline; a group
// uses NVLink when it fits in one node and the network otherwise.
//
//===----------------------------------------------------------------------===//
#include "trc/Plan/CostModel.h"

#include "DeviceTimes.h"
#include "StepWork.h"

#include "trc/Plan/Partition.h"

#include "runtime/formats/Json.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace trc::plan {
namespace {

// Activation bytes one layer keeps for one microbatch (Korthikanti et al.:
// 34 s b h + 5 a s^2 b for GPT, of which 24 s b h is split by tensor
// parallelism). The split part follows the model's widths: the MLP keeps
// 4 s b F (6 when gated: gate, up and their activation) where GPT's 4h MLP
// keeps 16 s b h, and K and V keep 4 s b kvWidth where GPT's keep 4 s b h.
double layerActivations(const GptModel &m, const Candidate &c, Recompute r) {
  double s = m.seq, b = c.microbatchSize, h = m.hidden, a = m.heads, t = c.tensor;
  double split = 24 + (m.gatedMlp ? 6 : 4) * m.ffn / h - 16 + 4 * m.kvWidth() / h - 4;
  bool sp = c.sequenceParallel;
  switch (r) {
  case Recompute::Full:
    return sp ? 2 * s * b * h / t : 2 * s * b * h;
  case Recompute::Selective:
    return sp ? (10 + split) * s * b * h / t : s * b * h * (10 + split / t);
  case Recompute::None:
    break;
  }
  return sp ? s * b * h / t * (10 + split + 5 * a * s / h)
            : s * b * h * (10 + split / t + 5 * a * s / (h * t));
}

} // namespace

const char *recomputeName(Recompute r) {
  return r == Recompute::None ? "none" : r == Recompute::Selective ? "selective" : "full";
}

const char *scheduleName(Schedule s) {
  switch (s) {
  case Schedule::GPipe:
    return "gpipe";
  case Schedule::OneFOneB:
    return "1f1b";
  case Schedule::Interleaved:
    return "interleaved_1f1b";
  case Schedule::ZeroBubbleH1:
    return "zb_h1";
  }
  return "1f1b";
}

std::string Candidate::toJson() const {
  std::string j = "{\"ddp\": true, \"tensor_parallel_degree\": ";
  rt::appendJsonInt(j, tensor);
  j += ", \"pipeline_parallel_degree\": ";
  rt::appendJsonInt(j, pipeline);
  j += ", \"microbatches\": ";
  rt::appendJsonInt(j, microbatches);
  j += ", \"pipeline_schedule\": \"" + std::string(scheduleName(schedule)) + "\"";
  j += ", \"virtual_stages\": ";
  rt::appendJsonInt(j, virtualStages);
  j += ", \"zero_stage\": ";
  rt::appendJsonInt(j, zeroStage);
  if (zeroStage > 0 && shardDegree != data) {
    j += ", \"hybrid_shard_degree\": ";
    rt::appendJsonInt(j, shardDegree);
  }
  j += std::string(", \"sequence_parallel\": ") + (sequenceParallel ? "true" : "false");
  j += ", \"recompute\": \"" + std::string(recomputeName(recompute)) + "\"}";
  return j;
}

std::string Candidate::describe() const {
  std::string s = "data=" + std::to_string(data) + " tensor=" + std::to_string(tensor) +
                  (sequenceParallel ? "+sp" : "") + " pipeline=" + std::to_string(pipeline) +
                  " microbatches=" + std::to_string(microbatches) + "x" +
                  std::to_string(microbatchSize);
  if (pipeline > 1)
    s += std::string(" schedule=") + scheduleName(schedule) +
         (schedule == Schedule::Interleaved ? "/" + std::to_string(virtualStages) : "");
  s += " zero=" + std::to_string(zeroStage);
  if (zeroStage > 0 && shardDegree != data)
    s += "/" + std::to_string(shardDegree);
  s += std::string(" recompute=") + recomputeName(recompute);
  return s;
}

namespace {

// The pipeline's part of a step: per-stage slots of work priced by `dt`.
struct PipelinePhase {
  double compute = 0, tensorComm = 0, p2p = 0, bubble = 0;
  double spreadCompute = 0, spreadTensorComm = 0; // the stages' mean
  double total() const { return compute + tensorComm + p2p + bubble; }
  // The same work spread evenly over the stages, with no bubble.
  PipelinePhase spread() const {
    return {spreadCompute, spreadTensorComm, p2p, 0, spreadCompute, spreadTensorComm};
  }
};

// Each pipeline rank's work for one microbatch and the activation bytes a
// cut passes: from the compiled pieces, cut as trc-pipeline-stages cuts
// them (into pipeline x virtual chunks, rank r holding chunks r, r + p, ...;
// the ops no stage owns run on every rank), or from the GPT formulas.
std::vector<Work> rankWork(const GptModel &m, const Candidate &c, const DeviceTimes &dt,
                           const CompiledWork *compiled, double &sendBytes) {
  const int p = c.pipeline;
  if (!compiled) {
    std::vector<Work> stages(size_t(p), layerWork(m, c, dt).scaled(double(m.layers) / p));
    stages.front() += firstStageWork(m, c, dt);
    stages.back() += lastStageWork(m, c, dt);
    sendBytes = double(c.microbatchSize) * m.seq * m.hidden * dt.elementBytes() / c.tensor;
    return stages;
  }
  std::vector<double> costs;
  for (const StageWork &piece : compiled->stages)
    costs.push_back(piece.forwardCost);
  const int64_t chunks = int64_t(p) * c.virtualStages;
  std::vector<int64_t> cuts =
      balancedCuts(costs, std::max<int64_t>(1, std::min<int64_t>(chunks, int64_t(costs.size()))));
  std::vector<Work> stages(size_t(p), unstagedWork(compiled->unstaged, c, dt));
  sendBytes = 0;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    for (int64_t i = cuts[k]; i < cuts[k + 1]; ++i)
      stages[k % size_t(p)] += pieceWork(compiled->stages[size_t(i)], c, dt, p > 1);
    if (cuts[k + 1] > cuts[k] && k + 2 < cuts.size())
      sendBytes = std::max(sendBytes, compiled->stages[size_t(cuts[k + 1] - 1)].sendBytes);
  }
  return stages;
}

PipelinePhase pipelinePhase(const GptModel &m, const Candidate &c, const DeviceTimes &dt,
                            const CompiledWork *compiled) {
  const int p = c.pipeline, mb = c.microbatches, v = c.virtualStages;
  const bool interleaved = c.schedule == Schedule::Interleaved;
  // Each stage's work for one microbatch; the slot adds its p2p (the
  // activation out, the gradient in).
  double sendBytes = 0;
  std::vector<Work> stages = rankWork(m, c, dt, compiled, sendBytes);
  double p2pOne = p > 1 ? 2 * dt.collective(Collective::P2P, 2, sendBytes,
                                            (long long)c.tensor * c.data * p)
                        : 0;
  size_t slowest = 0;
  std::vector<double> slots;
  double compute = 0, tpComm = 0;
  for (const Work &w : stages) {
    slots.push_back(w.compute() + w.tpComm + p2pOne);
    compute += w.compute();
    tpComm += w.tpComm;
    if (slots.back() > slots[slowest])
      slowest = slots.size() - 1;
  }
  double idle = 0;
  for (size_t i = 0; i < stages.size(); ++i)
    if (i != slowest) // ZB-H1 runs W in the bubble: (p-1)(F+B-W) instead of (F+B+W)
      idle += c.schedule == Schedule::ZeroBubbleH1 ? std::max(0.0, slots[i] - 2 * stages[i].W)
                                                   : slots[i];
  PipelinePhase r;
  r.compute = mb * stages[slowest].compute();
  r.tensorComm = mb * stages[slowest].tpComm;
  r.p2p = mb * p2pOne * (interleaved ? v : 1);
  r.bubble = idle / (interleaved ? v : 1);
  r.spreadCompute = mb * compute / p;
  r.spreadTensorComm = mb * tpComm / p;
  return r;
}

} // namespace

Prediction evaluate(const GptModel &m, const Cluster &cluster, const Candidate &c,
                    CompiledWorkSource *source) {
  const DeviceProfile &d = cluster.device;
  const DeviceTimes dt(cluster); // every rank of the node busy
  const double e = dt.elementBytes();
  const double s = m.seq, h = m.hidden, V = m.vocab;
  const double t = c.tensor, b = c.microbatchSize, T = b * s;
  const int p = c.pipeline, mb = c.microbatches, v = c.virtualStages;
  const double Ls = double(m.layers) / p;
  const bool interleaved = c.schedule == Schedule::Interleaved;

  // More ranks than cores (a measured node): the pipeline's critical path
  // runs at a core per rank, but the ranks' work shares the cores, so the
  // phase is the longer of the two (a stage waiting in its bubble leaves its
  // core to another stage's work). With no more ranks than cores they agree.
  // The compiled step prices trc's own kernels; spec sheets of GPUs keep
  // Megatron's fused-kernel accounting.
  const CompiledWork *compiled = source && dt.trcKernels() ? source->work(c) : nullptr;
  PipelinePhase phase = pipelinePhase(m, c, dt, compiled);
  if (!d.measured.empty() && d.nodeCores > 0 && d.devicesPerNode > d.nodeCores) {
    PipelinePhase critical = pipelinePhase(m, c, DeviceTimes(cluster, d.nodeCores), compiled);
    phase = critical.total() > phase.spread().total() ? critical : phase.spread();
  }
  Prediction r;
  r.computeTime = phase.compute;
  r.tensorCommTime = phase.tensorComm;
  r.p2pTime = phase.p2p;
  r.bubbleTime = phase.bubble;

  // Parameters on the fullest (first) stage.
  double stageParams = Ls * m.layerParams() / t + m.embeddingParams() / t;
  double stageTensors = Ls * m.layerTensors() + 4; // plus embeddings and the final norm
  int shard = c.zeroStage > 0 ? c.shardDegree : 1, replicas = c.data / shard;
  double grads = e * stageParams;
  long long shardSpan = (long long)c.tensor * shard, dataSpan = (long long)c.tensor * c.data;
  auto allReduce = [&](int n, double bytes, long long span) {
    if (!dt.trcKernels()) // Megatron: one bucket's latency (its DDP overlaps the rest)
      return dt.collective(Collective::AllReduce, n, bytes, span);
    // trc's CPU runtime: blocking all-reduces of 25 MiB buckets, one after another.
    double buckets = std::max(1.0, std::ceil(bytes / (25.0 * 1048576)));
    return buckets * dt.collective(Collective::AllReduce, n, bytes / buckets, span);
  };
  if (c.zeroStage == 0) {
    r.dataCommTime = allReduce(c.data, grads, dataSpan);
  } else {
    // Pipeline stages' ZeRO-1 all-reduces the gradients accumulated over the
    // microbatches; ZeRO-2/3 reduce-scatter each microbatch's as the weights
    // programs make them (without pipelines ZeRO-3 too, ZeRO-1/2 once). Each
    // rank then updates its shard: ZeRO-1/2 gather the parameters once,
    // ZeRO-3 at each use (forward, backward, recompute).
    double scatter = dt.collective(Collective::ReduceScatter, shard, grads, shardSpan);
    double gather = dt.collective(Collective::AllGather, shard, grads, shardSpan);
    double gathers =
        c.zeroStage == 3 ? mb * (c.recompute == Recompute::Full ? 3 : 2) * gather : gather;
    if (p > 1 && c.zeroStage == 1)
      r.dataCommTime = allReduce(c.data, grads, dataSpan) + gathers;
    else
      r.dataCommTime = scatter * (c.zeroStage == 3 || p > 1 ? mb : 1) + gathers +
                       allReduce(replicas, grads / shard, dataSpan);
  }
  if (c.data > 1)
    r.dataCommTime += bucketCopySeconds(stageParams, stageTensors, dt);
  r.optimizerTime = optimizerSeconds(stageParams / shard, stageTensors, dt);
  r.stepTime = r.computeTime + r.tensorCommTime + r.p2pTime + r.bubbleTime + r.dataCommTime +
               r.optimizerTime;

  // Megatron's accounting: 3 forward passes' FLOPs plus the recomputation.
  double layerFlops = s * (2 * m.layerMatmulWeights() + 4 * s * h); // per sample, forward
  double perSample = 3 * (m.layers * layerFlops + 2 * s * h * V);
  if (c.recompute == Recompute::Full)
    perSample += m.layers * layerFlops;
  else if (c.recompute == Recompute::Selective)
    perSample += m.layers * 4 * s * s * h;
  double world = double(c.data) * c.tensor * p;
  r.modelFlops = perSample * double(c.data) * mb * b;
  r.tflopsPerDevice = r.modelFlops / r.stepTime / world / 1e12;

  // Memory of the first stage (most activations in flight) and of the last
  // (the logits); the fuller one counts.
  r.paramBytes = e * stageParams / (c.zeroStage == 3 ? shard : 1);
  if (c.zeroStage == 3)
    r.paramBytes += 2 * e * m.layerParams() / t; // gathered layers being used
  r.gradBytes = e * stageParams / (c.zeroStage >= 2 ? shard : 1);
  // bf16: fp32 master weights and two moments; fp32: the two moments.
  r.optimizerBytes = (e == 2 ? 12 : 8) * stageParams / shard;
  double inFlight = c.schedule == Schedule::GPipe ? mb : std::min(mb, p);
  if (interleaved)
    inFlight *= 1 + double(p - 1) / (double(p) * v);
  double perLayer = layerActivations(m, c, c.recompute) * e / 2;
  double working = c.recompute == Recompute::None ? 0 : layerActivations(m, c, Recompute::None) * e / 2;
  double logitsBytes = T * V / t * 8; // fp32 logits and their gradient
  double first = inFlight * Ls * perLayer + working + (p == 1 ? logitsBytes : 0);
  double last = Ls * perLayer + working + logitsBytes;
  r.activationBytes = std::max(first, last);
  r.memoryBytes = r.paramBytes + r.gradBytes + r.optimizerBytes + r.activationBytes + d.reservedBytes;
  r.deviceMemoryBytes = cluster.deviceMemory();
  r.fits = r.memoryBytes <= r.deviceMemoryBytes;
  return r;
}

} // namespace trc::plan
