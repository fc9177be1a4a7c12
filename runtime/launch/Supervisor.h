//===- Supervisor.h - run a job, relaunch it when a rank is lost -----------===//
//
// superviseElastic runs the launcher (mpirun or srun) with the job, waits for
// it and, when a rank was lost (ElasticPlan.h: classifyEnding), relaunches
// it up to LaunchOptions::maxRestarts times: the available ranks are counted
// again (the hostfile is re-read), the world chosen (chooseWorld), and the
// job resumes from its last checkpoint (`--resume auto`) once it has written
// one. An error the job named, or a stop asked of trc-launch, is not
// retried. The caller sees every launch and every end as an event (data; the
// tool prints them).
//
// Signals: SIGTERM, SIGUSR1, and SIGINT sent to trc-launch's pid by a
// process (kill) are passed on to the launcher, which passes them to the
// ranks (trc-run then checkpoints and stops; support/StopSignals.h). A
// terminal's Ctrl-C reaches the launcher directly (same process group) and
// is not sent twice. Either way the job is not relaunched.
//
// Preconditions: one supervisor per process (it owns the signal handlers
// while it runs); the launcher is on PATH.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_LAUNCH_SUPERVISOR_H
#define TRC_RUNTIME_LAUNCH_SUPERVISOR_H

#include "runtime/launch/ElasticPlan.h"

#include <functional>

namespace trc::rt {

struct LaunchEvent {
  enum Kind { Launch, End } kind = Launch;
  int attempt = 0;                 // 0: the first launch
  int64_t available = 0;           // ranks available when it was launched
  WorldChoice world;
  bool resumed = false;            // launched with --resume auto
  int64_t checkpointStep = -1;     // the job's last checkpoint (-1: none)
  std::vector<std::string> argv;   // Launch: the command
  AttemptEnd end;                  // End: how it ended
  double seconds = 0;              // End: how long it ran
  bool willRestart = false;        // End: another attempt follows
};

using LaunchObserver = std::function<void(const LaunchEvent &)>;

/// Runs the job to its end; the exit status trc-launch should end with
/// (the last attempt's), or an error (bad options, no world fits, the
/// launcher cannot start).
StatusOr<int> superviseElastic(const LaunchOptions &options, const LaunchObserver &observe);

} // namespace trc::rt

#endif // TRC_RUNTIME_LAUNCH_SUPERVISOR_H
