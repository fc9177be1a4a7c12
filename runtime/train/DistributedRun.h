//===- DistributedRun.h - a training run's ranks: groups, shards, checkpoints -===//
//
// What a multi-process training run adds around the compiled step:
//   * the world communicator (createCommunicator: MPI when launched by
//     mpirun/srun with several ranks, else this process alone; with
//     `communicator: nccl` the program's collectives run on NCCL and the
//     host-side exchanges below stay on MPI) and its groups: the ranks are
//     a grid data x context x tensor (T = tensor_parallel_degree, inner; C =
//     context_parallel_degree), world rank r has tensor index t = r % T,
//     context index c = r / T % C and data index d = r / (T x C); the tensor
//     group is the T ranks with my d and c, the context group the C ranks
//     with my d and t, the data axis the ranks with my t and c,
//     split as ParallelPlan says into shard groups (consecutive blocks of
//     shardDegree data ranks share the shards of one copy) and replica
//     groups (the data ranks at the same position in each block); all
//     registered for the program's collectives (runtime/comm/Collectives.h,
//     "world" there being the data axis);
//   * the trc-data-parallel options the training step is compiled with;
//   * each data rank's rows of the global batch: data index d of D takes
//     rows [d*B/D, (d+1)*B/D) (the ranks of a tensor group read the same
//     rows), so the loss curve does not depend on the plan;
//   * logical tensors from and to the slots: a sharded slot (manifest
//     `shard`) is gathered over the shard group to its local shape, a split
//     slot (manifest `split`) then over the tensor group to its logical
//     shape; a logical tensor is cut to this rank's part and chunk. So
//     checkpoints always hold logical tensors and resume on any plan;
//   * rank 0's initial parameters broadcast to every rank that holds the
//     same values;
//   * the compiled step shared: rank 0 compiles, the others receive it.
// Preconditions: every rank makes the same calls in the same order (they
// are collective); one DistributedRun per process.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_DISTRIBUTEDRUN_H
#define TRC_RUNTIME_TRAIN_DISTRIBUTEDRUN_H

#include "runtime/spec/ParallelPlan.h"

#include "runtime/comm/Communicator.h"
#include "runtime/artifact/Session.h"
#include "runtime/train/StepCompiler.h"

#include <memory>
#include <string>

namespace trc::rt {

/// An error every rank of the job finds alike before the ranks connect (it
/// follows from the flags alone): rank 0 (or a lone process) returns `s`,
/// every other rank reported() (nothing more printed), so the job prints
/// it once.
rt::Status onceForTheJob(const rt::Status &s);

class DistributedRun {
public:
  /// Reads the launch environment and `configSpec` (--config; "" = the
  /// default: data parallel when there are several ranks) and connects.
  static rt::StatusOr<std::unique_ptr<DistributedRun>> create(const std::string &configSpec);
  ~DistributedRun();

  int rank() const { return world_->rank(); }
  int size() const { return world_->size(); }
  bool isRoot() const { return rank() == 0; }
  const ParallelPlan &config() const { return config_; }
  /// Gradient accumulation over pipeline stages is more microbatches per
  /// step (Megatron's meaning of its number of microbatches): the plan's
  /// microbatches times `accumulation`.
  void accumulateInMicrobatches(int accumulation) { config_.microbatches *= accumulation; }
  /// This rank's index in its shard group (the chunk it holds).
  int shardIndex() const { return shard_->rank(); }
  /// This rank's index in its tensor group (the part of split slots it
  /// holds) and the group's size.
  int tensorIndex() const { return tensor_->rank(); }
  int tensorDegree() const { return tensor_->size(); }
  /// This rank's index in its context group (the part of each row's
  /// sequence it feeds: inputs with a manifest `split`) and the group's size.
  int contextIndex() const { return context_->rank(); }
  int contextDegree() const { return context_->size(); }
  /// This rank's index on the data axis (which rows of a batch it takes)
  /// and the number of data ranks.
  int dataIndex() const { return data_->rank(); }
  int dataDegree() const { return data_->size(); }
  /// This rank's stage and the number of stages (pipeline parallelism), and
  /// the ranks of its pipeline in host memory (p2p between stages).
  int pipelineIndex() const { return pipeline_->rank(); }
  int pipelineDegree() const { return pipeline_->size(); }
  Communicator &pipelineGroup() { return *pipeline_; }
  /// Every rank, in host memory (the profile's gather uses it).
  Communicator &world() { return *world_; }
  /// The host-memory groups (tests look at them).
  Communicator &tensorGroup() { return *tensor_; }
  Communicator &dataGroup() { return *data_; }
  /// Data x context (the data group itself without context parallelism).
  Communicator &dataContextGroup() { return *dataContext_; }
  /// The data ranks holding the same shard (ZeRO: the whole data group
  /// unless hybrid sharding splits it).
  Communicator &replicaGroup() { return *replica_; }
  /// Whether the step is compiled data parallel (several ranks or --config).
  bool dataParallel() const { return dataParallel_; }
  /// How the step is compiled for this plan (trc-data-parallel's options).
  DataParallelBuild dataParallelBuild() const;

  /// Rank 0's parameters copied to every rank that holds the same values:
  /// over the data axis (a shard's replicas when sharded), then, for a
  /// param every tensor rank holds whole, over the tensor group.
  rt::Status broadcastParameters(rt::Session &session);
  /// A param or optimizer-state slot's value with its logical shape
  /// (collective).
  rt::StatusOr<rt::HostTensor> readFull(rt::Session &session, const rt::Slot &slot);
  /// Stores this rank's part of a logical value into the slot.
  rt::Status writeFull(rt::Session &session, const rt::Slot &slot, const rt::HostTensor &full);
  /// readFull and writeFull without the session: the logical value from
  /// this rank's value of the slot (collective over the shard, then the
  /// tensor group), and this rank's value from a logical one (local).
  rt::StatusOr<rt::HostTensor> gatherLogical(const rt::Slot &slot, const rt::HostTensor &mine);
  rt::StatusOr<rt::HostTensor> partOf(const rt::Slot &slot, const rt::HostTensor &full) const;
  /// Every rank arrives before any leaves.
  rt::Status barrier() { return world_->barrier(); }
  /// Rank 0's `verdict` on what only it checked, learned by every rank
  /// (collective): rank 0 gets `verdict` (its error is the job's one line),
  /// the others Status::reported() when it failed.
  rt::Status shareVerdict(const rt::Status &verdict);
  /// Every rank's own `local` outcome of a stage that ran without
  /// collectives, agreed on (collective): when any rank failed, the lowest
  /// such rank's error reaches rank 0, which returns it ("rank R: ..." for
  /// R > 0: one line for the job), and every other rank returns reported();
  /// otherwise success everywhere. Without it a rank-local failure left the
  /// others waiting in their next collective until its timeout.
  rt::Status agree(const rt::Status &local);
  /// `s` ended this rank's run after the ranks agreed: an error of its own
  /// (a metrics line or checkpoint it could not write) reaches no other
  /// rank, who wait for it in their next collective. With several ranks its
  /// message names this rank ("rank R: ...") and MPI is left without its
  /// finalize (leaveMpiWithoutFinalize), so that this process's exit ends
  /// the job at once rather than at the collective timeout. Success and
  /// reported() (every rank stopped together) pass unchanged.
  rt::Status leaveAlone(const rt::Status &s);
  /// `text` as rank `root` has it, on every rank (collective).
  rt::Status broadcastText(std::string &text, int root = 0);
  /// Rank 0 compiles the step once (`compiled`: whether it succeeded, then
  /// into `artifactDir`); every other rank receives the artifact's files
  /// into a temporary folder of its own (set into `artifactDir`) and the
  /// vocabulary size, instead of compiling the same thing again.
  rt::Status shareArtifact(bool compiled, std::string &artifactDir, int64_t &vocabSize);

private:
  ParallelPlan config_;
  bool dataParallel_ = false;
  // A world communicator's groups (GridGroups in DistributedRun.cpp).
  struct Groups {
    std::unique_ptr<rt::Communicator> tensor, context, ownedData, ownedDataContext, shard, replica;
    // Pipeline parallelism: this rank's pipeline (one rank per stage) and
    // its stage's ranks (the data x tensor grid); single-rank without.
    std::unique_ptr<rt::Communicator> pipeline, ownedStage;
    rt::Communicator *data = nullptr; // the world itself when T = 1
    // Data x context (the ranks with my tensor index): the data axis
    // itself without context parallelism.
    rt::Communicator *dataContext = nullptr;
  };
  static rt::Status splitGrid(rt::Communicator &world, const ParallelPlan &plan, Groups &g);
  // Host memory (MPI, or this process alone).
  std::unique_ptr<rt::Communicator> world_;
  Groups host_;
  rt::Communicator *tensor_ = nullptr, *data_ = nullptr, *shard_ = nullptr, *replica_ = nullptr,
                   *pipeline_ = nullptr, *context_ = nullptr, *dataContext_ = nullptr;
  // The program's collectives when they run on NCCL (device memory).
  std::unique_ptr<rt::Communicator> deviceWorld_;
  Groups device_;
};

} // namespace trc::rt

#endif
