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
#include <optional>
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

Recompute attentionRecompute(const Candidate &c) {
  return c.context > 1 && c.contextRing && c.recompute == Recompute::None ? Recompute::Selective
                                                                         : c.recompute;
}

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
  if (context > 1) {
    j += ", \"context_parallel_degree\": ";
    rt::appendJsonInt(j, context);
    j += std::string(", \"cp_comm_type\": \"") + (contextRing ? "p2p" : "all_gather") + "\"";
  }
  j += ", \"microbatches\": ";
  rt::appendJsonInt(j, microbatches);
  j += ", \"pipeline_schedule\": \"" + std::string(scheduleName(schedule)) + "\"";
  j += ", \"virtual_stages\": ";
  rt::appendJsonInt(j, virtualStages);
  j += ", \"zero_stage\": ";
  rt::appendJsonInt(j, zeroStage);
  if (zeroStage > 0 && shardDegree != shardSpan()) {
    j += ", \"hybrid_shard_degree\": ";
    rt::appendJsonInt(j, shardDegree);
  }
  j += std::string(", \"sequence_parallel\": ") + (sequenceParallel ? "true" : "false");
  j += ", \"recompute\": \"" + std::string(recomputeName(recompute)) + "\"}";
  return j;
}

std::string Candidate::describe() const {
  std::string s = "data=" + std::to_string(data) + " tensor=" + std::to_string(tensor) +
                  (sequenceParallel ? "+sp" : "") +
                  (context > 1 ? " context=" + std::to_string(context) +
                                     (contextRing ? "/ring" : "")
                               : "") +
                  " pipeline=" + std::to_string(pipeline) +
                  " microbatches=" + std::to_string(microbatches) + "x" +
                  std::to_string(microbatchSize);
  if (pipeline > 1)
    s += std::string(" schedule=") + scheduleName(schedule) +
         (schedule == Schedule::Interleaved ? "/" + std::to_string(virtualStages) : "");
  s += " zero=" + std::to_string(zeroStage);
  if (zeroStage > 0 && shardDegree != shardSpan())
    s += "/" + std::to_string(shardDegree);
  s += std::string(" recompute=") + recomputeName(recompute);
  return s;
}

namespace {

// The pipeline's part of a step: per-stage slots of work priced by `dt`.
struct PipelinePhase {
  double compute = 0, tensorComm = 0, contextComm = 0, p2p = 0, bubble = 0;
  double spreadCompute = 0, spreadTensorComm = 0, spreadContextComm = 0; // the stages' mean
  double total() const { return compute + tensorComm + contextComm + p2p + bubble; }
  // The same work spread evenly over the stages, with no bubble.
  PipelinePhase spread() const {
    return {spreadCompute,     spreadTensorComm, spreadContextComm, p2p, 0,
            spreadCompute, spreadTensorComm, spreadContextComm};
  }
};

// A compiled step's pieces cut as trc-pipeline-stages cuts them, into
// pipeline x virtual chunks: chunk k is pieces [cuts[k], cuts[k + 1]), run
// by rank k mod pipeline.
std::vector<int64_t> chunkCuts(const CompiledWork &compiled, const Candidate &c) {
  std::vector<double> costs;
  for (const StageWork &piece : compiled.stages)
    costs.push_back(piece.forwardCost);
  const int64_t chunks = int64_t(c.pipeline) * c.virtualStages;
  return balancedCuts(costs,
                      std::max<int64_t>(1, std::min<int64_t>(chunks, int64_t(costs.size()))));
}

// Each pipeline rank's work for one microbatch and the activation bytes a
// cut passes: from the compiled pieces (the ops no stage owns run on every
// rank), or from the GPT formulas.
std::vector<Work> rankWork(const GptModel *m, const Candidate &c, const DeviceTimes &dt,
                           const CompiledWork *compiled, double &sendBytes) {
  const int p = c.pipeline;
  if (!compiled) {
    std::vector<Work> stages(size_t(p), layerWork(*m, c, dt).scaled(double(m->layers) / p));
    stages.front() += firstStageWork(*m, c, dt);
    stages.back() += lastStageWork(*m, c, dt);
    sendBytes = double(c.microbatchSize) * m->seq * m->hidden * dt.elementBytes() / c.tensor;
    return stages;
  }
  std::vector<Work> stages(size_t(p), unstagedWork(compiled->unstaged, c, dt));
  std::vector<int64_t> cuts = chunkCuts(*compiled, c);
  sendBytes = 0;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    for (int64_t i = cuts[k]; i < cuts[k + 1]; ++i)
      stages[k % size_t(p)] += pieceWork(compiled->stages[size_t(i)], c, dt, p > 1);
    if (cuts[k + 1] > cuts[k] && k + 2 < cuts.size())
      sendBytes = std::max(sendBytes, compiled->stages[size_t(cuts[k + 1] - 1)].sendBytes);
  }
  sendBytes *= dt.elementBytes() / kCompiledFloatBytes;
  return stages;
}

PipelinePhase pipelinePhase(const GptModel *m, const Candidate &c, const DeviceTimes &dt,
                            const CompiledWork *compiled) {
  const int p = c.pipeline, mb = c.microbatches, v = c.virtualStages;
  const bool interleaved = c.schedule == Schedule::Interleaved;
  // Each stage's work for one microbatch; the slot adds its p2p (the
  // activation out, the gradient in).
  double sendBytes = 0;
  std::vector<Work> stages = rankWork(m, c, dt, compiled, sendBytes);
  // A stage's ranks are its data x context x tensor grid: the pipeline's
  // neighbours are that many devices apart.
  double p2pOne = p > 1 ? 2 * dt.collective(Collective::P2P, 2, sendBytes,
                                            (long long)c.tensor * c.context * c.data * p)
                        : 0;
  size_t slowest = 0;
  std::vector<double> slots;
  double compute = 0, tpComm = 0, cpComm = 0;
  for (const Work &w : stages) {
    slots.push_back(w.compute() + w.tpComm + w.cpComm + p2pOne);
    compute += w.compute();
    tpComm += w.tpComm;
    cpComm += w.cpComm;
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
  r.contextComm = mb * stages[slowest].cpComm;
  r.p2p = mb * p2pOne * (interleaved ? v : 1);
  r.bubble = idle / (interleaved ? v : 1);
  r.spreadCompute = mb * compute / p;
  r.spreadTensorComm = mb * tpComm / p;
  r.spreadContextComm = mb * cpComm / p;
  return r;
}

} // namespace

namespace {

// What the fullest rank holds and what a sample costs in model FLOPs: from
// the GPT formulas, or counted in the compiled step.
struct Holdings {
  double params = 0, tensors = 0; // parameter elements and tensors
  double gathered = 0;            // elements ZeRO-3 holds gathered at once
  double activationBytes = 0;     // at the profile's element size
  double flopsPerSample = 0;      // Megatron's accounting (with recomputation)
};

// Microbatches whose activations a pipeline rank holds at once (its first
// stage for the formulas: the most).
double inFlight(const Candidate &c, int rank) {
  int p = c.pipeline, mb = c.microbatches;
  double n = c.schedule == Schedule::GPipe ? mb : std::min(mb, p - rank);
  if (c.schedule == Schedule::Interleaved)
    n *= 1 + double(p - 1) / (double(p) * c.virtualStages);
  return n;
}

Holdings formulaHoldings(const GptModel &m, const Candidate &c, double e) {
  const double s = m.seq, h = m.hidden, V = m.vocab, t = c.tensor, T = c.microbatchSize * s;
  const int p = c.pipeline;
  const double Ls = double(m.layers) / p;
  Holdings out;
  // The first stage: the layers' share, the embeddings and the final norm.
  out.params = Ls * m.layerParams() / t + m.embeddingParams() / t;
  out.tensors = Ls * m.layerTensors() + 4;
  out.gathered = 2 * m.layerParams() / t; // the layers being used
  // Memory of the first stage (most activations in flight) and of the last
  // (the logits); the fuller one counts.
  const Recompute recompute = attentionRecompute(c);
  double perLayer = layerActivations(m, c, recompute) * e / 2;
  double working = recompute == Recompute::None ? 0 : layerActivations(m, c, Recompute::None) * e / 2;
  double logitsBytes = T * V / t * 8; // fp32 logits and their gradient
  double first = inFlight(c, 0) * Ls * perLayer + working + (p == 1 ? logitsBytes : 0);
  double last = Ls * perLayer + working + logitsBytes;
  out.activationBytes = std::max(first, last);
  // Megatron's accounting: 3 forward passes' FLOPs plus the recomputation.
  double layerFlops = s * (2 * m.layerMatmulWeights() + 4 * s * h); // per sample, forward
  out.flopsPerSample = 3 * (m.layers * layerFlops + 2 * s * h * V);
  if (c.recompute == Recompute::Full)
    out.flopsPerSample += m.layers * layerFlops;
  else if (c.recompute == Recompute::Selective)
    out.flopsPerSample += m.layers * 4 * s * s * h;
  return out;
}

// Per pipeline rank, its pieces' parameters and stashes (the activations
// one microbatch leaves for the backward, times the microbatches in
// flight), plus, when recomputing, what the recomputation regenerates for
// one piece at once (the most, over the rank's pieces, of its stash without
// recomputation, `unrecomputed`, less its stash with); the fullest rank's
// figures (parameters and activations each at their rank's most). Model
// FLOPs are the step's products, every rank's (x tensor degree: counts are
// per rank).
Holdings compiledHoldings(const CompiledWork &w, const CompiledWork *unrecomputed,
                          const Candidate &c, double e) {
  Holdings out;
  const double toProfile = e / kCompiledFloatBytes;
  std::vector<int64_t> cuts = chunkCuts(w, c);
  std::vector<Holdings> ranks(size_t(c.pipeline));
  std::vector<double> working(size_t(c.pipeline), 0.0);
  bool sameCuts = unrecomputed && unrecomputed->stages.size() == w.stages.size();
  double flops = 0;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    Holdings &r = ranks[k % size_t(c.pipeline)];
    for (int64_t i = cuts[k]; i < cuts[k + 1]; ++i) {
      const StageWork &piece = w.stages[size_t(i)];
      r.params += piece.paramElements;
      r.tensors += piece.paramTensors;
      r.activationBytes += piece.stashBytes * toProfile;
      out.gathered = std::max(out.gathered, 2 * piece.paramElements);
      if (c.recompute != Recompute::None && sameCuts)
        working[k % size_t(c.pipeline)] =
            std::max(working[k % size_t(c.pipeline)],
                     (unrecomputed->stages[size_t(i)].stashBytes - piece.stashBytes) * toProfile);
      for (const PhaseWork &phase : piece.phases)
        flops += phase.productFlops();
    }
  }
  for (size_t r = 0; r < ranks.size(); ++r) {
    out.params = std::max(out.params, ranks[r].params);
    out.tensors = std::max(out.tensors, ranks[r].tensors);
    out.activationBytes =
        std::max(out.activationBytes, inFlight(c, int(r)) * ranks[r].activationBytes + working[r]);
  }
  flops += w.unstaged.productFlops();
  out.flopsPerSample = flops * c.tensor / c.microbatchSize;
  return out;
}

// Context parallelism's traffic on the slowest pipeline rank: per layer and
// microbatch, K and V (a tensor rank's heads of them) all-gathered forward
// and their gradients reduce-scattered backward over the context group; or,
// with the ring, their blocks (1/C each) passed on C-1 times forward, C-1
// times backward and their gradients' blocks C times. On GPUs the ring's
// moves run beside the block compute (trc's CUDA steps start each move
// before the block it follows is computed on, as Megatron's ring does):
// only what a step's moves take beyond the step's attention block (a C-th
// of the row's attention core per step and key block, twice that backward)
// is exposed, and the last move home of the gradients' blocks. trc's CPU
// runtime completes each move when it starts: all of it counts.
double contextCommSeconds(const GptModel &m, const Candidate &c, const DeviceTimes &dt) {
  double kv = 2.0 * c.microbatchSize * m.seq * m.kvWidth() / c.tensor * dt.elementBytes();
  long long span = (long long)c.tensor * c.context;
  double layer = 0;
  if (!c.contextRing) {
    layer = dt.collective(Collective::AllGather, c.context, kv, span) +
            dt.collective(Collective::ReduceScatter, c.context, kv, span);
  } else {
    double move = dt.collective(Collective::P2P, c.context, kv / c.context, span);
    double steps = c.context - 1.0;
    if (dt.trcKernels()) {
      layer = (2 * steps + c.context) * move;
    } else {
      double block = attentionCoreSeconds(m, c, dt) / (double(c.context) * c.context);
      layer = steps * std::max(0.0, move - block) +        // forward: K, V
              steps * std::max(0.0, 2 * move - 2 * block) + // backward: K, V and dK, dV
              move;                                        // dK, dV home
    }
  }
  return layer * c.microbatches * std::ceil(double(m.layers) / c.pipeline);
}

// The prediction from a step's per-rank pipeline work and holdings.
Prediction predict(const GptModel *m, const Cluster &cluster, const Candidate &c,
                   const CompiledWork *compiled, const CompiledWork *unrecomputed) {
  const DeviceProfile &d = cluster.device;
  const DeviceTimes dt(cluster); // every rank of the node busy
  const double e = dt.elementBytes();
  const int p = c.pipeline, mb = c.microbatches;

  // More ranks than cores (a measured node): the pipeline's critical path
  // runs at a core per rank, but the ranks' work shares the cores, so the
  // phase is the longer of the two (a stage waiting in its bubble leaves its
  // core to another stage's work). With no more ranks than cores they agree.
  PipelinePhase phase = pipelinePhase(m, c, dt, compiled);
  if (!d.measured.empty() && d.nodeCores > 0 && d.devicesPerNode > d.nodeCores) {
    PipelinePhase critical = pipelinePhase(m, c, DeviceTimes(cluster, d.nodeCores), compiled);
    phase = critical.total() > phase.spread().total() ? critical : phase.spread();
  }
  // Context parallelism: a compiled step is the rank's own (its positions'
  // work and stashes, the context group's collectives counted in it); the
  // formulas price the plan without it (whole rows), each rank doing 1/C.
  const bool contextFormulas = c.context > 1 && !compiled;
  const double cp = contextFormulas ? c.context : 1;
  Prediction r;
  r.computeTime = phase.compute / cp;
  r.tensorCommTime = phase.tensorComm / cp;
  r.contextCommTime = contextFormulas ? contextCommSeconds(*m, c, dt) : phase.contextComm;
  r.p2pTime = phase.p2p / cp;
  r.bubbleTime = phase.bubble / cp;

  Holdings h = compiled ? compiledHoldings(*compiled, unrecomputed, c, e) : formulaHoldings(*m, c, e);
  h.activationBytes /= cp;
  const double stageParams = h.params, stageTensors = h.tensors;
  // ZeRO shards over data x context (parameters are replicated over both).
  int shard = c.zeroStage > 0 ? c.shardDegree : 1, replicas = c.shardSpan() / shard;
  double grads = e * stageParams;
  // The data axis' ranks are tensor x context apart (Megatron's placement);
  // a shard group's (consecutive ranks of data x context) tensor apart.
  long long shardSpan = (long long)c.tensor * shard,
            dataSpan = (long long)c.tensor * c.context * c.data;
  auto allReduce = [&](int n, double bytes, long long span) {
    if (!dt.trcKernels()) // Megatron: one bucket's latency (its DDP overlaps the rest)
      return dt.collective(Collective::AllReduce, n, bytes, span);
    // trc's CPU runtime: blocking all-reduces of 25 MiB buckets, one after another.
    double buckets = std::max(1.0, std::ceil(bytes / (25.0 * 1048576)));
    return buckets * dt.collective(Collective::AllReduce, n, bytes / buckets, span);
  };
  // Under context parallelism each gradient is also a sum over the context
  // axis (parameters are replicated over it; the compiled work leaves these
  // sums out), folded into the data axis' reduction: one all-reduce over
  // data x context (trc-data-parallel's buckets, a pipeline's accumulated
  // gradients), or ZeRO's reduce-scatter over its shard group, which
  // splits data x context.
  const int span = c.shardSpan();
  if (c.zeroStage == 0) {
    r.dataCommTime = allReduce(span, grads, dataSpan);
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
      r.dataCommTime = allReduce(span, grads, dataSpan) + gathers;
    else
      r.dataCommTime = scatter * (c.zeroStage == 3 || p > 1 ? mb : 1) + gathers +
                       allReduce(replicas, grads / shard, dataSpan);
  }
  if (span > 1)
    r.dataCommTime += bucketCopySeconds(stageParams, stageTensors, dt);
  r.optimizerTime = optimizerSeconds(stageParams / shard, stageTensors, dt);
  r.stepTime = r.computeTime + r.tensorCommTime + r.contextCommTime + r.p2pTime + r.bubbleTime +
               r.dataCommTime + r.optimizerTime;

  double world = double(c.data) * c.context * c.tensor * p;
  r.modelFlops = h.flopsPerSample * double(c.data) * mb * c.microbatchSize;
  r.tflopsPerDevice = r.modelFlops / r.stepTime / world / 1e12;

  r.paramBytes = e * stageParams / (c.zeroStage == 3 ? shard : 1);
  if (c.zeroStage == 3)
    r.paramBytes += e * h.gathered;
  r.gradBytes = e * stageParams / (c.zeroStage >= 2 ? shard : 1);
  // bf16: fp32 master weights and two moments; fp32: the two moments.
  r.optimizerBytes = (e == 2 ? 12 : 8) * stageParams / shard;
  r.activationBytes = h.activationBytes;
  r.memoryBytes = r.paramBytes + r.gradBytes + r.optimizerBytes + r.activationBytes + d.reservedBytes;
  r.deviceMemoryBytes = cluster.deviceMemory();
  r.fits = r.memoryBytes <= r.deviceMemoryBytes;
  return r;
}

// The step compiled without recomputation, when `c` recomputes.
const CompiledWork *unrecomputedWork(CompiledWorkSource &source, const Candidate &c) {
  if (c.recompute == Recompute::None)
    return nullptr;
  Candidate none = c;
  none.recompute = Recompute::None;
  return source.work(none);
}

} // namespace

Prediction evaluate(const GptModel &m, const Cluster &cluster, const Candidate &c,
                    CompiledWorkSource *source) {
  // The compiled step prices trc's own kernels; spec sheets of GPUs keep
  // Megatron's fused-kernel accounting.
  const CompiledWork *compiled =
      source && DeviceTimes(cluster).trcKernels() ? source->work(c) : nullptr;
  return predict(&m, cluster, c, compiled, compiled ? unrecomputedWork(*source, c) : nullptr);
}

std::optional<Prediction> evaluateCompiled(CompiledWorkSource &source, const Cluster &cluster,
                                           const Candidate &c) {
  const CompiledWork *compiled = source.work(c);
  if (!compiled || compiled->stages.empty())
    return std::nullopt;
  return predict(nullptr, cluster, c, compiled, unrecomputedWork(source, c));
}

} // namespace trc::plan
