//===- InterruptCleanup.cpp - remove work in progress when interrupted ----===//
#include "runtime/support/InterruptCleanup.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <signal.h>
#include <unistd.h>

namespace trc::rt {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr size_t kMaxPath = 4096;

// Slots the handler reads without locks: a slot's path is complete before
// its flag is set, and cleared only after the flag is.
struct Slot {
  std::atomic<bool> used{false};
  char path[kMaxPath];
};
Slot slots[kMaxInterruptCleanupPaths];
std::mutex registering; // between threads that register; the handler does not lock
struct sigaction previous[sizeof(kSignals) / sizeof(kSignals[0])];
std::once_flag installed;

void onInterrupt(int sig) {
  for (Slot &slot : slots)
    if (slot.used.exchange(false)) {
      std::error_code ignored; // the process is ending; remove what we can
      std::filesystem::remove_all(slot.path, ignored);
    }
  for (size_t i = 0; i < sizeof(kSignals) / sizeof(kSignals[0]); ++i)
    if (kSignals[i] == sig) {
      sigaction(sig, &previous[i], nullptr);
      raise(sig); // the previous disposition: a handler, or the default end
      return;
    }
}

void install() {
  for (size_t i = 0; i < sizeof(kSignals) / sizeof(kSignals[0]); ++i) {
    struct sigaction action {};
    action.sa_handler = onInterrupt;
    sigemptyset(&action.sa_mask);
    sigaction(kSignals[i], &action, &previous[i]);
  }
}
} // namespace

bool removeOnInterrupt(const std::string &path) {
  if (path.size() >= kMaxPath)
    return false;
  std::call_once(installed, install);
  std::lock_guard<std::mutex> lock(registering);
  for (Slot &slot : slots)
    if (!slot.used.load()) {
      std::memcpy(slot.path, path.c_str(), path.size() + 1);
      slot.used.store(true);
      return true;
    }
  return false;
}

void forgetOnInterrupt(const std::string &path) {
  std::lock_guard<std::mutex> lock(registering);
  for (Slot &slot : slots)
    if (slot.used.load() && path == slot.path)
      slot.used.store(false);
}

std::string stagingName(const std::string &target) {
  return target + ".partial-" + std::to_string(::getpid());
}

int removeStaleStaging(const std::string &target, const std::string &marker) {
  namespace fs = std::filesystem;
  fs::path full = fs::absolute(target);
  std::string prefix = full.filename().string() + marker;
  std::error_code ec;
  int removed = 0;
  for (const fs::directory_entry &entry : fs::directory_iterator(full.parent_path(), ec)) {
    std::string name = entry.path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0)
      continue;
    // "<pid>" or "<pid>-<unique>": a live process keeps its staging.
    const char *digits = name.c_str() + prefix.size();
    char *end = nullptr;
    long pid = std::strtol(digits, &end, 10);
    if (end == digits || (*end != '\0' && *end != '-') || pid <= 0)
      continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH)
      continue;
    std::error_code ignored;
    if (fs::remove_all(entry.path(), ignored) > 0)
      ++removed;
  }
  return removed;
}

} // namespace trc::rt
