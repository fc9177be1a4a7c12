//===- InterruptCleanup.h - remove work in progress when interrupted -*- C++ -*-===//
//
// Tools stage their outputs (an artifact folder, a checkpoint, a temporary
// compile folder) and rename them into place at the end; SIGINT, SIGTERM or
// SIGHUP in between would leave the staging folder behind. A path registered
// here is removed (recursively) when one of those signals arrives, before
// the signal takes its previous course (another handler, such as LLVM's, or
// the default: the process ends with that signal). Up to kMaxPaths at once.
//
// Stale leftovers of killed processes (SIGKILL cannot be caught) are found by
// name: stagingName() puts the process id in the name and
// removeStaleStaging() removes those whose process is gone.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_SUPPORT_INTERRUPTCLEANUP_H
#define TRC_RUNTIME_SUPPORT_INTERRUPTCLEANUP_H

#include <string>
#include <utility>

namespace trc::rt {

inline constexpr int kMaxInterruptCleanupPaths = 16;

/// Removes `path` if the process is interrupted before forgetOnInterrupt(path).
/// False when kMaxInterruptCleanupPaths paths are registered already.
bool removeOnInterrupt(const std::string &path);
/// Stops removing `path` on interrupt (it was renamed into place, or removed).
void forgetOnInterrupt(const std::string &path);

/// removeOnInterrupt(path) for the guard's scope (a temporary file that is
/// renamed into place or removed before the scope ends).
class InterruptCleanupGuard {
public:
  explicit InterruptCleanupGuard(std::string path)
      : path_(std::move(path)), registered_(removeOnInterrupt(path_)) {}
  ~InterruptCleanupGuard() {
    if (registered_)
      forgetOnInterrupt(path_);
  }
  InterruptCleanupGuard(const InterruptCleanupGuard &) = delete;
  InterruptCleanupGuard &operator=(const InterruptCleanupGuard &) = delete;

private:
  std::string path_;
  bool registered_;
};

/// "<target>.partial-<pid>": the prefix of this process's staging names for
/// `target` (a unique suffix follows).
std::string stagingName(const std::string &target);
/// Removes `<target><marker><pid>*` entries beside `target` whose process no
/// longer exists (left by a killed run); returns how many it removed. The
/// marker is stagingName's ".partial-", or ".tmp-" for writeFileAtomic's
/// temporary files (formats/FileOps.h).
int removeStaleStaging(const std::string &target, const std::string &marker = ".partial-");

} // namespace trc::rt

#endif // TRC_RUNTIME_SUPPORT_INTERRUPTCLEANUP_H
