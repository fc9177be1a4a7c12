//===- Watchdog.cpp - no rank waits forever on a lost peer ------------------===//
//
// See Watchdog.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/Watchdog.h"

#include "runtime/support/ExitCodes.h"
#include "runtime/support/Parse.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace trc::rt {

namespace {

// Up to 4 KiB of a /proc file; false if it cannot be opened or read.
bool readProcFile(const char *path, std::string &out, int &err) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    err = errno;
    return false;
  }
  char buf[4096];
  ssize_t n;
  do {
    n = ::read(fd, buf, sizeof buf);
  } while (n < 0 && errno == EINTR);
  err = n < 0 ? errno : 0;
  ::close(fd);
  if (n < 0)
    return false;
  out.assign(buf, static_cast<size_t>(n));
  return true;
}

// State letter and start time (field 22) from a /proc/PID/stat line.
bool parseStat(const std::string &stat, char &state, uint64_t &startTime) {
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size())
    return false;
  const char *p = stat.c_str() + paren + 2; // field 3, the state
  state = *p;
  // Field 22 is 19 fields after the state.
  for (int field = 3; field < 22; ++field) {
    p = std::strchr(p, ' ');
    if (!p)
      return false;
    ++p;
  }
  std::string_view field(p);
  std::optional<uint64_t> v = parseUint64(field.substr(0, field.find(' ')));
  if (v)
    startTime = *v;
  return v.has_value();
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

std::string formatSeconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

// "1, 2, 3" or "1, 2, ..., 63 (62 ranks)".
std::string formatRanks(const std::vector<int> &ranks) {
  std::string s;
  size_t n = ranks.size();
  for (size_t i = 0; i < n; ++i) {
    if (n > 12 && i == 8) {
      s += ", ...";
      i = n - 3;
      continue;
    }
    if (i)
      s += ", ";
    s += std::to_string(ranks[i]);
  }
  if (n > 12)
    s += " (" + std::to_string(n) + " ranks)";
  return s;
}

} // namespace

StatusOr<double> readCollectiveTimeout() {
  const char *value = ::getenv("TRC_COLLECTIVE_TIMEOUT_S");
  if (!value)
    return kDefaultCollectiveTimeoutSeconds;
  // parseDouble reads "1.5" whatever LC_NUMERIC says (strtod did not).
  std::optional<double> v = parseDouble(value);
  bool startsWithDigit =
      (value[0] >= '0' && value[0] <= '9') || value[0] == '.';
  if (!startsWithDigit || !v || !(*v >= 0) || *v > 1e9)
    return Status::error(std::string("environment variable "
                                     "TRC_COLLECTIVE_TIMEOUT_S='") +
                         value + "' is not a number of seconds >= 0");
  return *v;
}

PeerProcess identifyThisProcess() {
  PeerProcess self;
  self.pid = ::getpid();
  std::string text;
  int err = 0;
  char state = 0;
  if (readProcFile("/proc/self/stat", text, err))
    (void)parseStat(text, state, self.startTime);
  std::string boot;
  char ns[256];
  ssize_t n = ::readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
  if (readProcFile("/proc/sys/kernel/random/boot_id", boot, err) && n > 0 &&
      self.startTime)
    self.namespaceKey = trimmed(boot) + "/" + std::string(ns, size_t(n));
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) == 0)
    self.host = host;
  return self;
}

Watchdog::Watchdog() = default;

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable())
    thread_.join();
}

Watchdog &Watchdog::process() {
  // Never destroyed: its thread may still be waiting while the process exits.
  static Watchdog *dog = new Watchdog();
  return *dog;
}

void Watchdog::setTimeout(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  timeout_ = seconds;
}

double Watchdog::timeout() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return timeout_;
}

void Watchdog::setPollSeconds(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  pollSeconds_ = seconds;
}

void Watchdog::setStoppedPeerSeconds(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  stoppedPeerSeconds_ = seconds;
}

void Watchdog::setPeers(int selfRank, int worldSize,
                        std::vector<PeerProcess> peers) {
  std::lock_guard<std::mutex> lock(mutex_);
  selfRank_ = selfRank;
  worldSize_ = worldSize;
  peers_ = std::move(peers);
  stoppedSince_.assign(peers_.size(), {});
  selfNamespace_.clear();
  if (selfRank >= 0 && size_t(selfRank) < peers_.size())
    selfNamespace_ = peers_[size_t(selfRank)].namespaceKey;
}

void Watchdog::setReportedExitDir(std::string dir) {
  std::lock_guard<std::mutex> lock(mutex_);
  reportedExitDir_ = std::move(dir);
}

Watchdog::Guard Watchdog::watch(const WatchedCall &call) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!started_) {
    started_ = true;
    thread_ = std::thread([this] { run(); });
  }
  uint64_t id = nextId_++;
  active_.push_back({id, call, std::chrono::steady_clock::now()});
  if (idle_)
    wake_.notify_one();
  return Guard(this, id);
}

Watchdog::Guard::~Guard() {
  if (dog_)
    dog_->unwatch(id_);
}

void Watchdog::unwatch(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find_if(active_.begin(), active_.end(),
                         [&](const Entry &e) { return e.id == id; });
  if (it != active_.end())
    active_.erase(it);
}

void Watchdog::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    if (active_.empty()) {
      // Sleep until a call is watched (watch() wakes an idle thread only).
      // A stop is counted within one stretch of waiting only.
      std::fill(stoppedSince_.begin(), stoppedSince_.end(), std::chrono::steady_clock::time_point{});
      idle_ = true;
      wake_.wait(lock, [&] { return stop_ || !active_.empty(); });
      idle_ = false;
      continue;
    }
    wake_.wait_for(lock, std::chrono::duration<double>(pollSeconds_));
    if (stop_ || active_.empty())
      continue;
    auto now = std::chrono::steady_clock::now();
    const Entry *checking = nullptr;
    for (const Entry &e : active_) {
      double waited = std::chrono::duration<double>(now - e.start).count();
      if (timeout_ > 0 && waited >= timeout_)
        die(timeoutMessage(e));
      if (e.call.checkPeers && !checking)
        checking = &e;
    }
    if (checking) {
      LostPeer lost = findLostPeer(checking->call.peer, now);
      if (lost.rank >= 0 && !lost.stopped &&
          exitWasReported(peers_[size_t(lost.rank)], reportedExitDir_))
        ::_exit(kExitError); // its error is the job's one line
      if (lost.rank >= 0)
        die(lostMessage(*checking, lost.rank, lost.stopped));
    }
  }
}

Watchdog::LostPeer Watchdog::findLostPeer(int preferred,
                                          std::chrono::steady_clock::time_point now) {
  if (selfNamespace_.empty())
    return {};
  LostPeer found;
  auto consider = [&](size_t r) {
    PeerState state = peerState(r);
    if (state != PeerState::Stopped)
      stoppedSince_[r] = {};
    else if (stoppedSince_[r] == std::chrono::steady_clock::time_point{})
      stoppedSince_[r] = now;
    bool stoppedTooLong =
        state == PeerState::Stopped &&
        std::chrono::duration<double>(now - stoppedSince_[r]).count() >= stoppedPeerSeconds_;
    if (found.rank < 0 && (state == PeerState::Gone || stoppedTooLong))
      found = {int(r), state == PeerState::Stopped};
  };
  // The awaited peer first: when it died and others then gave up, the
  // message names the rank this one was really waiting for.
  if (preferred >= 0 && size_t(preferred) < peers_.size())
    consider(size_t(preferred));
  for (size_t r = 0; r < peers_.size(); ++r)
    if (int(r) != preferred)
      consider(r);
  return found;
}

Watchdog::PeerState Watchdog::peerState(size_t r) const {
  const PeerProcess &p = peers_[r];
  if (int(r) == selfRank_ || p.namespaceKey != selfNamespace_ || p.pid <= 0)
    return PeerState::Running;
  std::string path = "/proc/" + std::to_string(p.pid) + "/stat", stat;
  int err = 0;
  if (!readProcFile(path.c_str(), stat, err)) // else: cannot tell
    return err == ENOENT || err == ESRCH ? PeerState::Gone : PeerState::Running;
  char state = 0;
  uint64_t start = 0;
  if (!parseStat(stat, state, start))
    return PeerState::Running;
  if (state == 'Z' || state == 'X' || (p.startTime && start != p.startTime))
    return PeerState::Gone;
  return state == 'T' ? PeerState::Stopped : PeerState::Running;
}

std::string Watchdog::timeoutMessage(const Entry &e) const {
  std::string self = "this is rank " + std::to_string(selfRank_) + " of " +
                     std::to_string(worldSize_);
  std::string after = " timed out after " + formatSeconds(timeout_) + " s";
  if (e.call.peer >= 0)
    return "error: " + std::string(e.call.what) + " rank " +
           std::to_string(e.call.peer) + after + " waiting for rank " +
           std::to_string(e.call.peer) + " (not responding; " + self + ")";
  std::vector<int> others;
  if (e.call.group) {
    for (int r : *e.call.group)
      if (r != selfRank_)
        others.push_back(r);
  } else {
    for (int r = 0; r < worldSize_; ++r)
      if (r != selfRank_)
        others.push_back(r);
  }
  return "error: collective " + std::string(e.call.what) + after +
         " waiting for ranks " + (others.empty() ? "?" : formatRanks(others)) +
         " (rank(s) not responding; " + self + ")";
}

std::string Watchdog::lostMessage(const Entry &e, int lostRank, bool stopped) const {
  const PeerProcess &p = peers_[size_t(lostRank)];
  std::string where = e.call.peer >= 0
                          ? std::string(e.call.what) + " rank " +
                                std::to_string(e.call.peer)
                          : "collective " + std::string(e.call.what);
  std::string what = stopped ? "has been stopped (SIGSTOP or SIGTSTP) for " +
                                   formatSeconds(stoppedPeerSeconds_) + " s"
                             : "is gone (exited or was killed)";
  return "error: rank " + std::to_string(lostRank) + " (pid " + std::to_string(p.pid) +
         " on host " + p.host + ") " + what + " while rank " + std::to_string(selfRank_) +
         " waited in " + where;
}

namespace {
constexpr const char kReportedPrefix[] = "trc-reported-exit-";

std::string reportedMarker(const PeerProcess &p, const std::string &dir) {
  return dir + "/" + kReportedPrefix + std::to_string(p.pid) + "-" + std::to_string(p.startTime);
}
} // namespace

std::string reportedExitDir() {
  const char *session = std::getenv("OMPI_FILE_LOCATION");
  struct stat st;
  if (session && *session && ::stat(session, &st) == 0 && S_ISDIR(st.st_mode))
    return session;
  return "/dev/shm";
}

void markReportedExit(const std::string &dir) {
  // Markers of jobs that ended a while ago (their peers have long seen them).
  if (DIR *d = ::opendir(dir.c_str())) {
    time_t now = ::time(nullptr);
    while (dirent *e = ::readdir(d)) {
      if (std::strncmp(e->d_name, kReportedPrefix, sizeof(kReportedPrefix) - 1) != 0)
        continue;
      std::string path = dir + "/" + e->d_name;
      struct stat st;
      if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && now - st.st_mtime > 60)
        ::unlink(path.c_str());
    }
    ::closedir(d);
  }
  PeerProcess self = identifyThisProcess();
  int fd = ::open(reportedMarker(self, dir).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd >= 0)
    ::close(fd);
}

bool exitWasReported(const PeerProcess &peer, const std::string &dir) {
  return peer.pid > 0 && ::access(reportedMarker(peer, dir).c_str(), F_OK) == 0;
}

void Watchdog::die(const std::string &message) {
  std::string line = message + "\n";
  const char *p = line.data();
  size_t left = line.size();
  while (left) {
    ssize_t n = ::write(2, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    p += n;
    left -= size_t(n);
  }
  ::_exit(kExitRankLost);
}

} // namespace trc::rt
