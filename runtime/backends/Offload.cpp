//===- Offload.cpp - the copy entries compiled programs call ---------------===//
//
// See Offload.h. The registry remembers each copy in flight (its buffers and
// direction) from its start to its wait.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/Offload.h"

#include "trc/Abi/OffloadAbi.h"

#include <mutex>
#include <string>
#include <vector>

using namespace trc::rt;

namespace {

struct InFlight {
  bool active = false;
  int64_t device = 0, host = 0, bytes = 0, direction = 0;
};

struct Registry {
  std::mutex mutex;
  CopyEngine *engine = nullptr;
  char *host = nullptr;
  int64_t hostBytes = 0;
  std::vector<InFlight> copies;
  std::string error; // the first failure, until taken
};

Registry &registry() {
  static Registry r;
  return r;
}

void recordLocked(Registry &r, const std::string &message) {
  if (r.error.empty())
    r.error = message;
}

std::string copyName(int64_t copy) { return "copy " + std::to_string(copy); }

} // namespace

extern "C" void trc_rt_offload_start(int64_t copy, int64_t direction, int64_t bytes,
                                     int64_t device, int64_t host) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const char *what = trc::abi::kOffloadStartSymbol;
  if (!r.error.empty())
    return;
  if (!r.engine)
    return recordLocked(r, std::string(what) + ": called outside a run with a host arena");
  if (copy < 0 || copy > (int64_t(1) << 30) ||
      (direction != trc::abi::kOffloadToHost && direction != trc::abi::kOffloadToDevice) ||
      bytes < 0)
    return recordLocked(r, std::string(what) + ": bad copy number, direction or size from the "
                                               "program");
  if (host < 0 || host > r.hostBytes || bytes > r.hostBytes - host)
    return recordLocked(r, std::string(what) + ": " + copyName(copy) + " of " +
                               std::to_string(bytes) + " bytes at offset " +
                               std::to_string(host) + " lies outside the host arena (" +
                               std::to_string(r.hostBytes) + " bytes)");
  if (size_t(copy) >= r.copies.size())
    r.copies.resize(size_t(copy) + 1);
  InFlight &f = r.copies[size_t(copy)];
  if (f.active)
    return recordLocked(r, std::string(what) + ": " + copyName(copy) +
                               " started again before its wait");
  f = {true, device, host, bytes, direction};
  void *devicePtr = reinterpret_cast<void *>(static_cast<intptr_t>(device));
  void *hostPtr = r.host + host;
  Status s = direction == trc::abi::kOffloadToHost
                 ? r.engine->start(copy, CopyDirection::ToHost, hostPtr, devicePtr, size_t(bytes))
                 : r.engine->start(copy, CopyDirection::ToDevice, devicePtr, hostPtr,
                                   size_t(bytes));
  if (!s) {
    f.active = false;
    recordLocked(r, std::string(what) + ": " + copyName(copy) + ": " + s.message());
  }
}

extern "C" void trc_rt_offload_wait(int64_t copy, int64_t device, int64_t host) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  const char *what = trc::abi::kOffloadWaitSymbol;
  if (!r.error.empty())
    return;
  if (!r.engine)
    return recordLocked(r, std::string(what) + ": called outside a run with a host arena");
  if (copy < 0 || size_t(copy) >= r.copies.size() || !r.copies[size_t(copy)].active)
    return recordLocked(r, std::string(what) + ": " + copyName(copy) + " was not started");
  InFlight &f = r.copies[size_t(copy)];
  if (f.device != device || f.host != host)
    return recordLocked(r, std::string(what) + ": " + copyName(copy) +
                               " is waited for with other buffers than it started with");
  f.active = false;
  if (Status s = r.engine->wait(copy); !s)
    recordLocked(r, std::string(what) + ": " + copyName(copy) + ": " + s.message());
}

namespace trc::rt {

OffloadScope::OffloadScope(CopyEngine &engine, void *hostArena, size_t hostBytes) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.engine = &engine;
  r.host = static_cast<char *>(hostArena);
  r.hostBytes = int64_t(hostBytes);
  r.copies.clear();
}

OffloadScope::~OffloadScope() {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (size_t i = 0; i < r.copies.size(); ++i)
    if (r.copies[i].active) {
      recordLocked(r, std::string(trc::abi::kOffloadStartSymbol) + ": " +
                          copyName(int64_t(i)) + " was never waited for");
      break;
    }
  if (Status s = r.engine->drain(); !s)
    recordLocked(r, "draining the copy engine: " + s.message());
  r.engine = nullptr;
  r.host = nullptr;
  r.hostBytes = 0;
  r.copies.clear();
}

Status takeOffloadError() {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (r.error.empty())
    return Status::success();
  Status s = Status::error(r.error);
  r.error.clear();
  return s;
}

const void *const *offloadExports() {
  static const void *const table[] = {
      reinterpret_cast<const void *>(&trc_rt_offload_start),
      reinterpret_cast<const void *>(&trc_rt_offload_wait),
      nullptr,
  };
  return table;
}

} // namespace trc::rt
