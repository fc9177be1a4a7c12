//===- RunProfile.h - a training run's profile: record, gather, write ---*- C++ -*-===//
//
// What `trc-run --profile FILE [--profile-summary] [--profile-steps N]`
// adds to a training run (TrainerOptions::profile*), kept out of the
// training loop:
//   * checkProfileTarget, before anything is trained: rank 0 checks that
//     FILE can be written (its folder exists and is writable, FILE is not a
//     folder) and every rank learns the verdict, so a bad path is one
//     `error:` naming it and no rank starts training;
//   * begin(): a barrier, then Profiler::start() on every rank: the common
//     origin of the ranks' timestamps;
//   * beforeStep(step): records only the last N steps of the run with
//     --profile-steps N (the first steps, warm-up included, are skipped;
//     by default every step is recorded, the first one too);
//   * at begin, before each recorded step and at finish, a utilisation
//     sample (a profile::kCounter span "utilisation"): the process's CPU
//     time over wall time since the previous sample (cpu_percent, 100 = one
//     core busy) and its resident memory (rss_mb, /proc/self/statm), and on
//     a GPU what NVML says of it (gpu_percent: the share of the driver's
//     last sample period a kernel ran; gpu_memory_mb: its memory in use,
//     every process's; Nvml.h), drawn as counter tracks of each rank in the
//     trace (a GPU whose NVML cannot be read is said once, on rank 0's
//     headline, and has no GPU counters);
//   * finish(): every rank stops and sends its spans to rank 0 (over the
//     world communicator, point to point), which writes FILE
//     (ChromeTrace.h; atomically) and, with --profile-summary, prints
//     ProfileSummary.h's table to stderr.
// The spans themselves come from ProfileScopes: the trainer's step and
// phases, Session::run (program), Collectives.cpp (collective).
// Preconditions: every rank calls begin/finish in the same order (they are
// collective); one RunProfile per process at a time.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_RUNPROFILE_H
#define TRC_RUNTIME_TRAIN_RUNPROFILE_H

#include "runtime/backends/cuda/Nvml.h"
#include "runtime/comm/Communicator.h"
#include "runtime/support/Profiler.h"
#include "runtime/support/Status.h"
#include "runtime/train/DistributedRun.h"
#include "runtime/train/Trainer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace trc::rt {

/// Whether `path` can be written as a file, without creating it; the
/// error names the path (and --profile).
Status checkWritableFile(const std::string &path);

/// checkWritableFile on rank 0 of `world`, its verdict shared (collective).
Status checkProfileTarget(const TrainerOptions &options, Communicator &world);

/// Every rank's `mine` on rank 0 of `world`, in rank order (the other ranks
/// get an empty list). Collective.
StatusOr<std::vector<RankTimeline>> gatherTimelines(Communicator &world, const RankTimeline &mine);

/// The line rank 0 prints after training: which steps were recorded
/// ([firstRecorded, lastStep), 0-based, of a run that began at firstStep)
/// and where the trace is.
std::string profileHeadline(const TrainerOptions &options, int64_t firstStep,
                            int64_t firstRecorded, int64_t lastStep);

class RunProfile {
public:
  /// Off unless the options ask for a profile or a summary.
  explicit RunProfile(const TrainerOptions &options);
  ~RunProfile();
  bool enabled() const { return enabled_; }

  /// Starts recording steps [firstStep, options.steps) (see above);
  /// `gpuBusId` is the rank's GPU (Backend::pciBusId; empty: none).
  Status begin(DistributedRun &dist, int64_t firstStep, const std::string &gpuBusId);
  void beforeStep(int64_t step);
  /// Stops, gathers, writes FILE and prints the summary (rank 0).
  Status finish(DistributedRun &dist);

private:
  // Records a utilisation sample (while recording).
  void sampleUtilisation();
  const TrainerOptions &options_;
  std::unique_ptr<NvmlDevice> gpu_; // the rank's GPU, when NVML reads it
  std::string gpuProblem_;          // why it does not
  bool enabled_ = false, running_ = false;
  double lastCpuSeconds_ = 0;
  int64_t lastSampleNs_ = 0;
  int64_t firstStep_ = 0, firstRecorded_ = 0;
};

} // namespace trc::rt

#endif // TRC_RUNTIME_TRAIN_RUNPROFILE_H
