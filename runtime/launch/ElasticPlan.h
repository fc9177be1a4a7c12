//===- ElasticPlan.h - what an elastic relaunch decides, as plain data -----===//
//
// trc-launch runs a trc-run job under mpirun or srun and relaunches it when a
// rank is lost (Supervisor.h runs the processes). The decisions are here, as
// functions of data, so that they are tested without processes:
//   - what the job's command says that a relaunch needs (JobCommand: the
//     checkpoint folder, global batch, gradient accumulation, --config);
//   - how many ranks are available (an Open MPI hostfile, read again before
//     every launch, so a node taken out of it is not used again);
//   - the world of the next launch (chooseWorld): the most ranks available,
//     at most the first launch's and at least --min-ranks, for which the
//     job's --config is a valid plan (parseParallelPlan: tensor x pipeline
//     degrees and shard degrees divide it) and the global batch still splits;
//     gradient accumulation grows as the data-parallel degree shrinks, so a
//     rank's microbatch (and memory) stays the size it was and the global
//     batch, hence the loss curve, is kept;
//   - how an attempt ended (classifyEnding: an error the job named is not
//     retried; a lost, killed or silent rank is);
//   - the command of the next launch (launchCommand): `--resume auto` in
//     place of --resume / --overwrite-checkpoints once the job has written a
//     checkpoint of its own, and the chosen --grad-accum.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_LAUNCH_ELASTICPLAN_H
#define TRC_RUNTIME_LAUNCH_ELASTICPLAN_H

#include "runtime/support/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trc::rt {

struct LaunchOptions {
  std::string launcher;               // "mpirun" or "srun"
  int64_t ranks = 0;                  // the first launch's world (0: from the hostfile)
  int64_t minRanks = 0;               // 0: the first launch's
  std::string hostfile;               // Open MPI's format; empty: none
  int64_t maxRestarts = 3;
  std::vector<std::string> launcherArgs;
  std::vector<std::string> command;   // trc-run and its flags
};

/// The flags of the trc-run command a relaunch reads or rewrites.
struct JobCommand {
  std::string checkpointDir;
  int64_t batchSize = 0;              // global
  int64_t gradAccum = 1;
  std::string config;                 // --config's value; empty: none
};

/// Reads `command` (trc-run's flags as --flag value or --flag=value); an
/// error naming the flag when a value is missing or not a number.
StatusOr<JobCommand> readJobCommand(const std::vector<std::string> &command);

struct Host {
  std::string name;
  int64_t slots = 1;
};

/// An Open MPI hostfile: one host per line, `name [slots=N]`, '#' comments.
StatusOr<std::vector<Host>> readHostfile(const std::string &path);
int64_t totalSlots(const std::vector<Host> &hosts);

struct WorldChoice {
  int64_t ranks = 0;
  int64_t gradAccum = 1;
};

/// The world of a launch with `available` ranks (see the banner); an error
/// saying why none fits.
StatusOr<WorldChoice> chooseWorld(int64_t available, const LaunchOptions &options,
                                  const JobCommand &job);

enum class Ending {
  Finished,    // exit 0
  Error,       // the job named an error (exit 1): a relaunch meets it again
  RankLost,    // a rank was killed, or ended because another was lost
  Interrupted, // trc-launch itself was asked to stop (SIGTERM, SIGINT)
};

struct AttemptEnd {
  Ending ending = Ending::Error;
  int exitStatus = 0;  // the launcher's (128 + N for a signal)
  int signal = 0;      // the signal a rank (or the launcher) died of, if known
};

/// How an attempt ended, from waitpid's status of the launcher and whether
/// trc-launch was asked to stop meanwhile.
AttemptEnd classifyEnding(int waitStatus, bool interrupted);

/// One line saying why, e.g. "a rank was killed by signal 9 (Killed)".
std::string describeEnding(const AttemptEnd &end);

/// The launcher's command for one attempt: mpirun -np W [--hostfile H]
/// (or srun -n W), the launcher's extra arguments, then the job's command
/// with --grad-accum set to the world's and, when `resume`, --resume auto in
/// place of --resume and --overwrite-checkpoints.
std::vector<std::string> launchCommand(const LaunchOptions &options, const WorldChoice &world,
                                       bool resume);

/// The step of the checkpoint `latest` points at in `checkpointDir`, or -1
/// when there is none.
int64_t lastCheckpointStep(const std::string &checkpointDir);

} // namespace trc::rt

#endif // TRC_RUNTIME_LAUNCH_ELASTICPLAN_H
