//===- PipelineScheduleCheck.cpp - check and time a schedule table ----------===//
//
// checkSchedule, peakInFlight and simulateSchedule share one replay: ranks
// advance through their orders whenever the next action's dependencies have
// run (buffered sends, blocking receives). Each action's start time is the
// later of its rank's previous end and its dependencies' ends (plus p2p when
// remote), which any dependency-respecting replay order computes the same,
// so the replay is also the timing simulation. A replay that stops with
// actions left is a deadlock. Before it, checkSchedule compares, for each
// pair of ranks, the order messages are sent in with the order they are
// received in (the replay matches them by name; the communicator by order).
// See PipelineSchedule.h.
//
// Preconditions: none; every malformed table is an error, not a crash.
//
//===----------------------------------------------------------------------===//
#include "runtime/spec/PipelineSchedule.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

namespace trc::rt {

namespace {

std::string str(int v) { return std::to_string(v); }

constexpr int kActionKinds = 3;
// More actions than this is a malformed shape, not a schedule to replay.
constexpr int64_t kMaxActions = int64_t(1) << 26;

// A dense id per (action, stage, microbatch).
struct ActionIds {
  int stages = 0, microbatches = 0;
  int of(PipelineAction action, int stage, int microbatch) const {
    return (static_cast<int>(action) * stages + stage) * microbatches + microbatch;
  }
  int count() const { return kActionKinds * stages * microbatches; }
};

struct Need {
  PipelineAction action;
  int stage;
};

// What a step waits for: the previous stage's F for an F; its own F and the
// next stage's B for a B (the last stage's B only its F); its B for a W.
std::vector<Need> needsOf(const PipelineStep &step, int stages) {
  switch (step.action) {
  case PipelineAction::Forward:
    if (step.stage > 0)
      return {{PipelineAction::Forward, step.stage - 1}};
    return {};
  case PipelineAction::Backward:
    if (step.stage + 1 < stages)
      return {{PipelineAction::Forward, step.stage}, {PipelineAction::Backward, step.stage + 1}};
    return {{PipelineAction::Forward, step.stage}};
  case PipelineAction::BackwardWeights:
    return {{PipelineAction::Backward, step.stage}};
  }
  return {};
}

std::string describeStep(const PipelineStep &step) {
  return std::string(actionLetter(step.action)) + " mb " + str(step.microbatch) + " chunk " +
         str(step.chunk);
}

std::string describeAction(PipelineAction action, int stage, int microbatch) {
  return std::string(actionLetter(action)) + " of stage " + str(stage) + " mb " + str(microbatch);
}

struct Place {
  int rank = -1, slot = -1;
};

// Shape and fields of every step, and exactly one of each action on the
// rank owning its stage; returns where each action id sits.
StatusOr<std::vector<Place>> locateActions(const PipelineSchedule &s) {
  const ScheduleShape &shape = s.shape;
  if (shape.ranks < 1 || shape.microbatches < 1 || shape.chunks < 1)
    return Status::error("pipeline schedule: ranks, microbatches and chunks must be >= 1, got " +
                         str(shape.ranks) + ", " + str(shape.microbatches) + ", " +
                         str(shape.chunks));
  if (int64_t(kActionKinds) * shape.ranks * shape.chunks * shape.microbatches > kMaxActions)
    return Status::error("pipeline schedule: " + str(shape.ranks) + " ranks x " +
                         str(shape.chunks) + " chunks x " + str(shape.microbatches) +
                         " microbatches is too large to check");
  if (static_cast<int>(s.perRank.size()) != shape.ranks)
    return Status::error("pipeline schedule: the table has orders for " +
                         str(static_cast<int>(s.perRank.size())) + " ranks, the shape says " +
                         str(shape.ranks));
  const ActionIds ids{shape.stages(), shape.microbatches};
  std::vector<Place> places(ids.count());
  for (int r = 0; r < shape.ranks; ++r) {
    const std::vector<PipelineStep> &order = s.perRank[r];
    for (int slot = 0; slot < static_cast<int>(order.size()); ++slot) {
      const PipelineStep &step = order[slot];
      const std::string at = "pipeline schedule: rank " + str(r) + " slot " + str(slot) + ": ";
      if (step.rank != r || step.slot != slot)
        return Status::error(at + "the step says rank " + str(step.rank) + " slot " +
                             str(step.slot));
      if (step.microbatch < 0 || step.microbatch >= shape.microbatches)
        return Status::error(at + "microbatch " + str(step.microbatch) + " is not in [0, " +
                             str(shape.microbatches) + ")");
      if (step.chunk < 0 || step.chunk >= shape.chunks)
        return Status::error(at + "chunk " + str(step.chunk) + " is not in [0, " +
                             str(shape.chunks) + ")");
      if (step.stage != step.chunk * shape.ranks + r)
        return Status::error(at + "stage " + str(step.stage) + " is not chunk " +
                             str(step.chunk) + "'s on this rank (" +
                             str(step.chunk * shape.ranks + r) + ")");
      if (step.action == PipelineAction::BackwardWeights && !s.splitsWeights)
        return Status::error(at + "a W action in a schedule that does not split weights");
      if (static_cast<int>(step.action) < 0 || static_cast<int>(step.action) >= kActionKinds)
        return Status::error(at + "unknown action " + str(static_cast<int>(step.action)));
      Place &place = places[ids.of(step.action, step.stage, step.microbatch)];
      if (place.rank >= 0)
        return Status::error(at + describeStep(step) + " repeats " +
                             describeAction(step.action, step.stage, step.microbatch) +
                             " (first at slot " + str(place.slot) + ")");
      place = {r, slot};
    }
  }
  const int lastKind = s.splitsWeights ? kActionKinds : kActionKinds - 1;
  for (int kind = 0; kind < lastKind; ++kind)
    for (int stage = 0; stage < shape.stages(); ++stage)
      for (int mb = 0; mb < shape.microbatches; ++mb) {
        const auto action = static_cast<PipelineAction>(kind);
        if (places[ids.of(action, stage, mb)].rank < 0)
          return Status::error("pipeline schedule: " + describeAction(action, stage, mb) +
                               " is missing (rank " + str(stage % shape.ranks) +
                               " owns the stage)");
      }
  return places;
}

std::string ordinal(int n) {
  const int tens = n % 100, ones = n % 10;
  const char *suffix = (tens >= 11 && tens <= 13) ? "th"
                       : ones == 1                ? "st"
                       : ones == 2                ? "nd"
                       : ones == 3                ? "rd"
                                                  : "th";
  return str(n) + suffix;
}

struct Message {
  int action; // the producing action's id
  int slot;   // where the sender sends it or the receiver receives it
};

// Per ordered rank pair, the k-th message the sender sends must be the k-th
// the receiver receives: send/recv match in order, so a swap would hand a
// rank the wrong tensor (or block it on one that never comes).
Status checkTransferOrder(const PipelineSchedule &s) {
  const int p = s.shape.ranks;
  const ActionIds ids{s.shape.stages(), s.shape.microbatches};
  std::map<std::pair<int, int>, std::vector<Message>> sent, received; // by (from, to)
  for (int r = 0; r < p; ++r)
    for (const PipelineStep &step : s.perRank[r]) {
      const StepTransfers t = transfersOf(s.shape, step);
      if (t.receiveFrom >= 0 && t.receiveFrom != r) {
        const PipelineAction action = step.action; // F receives an F's output, B a B's
        const int stage = action == PipelineAction::Forward ? step.stage - 1 : step.stage + 1;
        received[{t.receiveFrom, r}].push_back(
            {ids.of(action, stage, step.microbatch), step.slot});
      }
      if (t.sendTo >= 0 && t.sendTo != r)
        sent[{r, t.sendTo}].push_back(
            {ids.of(step.action, step.stage, step.microbatch), step.slot});
    }
  auto name = [&](int id) {
    const int mb = id % ids.microbatches, stage = id / ids.microbatches % ids.stages;
    return describeAction(static_cast<PipelineAction>(id / (ids.microbatches * ids.stages)), stage,
                          mb);
  };
  for (const auto &[pair, out] : sent) {
    const auto [from, to] = pair;
    const std::vector<Message> &in = received[pair];
    for (size_t k = 0; k < std::min(out.size(), in.size()); ++k)
      if (out[k].action != in[k].action)
        return Status::error(
            "pipeline schedule " + std::string(scheduleName(s.kind)) + ": rank " + str(from) +
            "'s " + ordinal(static_cast<int>(k) + 1) + " message to rank " + str(to) + " is " +
            name(out[k].action) + " (its slot " + str(out[k].slot) + "), but rank " + str(to) +
            " receives " + name(in[k].action) + " " + ordinal(static_cast<int>(k) + 1) +
            " (its slot " + str(in[k].slot) +
            "): between two ranks, messages are received in the order they are sent");
  }
  return Status::success();
}

struct Replay {
  std::vector<char> done;      // per action id
  std::vector<double> end;     // per action id, when done
  std::vector<int> next;       // per rank: the first slot not run
  std::vector<double> busy;    // per rank
  double makespan = 0;
  bool finished = false;
};

// Runs every rank as far as the dependencies allow (see the banner).
Replay replay(const PipelineSchedule &s, const std::vector<Place> &places,
              const ActionCosts &costs) {
  const int p = s.shape.ranks;
  const ActionIds ids{s.shape.stages(), s.shape.microbatches};
  auto duration = [&](PipelineAction action) {
    switch (action) {
    case PipelineAction::Forward:
      return costs.forward;
    case PipelineAction::Backward:
      return s.splitsWeights ? costs.backward - costs.weights : costs.backward;
    case PipelineAction::BackwardWeights:
      return costs.weights;
    }
    return 0.0;
  };
  Replay run;
  run.done.assign(ids.count(), 0);
  run.end.assign(ids.count(), 0);
  run.next.assign(p, 0);
  run.busy.assign(p, 0);
  std::vector<double> rankFree(p, 0);
  for (bool moved = true; moved;) {
    moved = false;
    for (int r = 0; r < p; ++r) {
      const std::vector<PipelineStep> &order = s.perRank[r];
      while (run.next[r] < static_cast<int>(order.size())) {
        const PipelineStep &step = order[run.next[r]];
        double start = rankFree[r];
        bool ready = true;
        for (const Need &need : needsOf(step, ids.stages)) {
          const int id = ids.of(need.action, need.stage, step.microbatch);
          if (!run.done[id]) {
            ready = false;
            break;
          }
          start = std::max(start, run.end[id] + (places[id].rank != r ? costs.p2p : 0.0));
        }
        if (!ready)
          break;
        const int id = ids.of(step.action, step.stage, step.microbatch);
        const double d = duration(step.action);
        run.done[id] = 1;
        run.end[id] = rankFree[r] = start + d;
        run.busy[r] += d;
        run.makespan = std::max(run.makespan, start + d);
        ++run.next[r];
        moved = true;
      }
    }
  }
  run.finished = true;
  for (int r = 0; r < p; ++r)
    run.finished = run.finished && run.next[r] == static_cast<int>(s.perRank[r].size());
  return run;
}

// "deadlock: rank 0 waits at slot 0 (B mb 0 chunk 0) for B of stage 1 mb 0
// on rank 1, which waits at slot 0 (...) for ... on rank 0 (a cycle)": one
// chain per group of stuck ranks, following who waits for whom.
Status deadlockError(const PipelineSchedule &s, const std::vector<Place> &places,
                     const Replay &run) {
  const int p = s.shape.ranks;
  const ActionIds ids{s.shape.stages(), s.shape.microbatches};
  std::vector<int> chainOf(p, -1);
  std::string message = "pipeline schedule " + std::string(scheduleName(s.kind)) + ": deadlock:";
  for (int first = 0, chains = 0; first < p; ++first) {
    if (run.next[first] == static_cast<int>(s.perRank[first].size()) || chainOf[first] >= 0)
      continue;
    message += chains ? "; rank " : " rank ";
    message += str(first);
    for (int r = first; r >= 0;) {
      chainOf[r] = chains;
      const PipelineStep &step = s.perRank[r][run.next[r]];
      const int waiting = r;
      for (const Need &need : needsOf(step, ids.stages)) {
        const int id = ids.of(need.action, need.stage, step.microbatch);
        if (run.done[id])
          continue;
        const Place &there = places[id];
        message += " waits at slot " + str(step.slot) + " (" + describeStep(step) + ") for " +
                   describeAction(need.action, need.stage, step.microbatch) + " on rank " +
                   str(there.rank);
        if (there.rank == r) {
          message += " itself (its slot " + str(there.slot) + ", later in its order)";
          r = -1;
        } else if (chainOf[there.rank] >= 0) {
          message += chainOf[there.rank] == chains ? " (a cycle)" : " (stuck as above)";
          r = -1;
        } else {
          message += ", which";
          r = there.rank;
        }
        break;
      }
      if (r == waiting) // cannot happen: a stuck step has a need not yet run
        break;
    }
    ++chains;
  }
  return Status::error(message);
}

struct InFlight {
  int peak = 0;
  int firstOverCap = -1; // slot where the count first exceeds the cap
  int countThere = 0;
};

// Per rank: F adds its (chunk, microbatch) pair, the releasing action (W
// when split, else B) removes it; a release without its F is ignored.
std::vector<InFlight> walkInFlight(const PipelineSchedule &s, int cap) {
  const PipelineAction release =
      s.splitsWeights ? PipelineAction::BackwardWeights : PipelineAction::Backward;
  const int64_t m = std::max(s.shape.microbatches, 1);
  std::vector<InFlight> out(s.perRank.size());
  for (size_t r = 0; r < s.perRank.size(); ++r) {
    std::vector<int64_t> open; // pairs as chunk * m + microbatch
    for (const PipelineStep &step : s.perRank[r]) {
      const int64_t pair = int64_t(step.chunk) * m + step.microbatch;
      if (step.action == PipelineAction::Forward) {
        open.push_back(pair);
      } else if (step.action == release) {
        auto it = std::find(open.begin(), open.end(), pair);
        if (it != open.end())
          open.erase(it);
      }
      const int count = static_cast<int>(open.size());
      out[r].peak = std::max(out[r].peak, count);
      if (cap > 0 && count > cap && out[r].firstOverCap < 0)
        out[r] = {out[r].peak, step.slot, count};
    }
  }
  return out;
}

Status checkCosts(const ActionCosts &c) {
  for (double v : {c.forward, c.backward, c.weights, c.p2p})
    if (!std::isfinite(v) || v < 0)
      return Status::error("pipeline costs: forward, backward, weights and p2p must be finite "
                           "and >= 0");
  if (c.weights > c.backward)
    return Status::error("pipeline costs: weights (" + std::to_string(c.weights) +
                         ") is the weight-gradient share of backward (" +
                         std::to_string(c.backward) + ") and cannot exceed it");
  return Status::success();
}

} // namespace

StepTransfers transfersOf(const ScheduleShape &shape, const PipelineStep &step) {
  const int stage = step.stage, last = shape.stages() - 1;
  switch (step.action) {
  case PipelineAction::Forward:
    return {stage > 0 ? stageOwner(shape, stage - 1) : -1,
            stage < last ? stageOwner(shape, stage + 1) : -1};
  case PipelineAction::Backward:
    return {stage < last ? stageOwner(shape, stage + 1) : -1,
            stage > 0 ? stageOwner(shape, stage - 1) : -1};
  case PipelineAction::BackwardWeights:
    break;
  }
  return {};
}

std::vector<int> peakInFlight(const PipelineSchedule &schedule) {
  std::vector<int> peaks;
  for (const InFlight &f : walkInFlight(schedule, 0))
    peaks.push_back(f.peak);
  return peaks;
}

Status checkSchedule(const PipelineSchedule &schedule) {
  StatusOr<std::vector<Place>> places = locateActions(schedule);
  if (!places.ok())
    return places.status();
  if (Status s = checkTransferOrder(schedule); !s)
    return s;
  const Replay run = replay(schedule, *places, ActionCosts{});
  if (!run.finished)
    return deadlockError(schedule, *places, run);
  const int cap = schedule.shape.activeMicrobatches;
  const std::vector<InFlight> inFlight = walkInFlight(schedule, cap);
  for (size_t r = 0; r < inFlight.size(); ++r)
    if (inFlight[r].firstOverCap >= 0) {
      const PipelineStep &step = schedule.perRank[r][inFlight[r].firstOverCap];
      const char *unit = schedule.shape.chunks > 1 ? " (chunk, microbatch) pairs" : " microbatches";
      return Status::error("pipeline schedule: rank " + str(static_cast<int>(r)) + " has " +
                           str(inFlight[r].countThere) + unit + " in flight at slot " +
                           str(step.slot) + " (" + describeStep(step) +
                           "), above active_microbatches = " + str(cap));
    }
  return Status::success();
}

StatusOr<SimulatedPipeline> simulateSchedule(const PipelineSchedule &schedule,
                                             const ActionCosts &costs) {
  if (Status s = checkCosts(costs); !s)
    return s;
  StatusOr<std::vector<Place>> places = locateActions(schedule);
  if (!places.ok())
    return places.status();
  const Replay run = replay(schedule, *places, costs);
  if (!run.finished)
    return deadlockError(schedule, *places, run);
  SimulatedPipeline out;
  out.makespan = run.makespan;
  out.busy = run.busy;
  double busy = 0, idle = 0;
  for (double b : run.busy) {
    out.idle.push_back(run.makespan - b);
    busy += b;
    idle += run.makespan - b;
  }
  out.bubbleFraction = busy > 0 ? idle / busy : 0;
  out.idleShare = run.makespan > 0 ? idle / (run.makespan * schedule.shape.ranks) : 0;
  out.peakInFlight = peakInFlight(schedule);
  return out;
}

} // namespace trc::rt
