//===- ParallelPlan.cpp - --config: how training is parallelized -----------===//
//
// Reads the spec (inline JSON, "auto" or a file) with the runtime's strict
// JSON parser, checks each key's type and range, then derives the ZeRO stage
// and the shard degree, the data-parallel degree left by the tensor and
// pipeline degrees, and rejects contradictions. See ParallelPlan.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/spec/ParallelPlan.h"

#include "runtime/formats/FileOps.h"
#include "runtime/formats/Json.h"

#include <cstdint>
#include <initializer_list>
#include <optional>

namespace trc::rt {
namespace {
using rt::JsonValue;
using rt::Status;

constexpr size_t kMaxConfigBytes = 1 << 20;
// Keeps the bucket size in bytes (MiB * 2^20) far from int64's range.
constexpr double kMaxBucketCapMb = 1 << 20;

const char *const kKnownKeys =
    "ddp, shard_optimizer_state, sharded_data_parallel_degree, "
    "hybrid_shard_degree, zero_stage, bucket_cap_mb, communicator, tensor_parallel_degree, "
    "sequence_parallel, context_parallel_degree, cp_comm_type, cp_load_balance, "
    "pipeline_parallel_degree, partitions, microbatches, active_microbatches, pipeline, "
    "pipeline_schedule, virtual_stages, offload_activations, activation_loading_horizon, "
    "recompute, auto_partition, optimize, memory_weight";

// 'key' for messages: control bytes as \xNN, long names cut.
std::string quoteKey(const std::string &key) {
  static const char *hex = "0123456789abcdef";
  std::string out = "'";
  for (size_t i = 0; i < key.size() && i < 64; ++i) {
    unsigned char c = static_cast<unsigned char>(key[i]);
    if (c < 0x20 || c == 0x7f)
      out += std::string("\\x") + hex[c >> 4] + hex[c & 15];
    else
      out += char(c);
  }
  return out + (key.size() > 64 ? "...'" : "'");
}

// The keys as given (absent: not given).
struct Given {
  std::optional<bool> ddp, shardOptimizerState;
  std::optional<int64_t> shardedDataParallelDegree, hybridShardDegree, zeroStage;
  std::optional<double> bucketCapMb;
  std::optional<std::string> communicator;
  // Model parallelism, memory, auto-partition.
  std::optional<int64_t> tensorDegree, contextDegree, pipelineDegree, partitions, microbatches,
      activeMicrobatches, virtualStages, loadingHorizon;
  std::optional<bool> sequenceParallel, offloadActivations, autoPartition, cpLoadBalance;
  std::optional<std::string> pipeline, pipelineSchedule, optimize, recompute, cpCommType;
  std::optional<double> memoryWeight;

  // The degrees as given (1 when absent; `partitions` is SMP's name for the
  // pipeline degree).
  int64_t tensor() const { return tensorDegree.value_or(1); }
  int64_t context() const { return contextDegree.value_or(1); }
  int64_t pipelineStages() const {
    return pipelineDegree ? *pipelineDegree : partitions.value_or(1);
  }
};

Status typeError(const std::string &key, const char *expected, const JsonValue &v) {
  return Status::error("key " + quoteKey(key) + ": expected " + expected +
                       ", got " + JsonValue::kindName(v.kind()));
}

Status readBool(const std::string &key, const JsonValue &v, std::optional<bool> &out) {
  if (!v.isBool())
    return typeError(key, "a boolean", v);
  out = v.boolValue();
  return Status::success();
}

Status readInt(const std::string &key, const JsonValue &v, std::optional<int64_t> &out) {
  int64_t i;
  if (!v.isNumber())
    return typeError(key, "an integer", v);
  if (!v.asInt64(i))
    return Status::error("key " + quoteKey(key) + ": expected an integer, got " + v.text());
  out = i;
  return Status::success();
}

Status contradiction(const std::string &a, const std::string &b, const std::string &why) {
  return Status::error("contradictory keys " + a + " and " + b + ": " + why);
}

Status readString(const std::string &key, const JsonValue &v, std::optional<std::string> &out) {
  if (!v.isString())
    return typeError(key, "a string", v);
  out = v.text();
  return Status::success();
}

// Model-parallel, memory and auto-partition keys; false when `key` is none.
bool readModelParallelMember(const std::string &key, const JsonValue &v, Given &g, Status &s) {
  const std::pair<const char *, std::optional<int64_t> *> ints[] = {
      {"tensor_parallel_degree", &g.tensorDegree}, {"pipeline_parallel_degree", &g.pipelineDegree},
      {"context_parallel_degree", &g.contextDegree},
      {"partitions", &g.partitions}, {"microbatches", &g.microbatches},
      {"active_microbatches", &g.activeMicrobatches}, {"virtual_stages", &g.virtualStages},
      {"activation_loading_horizon", &g.loadingHorizon}};
  for (auto [name, field] : ints)
    if (key == name) {
      s = readInt(key, v, *field);
      if (s && **field < 1)
        s = Status::error("key '" + key + "': expected an integer >= 1, got " +
                          std::to_string(**field));
      return true;
    }
  const std::pair<const char *, std::optional<bool> *> bools[] = {
      {"sequence_parallel", &g.sequenceParallel}, {"offload_activations", &g.offloadActivations},
      {"cp_load_balance", &g.cpLoadBalance},
      {"auto_partition", &g.autoPartition}};
  for (auto [name, field] : bools)
    if (key == name) {
      s = readBool(key, v, *field);
      return true;
    }
  const std::pair<const char *, std::optional<std::string> *> strings[] = {
      {"pipeline", &g.pipeline}, {"pipeline_schedule", &g.pipelineSchedule},
      {"optimize", &g.optimize}, {"recompute", &g.recompute}, {"cp_comm_type", &g.cpCommType}};
  for (auto [name, field] : strings)
    if (key == name) {
      s = readString(key, v, *field);
      return true;
    }
  if (key == "memory_weight") {
    double d;
    if (!v.isNumber())
      s = typeError(key, "a number", v);
    else if (!v.asDouble(d) || d < 0 || d > 1)
      s = Status::error("key 'memory_weight': expected a number in [0, 1], got " + v.text());
    else
      g.memoryWeight = d;
    return true;
  }
  return false;
}

Status readMembers(const JsonValue &root, Given &g) {
  for (const auto &[key, v] : root.members()) {
    Status s;
    if (key == "ddp")
      s = readBool(key, v, g.ddp);
    else if (key == "shard_optimizer_state")
      s = readBool(key, v, g.shardOptimizerState);
    else if (key == "sharded_data_parallel_degree")
      s = readInt(key, v, g.shardedDataParallelDegree);
    else if (key == "hybrid_shard_degree")
      s = readInt(key, v, g.hybridShardDegree);
    else if (key == "zero_stage")
      s = readInt(key, v, g.zeroStage);
    else if (key == "bucket_cap_mb") {
      double d;
      if (!v.isNumber())
        s = typeError(key, "a number", v);
      else if (!v.asDouble(d))
        s = Status::error("key 'bucket_cap_mb': " + v.text() + " is out of range");
      else
        g.bucketCapMb = d;
    } else if (key == "communicator") {
      if (!v.isString())
        s = typeError(key, "a string", v);
      else
        g.communicator = v.text();
    } else if (!readModelParallelMember(key, v, g, s)) {
      s = Status::error("unknown key " + quoteKey(key) + " (known: " + kKnownKeys + ")");
    }
    if (!s)
      return s;
  }
  return Status::success();
}

// One of `allowed` (a comma-separated list), or an error naming the key.
Status checkChoice(const char *key, const std::optional<std::string> &value,
                   std::initializer_list<const char *> allowed) {
  if (!value)
    return Status::success();
  std::string list;
  for (const char *a : allowed) {
    if (*value == a)
      return Status::success();
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  return Status::error(std::string("key '") + key + "': expected one of " + list + ", got " +
                       quoteKey(*value));
}

// The tensor, context and pipeline degrees against the world size, and the
// pipeline keys against each other.
Status checkModelParallel(const Given &g, int worldSize) {
  if (g.pipelineDegree && g.partitions && *g.pipelineDegree != *g.partitions)
    return contradiction("'pipeline_parallel_degree': " + std::to_string(*g.pipelineDegree),
                         "'partitions': " + std::to_string(*g.partitions),
                         "'partitions' is another name for the pipeline degree");
  const int64_t tp = g.tensor(), pp = g.pipelineStages(), cp = g.context();
  if (tp > worldSize || pp > worldSize || cp > worldSize || worldSize % (tp * pp * cp) != 0)
    return Status::error(std::string("keys 'tensor_parallel_degree' x 'pipeline_parallel_degree'") +
                         (cp > 1 ? " x 'context_parallel_degree': " : ": ") +
                         std::to_string(tp) + " x " + std::to_string(pp) +
                         (cp > 1 ? " x " + std::to_string(cp) : "") +
                         " does not divide the world size " + std::to_string(worldSize));
  if (Status s = checkChoice("cp_comm_type", g.cpCommType, {"all_gather", "p2p"}); !s)
    return s;
  if (Status s = checkChoice("pipeline", g.pipeline, {"simple", "interleaved"}); !s)
    return s;
  if (Status s = checkChoice("pipeline_schedule", g.pipelineSchedule,
                             {"gpipe", "1f1b", "interleaved_1f1b", "zb_h1"});
      !s)
    return s;
  if (Status s = checkChoice("optimize", g.optimize, {"speed", "memory"}); !s)
    return s;
  if (Status s = checkChoice("recompute", g.recompute, {"none", "selective", "full", "auto"}); !s)
    return s;
  if (g.pipeline && g.pipelineSchedule &&
      (*g.pipeline == "simple") != (*g.pipelineSchedule == "gpipe"))
    return contradiction("'pipeline': " + quoteKey(*g.pipeline),
                         "'pipeline_schedule': " + quoteKey(*g.pipelineSchedule),
                         "'simple' is GPipe, 'interleaved' is a 1F1B schedule");
  if (g.sequenceParallel && *g.sequenceParallel && tp == 1)
    return contradiction("'sequence_parallel': true", "'tensor_parallel_degree': 1",
                         "sequence parallelism splits the tensor-parallel group's work");
  if (g.activeMicrobatches && g.microbatches && *g.activeMicrobatches > *g.microbatches)
    return Status::error("key 'active_microbatches': " + std::to_string(*g.activeMicrobatches) +
                         " is more than 'microbatches' (" + std::to_string(*g.microbatches) + ")");
  if (g.virtualStages && *g.virtualStages > 1 && pp == 1)
    return contradiction("'virtual_stages': " + std::to_string(*g.virtualStages),
                         "'pipeline_parallel_degree': 1", "virtual stages split pipeline stages");
  return Status::success();
}

// The ranks left for data parallelism once tensor, context and pipeline
// take theirs.
int dataDegreeOf(const Given &g, int worldSize) {
  return int(worldSize / (g.tensor() * g.context() * g.pipelineStages()));
}

// Each key's own range, and the degrees against the world size.
Status checkRanges(const Given &g, int worldSize) {
  if (Status s = checkModelParallel(g, worldSize); !s)
    return s;
  const int dataDegree = dataDegreeOf(g, worldSize), span = dataDegree * int(g.context());
  if (g.zeroStage && (*g.zeroStage < 0 || *g.zeroStage > 3))
    return Status::error("key 'zero_stage': expected 0, 1, 2 or 3, got " +
                         std::to_string(*g.zeroStage));
  for (auto [key, degree] : {std::pair("sharded_data_parallel_degree", g.shardedDataParallelDegree),
                             std::pair("hybrid_shard_degree", g.hybridShardDegree)}) {
    if (!degree)
      continue;
    std::string d = std::to_string(*degree), w = std::to_string(worldSize);
    if (*degree < 1)
      return Status::error(std::string("key '") + key + "': expected an integer >= 1, got " + d);
    if (*degree <= span && span % *degree == 0)
      continue;
    // ZeRO shards over the ranks holding whole parameters: data x context.
    const std::string over = "world size " + w + " over 'tensor_parallel_degree' " +
                             std::to_string(g.tensor()) + " x 'pipeline_parallel_degree' " +
                             std::to_string(g.pipelineStages()) + ")";
    return Status::error(
        std::string("key '") + key + "': " + d +
        (span == worldSize ? " does not divide the world size " + w
         : g.context() > 1 ? " does not divide the data x context degree " +
                                 std::to_string(span) +
                                 " (the ranks that hold whole parameters: " + over
                           : " does not divide the data-parallel degree " +
                                 std::to_string(dataDegree) + " (" + over));
  }
  if (g.bucketCapMb && !(*g.bucketCapMb > 0 && *g.bucketCapMb <= kMaxBucketCapMb)) {
    std::string m = "key 'bucket_cap_mb': expected a number > 0 and <= " +
                    std::to_string(int(kMaxBucketCapMb)) + ", got ";
    rt::appendJsonDouble(m, *g.bucketCapMb);
    return Status::error(m);
  }
  if (g.communicator) {
    const std::string &c = *g.communicator;
    if (c != "auto" && c != "mpi" && c != "nccl" && c != "single")
      return Status::error("key 'communicator': expected auto, mpi, nccl or single, got " +
                           quoteKey(c));
    if (c == "single" && worldSize > 1)
      return Status::error("key 'communicator': 'single' is for one rank, the world has " +
                           std::to_string(worldSize));
  }
  return Status::success();
}

// The model-parallel, memory and auto-partition keys as given.
void resolveModelParallel(const Given &g, ParallelPlan &c) {
  c.tensorDegree = int(g.tensor());
  c.contextDegree = int(g.context());
  c.cpCommType = g.cpCommType.value_or(c.cpCommType);
  // Balancing pays where the ring skips the hidden blocks of causal
  // attention; the all-gather form computes every block anyway.
  c.cpLoadBalance = g.cpLoadBalance.value_or(c.cpCommType == "p2p");
  c.pipelineDegree = int(g.pipelineStages());
  c.sequenceParallel = g.sequenceParallel.value_or(false);
  c.microbatches = int(g.microbatches.value_or(1));
  c.activeMicrobatches = int(g.activeMicrobatches.value_or(0));
  if (g.pipelineSchedule)
    c.pipelineSchedule = *g.pipelineSchedule;
  else if (g.pipeline)
    c.pipelineSchedule = *g.pipeline == "simple" ? "gpipe" : "1f1b";
  c.virtualStages = int(g.virtualStages.value_or(1));
  c.recompute = g.recompute.value_or(c.recompute);
  c.offloadActivations = g.offloadActivations.value_or(false);
  c.activationLoadingHorizon = int(g.loadingHorizon.value_or(c.activationLoadingHorizon));
  c.autoPartition = g.autoPartition.value_or(false);
  c.optimize = g.optimize.value_or(c.optimize);
  c.memoryWeight = g.memoryWeight.value_or(c.memoryWeight);
}

// Derives the stage and the shard degree; rejects keys that disagree.
Status resolve(const Given &g, int worldSize, ParallelPlan &c) {
  resolveModelParallel(g, c);
  const auto &sdp = g.shardedDataParallelDegree, &hsd = g.hybridShardDegree;
  const std::optional<int64_t> &stage = g.zeroStage;
  const std::optional<bool> &sos = g.shardOptimizerState;
  if (sdp && hsd && *sdp != *hsd)
    return contradiction("'sharded_data_parallel_degree': " + std::to_string(*sdp),
                         "'hybrid_shard_degree': " + std::to_string(*hsd),
                         "two different shard degrees");
  if (sos && stage && *sos != (*stage >= 1))
    return contradiction(std::string("'shard_optimizer_state': ") + (*sos ? "true" : "false"),
                         "'zero_stage': " + std::to_string(*stage),
                         *sos ? "stage 0 shards nothing" : "stages 1-3 shard the optimizer state");
  if (sdp && *sdp > 1 && stage && *stage < 3)
    return contradiction("'sharded_data_parallel_degree': " + std::to_string(*sdp),
                         "'zero_stage': " + std::to_string(*stage),
                         "sharded data parallelism is ZeRO stage 3");
  if (hsd && *hsd > 1 && stage && *stage == 0)
    return contradiction("'hybrid_shard_degree': " + std::to_string(*hsd), "'zero_stage': 0",
                         "stage 0 shards nothing");
  // A degree > 1 shards parameters (stage 3) unless zero_stage says otherwise.
  std::optional<int64_t> degree = sdp ? sdp : hsd;
  const char *degreeKey = sdp ? "sharded_data_parallel_degree" : "hybrid_shard_degree";
  if (stage)
    c.zeroStage = int(*stage);
  else if (degree && *degree > 1)
    c.zeroStage = 3;
  else
    c.zeroStage = sos && *sos ? 1 : 0;
  if (sos && !*sos && c.zeroStage >= 1)
    return contradiction("'shard_optimizer_state': false",
                         std::string("'") + degreeKey + "': " + std::to_string(*degree),
                         "sharding over more than one rank shards the optimizer state");
  c.shardDegree = c.zeroStage == 0 ? 1 : degree ? int(*degree) : c.shardSpan();

  c.ddp = g.ddp.value_or(true);
  // Copies of the model that nothing would average: the data ranks when
  // nothing is sharded (a context group's ranks sum their gradients
  // anyway), else the shard groups.
  if (!c.ddp && (c.zeroStage == 0 ? c.dataDegree() : c.replicas()) > 1) {
    std::string w = std::to_string(worldSize);
    if (c.zeroStage == 0)
      return Status::error("key 'ddp': false with " + w + " ranks and nothing sharded "
                           "(shard_optimizer_state, zero_stage, sharded_data_parallel_degree, "
                           "hybrid_shard_degree): the ranks would train different models");
    return contradiction("'ddp': false", std::string("'") + degreeKey + "': " + std::to_string(*degree),
                         std::to_string(c.replicas()) + " groups of " +
                             std::to_string(c.shardDegree) + " ranks would train different models");
  }
  if (g.bucketCapMb)
    c.bucketCapMb = *g.bucketCapMb;
  if (g.communicator)
    c.communicator = *g.communicator;
  return Status::success();
}

Status parseJsonConfig(const std::string &text, int worldSize, ParallelPlan &c) {
  StatusOr<JsonValue> parsed = rt::parseJson(text);
  if (!parsed.ok())
    return Status(parsed.status()).withPrefix("invalid JSON: ");
  const JsonValue &root = *parsed;
  if (!root.isObject())
    return Status::error(std::string("expected a JSON object at the top level, got ") +
                         JsonValue::kindName(root.kind()));
  Given g;
  if (Status s = readMembers(root, g); !s)
    return s;
  if (Status s = checkRanges(g, worldSize); !s)
    return s;
  return resolve(g, worldSize, c);
}

} // namespace

std::string ParallelPlan::describe() const {
  std::string s = ddp ? "ddp" : "no_ddp";
  s += " zero=" + std::to_string(zeroStage) + " shard_degree=" + std::to_string(shardDegree) +
       " replicas=" + std::to_string(replicas()) + " bucket_cap_mb=";
  rt::appendJsonDouble(s, bucketCapMb);
  s += " communicator=" + communicator;
  // Model-parallel settings only where they differ from the defaults, so a
  // data-parallel plan reads as it always has.
  if (tensorDegree > 1)
    s += " tensor=" + std::to_string(tensorDegree) + (sequenceParallel ? " sequence_parallel" : "");
  if (contextDegree > 1)
    s += " context=" + std::to_string(contextDegree) + " cp_comm_type=" + cpCommType +
         (cpLoadBalance ? " cp_load_balance" : "");
  if (pipelineDegree > 1)
    s += " pipeline=" + std::to_string(pipelineDegree) + " schedule=" + pipelineSchedule +
         " virtual_stages=" + std::to_string(virtualStages);
  if (microbatches > 1)
    s += " microbatches=" + std::to_string(microbatches);
  if (activeMicrobatches > 0)
    s += " active_microbatches=" + std::to_string(activeMicrobatches);
  if (recompute != "none")
    s += " recompute=" + recompute;
  if (offloadActivations)
    s += " offload_activations horizon=" + std::to_string(activationLoadingHorizon);
  if (autoPartition) {
    s += " auto_partition optimize=" + optimize + " memory_weight=";
    rt::appendJsonDouble(s, memoryWeight);
  }
  return s;
}

StatusOr<ParallelPlan> parseParallelPlan(const std::string &spec, int worldSize) {
  if (worldSize < 1)
    return Status::error("--config: the world size must be at least 1, got " +
                         std::to_string(worldSize));
  ParallelPlan c;
  c.worldSize = worldSize;
  size_t first = spec.find_first_not_of(" \t\r\n");
  if (first == std::string::npos)
    return Status::error("--config: empty value (expected inline JSON, 'auto' or a JSON file)");
  if (spec == "auto") {
    // Plain data parallelism for now; the cost model's choice comes later.
    return c;
  }
  if (spec[first] == '{') {
    if (Status s = parseJsonConfig(spec, worldSize, c); !s)
      return s.withPrefix("--config: ");
  } else {
    StatusOr<std::string> text = rt::readSmallFile(spec, kMaxConfigBytes);
    if (!text.ok())
      return Status(text.status()).withPrefix("--config: ");
    if (Status s = parseJsonConfig(*text, worldSize, c); !s)
      return s.withPrefix("--config: " + spec + ": ");
  }
  return c;
}

} // namespace trc::rt
