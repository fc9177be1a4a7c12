//===- Search.cpp - exhaustive search over the pruned plan space -------------===//
//
// The space is enumerated layout first (data x context x tensor x
// pipeline), pruned by divisibility (tensor divides the query and key/value
// heads and the devices of a node, context the sequence, pipeline divides
// layers, data divides the global batch), then microbatches, schedule,
// ZeRO stage, sequence parallelism, recomputation and, with a context
// split, its form (gathered or the ring). Every point costs a
// closed-form evaluate(), so even 3,072 devices take milliseconds.
//
//===----------------------------------------------------------------------===//
#include "trc/Plan/Search.h"

#include "runtime/spec/EngineSupport.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>
#include <tuple>

namespace trc::plan {
namespace {

// The training engines run it (runtime/spec/EngineSupport.h: the one list,
// which the trainer's refusals read too).
rt::Status enginesRun(const Candidate &c) {
  rt::ParallelPlan plan;
  plan.pipelineDegree = c.pipeline;
  plan.zeroStage = c.zeroStage;
  plan.tensorDegree = c.tensor;
  plan.contextDegree = c.context;
  plan.cpCommType = c.contextRing ? "p2p" : "all_gather";
  plan.sequenceParallel = c.sequenceParallel;
  return rt::engineRuns(plan);
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

// What a model allows of the space: tensor degrees dividing its heads,
// key/value heads and MLP width (none listed: tensor 1 only); pipelines
// dividing its layers (virtual stages dividing each stage's layers), or,
// known by its compiled pieces only, at most one stage per piece.
struct ModelLimits {
  std::vector<int64_t> tensorDivides;
  int64_t layers = 0, pieces = 0;
  int64_t sequence = 0; // context degrees divide it (0: context 1 only)
};

bool contextAllowed(const ModelLimits &m, long long cp) {
  return cp == 1 || (m.sequence && m.sequence % cp == 0);
}

bool tensorAllowed(const ModelLimits &m, long long tp) {
  if (m.tensorDivides.empty())
    return tp == 1;
  for (int64_t n : m.tensorDivides)
    if (n % tp)
      return false;
  return true;
}

bool pipelineAllowed(const ModelLimits &m, long long pp) {
  return m.layers ? m.layers % pp == 0 : pp <= m.pieces;
}

// Virtual stages per pipeline rank for interleaved schedules (above 1).
std::vector<long long> virtualStages(const ModelLimits &m, long long pp) {
  std::vector<long long> out;
  if (m.layers) {
    for (long long v : divisors(m.layers / pp))
      if (v > 1)
        out.push_back(v);
  } else {
    for (long long v = 2; pp * v <= m.pieces; ++v)
      out.push_back(v);
  }
  return out;
}

// Calls `visit` with every candidate of the space the model, the
// constraints and the engines allow; `refusal` gets the engines' first
// refusal.
template <typename Visit>
void forEachCandidate(const ModelLimits &model, const Cluster &cluster, long long globalBatch,
                      const Constraints &k, std::string &refusal, Visit visit) {
  const long long world = cluster.devices();
  for (long long tp : divisors(world)) {
    if (cluster.device.devicesPerNode % tp || !tensorAllowed(model, tp) ||
        !allows(k.tensor, int(tp)))
      continue;
    // The pipeline x context splits of what tensor parallelism leaves.
    std::vector<std::pair<long long, long long>> splits;
    for (long long pp : divisors(world / tp))
      for (long long cp : divisors(world / (tp * pp)))
        splits.push_back({pp, cp});
    for (auto [pp, cp] : splits) {
      if (!pipelineAllowed(model, pp) || !allows(k.pipeline, int(pp)) ||
          !contextAllowed(model, cp) || !allows(k.context, int(cp)))
        continue;
      long long dp = world / (tp * cp * pp);
      if (globalBatch % dp)
        continue;
      for (long long mb : divisors(globalBatch / dp)) {
        if (!allows(k.microbatches, int(mb)))
          continue;
        std::vector<std::pair<Schedule, int>> schedules{{Schedule::OneFOneB, 1}};
        if (pp > 1) {
          schedules.push_back({Schedule::ZeroBubbleH1, 1});
          if (k.schedule == Schedule::GPipe) // never faster than 1F1B: only when asked
            schedules.push_back({Schedule::GPipe, 1});
          if (mb % pp == 0)
            for (long long v : virtualStages(model, pp))
              schedules.push_back({Schedule::Interleaved, int(v)});
        }
        for (auto [sched, v] : schedules) {
          if (!allows(k.schedule, sched) || !allows(k.virtualStages, v))
            continue;
          for (int zero = 0; zero <= 3; ++zero) {
            // ZeRO shards over data x context (the ranks holding whole
            // parameters alike).
            const long long span = dp * cp;
            if ((span == 1 && zero > 0) || !allows(k.zeroStage, zero))
              continue;
            int shard = zero == 0 ? 1 : k.shardDegree ? *k.shardDegree : int(span);
            if (shard < 1 || span % shard)
              continue;
            for (bool sp : {false, true}) {
              if ((sp && tp == 1) || !allows(k.sequenceParallel, sp))
                continue;
              for (Recompute rc : {Recompute::None, Recompute::Selective, Recompute::Full})
                for (bool ring : {false, true}) {
                  // The comm type is a context split's: one form at cp = 1.
                  // The ring splits each sequence head-tail (trc-run's
                  // default with p2p): in 2 x cp chunks.
                  if (!allows(k.recompute, rc) || (ring && cp == 1) ||
                      (cp > 1 && !allows(k.contextRing, ring)) ||
                      (ring && !contextAllowed(model, 2 * cp)))
                    continue;
                  Candidate c;
                  c.data = int(dp);
                  c.tensor = int(tp);
                  c.context = int(cp);
                  c.contextRing = ring;
                  c.pipeline = int(pp);
                  c.microbatches = int(mb);
                  c.microbatchSize = int(globalBatch / dp / mb);
                  c.zeroStage = zero;
                  c.shardDegree = zero == 0 ? 1 : shard;
                  c.sequenceParallel = sp;
                  c.recompute = rc;
                  c.schedule = sched;
                  c.virtualStages = v;
                  if (rt::Status s = enginesRun(c); s)
                    visit(c);
                  else if (refusal.empty())
                    refusal = s.message();
                }
            }
          }
        }
      }
    }
  }
}

// Files a priced candidate as fitting or as the least hungry misfit.
void file(SearchResult &out, std::vector<Ranked> &fitting, const Candidate &c,
          const Prediction &pr) {
  if (pr.fits)
    fitting.push_back({c, pr, 0});
  else if (!out.leastMemory || pr.memoryBytes < out.leastMemory->predicted.memoryBytes)
    out.leastMemory = Ranked{c, pr, 0};
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

SearchResult search(const GptModel &model, const Cluster &cluster, long long globalBatch,
                    const Constraints &k, CompiledWorkSource *compiled) {
  auto start = std::chrono::steady_clock::now();
  SearchResult out;
  std::vector<Ranked> fitting;
  ModelLimits limits;
  limits.tensorDivides = {model.heads, model.kvHeads, model.ffn};
  limits.layers = model.layers;
  limits.sequence = model.seq;
  forEachCandidate(limits, cluster, globalBatch, k, out.refused, [&](const Candidate &c) {
    ++out.evaluated;
    file(out, fitting, c, evaluate(model, cluster, c));
  });
  rank(fitting, k);
  if (compiled && !fitting.empty()) {
    // The formulas ranked the space; the leaders, and the best plan of each
    // layout (trc-plan's alternatives), are priced again from the compiled
    // step and ranked ahead of the rest (those that no longer fit leave).
    std::vector<Ranked> repriced, rest;
    std::set<std::tuple<int, int, int, int>> layouts;
    for (size_t i = 0; i < fitting.size(); ++i) {
      const Candidate &c = fitting[i].plan;
      bool newLayout = layouts.insert({c.data, c.tensor, c.pipeline, int(c.recompute)}).second;
      if (i < kRepriced || newLayout) {
        ++out.repriced;
        file(out, repriced, c, evaluate(model, cluster, c, compiled));
      } else {
        rest.push_back(fitting[i]);
      }
    }
    rank(repriced, k);
    fitting = std::move(repriced);
    fitting.insert(fitting.end(), rest.begin(), rest.end());
  }
  if (!fitting.empty())
    out.leastMemory.reset();
  out.ranked = std::move(fitting);
  out.seconds = secondsSince(start);
  return out;
}

std::string noSplitReason(const SearchResult &r, const std::string &notTransformer) {
  std::string why = notTransformer.empty()
                        ? "no data x context x tensor x pipeline split divides the batch, "
                          "sequence, heads and layers"
                        : "no data x pipeline split divides the batch into rows its step compiles "
                          "for (tensor parallelism needs a transformer; " + notTransformer + ")";
  if (!r.refused.empty())
    why += "; the engines refuse the rest: " + r.refused;
  return why;
}

SearchResult searchCompiled(CompiledWorkSource &compiled, const Cluster &cluster,
                            long long globalBatch, const Constraints &k) {
  auto start = std::chrono::steady_clock::now();
  SearchResult out;
  std::vector<Ranked> fitting;
  if (const CompiledWork *work = compiled.probe()) {
    ModelLimits limits;
    limits.pieces = int64_t(work->stages.size());
    forEachCandidate(limits, cluster, globalBatch, k, out.refused, [&](const Candidate &c) {
      if (std::optional<Prediction> pr = evaluateCompiled(compiled, cluster, c)) {
        ++out.evaluated;
        ++out.repriced;
        file(out, fitting, c, *pr);
      }
    });
  }
  if (!fitting.empty())
    out.leastMemory.reset();
  rank(fitting, k);
  out.ranked = std::move(fitting);
  out.seconds = secondsSince(start);
  return out;
}

} // namespace trc::plan
