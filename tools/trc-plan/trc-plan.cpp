//===- trc-plan.cpp - plan and predict a training run on a cluster -----------===//
//
// trc-plan --model gpt:layers=L,hidden=H,heads=A,seq=S,vocab=V[,ffn=F,kv_heads=K,mlp=swiglu,...]
//                  (or llama:...: Llama's defaults; trc/Plan/Model.h)
//          --cluster KIND:N|FILE.json [--device-profile PROFILE.json]
//          --global-batch B [--plan JSON] [--json] [--alternatives K]
// trc-plan --model MODEL.onnx [--dim NAME=N,...] ...   (built with the compiler)
//
// Searches the plan space with the analytical cost model (lib/Plan) and
// prints the best plan, its predicted step time, TFLOP/s per device
// (Megatron's accounting), memory per device, the shares of the step
// (compute, bubble, communication) and the next best alternatives (the best
// plan of each other data x tensor x pipeline layout and recomputation).
// --plan evaluates a given plan; keys it leaves out are searched. --json
// prints {"plan", "predicted", "alternatives", "search", "model"}.
//
// --device-profile prices the cluster's devices with what trc-run
// --calibrate measured (ProfileFile.h) instead of the spec sheet.
// An .onnx model is imported and described as a GPT (OnnxModelSpec.cpp);
// the derived description prints as a gpt:... spec, with the parameters
// the model holds (a warning when the GPT formula is over 10% off). A
// model without a transformer's shape (a CNN, a ViT) is planned from its
// compiled steps alone (Search.h's searchCompiled).
//
// Bad input prints "error: ..." naming the flag or key and exits 1.
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/FileOps.h"
#include "runtime/formats/Json.h"
#include "runtime/support/Parse.h"
#include "trc/Plan/PlanSpec.h"
#ifdef TRC_PLAN_WITH_COMPILER
#include "trc/Driver/OnnxPlanModel.h"
#endif

#include <cmath>

#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>

using namespace trc;
using namespace trc::plan;

namespace {

// What each flag means and each output line says (--help).
const char kHelpText[] = R"(
Searches data x tensor x pipeline parallelism, microbatches, ZeRO stage,
recomputation and pipeline schedule for the fastest plan that fits, priced by
an analytical cost model (spec sheets, or --device-profile from trc-run
--calibrate). An .onnx model is priced from its own compiled training step;
one without a transformer's shape (a CNN, a ViT) from that alone, without
tensor parallelism.

  --cluster KIND:N   N devices of KIND: a100-40gb, a100-80gb, h100-80gb, h200,
                     cpu (any case; h100 means h100-80gb), 8 GPUs per node;
                     or a cluster JSON file (device, nodes, gpus_per_node,
                     bandwidths, latencies, memory_gb, device_profile)
  --global-batch B   rows per optimizer step over all devices
  --plan JSON        evaluate this plan (trc-run --config keys); keys left
                     out are searched
  --alternatives K   also print the best plan of K other layouts
  --json             one JSON object: plan, predicted, alternatives, search

Output:
  plan: data=D tensor=T[+sp] pipeline=P microbatches=MxR [schedule=S[/V]]
        zero=Z[/G] recompute=C
      D data-parallel replicas, T tensor-parallel degree (+sp: sequence
      parallelism), P pipeline stages; M microbatches of R rows per data
      replica and step (with P=1 they are gradient accumulation); S the
      pipeline schedule (gpipe, 1f1b, interleaved/V virtual stages, zb_h1);
      Z the ZeRO stage (/G: sharded over G of the D replicas, hybrid);
      C the recomputation (none, selective, full).
    The next line is the same plan as JSON: pass it to trc-run --config as it
    is printed.
  predicted step time    seconds per optimizer step
  TFLOP/s per device     FLOPs per second per device (Megatron's
                         accounting), and its share of the device's peak
  memory per device      the busiest device's bytes: parameters, gradients,
                         optimizer state, activations and a reserve
  step                   shares of the step: compute, pipeline bubble, tensor
                         comm, p2p (pipeline transfers), data comm (gradient
                         and ZeRO collectives), optimizer
  alternatives           plan, step time, TFLOP/s per device, GB per device
)";

int fail(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

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
  appendNumber(j, "p2p_s", p.p2pTime);
  appendNumber(j, "data_comm_s", p.dataCommTime);
  appendNumber(j, "optimizer_s", p.optimizerTime);
  appendNumber(j, "bubble_share", p.bubbleTime / p.stepTime);
  appendNumber(j, "communication_share",
               (p.tensorCommTime + p.p2pTime + p.dataCommTime) / p.stepTime);
  appendNumber(j, "model_flops", p.modelFlops);
  return j + "}";
}

std::string shares(const Prediction &p) {
  auto pct = [&](double x) { return fmt("%.1f%%", 100 * x / p.stepTime); };
  return "compute " + pct(p.computeTime) + ", bubble " + pct(p.bubbleTime) + ", tensor comm " +
         pct(p.tensorCommTime) + ", p2p " + pct(p.p2pTime) + ", data comm " +
         pct(p.dataCommTime) + ", optimizer " + pct(p.optimizerTime);
}

} // namespace

int main(int argc, char **argv) {
  std::string modelSpec, dimSpec, clusterSpec, batchSpec, planSpec, alternativesSpec = "4",
      profileSpec;
  bool json = false, havePlan = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    if (arg == "--json") {
      json = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      std::printf("usage: trc-plan --model gpt:layers=L,hidden=H,heads=A,seq=S,vocab=V[,ffn=F,"
                  "kv_heads=K,mlp=gelu|swiglu,positions=learned|rotary,tied=true|false,"
                  "bias=true|false]|llama:...(same keys; Llama's defaults)"
#ifdef TRC_PLAN_WITH_COMPILER
                  "|MODEL.onnx [--dim NAME=N,...]"
#endif
                  " --cluster KIND:N|FILE.json [--device-profile PROFILE.json] --global-batch B "
                  "[--plan JSON] [--json] [--alternatives K]\n%s",
                  kHelpText);
      return 0;
    }
    size_t eq = arg.find('=');
    std::string flag = arg.substr(0, eq);
    std::string *dest = flag == "--model"          ? &modelSpec
                        : flag == "--dim"          ? &dimSpec
                        : flag == "--cluster"      ? &clusterSpec
                        : flag == "--global-batch" ? &batchSpec
                        : flag == "--plan"         ? &planSpec
                        : flag == "--alternatives" ? &alternativesSpec
                        : flag == "--device-profile" ? &profileSpec
                                                   : nullptr;
    if (!dest)
      return fail("unknown flag '" + arg + "' (see --help)");
    if (eq != std::string::npos)
      value = arg.substr(eq + 1);
    else if (i + 1 < argc)
      value = argv[++i];
    else
      return fail(flag + ": expected a value");
    *dest = value;
    havePlan |= flag == "--plan";
  }
  if (modelSpec.empty())
    return fail("--model: required (gpt:layers=L,hidden=H,heads=A,seq=S,vocab=V[,ffn=F,...], "
                "llama:... or MODEL.onnx)");
  if (clusterSpec.empty())
    return fail("--cluster: required (KIND:N or FILE.json)");
  if (batchSpec.empty())
    return fail("--global-batch: required");
  // Files to read must be regular files: a FIFO blocked the reader forever.
  auto endsWith = [](const std::string &s, const char *tail) {
    size_t n = std::strlen(tail);
    return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
  };
  size_t planStart = planSpec.find_first_not_of(" \t\r\n");
  for (auto [flag, path, isFile] :
       {std::tuple{"--model", modelSpec, endsWith(modelSpec, ".onnx")},
        std::tuple{"--cluster", clusterSpec, endsWith(clusterSpec, ".json")},
        std::tuple{"--device-profile", profileSpec, !profileSpec.empty()},
        std::tuple{"--plan", planSpec, planStart != std::string::npos && planSpec[planStart] != '{'}})
    if (isFile)
      if (rt::Status s = rt::checkRegularFile(flag, path); !s)
        return fail(s.message());
  GptModel model;
  std::string derivedSpec, notTransformer; // an .onnx model's shape, or why it has none
  double countedParams = 0;
  bool onnx = endsWith(modelSpec, ".onnx");
#ifdef TRC_PLAN_WITH_COMPILER
  std::optional<OnnxPlanModel> planned;
#endif
  if (onnx) {
#ifdef TRC_PLAN_WITH_COMPILER
    rt::StatusOr<OnnxPlanModel> opened = openOnnxPlanModel(modelSpec, dimSpec);
    if (!opened.ok())
      return fail(std::string(opened.status().message()));
    planned = *std::move(opened);
    const OnnxModelDescription &d = planned->description;
    countedParams = d.countedParams;
    notTransformer = d.notTransformer;
    if (d.model) {
      model = *d.model;
      derivedSpec = d.spec;
      double formula = model.params();
      if (std::fabs(countedParams - formula) > 0.1 * countedParams)
        std::fprintf(stderr,
                     "warning: --model %s: the model holds %.0f parameters, the GPT formula of "
                     "%s gives %.0f (%+.1f%%); the plan prices the formula's\n",
                     modelSpec.c_str(), countedParams, derivedSpec.c_str(), formula,
                     100 * (formula - countedParams) / countedParams);
    }
#else
    return fail("--model '" + modelSpec +
                "': ONNX models need trc-plan built with the compiler (TRC_ENABLE_COMPILER=ON); "
                "describe the model as gpt:layers=L,hidden=H,heads=A,seq=S,vocab=V[,ffn=F,...] "
                "or llama:...");
#endif
  } else if (rt::Status s = parseModelSpec(modelSpec, model); !s) {
    return fail(s.message());
  }
  const bool shaped = notTransformer.empty(); // the formulas know its shape
  if (!dimSpec.empty() && !onnx)
    return fail("--dim: only with --model MODEL.onnx");
  Cluster cluster;
  if (havePlan && planSpec.empty())
    return fail("--plan: expected a JSON object or the path of a JSON file");
  if (rt::Status s = parseCluster(clusterSpec, cluster, profileSpec); !s)
    return fail(s.message());
  std::optional<int64_t> batch = rt::parseInt64(batchSpec, 1, int64_t(1) << 40);
  if (!batch)
    return fail("--global-batch: expected an integer >= 1, got '" + batchSpec + "'");
  std::optional<int64_t> alternatives = rt::parseInt64(alternativesSpec, 0, 100);
  if (!alternatives)
    return fail("--alternatives: expected an integer in [0, 100], got '" + alternativesSpec + "'");
  Constraints constraints;
  if (havePlan)
    if (rt::Status s = parsePlanSpec(planSpec, cluster.devices(), constraints); !s)
      return fail(s.message());

#ifdef TRC_PLAN_WITH_COMPILER
  SearchResult result =
      planned ? planned->search(cluster, *batch, constraints) : search(model, cluster, *batch, constraints);
#else
  SearchResult result = search(model, cluster, *batch, constraints);
#endif
  if (result.ranked.empty()) {
    std::string what = havePlan ? "the model fits no plan allowed by --plan" : "the model fits no plan";
    if (!result.leastMemory)
      return fail(what + " on " + std::to_string(cluster.devices()) + " x " + cluster.device.kind +
                  " with --global-batch " + batchSpec + ": " +
                  noSplitReason(result, notTransformer));
    const Ranked &r = *result.leastMemory;
    return fail(what + ": needs at least " + fmt("%.0f", r.predicted.memoryBytes) +
                " bytes per device (" + gb(r.predicted.memoryBytes) + " GB, with " +
                r.plan.describe() + "), " + cluster.device.kind + " has " +
                fmt("%.0f", cluster.deviceMemory()) + " (" + gb(cluster.deviceMemory()) + " GB)");
  }
  const Ranked &best = result.ranked[0];
  std::vector<const Ranked *> alts;
  std::set<std::tuple<int, int, int, int>> seen{
      {best.plan.data, best.plan.tensor, best.plan.pipeline, int(best.plan.recompute)}};
  for (const Ranked &r : result.ranked) {
    if (int64_t(alts.size()) >= *alternatives)
      break;
    if (seen.insert({r.plan.data, r.plan.tensor, r.plan.pipeline, int(r.plan.recompute)}).second)
      alts.push_back(&r);
  }

  const Prediction &p = best.predicted;
  if (json) {
    std::string j = "{\"plan\": " + best.plan.toJson() + ", \"layout\": ";
    rt::appendJsonString(j, best.plan.describe());
    j += ", \"predicted\": " + predictedJson(p, cluster) + ", \"alternatives\": [";
    for (size_t i = 0; i < alts.size(); ++i)
      j += std::string(i ? ", " : "") + "{\"plan\": " + alts[i]->plan.toJson() +
           ", \"predicted\": " + predictedJson(alts[i]->predicted, cluster) + "}";
    j += "], \"search\": {";
    appendNumber(j, "seconds", result.seconds, false);
    appendNumber(j, "evaluated", double(result.evaluated));
    appendNumber(j, "repriced", double(result.repriced));
    appendNumber(j, "fitting", double(result.ranked.size()));
    j += "}, \"model\": {";
    if (shaped) {
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
      if (!derivedSpec.empty())
        appendNumber(j, "model_parameters", countedParams);
    } else {
      appendNumber(j, "parameters", countedParams, false);
      appendNumber(j, "model_parameters", countedParams);
      j += ", \"spec\": null, \"priced_from\": \"compiled step\", \"not_transformer\": ";
      rt::appendJsonString(j, notTransformer);
    }
    j += "}}\n";
    std::fputs(j.c_str(), stdout);
    return 0;
  }
  if (!derivedSpec.empty())
    std::printf("derived: %s (%s holds %.0f parameters)\n", derivedSpec.c_str(),
                modelSpec.c_str(), countedParams);
  // Billions for real models, millions for small ones (a test model is 0.1M).
  double params = shaped ? model.params() : countedParams;
  bool billions = params >= 1e9;
  if (!shaped)
    std::printf("model: %.1f%s parameters, priced from its compiled step (not a transformer the "
                "formulas describe: %s; no tensor parallelism)\n",
                billions ? params / 1e9 : params / 1e6, billions ? "B" : "M",
                notTransformer.c_str());
  std::string heads = std::to_string(model.heads) + " heads" +
                      (model.kvHeads != model.heads
                           ? " (" + std::to_string(model.kvHeads) + " key/value)"
                           : "");
  if (shaped)
    std::printf("model: %.1f%s parameters (%lld layers, hidden %lld, %s, seq %lld, vocab %lld%s)\n",
                billions ? params / 1e9 : params / 1e6, billions ? "B" : "M",
                (long long)model.layers, (long long)model.hidden, heads.c_str(),
                (long long)model.seq, (long long)model.vocab,
                model.gatedMlp ? ", SwiGLU MLP" : "");
  std::printf("cluster: %d x %s (%d nodes of %d), global batch %lld\n", cluster.devices(),
              cluster.device.kind.c_str(), cluster.nodes, cluster.device.devicesPerNode,
              (long long)*batch);
  if (!cluster.device.measured.empty())
    std::printf("device profile: %s\n", cluster.device.source.c_str());
  std::printf("search: %lld plans priced, %zu fit, %.3f s", result.evaluated,
              result.ranked.size(), result.seconds);
  if (result.repriced && shaped)
    std::printf(" (%lld priced again from the compiled step)", result.repriced);
  std::printf("\n");
  std::printf("plan: %s\n  %s\n", best.plan.describe().c_str(), best.plan.toJson().c_str());
  std::printf("predicted step time: %.3f s\n", p.stepTime);
  std::printf("TFLOP/s per device: %.1f (%.1f%% of peak)\n", p.tflopsPerDevice,
              100 * p.tflopsPerDevice * 1e12 / cluster.device.peakFlops);
  std::printf("memory per device: %s GB of %s GB (parameters %s, gradients %s, optimizer %s, "
              "activations %s, reserve %s)\n",
              gb(p.memoryBytes).c_str(), gb(cluster.deviceMemory()).c_str(),
              gb(p.paramBytes).c_str(), gb(p.gradBytes).c_str(), gb(p.optimizerBytes).c_str(),
              gb(p.activationBytes).c_str(), gb(cluster.device.reservedBytes).c_str());
  std::printf("step: %s\n", shares(p).c_str());
  if (!alts.empty())
    std::printf("alternatives:\n");
  for (const Ranked *r : alts)
    std::printf("  %-80s %9.3f s %7.1f TFLOP/s %7s GB\n", r->plan.describe().c_str(),
                r->predicted.stepTime, r->predicted.tflopsPerDevice,
                gb(r->predicted.memoryBytes).c_str());
  return 0;
}
