//===- Report.cpp - a search's result as trc-plan prints it ---------------===//
//
// See trc/Plan/Report.h.
//
//===----------------------------------------------------------------------===//
#include "trc/Plan/Report.h"

#include "runtime/formats/Json.h"

#include <cstdio>
#include <set>
#include <tuple>
#include <vector>

namespace trc::plan {
namespace {

std::string fmt(const char *f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

std::string gb(double bytes) { return fmt("%.1f", bytes / 1e9); }

void appendNumber(std::string &j, const char *key, double v, bool comma = true) {
  j += std::string(comma ? ", " : "") + "\"" + key + "\": ";
  rt::appendJsonDouble(j, v);
}

std::string predictedJson(const Prediction &p, const Cluster &c) {
  std::string j = "{";
  appendNumber(j, "step_time_s", p.stepTime, false);
  appendNumber(j, "tflops_per_device", p.tflopsPerDevice);
  appendNumber(j, "fraction_of_peak", p.tflopsPerDevice * 1e12 / c.device.peakFlops);
  appendNumber(j, "memory_per_device_bytes", p.memoryBytes);
  appendNumber(j, "device_memory_bytes", c.deviceMemory());
  appendNumber(j, "parameter_bytes", p.paramBytes);
  appendNumber(j, "gradient_bytes", p.gradBytes);
  appendNumber(j, "optimizer_bytes", p.optimizerBytes);
  appendNumber(j, "activation_bytes", p.activationBytes);
  appendNumber(j, "compute_s", p.computeTime);
  appendNumber(j, "bubble_s", p.bubbleTime);
  appendNumber(j, "tensor_comm_s", p.tensorCommTime);
  appendNumber(j, "context_comm_s", p.contextCommTime);
  appendNumber(j, "p2p_s", p.p2pTime);
  appendNumber(j, "data_comm_s", p.dataCommTime);
  appendNumber(j, "optimizer_s", p.optimizerTime);
  appendNumber(j, "bubble_share", p.bubbleTime / p.stepTime);
  appendNumber(j, "communication_share",
               (p.tensorCommTime + p.contextCommTime + p.p2pTime + p.dataCommTime) /
                   p.stepTime);
  appendNumber(j, "model_flops", p.modelFlops);
  return j + "}";
}

std::string shares(const Prediction &p) {
  auto pct = [&](double x) { return fmt("%.1f%%", 100 * x / p.stepTime); };
  return "compute " + pct(p.computeTime) + ", bubble " + pct(p.bubbleTime) + ", tensor comm " +
         pct(p.tensorCommTime) +
         (p.contextCommTime > 0 ? ", context comm " + pct(p.contextCommTime) : "") + ", p2p " +
         pct(p.p2pTime) + ", data comm " +
         pct(p.dataCommTime) + ", optimizer " + pct(p.optimizerTime);
}

// The best plan of up to `k` layouts other than the best's.
std::vector<const Ranked *> alternativeLayouts(const SearchResult &result, int k) {
  const Ranked &best = result.ranked[0];
  std::vector<const Ranked *> alts;
  std::set<std::tuple<int, int, int, int>> seen{
      {best.plan.data, best.plan.tensor, best.plan.pipeline, int(best.plan.recompute)}};
  for (const Ranked &r : result.ranked) {
    if (int(alts.size()) >= k)
      break;
    if (seen.insert({r.plan.data, r.plan.tensor, r.plan.pipeline, int(r.plan.recompute)}).second)
      alts.push_back(&r);
  }
  return alts;
}

// printf into a string.
template <typename... Args> void print(std::string &out, const char *f, Args... args) {
  char buf[1024];
  std::snprintf(buf, sizeof buf, f, args...);
  out += buf;
}

} // namespace

std::string reportJson(const ReportedModel &m, const Cluster &cluster, const SearchResult &result,
                       int alternatives) {
  const Ranked &best = result.ranked[0];
  std::vector<const Ranked *> alts = alternativeLayouts(result, alternatives);
  const GptModel &model = m.shape;
  std::string j = "{\"plan\": " + best.plan.toJson() + ", \"layout\": ";
  rt::appendJsonString(j, best.plan.describe());
  j += ", \"predicted\": " + predictedJson(best.predicted, cluster) + ", \"alternatives\": [";
  for (size_t i = 0; i < alts.size(); ++i)
    j += std::string(i ? ", " : "") + "{\"plan\": " + alts[i]->plan.toJson() +
         ", \"predicted\": " + predictedJson(alts[i]->predicted, cluster) + "}";
  j += "], \"search\": {";
  appendNumber(j, "seconds", result.seconds, false);
  appendNumber(j, "evaluated", double(result.evaluated));
  appendNumber(j, "repriced", double(result.repriced));
  appendNumber(j, "fitting", double(result.ranked.size()));
  j += "}, \"model\": {";
  if (m.shaped()) {
    appendNumber(j, "layers", double(model.layers), false);
    appendNumber(j, "hidden", double(model.hidden));
    appendNumber(j, "heads", double(model.heads));
    appendNumber(j, "seq", double(model.seq));
    appendNumber(j, "vocab", double(model.vocab));
    appendNumber(j, "ffn", double(model.ffn));
    appendNumber(j, "kv_heads", double(model.kvHeads));
    j += ", \"mlp\": ";
    rt::appendJsonString(j, model.gatedMlp ? "swiglu" : "gelu");
    appendNumber(j, "parameters", model.params());
    j += ", \"spec\": ";
    rt::appendJsonString(j, model.spec());
    if (!m.derivedSpec.empty())
      appendNumber(j, "model_parameters", m.countedParams);
  } else {
    appendNumber(j, "parameters", m.countedParams, false);
    appendNumber(j, "model_parameters", m.countedParams);
    j += ", \"spec\": null, \"priced_from\": \"compiled step\", \"not_transformer\": ";
    rt::appendJsonString(j, m.notTransformer);
  }
  return j + "}}\n";
}

std::string reportText(const ReportedModel &m, const Cluster &cluster, long long globalBatch,
                       const SearchResult &result, int alternatives) {
  const Ranked &best = result.ranked[0];
  const Prediction &p = best.predicted;
  const GptModel &model = m.shape;
  std::string out;
  if (!m.derivedSpec.empty())
    print(out, "derived: %s (%s holds %.0f parameters)\n", m.derivedSpec.c_str(), m.path.c_str(),
          m.countedParams);
  // Billions for real models, millions for small ones (a test model is 0.1M).
  double params = m.shaped() ? model.params() : m.countedParams;
  bool billions = params >= 1e9;
  if (m.shaped()) {
    std::string heads = std::to_string(model.heads) + " heads" +
                        (model.kvHeads != model.heads
                             ? " (" + std::to_string(model.kvHeads) + " key/value)"
                             : "");
    print(out, "model: %.1f%s parameters (%lld layers, hidden %lld, %s, seq %lld, vocab %lld%s)\n",
          billions ? params / 1e9 : params / 1e6, billions ? "B" : "M", (long long)model.layers,
          (long long)model.hidden, heads.c_str(), (long long)model.seq, (long long)model.vocab,
          model.gatedMlp ? ", SwiGLU MLP" : "");
  } else {
    print(out, "model: %.1f%s parameters, priced from its compiled step (not a transformer the "
               "formulas describe: %s; no tensor parallelism)\n",
          billions ? params / 1e9 : params / 1e6, billions ? "B" : "M", m.notTransformer.c_str());
  }
  print(out, "cluster: %d x %s (%d nodes of %d), global batch %lld\n", cluster.devices(),
        cluster.device.kind.c_str(), cluster.nodes, cluster.device.devicesPerNode, globalBatch);
  if (!cluster.device.measured.empty())
    print(out, "device profile: %s\n", cluster.device.source.c_str());
  print(out, "search: %lld plans priced, %zu fit, %.3f s", result.evaluated, result.ranked.size(),
        result.seconds);
  if (result.repriced && m.shaped())
    print(out, " (%lld priced again from the compiled step)", result.repriced);
  out += "\n";
  out += "plan: " + best.plan.describe() + "\n  " + best.plan.toJson() + "\n";
  print(out, "predicted step time: %.3f s\n", p.stepTime);
  print(out, "TFLOP/s per device: %.1f (%.1f%% of peak)\n", p.tflopsPerDevice,
        100 * p.tflopsPerDevice * 1e12 / cluster.device.peakFlops);
  print(out, "memory per device: %s GB of %s GB (parameters %s, gradients %s, optimizer %s, "
             "activations %s, reserve %s)\n",
        gb(p.memoryBytes).c_str(), gb(cluster.deviceMemory()).c_str(), gb(p.paramBytes).c_str(),
        gb(p.gradBytes).c_str(), gb(p.optimizerBytes).c_str(), gb(p.activationBytes).c_str(),
        gb(cluster.device.reservedBytes).c_str());
  out += "step: " + shares(p) + "\n";
  std::vector<const Ranked *> alts = alternativeLayouts(result, alternatives);
  if (!alts.empty())
    out += "alternatives:\n";
  for (const Ranked *r : alts)
    print(out, "  %-80s %9.3f s %7.1f TFLOP/s %7s GB\n", r->plan.describe().c_str(),
          r->predicted.stepTime, r->predicted.tflopsPerDevice,
          gb(r->predicted.memoryBytes).c_str());
  return out;
}

std::string noPlanMessage(const ReportedModel &m, const Cluster &cluster, long long globalBatch,
                          const SearchResult &result, bool constrained) {
  std::string what = constrained ? "the model fits no plan allowed by --plan" : "the model fits no plan";
  if (!result.leastMemory)
    return what + " on " + std::to_string(cluster.devices()) + " x " + cluster.device.kind +
           " with --global-batch " + std::to_string(globalBatch) + ": " +
           noSplitReason(result, m.notTransformer);
  const Ranked &r = *result.leastMemory;
  return what + ": needs at least " + fmt("%.0f", r.predicted.memoryBytes) +
         " bytes per device (" + gb(r.predicted.memoryBytes) + " GB, with " + r.plan.describe() +
         "), " + cluster.device.kind + " has " + fmt("%.0f", cluster.deviceMemory()) + " (" +
         gb(cluster.deviceMemory()) + " GB)";
}

} // namespace trc::plan
