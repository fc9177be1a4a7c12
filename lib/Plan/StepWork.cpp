//===- StepWork.cpp - layer, stage and optimizer work (StepWork.h) ----------===//
#include "StepWork.h"

namespace trc::plan {
namespace {

// trc's CPU step, counted from its IR (StepWork.h; bench/plan_traffic.py).
struct TrcTraffic {
  double rep, split, ffn, attn, weights, ops;   // per layer
  double headH, headV, headOps;                 // outside the layers
};
constexpr TrcTraffic kTrcNoSp{159.05, 14.45, 54.78, 21.76, 2.20, 143, 78.86, 52.36, 56};
constexpr TrcTraffic kTrcSp{0.0, 258.42, 55.70, 20.94, 0.69, 173, 94.48, 62.80, 142};
constexpr double kTpOps = 147, kTpHeadOps = 121; // TP without SP
// A pipeline stage's programs (forward, backward, weights) run once per
// microbatch and each transposes the layer's weights again, the weights
// program accumulates their gradients, and activations go through stash,
// send and receive buffers: per layer and microbatch, 10.81 elements per
// weight (8.61 more than a whole step's once), and 10.99 T h.
constexpr double kPipelineWeights = 10.81 - 2.20, kPipelineActivations = 10.99;
// The optimizer's ops all have the parameter's shape and fuse into one
// loop per parameter tensor: it streams p, g, m, v in and p, m, v out (7
// elements), the norm's loop reads g again (1), and the host copies p, m,
// v over their slots (6).
constexpr double kOptimizerStreamElements = 7 + 1 + 6, kOptimizerLoops = 2;
constexpr double kEmbeddingElements = 8, kEmbeddingOps = 10; // the first stage's share

struct Shape {
  double s, h, a, f, V, t, b, T, hd;
  double qkv, mlpIn, weights; // QKV output width, MLP input matrices, matmul weights
  bool sp, gated;
  Shape(const GptModel &m, const Candidate &c)
      : s(double(m.seq)), h(double(m.hidden)), a(double(m.heads)), f(double(m.ffn)),
        V(double(m.vocab)), t(c.tensor), b(c.microbatchSize), T(b * s), hd(h / a),
        qkv(m.qkvWidth()), mlpIn(m.mlpInputMatrices()), weights(m.layerMatmulWeights()),
        sp(c.sequenceParallel && c.tensor > 1), gated(m.gatedMlp) {}
  // Elementwise work on the MLP's inner width, relative to GELU's (the gate
  // adds its SiLU and product).
  double mlpElementwise() const { return gated ? 1.5 : 1.0; }
};

// Megatron-LM's fused kernels on a GPU (the accounting CostModel.h
// calibrated against Table 1).
double megatronAttentionCore(const Shape &x, const DeviceTimes &dt) {
  return dt.matmul(x.s, x.s, x.hd, x.b * x.a / x.t) + dt.matmul(x.s, x.hd, x.s, x.b * x.a / x.t) +
         dt.stream(x.b * (x.a / x.t) * x.s * x.s * 9);
}

Work megatronLayer(const Shape &x, const Candidate &c, const DeviceTimes &dt) {
  double attnCore = megatronAttentionCore(x, dt);
  double dense = dt.matmul(x.T, x.qkv / x.t, x.h) + dt.matmul(x.T, x.h, x.h / x.t) +
                 dt.matmul(x.T, x.mlpIn * x.f / x.t, x.h) + dt.matmul(x.T, x.h, x.f / x.t);
  double elementwise = dt.stream(x.T * x.h * 24 / (c.sequenceParallel ? x.t : 1) +
                                 x.T * x.f / x.t * 6 * x.mlpElementwise() +
                                 x.T * x.h / x.t * 8);
  double fwd = attnCore + dense + elementwise;
  double ar = dt.collective(Collective::AllReduce, c.tensor, x.T * x.h * dt.elementBytes(),
                            c.tensor);
  Work w{fwd, 2 * fwd - dense, dense, 4 * ar};
  if (c.recompute == Recompute::Full) {
    w.B += fwd;
    w.tpComm += 2 * ar;
  } else if (c.recompute == Recompute::Selective) {
    w.B += attnCore;
  }
  return w;
}

// A forward product (m x k) by (k x n), `batch` of them, and its two
// backward products: dA = dC B^T (m x n by n x k), dB = A^T dC (k x m by m x n).
struct Product {
  double fwd, dA, dB;
};
Product product(const DeviceTimes &dt, double m, double n, double k, double batch = 1) {
  return {dt.matmul(m, n, k, batch), dt.matmul(m, k, n, batch), dt.matmul(k, n, m, batch)};
}

// Tensor-parallel collectives of one layer, one direction: 2 all-reduces of
// T h, or with SP 2 all-gathers and 2 reduce-scatters.
double tpOneWay(const Shape &x, const Candidate &c, const DeviceTimes &dt) {
  double bytes = x.T * x.h * dt.elementBytes();
  if (x.sp)
    return 2 * dt.collective(Collective::AllGather, c.tensor, bytes, c.tensor) +
           2 * dt.collective(Collective::ReduceScatter, c.tensor, bytes, c.tensor);
  return 2 * dt.collective(Collective::AllReduce, c.tensor, bytes, c.tensor);
}

Work trcLayer(const Shape &x, const Candidate &c, const DeviceTimes &dt) {
  const TrcTraffic &k = x.sp ? kTrcSp : kTrcNoSp;
  // Context parallelism's ring splits each sequence head-tail and computes
  // (2C+1)/(4C) of the blocks of (causal) scores (trc-ring-attention);
  // the whole-row work here is divided by C later.
  const double blocks =
      c.context > 1 && c.contextRing ? (2.0 * c.context + 1) / (4.0 * c.context) : 1;
  auto share = [&](Product p) { return Product{p.fwd * blocks, p.dA * blocks, p.dB * blocks}; };
  Product qkv = product(dt, x.T, x.qkv / x.t, x.h), out = product(dt, x.T, x.h, x.h / x.t),
          fc = product(dt, x.T, x.mlpIn * x.f / x.t, x.h), proj = product(dt, x.T, x.h, x.f / x.t),
          scores = share(product(dt, x.s, x.s, x.hd, x.b * x.a / x.t)),
          context = share(product(dt, x.s, x.hd, x.s, x.b * x.a / x.t));
  double attnElements = blocks * k.attn * x.T * x.a * x.s / x.t;
  double weights = x.weights / x.t;
  double elements = x.T * (k.rep * x.h + k.split * x.h / x.t +
                           k.ffn * x.f / x.t * x.mlpElementwise()) +
                    attnElements + k.weights * weights;
  if (c.pipeline > 1)
    elements += kPipelineWeights * weights + kPipelineActivations * x.T * x.h / (x.sp ? x.t : 1);
  double ops = x.sp ? k.ops : c.tensor > 1 ? kTpOps : k.ops;
  double fwdMatmul = qkv.fwd + out.fwd + fc.fwd + proj.fwd + scores.fwd + context.fwd;
  double fwdKernels = dt.kernels(elements / 3, ops / 3);
  Work w;
  w.F = fwdMatmul + fwdKernels;
  w.B = qkv.dA + out.dA + fc.dA + proj.dA + scores.dA + scores.dB + context.dA + context.dB +
        dt.kernels(2 * elements / 3, 2 * ops / 3);
  w.W = qkv.dB + out.dB + fc.dB + proj.dB;
  double tp = c.tensor > 1 ? tpOneWay(x, c, dt) : 0;
  w.tpComm = 2 * tp;
  if (c.recompute == Recompute::Full) {
    w.B += w.F;
    w.tpComm += tp;
  } else if (c.recompute == Recompute::Selective) {
    w.B += scores.fwd + context.fwd + dt.kernels(attnElements / 3, 0);
  }
  return w;
}

} // namespace

double attentionCoreSeconds(const GptModel &m, const Candidate &c, const DeviceTimes &dt) {
  return megatronAttentionCore(Shape(m, c), dt);
}

Work layerWork(const GptModel &m, const Candidate &c, const DeviceTimes &dt) {
  Shape x(m, c);
  Candidate layer = c;
  layer.recompute = attentionRecompute(c);
  return dt.trcKernels() ? trcLayer(x, layer, dt) : megatronLayer(x, layer, dt);
}

Work firstStageWork(const GptModel &m, const Candidate &c, const DeviceTimes &dt) {
  Shape x(m, c);
  if (!dt.trcKernels())
    return {};
  // The embedding lookup and its gradient; with TP its all-reduce (or
  // reduce-scatter with SP) each way.
  Work w;
  w.F = dt.kernels(kEmbeddingElements / 2 * x.T * x.h, kEmbeddingOps / 2);
  w.B = w.F;
  if (c.tensor > 1) {
    double bytes = x.T * x.h * dt.elementBytes();
    w.tpComm = x.sp ? dt.collective(Collective::ReduceScatter, c.tensor, bytes, c.tensor) +
                          dt.collective(Collective::AllGather, c.tensor, bytes, c.tensor)
                    : 2 * dt.collective(Collective::AllReduce, c.tensor, bytes, c.tensor);
  }
  return w;
}

Work lastStageWork(const GptModel &m, const Candidate &c, const DeviceTimes &dt) {
  Shape x(m, c);
  Product logits = product(dt, x.T, x.V / x.t, x.h);
  if (!dt.trcKernels()) {
    double softmax = dt.stream(x.T * x.V / x.t * 20);
    return {logits.fwd + softmax / 3, logits.dA + 2 * softmax / 3, logits.dB, 0};
  }
  const TrcTraffic &k = x.sp ? kTrcSp : kTrcNoSp;
  double elements = x.T * (k.headH - kEmbeddingElements) * x.h + x.T * k.headV * x.V / x.t;
  double ops = (x.sp ? k.headOps : c.tensor > 1 ? kTpHeadOps : k.headOps) - kEmbeddingOps;
  Work w;
  w.F = logits.fwd + dt.kernels(elements / 3, ops / 3);
  w.B = logits.dA + dt.kernels(2 * elements / 3, 2 * ops / 3);
  w.W = logits.dB;
  if (c.tensor > 1) // the vocabulary-parallel loss: 5 all-reduces of T floats
    w.tpComm = 5 * dt.collective(Collective::AllReduce, c.tensor, x.T * 4, c.tensor);
  return w;
}

namespace {

// A phase's seconds: its products, its other kernels, and (apart) its
// collectives over the tensor group and over the context group (the
// context group's ranks are the tensor degree apart).
struct PhaseSeconds {
  double compute = 0, tensorComm = 0, contextComm = 0;
};
PhaseSeconds phaseSeconds(const PhaseWork &w, const Candidate &c, const DeviceTimes &dt,
                          double extraElements = 0) {
  PhaseSeconds out;
  out.compute = dt.kernels(w.kernelBytes / kCompiledFloatBytes + extraElements, w.kernels);
  for (const ProductShape &p : w.products)
    out.compute += dt.matmul(p.m, p.n, p.k, p.batch);
  for (const CommWork &x : w.collectives) {
    Collective op = x.kind == CommKind::AllGather       ? Collective::AllGather
                    : x.kind == CommKind::ReduceScatter ? Collective::ReduceScatter
                    : x.kind == CommKind::Permute       ? Collective::P2P
                                                        : Collective::AllReduce;
    double bytes = x.bytes / kCompiledFloatBytes * dt.elementBytes();
    if (x.group == "context")
      out.contextComm +=
          dt.collective(op, c.context, bytes, (long long)c.tensor * c.context);
    else
      out.tensorComm += dt.collective(op, c.tensor, bytes, c.tensor);
  }
  return out;
}

} // namespace

Work pieceWork(const StageWork &piece, const Candidate &c, const DeviceTimes &dt,
               bool pipelined) {
  // The pipeline's extra traffic, split evenly over the phases. The
  // activations' constant was counted per transformer layer, which is two
  // pieces (attention and MLP halves) each sending T h.
  double extra = pipelined ? kPipelineWeights * piece.paramElements +
                                 kPipelineActivations / 2 * piece.sendBytes / kCompiledFloatBytes
                           : 0;
  PhaseSeconds f = phaseSeconds(piece.phase(WorkPhase::Forward), c, dt, extra / 3);
  PhaseSeconds b = phaseSeconds(piece.phase(WorkPhase::Backward), c, dt, extra / 3);
  PhaseSeconds w = phaseSeconds(piece.phase(WorkPhase::Weights), c, dt, extra / 3);
  return {f.compute, b.compute, w.compute, f.tensorComm + b.tensorComm + w.tensorComm,
          f.contextComm + b.contextComm + w.contextComm};
}

Work unstagedWork(const PhaseWork &ops, const Candidate &c, const DeviceTimes &dt) {
  PhaseSeconds f = phaseSeconds(ops, c, dt);
  return {f.compute, 0, 0, f.tensorComm, f.contextComm};
}

double optimizerSeconds(double params, double tensors, const DeviceTimes &dt) {
  if (!dt.trcKernels())
    return dt.stream(36 * params);
  return dt.stream(kOptimizerStreamElements * params * dt.elementBytes()) +
         dt.kernels(0, kOptimizerLoops * tensors);
}

double bucketCopySeconds(double gradElements, double tensors, const DeviceTimes &dt) {
  return dt.trcKernels() ? dt.kernels(4 * gradElements, 2 * tensors) : 0;
}

} // namespace trc::plan
