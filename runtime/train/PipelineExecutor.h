//===- PipelineExecutor.h - runs a pipeline schedule's table ----*- C++ -*-===//
//
// The one runtime executor of DESIGN.md's "Pipeline schedules are data": a
// pipeline artifact (a folder of stage programs and pipeline.trc, written by
// the compiler's compilePipelineArtifact; docs/ARTIFACT.md) is opened on
// this rank for the stages it owns (stage s on pipeline rank s mod P), and
// each optimizer step runs this rank's row of a PipelineSchedule: F runs a
// stage's forward program for a microbatch, B its backward program (the
// gradients sent to earlier stages), W its weights program (which adds the
// parameters' gradients into the stage's accumulators; right after B when
// the schedule does not split them), then every stage's norm program gives
// its share of the squared gradient norm, the executor sums the shares over
// the pipeline, and every stage's apply program clips by that norm and
// updates its parameters once. Values crossing stages move
// as tagged non-blocking messages over the pipeline group (sends never
// block; a receive waits); each microbatch has its own stash, send and
// receive buffers (PipelineBuffers.h), bound into the programs' slots (no
// copies); with offloading, stashes wait in host memory for their backward. A tied
// parameter's per-stage gradients are summed over the stages holding it
// before the update (every holder applies the same update). With data
// parallelism (pipeline outermost: each stage on D ranks), the accumulated
// gradients are averaged over the stage's data group before that; with
// ZeRO-1 (trc-pipeline-split's shard-degree) each apply program updates this
// rank's shard of every parameter, keeping optimizer state for it alone, and
// all-gathers the parameter; with ZeRO-2 the weights programs accumulate
// shards (averaged over the shard group as they go; the executor averages
// them over the replica group); with ZeRO-3 the parameters stay shards too,
// the programs gathering each at its use. fp16's loss scale is fed to the programs that
// scale the loss and divided out of the gradients and the reported loss.
// A forward's "update:" outputs (running statistics) replace their
// parameters after each microbatch, and are averaged over the stage's data
// group once per step.
// Preconditions: the schedule was checked (checkSchedule); one thread.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_PIPELINEEXECUTOR_H
#define TRC_RUNTIME_TRAIN_PIPELINEEXECUTOR_H

#include "runtime/artifact/Artifact.h"
#include "runtime/artifact/Session.h"
#include "runtime/comm/Communicator.h"
#include "runtime/formats/Safetensors.h"
#include "runtime/spec/PipelineIndex.h"
#include "runtime/spec/PipelineSchedule.h"
#include "runtime/train/ModelState.h"
#include "runtime/train/PipelineBuffers.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace trc::rt {

/// What one step of the executor reports (on every rank).
struct PipelineStepResult {
  double loss = 0;     // mean over the microbatches (as one device would)
  double gradNorm = 0; // over every stage's gradients
  bool applied = true; // false: the decision discarded the update
  // This rank's most bytes of forward values kept for backwards (stash),
  // over the steps so far: the schedule's activation memory on the device,
  // and with offloading what the host held.
  uint64_t peakStashBytes = 0;
  uint64_t peakHostStashBytes = 0;
};

/// How a slot's logical (whole) value is read from a session and written
/// to it: DistributedRun::readFull and writeFull (sharded and split slots
/// gathered over their shard and tensor groups, sliced back on write;
/// collective: every rank of a group reads the same slots in the same order).
struct LogicalSlots {
  std::function<StatusOr<HostTensor>(Session &session, const Slot &slot)> read;
  std::function<Status(Session &session, const Slot &slot, const HostTensor &whole)> write;
};

class PipelineExecutor {
public:
  /// Opens this rank's stages of the artifact in `dir`.
  /// `data`: the ranks holding the same stages (data parallelism): their
  /// losses are averaged; `dataContext`: those and their context ranks
  /// (context parallelism; `data` itself without): the accumulated
  /// gradients are averaged over them before the update (the programs
  /// scale context parts by C, trc-pipeline-split); `replica`: those of
  /// them holding the same shard (sharded accumulators, already averaged
  /// over the shard group by the programs, are averaged over it alone).
  /// `shardIndex`, `tensorIndex`: this rank's place in its stage's shard
  /// and tensor groups (which part of a sharded or split parameter it loads).
  /// `logical`: how slots are read and written whole.
  static StatusOr<std::unique_ptr<PipelineExecutor>>
  open(const std::string &dir, Backend &backend, Communicator &pipeline, Communicator &data,
       Communicator &dataContext, Communicator &replica, int shardIndex, int tensorIndex,
       PipelineSchedule schedule, LogicalSlots logical);

  /// The programs' graph inputs of microbatch `mb` ("input_ids",
  /// "targets", ...): the caller sets those a session has.
  using FeedMicrobatch = std::function<Status(Session &session, int microbatch)>;
  /// Whether a step's update is applied, given its loss and gradient norm
  /// (the same on every rank); it must decide the same on every rank.
  using ApplyDecision = std::function<bool(double loss, double gradNorm)>;
  /// One optimizer step: the schedule's actions on this rank, the tied
  /// gradients summed, every owned stage's update with learning rate `lr`
  /// and 1-based step `step`, applied unless `decide` (null: always)
  /// says no (then parameters and optimizer state stay as they were).
  /// `lossScale`: fp16's dynamic loss scale, fed to the programs that
  /// multiply the loss by it (trc.loss_scale) and divided out of the
  /// gradients and the reported loss; 1 for a step compiled without it.
  StatusOr<PipelineStepResult> runStep(const FeedMicrobatch &feed, float lr, float step,
                                       const ApplyDecision &decide = nullptr,
                                       float lossScale = 1.0f);

  /// Activation offloading (offload_activations): a stash whose backward
  /// is not among this rank's next `horizon` actions moves to host memory
  /// after its forward (beside the rank's next program) and is fetched back
  /// when its backward comes within `horizon` actions. Precondition:
  /// horizon >= 1.
  void offloadStashes(int horizon) { offloadHorizon_ = horizon; }

  using StateParts = rt::StateParts;
  /// The parameters (and optimizer state) of the stages this rank holds, by
  /// name (a tied parameter once): logical tensors, as any plan names them
  /// (with tensor-parallel stages, collective over the tensor group).
  StatusOr<std::vector<NamedTensor>> readState(StateParts parts) const;
  /// The same gathered on pipeline rank 0 of the first data replica from
  /// every stage (collective over the whole job: sharded and split slots
  /// are first read whole by every rank of their groups; other ranks get an
  /// empty list).
  StatusOr<std::vector<NamedTensor>> gatherState(StateParts parts) const;
  /// Sets every parameter (and, unless `parts` says Parameters, optimizer
  /// state) this rank holds from `find` (null: the tensor is missing, an
  /// error naming it).
  Status writeState(const FindTensor &find,
                    StateParts parts = StateParts::ParametersAndOptimizer);

  /// Every stage session this rank holds (stage index, programs).
  struct StageSessions {
    int stage = 0;
    std::unique_ptr<Artifact> forwardArtifact, backwardArtifact, weightsArtifact, normArtifact,
        applyArtifact;
    std::unique_ptr<Session> forward, backward, weights, norm, apply;
    bool accumulating = false; // this step's first backward has run
  };
  std::vector<StageSessions> &stages() { return stages_; }

private:
  PipelineExecutor(Backend &backend, Communicator &pipeline, Communicator &data,
                   Communicator &dataContext, Communicator &replica, PipelineSchedule schedule)
      : backend_(backend), pipeline_(pipeline), data_(data), dataContext_(dataContext),
        replica_(replica), schedule_(std::move(schedule)), buffers_(backend) {}
  Status averageOverData();
  enum class Program { Forward = 0, Backward = 1, Weights = 2 };
  Status run(const PipelineStep &step, const FeedMicrobatch &feed, double &lossSum);
  Status runProgram(StageSessions &stage, Program program, int microbatch,
                    const FeedMicrobatch &feed, double &lossSum);
  Status bindMicrobatch(Session &session, int microbatch, std::vector<P2PRequest> &receives);
  Status sendOutputs(Session &session, int microbatch);
  Status moveStashes(StageSessions &stage, Program program, int microbatch);
  Status sumTiedGradients();
  StageSessions *stage(int index);
  static Status setIfTaken(Session &session, const char *name, const HostTensor &value);
  void releaseFinishedSends(bool all);
  int tagOf(const std::string &transferId, int microbatch) const;

  Status findTiedGradients();
  Status zeroInputs();

  std::string dir_;
  // "grad_accum:<param>" of a parameter several stages hold -> the stages.
  std::map<std::string, std::vector<int>> tied_;
  Backend &backend_;
  Communicator &pipeline_;
  Communicator &data_;
  Communicator &dataContext_;
  Communicator &replica_;
  PipelineSchedule schedule_;
  LogicalSlots logical_;
  PipelineIndex index_;
  std::vector<StageSessions> stages_;
  std::map<std::string, size_t> transferOrdinal_;
  PipelineBuffers buffers_; // stash, send and receive buffers per microbatch
  int offloadHorizon_ = 0;  // 0: stashes stay on the device
  size_t cursor_ = 0;       // the running action's index in this rank's row
  struct PendingSend {
    P2PRequest request;
    std::string slot;
    int microbatch;
  };
  std::vector<PendingSend> sends_;
  HostTensor keepAccum_, lr_, step_, gradScale_, normSquared_, lossScale_;
};

} // namespace trc::rt

#endif // TRC_RUNTIME_TRAIN_PIPELINEEXECUTOR_H
