//===- StopSignals.cpp - stop at a step boundary when asked to ------------===//
#include "runtime/support/StopSignals.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace trc::rt {
namespace {

constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGUSR1};
volatile std::sig_atomic_t gPending = 0;
std::atomic<bool> gGuarded{false}; // a StopSignals guard lives
// The watcher's wake-up: the destructor sets it (no handler touches it).
std::atomic<bool> *gStopWatching = nullptr;

void onStopSignal(int sig) {
  if (gPending == 0)
    gPending = sig;
}

// One line without allocating more than the message: the process is ending.
[[noreturn]] void endAfterGrace(int sig, double grace) {
  char line[256];
  int n = std::snprintf(line, sizeof line,
                        "error: %s: the step in flight and its checkpoint did not finish within "
                        "--signal-grace %g s; ending without a new checkpoint\n",
                        StopSignals::name(sig).c_str(), grace);
  if (n > 0)
    (void)!::write(2, line, size_t(n) < sizeof line ? size_t(n) : sizeof line - 1);
  ::_exit(128 + sig);
}

} // namespace

StopSignals::StopSignals(double graceSeconds) {
  gPending = 0;
  gGuarded = true;
  for (size_t i = 0; i < 3; ++i) {
    struct sigaction action {};
    action.sa_handler = onStopSignal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART; // blocking calls go on; the loop checks between steps
    sigaction(kStopSignals[i], &action, &previous_[i]);
  }
  if (graceSeconds > 0) {
    static std::atomic<bool> stop{false};
    stop = false;
    gStopWatching = &stop;
    watcher_ = std::thread([graceSeconds] {
      using Clock = std::chrono::steady_clock;
      Clock::time_point since{};
      while (!gStopWatching->load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        int sig = gPending;
        if (sig == 0)
          continue;
        if (since == Clock::time_point{})
          since = Clock::now();
        else if (std::chrono::duration<double>(Clock::now() - since).count() >= graceSeconds)
          endAfterGrace(sig, graceSeconds);
      }
    });
  }
}

StopSignals::~StopSignals() {
  if (watcher_.joinable()) {
    gStopWatching->store(true);
    watcher_.join();
  }
  for (size_t i = 0; i < 3; ++i)
    sigaction(kStopSignals[i], &previous_[i], nullptr);
  gGuarded = false;
}

int StopSignals::pending() { return gPending; }

bool StopSignals::request(int signal) {
  if (!gGuarded)
    return false;
  onStopSignal(signal);
  return true;
}

std::string StopSignals::name(int signal) {
  switch (signal) {
  case SIGTERM:
    return "SIGTERM";
  case SIGINT:
    return "SIGINT";
  case SIGUSR1:
    return "SIGUSR1";
  }
  return "signal " + std::to_string(signal);
}

} // namespace trc::rt
