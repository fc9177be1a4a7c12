//===- PipelineSchedule.h - pipeline schedules as data ----------------------===//
//
// A pipeline schedule is a table: for each of p pipeline ranks, the actions it
// runs in order. The model is cut into S = p * v stages; rank r holds v chunks
// (virtual stages), and chunk c of rank r is stage c * p + r (Megatron's
// interleaved layout: rank 0 holds stages 0, p, 2p, ...). Per (stage,
// microbatch) there is one
//   F  forward,
//   B  backward for the stage's inputs (and, when the schedule does not split
//      the backward, its weight gradients too),
//   W  weight gradients (only in schedules that split B and W: ZB-H1).
// Dependencies: F(s, mb) needs F(s-1, mb); B(s, mb) needs F(s, mb) and
// B(s+1, mb) (the last stage's B only its own F); W(s, mb) needs B(s, mb).
// A dependency on another rank is a p2p transfer: sends are buffered (they
// never block the sender), receives block.
//
// Generators (makeSchedule), one per kind, key names as in --config's
// `pipeline_schedule`:
//   gpipe             every forward, then every backward (FIFO);
//   1f1b              Megatron's non-interleaved 1F1B (PipeDream-flush);
//   interleaved_1f1b  Megatron's virtual pipeline (arXiv 2104.04473 §2.2);
//   zb_h1             1F1B with B and W split and W deferred (arXiv 2401.10241).
// checkSchedule proves a table complete and deadlock-free before anything
// runs it; simulateSchedule times it; formatSchedule prints it (the
// compiler's `test-trc-print-pipeline-schedule` prints the same text).
//
// "In flight" counts, per rank, the (chunk, microbatch) pairs whose F has run
// and whose B (W when the schedule splits) has not: the activations the rank
// holds. With one chunk per rank that is microbatches; with v chunks each
// pair holds about 1/v of a one-chunk stage's activations.
// `activeMicrobatches` (SMP's `active_microbatches`) caps that count.
//
// Plain C++17; depends on nothing but runtime/support/Status.h, so that the
// compiler and the planner link it too.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_PIPELINESCHEDULE_H
#define TRC_RUNTIME_PIPELINESCHEDULE_H

#include "runtime/support/Status.h"

#include <string>
#include <string_view>
#include <vector>

namespace trc::rt {

enum class PipelineAction { Forward, Backward, BackwardWeights };
// "F", "B", "W".
const char *actionLetter(PipelineAction action);

struct PipelineStep {
  int rank = 0;
  int slot = 0; // index in the rank's order
  PipelineAction action = PipelineAction::Forward;
  int microbatch = 0;
  int chunk = 0;
  int stage = 0; // chunk * ranks + rank
};

enum class ScheduleKind { GPipe, OneFOneB, Interleaved1F1B, ZeroBubbleH1 };

/// "gpipe" | "1f1b" | "interleaved_1f1b" | "zb_h1"; an error names the key
/// `pipeline_schedule` and lists the valid values.
StatusOr<ScheduleKind> parseScheduleKind(std::string_view name);
const char *scheduleName(ScheduleKind kind);

struct ScheduleShape {
  int ranks = 1;              // p
  int microbatches = 1;       // m
  int chunks = 1;             // v: chunks (virtual stages) per rank
  int activeMicrobatches = 0; // in-flight cap per rank; 0: no cap
  int stages() const { return ranks * chunks; }
};

struct PipelineSchedule {
  ScheduleKind kind = ScheduleKind::OneFOneB;
  ScheduleShape shape;
  bool splitsWeights = false;                     // W actions present
  std::vector<std::vector<PipelineStep>> perRank; // execution order; slot = index
};

/// The rank holding `stage` (stage % ranks).
inline int stageOwner(const ScheduleShape &shape, int stage) {
  return shape.ranks > 0 ? stage % shape.ranks : 0;
}

/// The p2p transfers around one step, as ranks; -1 for none. An F receives
/// the previous stage's activation and sends its own to the next stage; a B
/// receives the next stage's gradient and sends its own to the previous
/// stage; the first stage's F and the last stage's B receive nothing, the
/// last stage's F and the first stage's B send nothing, W moves nothing. A
/// peer equal to step.rank (one rank holding consecutive stages) is a
/// hand-over within the rank.
struct StepTransfers {
  int receiveFrom = -1;
  int sendTo = -1;
};
StepTransfers transfersOf(const ScheduleShape &shape, const PipelineStep &step);

/// The schedule `kind` generates for `shape`. Errors (naming the key):
/// ranks, microbatches or chunks below 1; interleaved_1f1b with one chunk,
/// or any other kind with more; interleaved_1f1b with microbatches not a
/// multiple of ranks (Megatron's rule); an activeMicrobatches cap below what
/// the schedule keeps in flight. gpipe and 1f1b adapt to a cap instead: gpipe
/// runs at most `cap` forwards ahead of its backwards, 1f1b shortens its
/// warm-up (both stay deadlock-free); interleaved_1f1b and zb_h1 refuse it.
/// The result passes checkSchedule.
StatusOr<PipelineSchedule> makeSchedule(ScheduleKind kind, const ScheduleShape &shape);

/// Every (stage, microbatch) has exactly one F and one B (and one W iff
/// splitsWeights), each on the rank owning the stage, with consistent
/// rank/slot/stage fields; between any two ranks, messages are received in
/// the order they are sent (the communicator's send/recv carry no tags, so
/// they match in order); replaying the table with blocking receives and
/// buffered sends finishes (else an error naming each stuck rank, its next
/// action and what it waits for); no rank holds more than activeMicrobatches
/// in flight (when capped).
Status checkSchedule(const PipelineSchedule &schedule);

/// Per rank, the most (chunk, microbatch) pairs in flight at once. The table
/// need not be valid (actions without their F are ignored).
std::vector<int> peakInFlight(const PipelineSchedule &schedule);

/// Action durations. `backward` is a stage's whole backward (input and
/// weight gradients); `weights` is the weight-gradient share of it. A
/// schedule that does not split runs B for `backward`; one that splits runs
/// B for `backward - weights` and W for `weights`. `p2p` is added to every
/// dependency that crosses ranks (the sender does not wait for it).
struct ActionCosts {
  double forward = 1;
  double backward = 2;
  double weights = 0;
  double p2p = 0;
};

struct SimulatedPipeline {
  double makespan = 0;
  std::vector<double> busy, idle; // per rank; idle = makespan - busy
  // Sum of idle over sum of busy: the bubble relative to the ideal compute
  // time, as the research table states it ((p-1)/m for 1F1B).
  double bubbleFraction = 0;
  // Sum of idle over p * makespan: the share of the timeline that is
  // bubble ((p-1)/(m+p-1) for 1F1B).
  double idleShare = 0;
  std::vector<int> peakInFlight; // per rank, as peakInFlight()
};

/// Each action starts when its rank finished the previous one and its
/// dependencies ended (plus p2p when remote). Errors: the table fails
/// checkSchedule's completeness or deadlock checks (the cap is not
/// enforced here); a cost negative or not finite; weights above backward.
StatusOr<SimulatedPipeline> simulateSchedule(const PipelineSchedule &schedule,
                                             const ActionCosts &costs);

/// The bubble fraction (idle over busy) the literature gives, with no cap:
/// (p-1)/m for gpipe and 1f1b, (p-1)/(v m) for interleaved_1f1b, and for
/// zb_h1 (p-1)/(3m): the zero-bubble paper's per-rank bubble (p-1)(T_F +
/// T_B - T_W) over m (T_F + T_B + T_W) compute, assuming T_F = T_B = T_W
/// and m >= p (with fewer microbatches the W's cannot fill the tail).
double bubbleFormula(ScheduleKind kind, const ScheduleShape &shape);

/// A header line, one row per step (rank, slot, action, microbatch, chunk,
/// stage), then one compact line per rank: "rank 0: F0 F1 B0 F2 B1 ...",
/// with tokens "F<mb>.<chunk>" when ranks hold more than one chunk.
std::string formatSchedule(const PipelineSchedule &schedule);

} // namespace trc::rt

#endif // TRC_RUNTIME_PIPELINESCHEDULE_H
