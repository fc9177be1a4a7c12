//===- StopSignals.h - stop at a step boundary when asked to ----*- C++ -*-===//
//
// Slurm sends SIGTERM before it kills a preempted or timed-out job (and
// SIGKILL KillWait seconds later); users press Ctrl-C (SIGINT); batch
// systems and users send SIGUSR1 for "checkpoint and stop". While a
// StopSignals guard lives, those three set a flag instead of ending the
// process, so the trainer can finish the step in flight, write a checkpoint
// and exit. `graceSeconds` bounds that: a watcher thread ends the process
// (one line on stderr, exit status 128 + the signal) when the stop has not
// happened that long after the first signal. A second signal of the same
// kind while stopping is not special: the grace still decides.
// The previous handlers (InterruptCleanup's, the default) come back when
// the guard is destroyed. One guard per process at a time.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_SUPPORT_STOPSIGNALS_H
#define TRC_RUNTIME_SUPPORT_STOPSIGNALS_H

#include <csignal>
#include <string>
#include <thread>

namespace trc::rt {

class StopSignals {
public:
  /// Catches SIGTERM, SIGINT and SIGUSR1 until destroyed; graceSeconds <= 0:
  /// no bound.
  explicit StopSignals(double graceSeconds);
  ~StopSignals();
  StopSignals(const StopSignals &) = delete;
  StopSignals &operator=(const StopSignals &) = delete;

  /// The first signal caught since the guard began, or 0.
  static int pending();
  /// Asks for the stop `signal` would ask for, from code (a Python
  /// callback that raised); false when no guard lives (nothing to stop).
  static bool request(int signal);
  /// "SIGTERM", "SIGINT", "SIGUSR1" (or "signal N").
  static std::string name(int signal);

private:
  struct sigaction previous_[3];
  std::thread watcher_;
  bool stopWatching_ = false;
};

} // namespace trc::rt

#endif // TRC_RUNTIME_SUPPORT_STOPSIGNALS_H
