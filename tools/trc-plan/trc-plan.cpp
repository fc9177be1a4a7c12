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
#include "runtime/support/Parse.h"
#include "trc/Plan/PlanSpec.h"
#include "trc/Plan/Report.h"
#ifdef TRC_PLAN_WITH_COMPILER
#include "trc/Driver/OnnxPlanModel.h"
#endif

#include <cmath>

#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

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
  ReportedModel reported{model, derivedSpec, onnx ? modelSpec : "", notTransformer, countedParams};
  if (result.ranked.empty())
    return fail(noPlanMessage(reported, cluster, *batch, result, havePlan));
  std::fputs(json ? reportJson(reported, cluster, result, int(*alternatives)).c_str()
                  : reportText(reported, cluster, *batch, result, int(*alternatives)).c_str(),
             stdout);
  return 0;
}
