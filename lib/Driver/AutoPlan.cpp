//===- AutoPlan.cpp - `--config auto` and auto_partition (AutoPlan.h) ------===//
#include "trc/Driver/AutoPlan.h"

#include "trc/Driver/OnnxPlanModel.h"
#include "runtime/support/LaunchEnvironment.h"
#include "runtime/formats/FileOps.h"
#include "runtime/formats/Json.h"
#include "runtime/spec/ParallelPlan.h"
#include "trc/Plan/Cluster.h"
#include "trc/Plan/PlanSpec.h"

#include <cstdio>

namespace trc {

using rt::Status;

namespace {

// The config's JSON text ("" for "auto" or not JSON) and whether it asks
// for the auto-partitioner.
rt::StatusOr<bool> wantsAutoPartition(const std::string &config, std::string &json) {
  if (config == "auto")
    return true;
  size_t first = config.find_first_not_of(" \t\r\n");
  if (first == std::string::npos)
    return false;
  json = config;
  if (config[first] != '{') {
    rt::StatusOr<std::string> text = rt::readSmallFile(config, 1 << 20);
    if (!text.ok())
      return false; // the config parser reports it
    json = *text;
  }
  rt::StatusOr<rt::JsonValue> parsed = rt::parseJson(json);
  if (!parsed.ok() || !parsed->isObject())
    return false; // the config parser reports it
  const rt::JsonValue *autoPartition = parsed->find("auto_partition");
  return autoPartition && autoPartition->isBool() && autoPartition->boolValue();
}

// The plan's JSON plus the keys of `given` that are not the plan's
// (bucket_cap_mb, communicator).
std::string planConfig(const plan::Candidate &best, const std::string &given) {
  std::string j = best.toJson();
  if (given.empty())
    return j;
  rt::StatusOr<rt::JsonValue> parsed = rt::parseJson(given);
  if (!parsed.ok())
    return j;
  j.pop_back(); // '}'
  if (const rt::JsonValue *v = parsed->find("bucket_cap_mb"))
    j += ", \"bucket_cap_mb\": " + v->text();
  if (const rt::JsonValue *v = parsed->find("communicator")) {
    j += ", \"communicator\": ";
    rt::appendJsonString(j, v->text());
  }
  return j + "}";
}

} // namespace

Status resolveAutoPlan(rt::TrainerOptions &options, const std::string &profilePath) {
  std::string given;
  rt::StatusOr<bool> wanted = wantsAutoPartition(options.parallelConfig, given);
  if (!wanted.ok())
    return wanted.status();
  const char *what = options.parallelConfig == "auto" ? "--config auto" : "--config auto_partition";
  if (!*wanted) {
    if (!profilePath.empty())
      return Status::error("--device-profile: only with --config auto or \"auto_partition\": "
                           "true (it prices the plans the planner compares)");
    return Status::success();
  }
  const std::string &model = options.model;
  if (model.size() < 5 || model.compare(model.size() - 5, 5, ".onnx") != 0)
    return Status::success(); // a saved step: its plan is compiled in
  rt::StatusOr<rt::LaunchEnvironment> env = rt::readLaunchEnvironment();
  if (!env.ok())
    return env.status();
  int world = env->size > 0 ? env->size : 1;

  plan::Constraints constraints;
  if (!given.empty())
    if (Status s = plan::parsePlanSpec(given, world, constraints); !s)
      return Status::error("--config: " + s.message().substr(s.message().rfind("--plan: ", 0) == 0
                                                                ? 8
                                                                : 0));
  plan::Cluster cluster;
  if (Status s = plan::parseCluster("cpu:" + std::to_string(world), cluster, profilePath); !s)
    return s;
  std::string dims = "batch=" + std::to_string(options.batchSize) +
                     ",sequence=" + std::to_string(options.seqLen);
  rt::StatusOr<plan::OnnxPlanModel> planned = plan::openOnnxPlanModel(model, dims);
  if (!planned.ok())
    return Status(planned.status()).withPrefix(std::string(what) + ": ");
  plan::SearchResult result = planned->search(cluster, options.batchSize, constraints);
  if (result.ranked.empty()) {
    std::string need = " (--batch-size " + std::to_string(options.batchSize) + "): " +
                       plan::noSplitReason(result, planned->description.notTransformer);
    if (result.leastMemory)
      need = ": the least hungry plan (" + result.leastMemory->plan.describe() + ") needs " +
             std::to_string(static_cast<long long>(result.leastMemory->predicted.memoryBytes)) +
             " bytes per rank, a rank has " +
             std::to_string(static_cast<long long>(cluster.deviceMemory())) + " (" +
             (profilePath.empty() ? "the cpu spec sheet" : profilePath) + ")";
    return Status::error(std::string(what) + ": no plan of " + planned->name(model) + " fits " +
                         std::to_string(world) + " CPU rank" + (world == 1 ? "" : "s") + need);
  }
  const plan::Ranked &best = result.ranked.front();
  if (env->rank == 0)
    std::fprintf(stderr,
                 "trc-run: %s: %s (predicted %.3f ms per step, %.1f MB per rank; %lld plans "
                 "priced, %lld again from the compiled step, in %.3f s, %s)\n",
                 what, best.plan.describe().c_str(), best.predicted.stepTime * 1e3,
                 best.predicted.memoryBytes / 1e6, result.evaluated, result.repriced,
                 result.seconds,
                 profilePath.empty() ? "cpu spec sheet" : profilePath.c_str());
  options.parallelConfig = planConfig(best.plan, given);
  return Status::success();
}

} // namespace trc
