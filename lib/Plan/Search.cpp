//===- Search.cpp - exhaustive search over the pruned plan space -------------===//
//
// The space is enumerated layout first (data x tensor x pipeline), pruned
// by divisibility (tensor divides the query and key/value heads and the devices
// of a node, pipeline divides
// layers, data divides the global batch), then microbatches, schedule,
// ZeRO stage, sequence parallelism and recomputation. Every point costs a
// closed-form evaluate(), so even 3,072 devices take milliseconds.
//
//===----------------------------------------------------------------------===//
#include "trc/Plan/Search.h"

#include "runtime/spec/EngineSupport.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <tuple>

namespace trc::plan {
namespace {

// The training engines run it (runtime/spec/EngineSupport.h: the one list,
// which the trainer's refusals read too).
bool enginesRun(const Candidate &c) {
  rt::ParallelPlan plan;
  plan.pipelineDegree = c.pipeline;
  plan.zeroStage = c.zeroStage;
  plan.tensorDegree = c.tensor;
  plan.sequenceParallel = c.sequenceParallel;
  return rt::engineRuns(plan).ok();
}

std::vector<long long> divisors(long long n) {
  std::vector<long long> out;
  for (long long i = 1; i * i <= n; ++i)
    if (n % i == 0) {
      out.push_back(i);
      if (i != n / i)
        out.push_back(n / i);
    }
  std::sort(out.begin(), out.end());
  return out;
}

template <typename T> bool allows(const std::optional<T> &fixed, T value) {
  return !fixed || *fixed == value;
}

// Candidates priced again from the compiled step (besides each layout's best).
constexpr size_t kRepriced = 32;

// Best first by the objective.
void rank(std::vector<Ranked> &fitting, const Constraints &k) {
  if (fitting.empty())
    return;
  double bestTime = fitting[0].predicted.stepTime, leastMem = fitting[0].predicted.memoryBytes;
  for (const Ranked &r : fitting) {
    bestTime = std::min(bestTime, r.predicted.stepTime);
    leastMem = std::min(leastMem, r.predicted.memoryBytes);
  }
  double w = k.optimize == "memory" ? k.memoryWeight : 0;
  for (Ranked &r : fitting)
    r.score = (1 - w) * r.predicted.stepTime / bestTime + w * r.predicted.memoryBytes / leastMem;
  std::stable_sort(fitting.begin(), fitting.end(),
                   [](const Ranked &x, const Ranked &y) { return x.score < y.score; });
}

} // namespace

SearchResult search(const GptModel &model, const Cluster &cluster, long long globalBatch,
                    const Constraints &k, CompiledWorkSource *compiled) {
  auto start = std::chrono::steady_clock::now();
  SearchResult out;
  std::vector<Ranked> fitting;
  const long long world = cluster.devices();
  for (long long tp : divisors(world)) {
    if (cluster.device.devicesPerNode % tp || model.heads % tp || model.kvHeads % tp ||
        model.ffn % tp || !allows(k.tensor, int(tp)))
      continue;
    for (long long pp : divisors(world / tp)) {
      if (model.layers % pp || !allows(k.pipeline, int(pp)))
        continue;
      long long dp = world / (tp * pp);
      if (globalBatch % dp)
        continue;
      for (long long mb : divisors(globalBatch / dp)) {
        if (!allows(k.microbatches, int(mb)))
          continue;
        std::vector<std::pair<Schedule, int>> schedules;
        if (pp == 1) {
          schedules.push_back({Schedule::OneFOneB, 1});
        } else {
          schedules.push_back({Schedule::OneFOneB, 1});
          schedules.push_back({Schedule::ZeroBubbleH1, 1});
          if (k.schedule == Schedule::GPipe) // never faster than 1F1B: only when asked
            schedules.push_back({Schedule::GPipe, 1});
          if (mb % pp == 0)
            for (long long v : divisors(model.layers / pp))
              if (v > 1)
                schedules.push_back({Schedule::Interleaved, int(v)});
        }
        for (auto [sched, v] : schedules) {
          if (!allows(k.schedule, sched) || !allows(k.virtualStages, v))
            continue;
          for (int zero = 0; zero <= 3; ++zero) {
            if ((dp == 1 && zero > 0) || !allows(k.zeroStage, zero))
              continue;
            int shard = zero == 0 ? 1 : k.shardDegree ? *k.shardDegree : int(dp);
            if (shard < 1 || dp % shard)
              continue;
            for (bool sp : {false, true}) {
              if ((sp && tp == 1) || !allows(k.sequenceParallel, sp))
                continue;
              for (Recompute rc : {Recompute::None, Recompute::Selective, Recompute::Full}) {
                if (!allows(k.recompute, rc))
                  continue;
                Candidate c;
                c.data = int(dp);
                c.tensor = int(tp);
                c.pipeline = int(pp);
                c.microbatches = int(mb);
                c.microbatchSize = int(globalBatch / dp / mb);
                c.zeroStage = zero;
                c.shardDegree = zero == 0 ? 1 : shard;
                c.sequenceParallel = sp;
                c.recompute = rc;
                c.schedule = sched;
                c.virtualStages = v;
                if (!enginesRun(c))
                  continue;
                Prediction pr = evaluate(model, cluster, c);
                ++out.evaluated;
                if (pr.fits)
                  fitting.push_back({c, pr, 0});
                else if (!out.leastMemory || pr.memoryBytes < out.leastMemory->predicted.memoryBytes)
                  out.leastMemory = Ranked{c, pr, 0};
              }
            }
          }
        }
      }
    }
  }
  if (!fitting.empty())
    out.leastMemory.reset();
  rank(fitting, k);
  if (compiled && !fitting.empty()) {
    // The formulas ranked the space; the leaders, and the best plan of each
    // layout (trc-plan's alternatives), are priced again from the compiled
    // step and ranked ahead of the rest.
    std::vector<Ranked> repriced, rest;
    std::set<std::tuple<int, int, int, int>> layouts;
    for (size_t i = 0; i < fitting.size(); ++i) {
      const Candidate &c = fitting[i].plan;
      bool newLayout = layouts.insert({c.data, c.tensor, c.pipeline, int(c.recompute)}).second;
      if (i < kRepriced || newLayout) {
        fitting[i].predicted = evaluate(model, cluster, c, compiled);
        repriced.push_back(fitting[i]);
      } else {
        rest.push_back(fitting[i]);
      }
    }
    rank(repriced, k);
    out.repriced = (long long)repriced.size();
    fitting = std::move(repriced);
    fitting.insert(fitting.end(), rest.begin(), rest.end());
  }
  out.ranked = std::move(fitting);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

} // namespace trc::plan
