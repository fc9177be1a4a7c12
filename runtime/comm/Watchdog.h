//===- Watchdog.h - no rank waits forever on a lost peer --------------------===//
//
// Blocking MPI calls cannot be cancelled, so a rank whose peer died or hangs
// would wait forever where the launcher does not stop the job. The watchdog
// is a background thread that the communicators arm around every blocking
// call (watch() returns a guard; the call is watched until the guard dies).
// Every `pollSeconds` (0.25 s) it looks at the calls in progress and ends the
// process, printing one line to stderr and calling _exit(kExitRankLost)
// (support/ExitCodes.h: a relaunch can continue the job), when
//   - a call has waited longer than the timeout:
//       error: collective allReduce timed out after 300 s waiting for ranks
//       1, 2, 3 (rank(s) not responding; this is rank 0 of 4)
//       error: recv from rank 1 timed out after 300 s waiting for rank 1
//       (not responding; this is rank 0 of 2)
//   - a peer process on this machine is gone (exited or killed) -- unless
//     it marked its exit as reported (markReportedExit: it printed its own
//     error; then this process ends with kExitError and no line) -- the peers
//     are known by pid, start time and pid namespace (setPeers), and checked
//     through /proc while a call waits (a point-to-point call's own peer
//     first, so that it is the one named when several are gone):
//       error: rank 1 (pid 4242 on host h) is gone (exited or was killed)
//       while rank 0 waited in collective allReduce
//   - a peer process on this machine has been stopped (SIGSTOP, SIGTSTP;
//     /proc state T) for stoppedPeerSeconds (30 s) of this call's wait:
//       error: rank 1 (pid 4242 on host h) has been stopped (SIGSTOP or
//       SIGTSTP) for 30 s while rank 0 waited in collective allReduce
//     (a stop the whole job shares, such as Ctrl-Z of the launcher, stops
//     the watcher too and is not counted; a debugger's stop, state t, is
//     left alone).
// The timeout is TRC_COLLECTIVE_TIMEOUT_S (seconds, default 300; 0 turns the
// timeout off; readCollectiveTimeout parses it). Peers on other machines
// cannot be checked: their loss surfaces as an MPI error or, at the latest,
// as the timeout. Calls watched with `checkPeers` false (MPI_Finalize, where
// finished peers legitimately exit) only time out.
//
// The process's communicators share Watchdog::process(); tests may make
// their own. The thread starts on the first watch() and stops with the
// watchdog; it sleeps while no call is watched, and arming wakes it only
// from that sleep (at most once per poll interval), so a watched call costs
// a mutex and rarely a wake-up.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_WATCHDOG_H
#define TRC_RUNTIME_WATCHDOG_H

#include "runtime/support/Status.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace trc::rt {

// Default of TRC_COLLECTIVE_TIMEOUT_S.
constexpr double kDefaultCollectiveTimeoutSeconds = 300;
// How long a local peer may stay stopped while a call waits for it.
constexpr double kDefaultStoppedPeerSeconds = 30;

/// TRC_COLLECTIVE_TIMEOUT_S as seconds (the default when unset, 0 = no
/// timeout); an error naming the variable when it is not a non-negative
/// number.
StatusOr<double> readCollectiveTimeout();

// One rank's process, as its own rank sees it (identifyThisProcess).
struct PeerProcess {
  int64_t pid = 0;
  // Field 22 of /proc/PID/stat (clock ticks since boot): tells a reused pid
  // from the original process. 0 when unknown.
  uint64_t startTime = 0;
  // Kernel boot id + pid namespace inode: equal keys mean this process can
  // see that pid. Empty when /proc could not tell (then never checked).
  std::string namespaceKey;
  std::string host;
};

PeerProcess identifyThisProcess();

/// A rank that printed its own error and leaves alone (its peers wait in a
/// collective) marks its exit as reported (a file in `dir`, named by its
/// pid and start time), so that a peer's watchdog that finds it gone ends
/// quietly with kExitError instead of adding a second `error:` line.
/// `dir` is reportedExitDir(): under mpirun the job's session folder
/// (OMPI_FILE_LOCATION), which mpirun removes when the job ends; elsewhere
/// /dev/shm, where markers older than a minute are removed by the next one
/// made (a peer sees one within a poll interval).
std::string reportedExitDir();
void markReportedExit(const std::string &dir = reportedExitDir());
/// Whether `peer` marked its exit as reported (in `dir`).
bool exitWasReported(const PeerProcess &peer, const std::string &dir = reportedExitDir());

// What a watched call waits for, for the message.
struct WatchedCall {
  const char *what = "";      // "allReduce", "recv", "MPI_Init", ...
  int peer = -1;              // world rank of the point-to-point peer, or -1
  // World ranks of the communicator's members (null: the whole world).
  const std::vector<int> *group = nullptr;
  bool checkPeers = true;
};

class Watchdog {
public:
  Watchdog();
  ~Watchdog();
  Watchdog(const Watchdog &) = delete;
  Watchdog &operator=(const Watchdog &) = delete;

  // The one the process's communicators use.
  static Watchdog &process();

  // Seconds a call may wait (0: forever).
  void setTimeout(double seconds);
  double timeout() const;
  // This process's world rank, the world size and every rank's process
  // (indexed by world rank; may be empty).
  void setPeers(int selfRank, int worldSize, std::vector<PeerProcess> peers);
  // Where peers mark a reported exit (markReportedExit; tests).
  void setReportedExitDir(std::string dir);

  class Guard {
  public:
    Guard(Guard &&other) noexcept : dog_(other.dog_), id_(other.id_) {
      other.dog_ = nullptr;
    }
    Guard(const Guard &) = delete;
    Guard &operator=(const Guard &) = delete;
    Guard &operator=(Guard &&) = delete;
    ~Guard();

  private:
    friend class Watchdog;
    Guard(Watchdog *dog, uint64_t id) : dog_(dog), id_(id) {}
    Watchdog *dog_;
    uint64_t id_;
  };
  // Watches `call` until the guard is destroyed. `call.group` must outlive
  // the guard.
  [[nodiscard]] Guard watch(const WatchedCall &call);

  // How often the thread looks (tests may shorten it before the first watch).
  void setPollSeconds(double seconds);
  // How long a local peer may stay stopped (tests shorten it).
  void setStoppedPeerSeconds(double seconds);

private:
  struct Entry {
    uint64_t id;
    WatchedCall call;
    std::chrono::steady_clock::time_point start;
  };
  void run();
  void unwatch(uint64_t id);
  // The message for a call that timed out / lost `lostRank`.
  std::string timeoutMessage(const Entry &e) const;
  std::string lostMessage(const Entry &e, int lostRank, bool stopped) const;
  // A local peer that is gone, or stopped for stoppedPeerSeconds_ (`preferred`,
  // the awaited peer, if it is): its world rank, or -1.
  struct LostPeer {
    int rank = -1;
    bool stopped = false;
  };
  LostPeer findLostPeer(int preferred, std::chrono::steady_clock::time_point now);
  enum class PeerState { Running, Stopped, Gone };
  // Local peer `r` (a world rank) as /proc shows it; Running when it cannot tell.
  PeerState peerState(size_t r) const;
  [[noreturn]] static void die(const std::string &message);

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
  bool started_ = false, stop_ = false, idle_ = false;
  double timeout_ = kDefaultCollectiveTimeoutSeconds;
  double pollSeconds_ = 0.25;
  double stoppedPeerSeconds_ = kDefaultStoppedPeerSeconds;
  // Since when each peer has been seen stopped (time_point{}: not stopped).
  std::vector<std::chrono::steady_clock::time_point> stoppedSince_;
  uint64_t nextId_ = 1;
  std::vector<Entry> active_;
  int selfRank_ = 0, worldSize_ = 1;
  std::vector<PeerProcess> peers_;
  std::string reportedExitDir_ = reportedExitDir();
  std::string selfNamespace_;
};

} // namespace trc::rt

#endif // TRC_RUNTIME_WATCHDOG_H
