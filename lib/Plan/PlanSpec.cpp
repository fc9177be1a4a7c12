//===- PlanSpec.cpp - partial plans as search constraints --------------------===//
//
// The JSON is read once to see which keys are present and to take out
// "recompute"; the rest goes through the runtime's parseParallelPlan, so a
// plan trc-plan accepts is one `trc-run --config` accepts (less
// "recompute"), with the same error messages.
//
//===----------------------------------------------------------------------===//
#include "trc/Plan/PlanSpec.h"

#include "JsonText.h"

#include "runtime/formats/FileOps.h"
#include "runtime/formats/Json.h"
#include "runtime/spec/EngineSupport.h"
#include "runtime/spec/ParallelPlan.h"

namespace trc::plan {

rt::Status parsePlanSpec(const std::string &spec, int worldSize, Constraints &out) {
  std::string text = spec;
  size_t first = spec.find_first_not_of(" \t\r\n");
  std::string where = "--plan: ";
  if (first == std::string::npos || spec[first] != '{') {
    rt::StatusOr<std::string> read = rt::readSmallFile(spec, 1 << 20);
    if (!read.ok())
      return rt::Status(read.status()).withPrefix(where + spec + ": ");
    text = *read;
    where += spec + ": ";
  }
  rt::StatusOr<rt::JsonValue> parsed = rt::parseJson(text);
  if (!parsed.ok())
    return rt::Status(parsed.status()).withPrefix(where);
  const rt::JsonValue &root = *parsed;
  if (!root.isObject())
    return rt::Status::error(where + "expected an object, got " +
                             rt::JsonValue::kindName(root.kind()));
  Constraints c;
  std::string rest = "{";
  for (const auto &[key, v] : root.members()) {
    if (key == "recompute") {
      if (!v.isString() || (v.text() != "none" && v.text() != "selective" && v.text() != "full"))
        return rt::Status::error(where + "key 'recompute': expected \"none\", \"selective\" or "
                                         "\"full\"");
      c.recompute = v.text() == "none"        ? Recompute::None
                    : v.text() == "selective" ? Recompute::Selective
                                              : Recompute::Full;
      continue;
    }
    rest += rest.size() > 1 ? "," : "";
    rt::appendJsonString(rest, key);
    rest += ':';
    rest += jsonText(v);
  }
  rest += '}';
  rt::StatusOr<rt::ParallelPlan> parsedPlan = rt::parseParallelPlan(rest, worldSize);
  if (!parsedPlan.ok()) {
    rt::Status s = parsedPlan.status();
    return rt::Status::error(where + (s.message().rfind("--config: ", 0) == 0
                                          ? s.message().substr(10)
                                          : s.message()));
  }
  const rt::ParallelPlan &plan = *parsedPlan;
  auto has = [&](const char *k) { return root.find(k) != nullptr; };
  if (rt::Status s = rt::engineRuns(plan); !s) // a plan no engine runs is not priced
    return rt::Status::error(where + s.message());
  if (has("tensor_parallel_degree"))
    c.tensor = plan.tensorDegree;
  if (has("context_parallel_degree"))
    c.context = plan.contextDegree;
  if (has("cp_comm_type"))
    c.contextRing = plan.cpCommType == "p2p";
  if (has("pipeline_parallel_degree") || has("partitions"))
    c.pipeline = plan.pipelineDegree;
  if (has("microbatches"))
    c.microbatches = plan.microbatches;
  if (has("zero_stage") || has("shard_optimizer_state") || has("sharded_data_parallel_degree") ||
      has("hybrid_shard_degree"))
    c.zeroStage = plan.zeroStage;
  if (has("sharded_data_parallel_degree") || has("hybrid_shard_degree"))
    c.shardDegree = plan.shardDegree;
  if (has("sequence_parallel"))
    c.sequenceParallel = plan.sequenceParallel;
  if (has("virtual_stages"))
    c.virtualStages = plan.virtualStages;
  if (has("pipeline_schedule") || has("pipeline")) {
    c.schedule = plan.pipelineSchedule == "gpipe"   ? Schedule::GPipe
                 : plan.pipelineSchedule == "1f1b"  ? Schedule::OneFOneB
                 : plan.pipelineSchedule == "zb_h1" ? Schedule::ZeroBubbleH1
                                                    : Schedule::Interleaved;
  }
  c.optimize = plan.optimize;
  c.memoryWeight = plan.memoryWeight;
  out = c;
  return rt::Status::success();
}

} // namespace trc::plan
