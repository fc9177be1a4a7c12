//===- Search.h - the best plans for a model on a cluster --------------------===//
//
// search() enumerates data x tensor x pipeline degrees (tensor dividing
// the devices per node and the heads; pipeline dividing layers; data dividing the
// global batch), microbatch counts (divisors of the per-replica batch), ZeRO
// stages 0-3 (shard group = the data-parallel group), sequence parallelism,
// recomputation none/selective/full and the schedule (1F1B, ZB-H1,
// interleaved with virtual stages dividing the layers per stage and m a
// multiple of p; GPipe only when the constraints ask for it).
// Candidates the training engines cannot run (runtime/spec/EngineSupport.h:
// ZeRO with pipeline stages today) and those that break a constraint given
// in `Constraints` are skipped; those that do not fit in device memory are
// rejected. The rest are ranked
// by the objective: "speed" (step time) or "memory" (SMP's memory_weight w:
// (1 - w) x time / best time + w x memory / least memory).
//
// With the model's compiled steps (`compiled`), the formulas rank the space
// and the 32 leaders plus the best plan of each data x tensor x pipeline x
// recomputation layout are priced again from the compiled counts and ranked
// ahead of the rest (compiling every layout of the space would take
// seconds).
//
// The result holds the ranked fitting candidates (best first) and, when none
// fits, the least memory any candidate needed (for the error message).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PLAN_SEARCH_H
#define TRC_PLAN_SEARCH_H

#include "trc/Plan/CostModel.h"

#include <optional>
#include <string>
#include <vector>

namespace trc::plan {

// Keys fixed by the user (a partial --plan); unset ones are searched.
struct Constraints {
  std::optional<int> tensor, context, pipeline, microbatches, zeroStage, shardDegree,
      virtualStages;
  std::optional<bool> sequenceParallel;
  std::optional<bool> contextRing; // cp_comm_type: p2p (true) or all_gather
  std::optional<Recompute> recompute;
  std::optional<Schedule> schedule;
  std::string optimize = "speed";
  double memoryWeight = 0.8;
};

struct Ranked {
  Candidate plan;
  Prediction predicted;
  double score = 0;
};

struct SearchResult {
  std::vector<Ranked> ranked;   // fitting candidates, best first
  long long evaluated = 0;      // candidates the cost model priced
  long long repriced = 0;       // of them, priced again from the compiled step
  // When nothing fits: the candidate needing the least memory (if any
  // candidate satisfied the constraints at all).
  std::optional<Ranked> leastMemory;
  double seconds = 0;           // wall time of the search
  // The first plan the engines refused (runtime/spec/EngineSupport.h), for
  // the error when nothing else is left.
  std::string refused;
};

// `compiled` (optional): the model's compiled steps (CostModel.h).
SearchResult search(const GptModel &model, const Cluster &cluster, long long globalBatch,
                    const Constraints &constraints, CompiledWorkSource *compiled = nullptr);

// A model known only by its compiled steps (evaluateCompiled): every
// candidate is priced from them (one compile per recomputation and
// microbatch size, cached by the source). Tensor parallelism splits
// attention heads and MLPs the formulas describe, so the space is data x
// pipeline (at most one stage per piece between layer boundaries), ZeRO,
// microbatches, schedule and recomputation. Candidates whose step does not
// compile are skipped; `repriced` counts those priced.
SearchResult searchCompiled(CompiledWorkSource &compiled, const Cluster &cluster,
                            long long globalBatch, const Constraints &constraints);

// When `r` left no candidate at all: "no data x tensor x pipeline split
// divides the batch, heads and layers", or for a model without a shape
// (`notTransformer` says why) the data x pipeline splits and rows its step
// compiles for; with the engines' first refusal.
std::string noSplitReason(const SearchResult &r, const std::string &notTransformer = "");

} // namespace trc::plan

#endif // TRC_PLAN_SEARCH_H
