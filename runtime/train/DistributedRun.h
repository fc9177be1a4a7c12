//===- DistributedRun.h - a training run's ranks: groups, shards, checkpoints -===//
//
// What a multi-process training run adds around the compiled step:
//   * the world communicator (createCommunicator: MPI when launched by
//     mpirun/srun with several ranks, else this process alone; with
//     `communicator: nccl` the program's collectives run on NCCL and the
//     host-side exchanges below stay on MPI) and the shard
//     and replica groups (ParallelPlan: consecutive blocks of shardDegree
//     ranks share the shards of one copy; the ranks at the same position in
//     each block form a replica group), registered for the program's
//     collectives (runtime/comm/Collectives.h);
//   * the trc-data-parallel options the training step is compiled with;
//   * each rank's rows of the global batch: rank r of R takes rows
//     [r*B/R, (r+1)*B/R), so the loss curve does not depend on R;
//   * full tensors from and to the slots: a sharded slot (manifest `shard`)
//     is gathered over the shard group to its full shape, and a full tensor
//     is cut to this rank's chunk, so checkpoints always hold full tensors
//     and resume on any world size and sharding;
//   * rank 0's initial parameters broadcast to every rank;
//   * the compiled step shared: rank 0 compiles, the others receive it.
// Preconditions: every rank makes the same calls in the same order (they
// are collective); one DistributedRun per process.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_DISTRIBUTEDRUN_H
#define TRC_RUNTIME_TRAIN_DISTRIBUTEDRUN_H

#include "runtime/train/ParallelPlan.h"

#include "runtime/comm/Communicator.h"
#include "runtime/artifact/Session.h"
#include "runtime/train/StepCompiler.h"

#include <memory>
#include <string>

namespace trc::rt {

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
  /// This rank's index in its shard group (the chunk it holds).
  int shardIndex() const { return shard_->rank(); }
  /// Whether the step is compiled data parallel (several ranks or --config).
  bool dataParallel() const { return dataParallel_; }
  /// How the step is compiled for this plan (trc-data-parallel's options).
  DataParallelBuild dataParallelBuild() const;

  /// Rank 0's parameters (and its shards' owners') copied to every rank.
  rt::Status broadcastParameters(rt::Session &session);
  /// A param or optimizer-state slot's value with its full shape (collective).
  rt::StatusOr<rt::HostTensor> readFull(rt::Session &session, const rt::Slot &slot);
  /// Stores this rank's part of a full value into the slot.
  rt::Status writeFull(rt::Session &session, const rt::Slot &slot, const rt::HostTensor &full);
  /// Every rank arrives before any leaves.
  rt::Status barrier() { return world_->barrier(); }
  /// Rank 0 compiles the step once (`compiled`: whether it succeeded, then
  /// into `artifactDir`); every other rank receives the artifact's files
  /// into a temporary folder of its own (set into `artifactDir`) and the
  /// vocabulary size, instead of compiling the same thing again.
  rt::Status shareArtifact(bool compiled, std::string &artifactDir, int64_t &vocabSize);

private:
  ParallelPlan config_;
  bool dataParallel_ = false;
  // Host memory (MPI, or this process alone).
  std::unique_ptr<rt::Communicator> world_, shard_, replica_;
  // The program's collectives when they run on NCCL (device memory).
  std::unique_ptr<rt::Communicator> deviceWorld_, deviceShard_, deviceReplica_;
};

} // namespace trc::rt

#endif
