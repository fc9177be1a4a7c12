//===- Supervisor.cpp - run a job, relaunch it when a rank is lost ---------===//
#include "runtime/launch/Supervisor.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <sys/wait.h>

namespace trc::rt {
namespace {

std::atomic<pid_t> gChild{0};
std::atomic<bool> gInterrupted{false};

constexpr int kForwarded[] = {SIGTERM, SIGINT, SIGUSR1};

void forward(int sig, siginfo_t *info, void *) {
  gInterrupted = true;
  // Ctrl-C at a terminal reached the launcher too (same process group).
  bool fromTerminal = sig == SIGINT && info && info->si_code != SI_USER &&
                      info->si_code != SI_QUEUE;
  pid_t child = gChild;
  if (child > 0 && !fromTerminal)
    ::kill(child, sig);
}

// Owns the handlers while the supervisor runs.
class ForwardSignals {
public:
  ForwardSignals() {
    for (size_t i = 0; i < std::size(kForwarded); ++i) {
      struct sigaction action {};
      action.sa_sigaction = forward;
      action.sa_flags = SA_SIGINFO | SA_RESTART;
      sigemptyset(&action.sa_mask);
      sigaction(kForwarded[i], &action, &previous_[i]);
    }
  }
  ~ForwardSignals() {
    for (size_t i = 0; i < std::size(kForwarded); ++i)
      sigaction(kForwarded[i], &previous_[i], nullptr);
  }

private:
  struct sigaction previous_[std::size(kForwarded)];
};

// Starts argv; its waitpid status, or an error when it cannot start.
StatusOr<int> runToEnd(const std::vector<std::string> &argv) {
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0)
    return Status::error(std::string("pipe: ") + std::strerror(errno));
  pid_t pid = ::fork();
  if (pid < 0)
    return Status::error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(ready[0]);
    for (int sig : kForwarded)
      ::signal(sig, SIG_DFL);
    std::vector<char *> args;
    for (const std::string &a : argv)
      args.push_back(const_cast<char *>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    int e = errno; // tell the parent why, through the pipe
    (void)!::write(ready[1], &e, sizeof e);
    ::_exit(127);
  }
  gChild = pid;
  ::close(ready[1]);
  int execError = 0;
  ssize_t n;
  while ((n = ::read(ready[0], &execError, sizeof execError)) < 0 && errno == EINTR) {
  }
  ::close(ready[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  gChild = 0;
  if (n == sizeof execError)
    return Status::error(argv[0] + ": cannot run: " + std::strerror(execError));
  return status;
}

} // namespace

StatusOr<int> superviseElastic(const LaunchOptions &given, const LaunchObserver &observe) {
  StatusOr<JobCommand> job = readJobCommand(given.command);
  if (!job.ok())
    return job.status();
  if (given.maxRestarts > 0 && job->checkpointDir.empty())
    return Status::error("--max-restarts " + std::to_string(given.maxRestarts) +
                         " relaunches from the job's checkpoints: give trc-run "
                         "--checkpoint-dir (and --checkpoint-every), or --max-restarts 0");
  LaunchOptions options = given;
  auto available = [&]() -> StatusOr<int64_t> {
    if (options.hostfile.empty())
      return options.ranks;
    StatusOr<std::vector<Host>> hosts = readHostfile(options.hostfile);
    if (!hosts.ok())
      return hosts.status();
    return totalSlots(*hosts);
  };
  if (options.ranks <= 0) {
    StatusOr<int64_t> n = available();
    if (!n.ok())
      return n.status();
    if (options.hostfile.empty())
      return Status::error("how many ranks? give -n N or --hostfile FILE");
    options.ranks = *n;
  }
  if (options.minRanks > options.ranks)
    return Status::error("--min-ranks " + std::to_string(options.minRanks) +
                         " is more than the " + std::to_string(options.ranks) +
                         " ranks of the first launch");

  ForwardSignals signals;
  gInterrupted = false;
  const int64_t before = lastCheckpointStep(job->checkpointDir);
  for (int attempt = 0;; ++attempt) {
    StatusOr<int64_t> ranks = available();
    if (!ranks.ok())
      return ranks.status();
    StatusOr<WorldChoice> world = chooseWorld(*ranks, options, *job);
    if (!world.ok())
      return world.status();
    LaunchEvent event;
    event.attempt = attempt;
    event.available = *ranks;
    event.world = *world;
    event.checkpointStep = lastCheckpointStep(job->checkpointDir);
    // Resume once this job has a checkpoint of its own; until then the
    // user's flags decide (start, --resume, --overwrite-checkpoints).
    event.resumed = attempt > 0 && event.checkpointStep != before;
    event.argv = launchCommand(options, *world, event.resumed);
    observe(event);
    auto start = std::chrono::steady_clock::now();
    StatusOr<int> status = runToEnd(event.argv);
    if (!status.ok())
      return status.status();
    event.kind = LaunchEvent::End;
    event.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    event.end = classifyEnding(*status, gInterrupted);
    event.checkpointStep = lastCheckpointStep(job->checkpointDir);
    event.willRestart = event.end.ending == Ending::RankLost && attempt < options.maxRestarts;
    observe(event);
    if (!event.willRestart)
      return event.end.exitStatus;
  }
}

} // namespace trc::rt
