//===- CostModel.cpp - the analytical step time and memory of a plan ---------===//
//
// See CostModel.h for the model and its constants. Rank placement follows
// Megatron-LM: tensor-parallel ranks are consecutive (inside a node), then
// data-parallel, then pipeline; a group uses NVLink when it fits in one node
// and the network otherwise.
//
//===----------------------------------------------------------------------===//
#include "trc/Plan/CostModel.h"

#include "runtime/formats/Json.h"

#include <algorithm>

namespace trc::plan {
namespace {

struct Link {
  double bandwidth, latency;
};

double allReduce(int n, double bytes, Link l) {
  return n <= 1 ? 0 : 2.0 * (n - 1) * l.latency + 2.0 * (n - 1) / n * bytes / l.bandwidth;
}
// All-gather or reduce-scatter of a `bytes` tensor (the whole, not a shard).
double gatherOrScatter(int n, double bytes, Link l) {
  return n <= 1 ? 0 : (n - 1) * l.latency + double(n - 1) / n * bytes / l.bandwidth;
}

struct Roofline {
  double peak, bandwidth;
  // `count` products of (M x K) by (K x N) in bf16.
  double matmul(double m, double n, double k, double count = 1) const {
    double flops = 2 * m * n * k, bytes = 2 * (m * k + k * n + m * n);
    return count * std::max(flops / peak, bytes / bandwidth);
  }
  double stream(double bytes) const { return bytes / bandwidth; }
};

// Activation bytes one layer keeps for one microbatch (Korthikanti et al.).
double layerActivations(const GptModel &m, const Candidate &c, Recompute r) {
  double s = m.seq, b = c.microbatchSize, h = m.hidden, a = m.heads, t = c.tensor;
  bool sp = c.sequenceParallel;
  switch (r) {
  case Recompute::Full:
    return sp ? 2 * s * b * h / t : 2 * s * b * h;
  case Recompute::Selective:
    return sp ? 34 * s * b * h / t : s * b * h * (10 + 24 / t);
  case Recompute::None:
    break;
  }
  return sp ? s * b * h / t * (34 + 5 * a * s / h) : s * b * h * (10 + 24 / t + 5 * a * s / (h * t));
}

} // namespace

const char *recomputeName(Recompute r) {
  return r == Recompute::None ? "none" : r == Recompute::Selective ? "selective" : "full";
}

const char *scheduleName(Schedule s) {
  return s == Schedule::GPipe ? "gpipe" : s == Schedule::OneFOneB ? "1f1b" : "interleaved_1f1b";
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

Prediction evaluate(const GptModel &m, const Cluster &cluster, const Candidate &c) {
  const DeviceProfile &d = cluster.device;
  const Roofline rf{d.peakFlops * kMatmulEfficiency, d.memBandwidth * kMemoryEfficiency};
  const int gpn = d.devicesPerNode;
  const Link nvlink{d.intraBandwidth, d.intraLatency}, net{d.interBandwidth, d.interLatency};
  auto link = [&](long long span) { return span <= gpn ? nvlink : net; };

  const double s = m.seq, h = m.hidden, a = m.heads, f = m.ffn, V = m.vocab;
  const double t = c.tensor, b = c.microbatchSize, T = b * s, hd = h / a;
  const int p = c.pipeline, mb = c.microbatches, v = c.virtualStages;
  const double Ls = double(m.layers) / p;

  // One layer, one microbatch, one rank: forward pieces.
  double attnCore = rf.matmul(s, s, hd, b * a / t) + rf.matmul(s, hd, s, b * a / t) +
                    rf.stream(b * (a / t) * s * s * 9);
  double dense = rf.matmul(T, 3 * h / t, h) + rf.matmul(T, h, h / t) + rf.matmul(T, f / t, h) +
                 rf.matmul(T, h, f / t);
  double elementwise = rf.stream(T * h * 24 / (c.sequenceParallel ? t : 1) + T * f / t * 6 +
                                 T * h / t * 8);
  double fwd = attnCore + dense + elementwise;
  double tpAllReduce = c.tensor > 1 ? allReduce(c.tensor, T * h * 2, link(c.tensor)) : 0;
  double layerCompute = 3 * fwd, layerTp = 4 * tpAllReduce;
  if (c.recompute == Recompute::Full) {
    layerCompute += fwd;
    layerTp += 2 * tpAllReduce;
  } else if (c.recompute == Recompute::Selective) {
    layerCompute += attnCore;
  }
  // The last stage: logits and cross-entropy (fp32 softmax).
  double logits = 3 * rf.matmul(T, V / t, h) + rf.stream(T * V / t * 20);
  double p2pOne = 0;
  if (p > 1) {
    Link l = link((long long)c.tensor * c.data * p);
    p2pOne = 2 * (l.latency + T * h * 2 / t / l.bandwidth); // activation out, gradient in
  }
  double stageCompute = Ls * layerCompute + logits, stageTp = Ls * layerTp;
  double slot = stageCompute + stageTp + p2pOne;

  Prediction r;
  r.computeTime = mb * stageCompute;
  r.tensorCommTime = mb * stageTp;
  r.p2pTime = mb * p2pOne * (c.schedule == Schedule::Interleaved ? v : 1);
  double bubbleSlots = c.schedule == Schedule::Interleaved ? double(p - 1) / v : double(p - 1);
  r.bubbleTime = bubbleSlots * slot;

  // Parameters on the fullest (first) stage.
  double stageParams = Ls * m.layerParams() / t + m.embeddingParams() / t;
  int shard = c.zeroStage > 0 ? c.shardDegree : 1, replicas = c.data / shard;
  double grads = 2 * stageParams;
  Link shardLink = link((long long)c.tensor * shard), dataLink = link((long long)c.tensor * c.data);
  if (c.zeroStage == 0) {
    r.dataCommTime = allReduce(c.data, grads, dataLink);
  } else {
    double perStep = gatherOrScatter(shard, grads, shardLink) * (c.zeroStage == 3 ? mb : 1);
    double gathers = c.zeroStage == 3
                         ? mb * (c.recompute == Recompute::Full ? 3 : 2) * gatherOrScatter(shard, grads, shardLink)
                         : gatherOrScatter(shard, grads, shardLink);
    r.dataCommTime = perStep + gathers + allReduce(replicas, grads / shard, net);
  }
  r.optimizerTime = rf.stream(36 * stageParams / shard);
  r.stepTime = r.computeTime + r.tensorCommTime + r.p2pTime + r.bubbleTime + r.dataCommTime +
               r.optimizerTime;

  // Megatron's accounting: 3 forward passes' FLOPs plus the recomputation.
  double layerFlops = s * (8 * h * h + 4 * h * f + 4 * s * h); // per sample, forward
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
  r.paramBytes = 2 * stageParams / (c.zeroStage == 3 ? shard : 1);
  if (c.zeroStage == 3)
    r.paramBytes += 2 * 2 * m.layerParams() / t; // gathered layers being used
  r.gradBytes = 2 * stageParams / (c.zeroStage >= 2 ? shard : 1);
  r.optimizerBytes = 12 * stageParams / shard;
  double inFlight = c.schedule == Schedule::GPipe ? mb : std::min(mb, p);
  if (c.schedule == Schedule::Interleaved)
    inFlight *= 1 + double(p - 1) / (double(p) * v);
  double perLayer = layerActivations(m, c, c.recompute);
  double working = c.recompute == Recompute::None ? 0 : layerActivations(m, c, Recompute::None);
  double logitsBytes = T * V / t * 8; // fp32 logits and their gradient
  double first = inFlight * Ls * perLayer + working + (p == 1 ? logitsBytes : 0);
  double last = Ls * perLayer + working + logitsBytes;
  r.activationBytes = std::max(first, last);
  r.memoryBytes = r.paramBytes + r.gradBytes + r.optimizerBytes + r.activationBytes + d.reservedBytes;
  r.fits = r.memoryBytes <= d.memoryBytes;
  return r;
}

} // namespace trc::plan
