//===- PipelineSchedule.cpp - the schedule generators -----------------------===//
//
// Names, shapes, one generator per schedule kind, the literature's bubble
// formulas and the printed table. The checks and the timing replay are in
// PipelineScheduleCheck.cpp. See PipelineSchedule.h for the model.
//
//===----------------------------------------------------------------------===//
#include "runtime/spec/PipelineSchedule.h"

#include <algorithm>
#include <cstdio>

namespace trc::rt {

namespace {

struct KindName {
  ScheduleKind kind;
  const char *name;
};
constexpr KindName kKindNames[] = {{ScheduleKind::GPipe, "gpipe"},
                                   {ScheduleKind::OneFOneB, "1f1b"},
                                   {ScheduleKind::Interleaved1F1B, "interleaved_1f1b"},
                                   {ScheduleKind::ZeroBubbleH1, "zb_h1"}};

std::string str(int v) { return std::to_string(v); }

// Appends one action to rank `rank`'s order: the slot is its index there, the
// stage follows from the chunk (Megatron's layout: chunk c of rank r is
// stage c * p + r).
void append(std::vector<PipelineStep> &order, const ScheduleShape &shape, int rank,
            PipelineAction action, int microbatch, int chunk = 0) {
  order.push_back({rank, static_cast<int>(order.size()), action, microbatch, chunk,
                   chunk * shape.ranks + rank});
}

// The cap, or m when there is none (a cap above m changes nothing).
int capOrAll(const ScheduleShape &shape) {
  const int cap = shape.activeMicrobatches;
  return cap > 0 ? std::min(cap, shape.microbatches) : shape.microbatches;
}

// GPipe: every forward, then every backward. The backwards run FIFO
// (microbatch 0 first) on every rank: B(s, mb) waits for B(s+1, mb), which
// the next rank runs at the same position of its own backward phase, after
// forwards that need nothing from this rank past what it already sent; so
// no receive can wait on an action that is itself waiting (reverse order on
// every rank would be deadlock-free too, but FIFO is what a cap needs: the
// oldest microbatch is the one whose activations a backward frees). With a
// cap c < m the rank runs c forwards, then alternates B(i), F(c+i): never
// more than c ahead.
PipelineSchedule makeGPipe(const ScheduleShape &shape) {
  PipelineSchedule s{ScheduleKind::GPipe, shape, false, {}};
  const int m = shape.microbatches, ahead = capOrAll(shape);
  for (int r = 0; r < shape.ranks; ++r) {
    std::vector<PipelineStep> order;
    for (int mb = 0; mb < ahead; ++mb)
      append(order, shape, r, PipelineAction::Forward, mb);
    for (int mb = 0; mb < m; ++mb) {
      append(order, shape, r, PipelineAction::Backward, mb);
      if (ahead + mb < m)
        append(order, shape, r, PipelineAction::Forward, ahead + mb);
    }
    s.perRank.push_back(std::move(order));
  }
  return s;
}

// Megatron's non-interleaved 1F1B (PipeDream-flush): rank r warms up with
// min(p-r-1, m) forwards, then alternates F(w+i), B(i), then drains the
// backwards; at most p-r microbatches in flight. A cap c shortens the
// warm-up to c-1: still deadlock-free, since a rank's warm-up never exceeds
// its predecessor's, so the F the next rank needs before the B this rank
// waits for has always been sent.
PipelineSchedule makeOneFOneB(const ScheduleShape &shape) {
  PipelineSchedule s{ScheduleKind::OneFOneB, shape, false, {}};
  const int p = shape.ranks, m = shape.microbatches;
  for (int r = 0; r < p; ++r) {
    const int warmup = std::min({p - r - 1, m, capOrAll(shape) - 1});
    std::vector<PipelineStep> order;
    for (int mb = 0; mb < warmup; ++mb)
      append(order, shape, r, PipelineAction::Forward, mb);
    for (int mb = 0; mb < m; ++mb) {
      if (warmup + mb < m)
        append(order, shape, r, PipelineAction::Forward, warmup + mb);
      append(order, shape, r, PipelineAction::Backward, mb);
    }
    s.perRank.push_back(std::move(order));
  }
  return s;
}

struct ChunkedMicrobatch {
  int microbatch, chunk;
};

// Megatron's virtual-microbatch order: microbatches go in groups of p; a
// group runs chunk 0 for its p microbatches, then chunk 1, ...; backwards
// visit the chunks last to first.
ChunkedMicrobatch virtualMicrobatch(int k, const ScheduleShape &shape, bool forward) {
  const int p = shape.ranks, v = shape.chunks;
  const int group = k / (p * v), inGroup = k % (p * v), chunk = inGroup / p;
  return {group * p + inGroup % p, forward ? chunk : v - 1 - chunk};
}

// Megatron's interleaved 1F1B over m * v virtual microbatches per rank:
// (p-r-1)*2 + (v-1)*p warm-up forwards (all of them when that reaches m*v),
// then F, B pairs, then the remaining backwards.
PipelineSchedule makeInterleaved(const ScheduleShape &shape) {
  PipelineSchedule s{ScheduleKind::Interleaved1F1B, shape, false, {}};
  const int p = shape.ranks, v = shape.chunks, total = shape.microbatches * v;
  for (int r = 0; r < p; ++r) {
    const int warmup = std::min((p - r - 1) * 2 + (v - 1) * p, total);
    std::vector<PipelineStep> order;
    auto run = [&](PipelineAction action, int k) {
      const ChunkedMicrobatch at = virtualMicrobatch(k, shape, action == PipelineAction::Forward);
      append(order, shape, r, action, at.microbatch, at.chunk);
    };
    for (int k = 0; k < warmup; ++k)
      run(PipelineAction::Forward, k);
    for (int k = 0; k < total; ++k) {
      if (warmup + k < total)
        run(PipelineAction::Forward, warmup + k);
      run(PipelineAction::Backward, k);
    }
    s.perRank.push_back(std::move(order));
  }
  return s;
}

// ZB-H1 (zero-bubble paper, figure 3 top): 1F1B's F and B order with B
// computing input gradients only; rank r holds back its first r W's (after
// B(mb) it runs the oldest pending W only when mb >= r) and drains them at
// the end, where they fill the cool-down bubbles. Rank r then holds at most
// p microbatches in flight, rank 0's 1F1B peak.
PipelineSchedule makeZeroBubbleH1(const ScheduleShape &shape) {
  PipelineSchedule s{ScheduleKind::ZeroBubbleH1, shape, true, {}};
  const int p = shape.ranks, m = shape.microbatches;
  for (int r = 0; r < p; ++r) {
    const int warmup = std::min(p - r - 1, m);
    std::vector<PipelineStep> order;
    int nextWeights = 0;
    for (int mb = 0; mb < warmup; ++mb)
      append(order, shape, r, PipelineAction::Forward, mb);
    for (int mb = 0; mb < m; ++mb) {
      if (warmup + mb < m)
        append(order, shape, r, PipelineAction::Forward, warmup + mb);
      append(order, shape, r, PipelineAction::Backward, mb);
      if (mb >= r)
        append(order, shape, r, PipelineAction::BackwardWeights, nextWeights++);
    }
    while (nextWeights < m)
      append(order, shape, r, PipelineAction::BackwardWeights, nextWeights++);
    s.perRank.push_back(std::move(order));
  }
  return s;
}

Status checkShape(ScheduleKind kind, const ScheduleShape &shape) {
  auto atLeastOne = [](const char *key, int value) {
    return Status::error(std::string("key '") + key + "': expected an integer >= 1, got " +
                         str(value));
  };
  if (shape.ranks < 1)
    return atLeastOne("pipeline_parallel_degree", shape.ranks);
  if (shape.microbatches < 1)
    return atLeastOne("microbatches", shape.microbatches);
  if (shape.chunks < 1)
    return atLeastOne("virtual_stages", shape.chunks);
  if (shape.activeMicrobatches < 0)
    return Status::error("key 'active_microbatches': expected an integer >= 0 (0: no cap), got " +
                         str(shape.activeMicrobatches));
  const bool interleaved = kind == ScheduleKind::Interleaved1F1B;
  if (interleaved && shape.chunks == 1)
    return Status::error("key 'virtual_stages': interleaved_1f1b needs at least 2 chunks per "
                         "rank, got 1 (use 1f1b)");
  if (!interleaved && shape.chunks > 1)
    return Status::error("key 'virtual_stages': " + str(shape.chunks) + " chunks per rank need "
                         "pipeline_schedule interleaved_1f1b, not " + scheduleName(kind));
  if (interleaved && shape.microbatches % shape.ranks != 0)
    return Status::error("key 'microbatches': interleaved_1f1b runs microbatches in groups of "
                         "one per pipeline rank (Megatron's rule), so " +
                         str(shape.microbatches) + " microbatches must be a multiple of the " +
                         str(shape.ranks) + " ranks");
  return Status::success();
}

// interleaved_1f1b and zb_h1 keep a fixed number in flight; a lower cap is
// refused rather than silently ignored.
Status checkCap(const PipelineSchedule &s) {
  const int cap = s.shape.activeMicrobatches;
  if (cap == 0)
    return Status::success();
  const std::vector<int> peaks = peakInFlight(s);
  for (int r = 0; r < static_cast<int>(peaks.size()); ++r)
    if (peaks[r] > cap)
      return Status::error(
          "key 'active_microbatches': " + std::string(scheduleName(s.kind)) + " keeps " +
          str(peaks[r]) + (s.shape.chunks > 1 ? " (chunk, microbatch) pairs" : " microbatches") +
          " in flight on rank " + str(r) + ", above the cap of " + str(cap) +
          " (gpipe and 1f1b adapt to a lower cap)");
  return Status::success();
}

} // namespace

const char *actionLetter(PipelineAction action) {
  switch (action) {
  case PipelineAction::Forward:
    return "F";
  case PipelineAction::Backward:
    return "B";
  case PipelineAction::BackwardWeights:
    return "W";
  }
  return "?";
}

StatusOr<ScheduleKind> parseScheduleKind(std::string_view name) {
  std::string list;
  for (const KindName &k : kKindNames) {
    if (name == k.name)
      return k.kind;
    list += (list.empty() ? "" : ", ") + std::string(k.name);
  }
  return Status::error("key 'pipeline_schedule': expected one of " + list + ", got '" +
                       std::string(name) + "'");
}

const char *scheduleName(ScheduleKind kind) {
  for (const KindName &k : kKindNames)
    if (k.kind == kind)
      return k.name;
  return "?";
}

StatusOr<PipelineSchedule> makeSchedule(ScheduleKind kind, const ScheduleShape &shape) {
  if (Status s = checkShape(kind, shape); !s)
    return s;
  PipelineSchedule schedule;
  switch (kind) {
  case ScheduleKind::GPipe:
    schedule = makeGPipe(shape);
    break;
  case ScheduleKind::OneFOneB:
    schedule = makeOneFOneB(shape);
    break;
  case ScheduleKind::Interleaved1F1B:
    schedule = makeInterleaved(shape);
    break;
  case ScheduleKind::ZeroBubbleH1:
    schedule = makeZeroBubbleH1(shape);
    break;
  }
  if (Status s = checkCap(schedule); !s)
    return s;
  return schedule;
}

double bubbleFormula(ScheduleKind kind, const ScheduleShape &shape) {
  const double p = shape.ranks, m = shape.microbatches, v = shape.chunks;
  switch (kind) {
  case ScheduleKind::GPipe:
  case ScheduleKind::OneFOneB:
    return (p - 1) / m;
  case ScheduleKind::Interleaved1F1B:
    return (p - 1) / (v * m);
  case ScheduleKind::ZeroBubbleH1:
    return (p - 1) / (3 * m);
  }
  return 0;
}

std::string formatSchedule(const PipelineSchedule &schedule) {
  const ScheduleShape &shape = schedule.shape;
  const bool chunked = shape.chunks > 1;
  std::string out = std::string("pipeline schedule ") + scheduleName(schedule.kind) + ": " +
                    str(shape.ranks) + " ranks, " + str(shape.microbatches) + " microbatches, " +
                    str(shape.chunks) + (chunked ? " chunks" : " chunk") + " per rank, " +
                    str(shape.stages()) + " stages";
  if (shape.activeMicrobatches > 0)
    out += ", at most " + str(shape.activeMicrobatches) + " in flight";
  out += "\nrank slot action microbatch chunk stage\n";
  char row[96];
  for (const std::vector<PipelineStep> &order : schedule.perRank)
    for (const PipelineStep &step : order) {
      std::snprintf(row, sizeof row, "%4d %4d %6s %10d %5d %5d\n", step.rank, step.slot,
                    actionLetter(step.action), step.microbatch, step.chunk, step.stage);
      out += row;
    }
  for (size_t r = 0; r < schedule.perRank.size(); ++r) {
    out += "rank " + str(static_cast<int>(r)) + ":";
    for (const PipelineStep &step : schedule.perRank[r]) {
      out += std::string(" ") + actionLetter(step.action) + str(step.microbatch);
      if (chunked)
        out += "." + str(step.chunk);
    }
    out += "\n";
  }
  return out;
}

} // namespace trc::rt
