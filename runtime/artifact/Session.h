//===- Session.h - one loaded artifact bound to a backend -------------------===//
//
// Session::create allocates, once, the arena and one device buffer per slot
// and copies every param's bytes from the weights, or, for a param with an
// `init` record, makes its values (Initializer.h) on the host a chunk at a
// time and copies them over. setInput() binds an input
// by name: the name must exist and dtype and shape must match exactly
// ("input 'x' expects f32 [2, 3], got f32 [3, 2]"). run() refuses to start
// while an input was never bound ("missing input 'x' (expects f32 [2, 3])"),
// then calls the entry. getOutput() copies an output back to the host.
// Inputs stay bound across runs. Names in messages are percent-encoded.
// Training steps (trc-build-train-step) return each new value of a
// parameter or optimizer-state input as an output "update:<name>";
// applyUpdates() copies every such output over its slot, on the device,
// so the next run starts from them. setParam/getParam read and replace
// parameters (checkpoints, exports).
// Preconditions: the Artifact and the Backend outlive the Session; a session
// is used by one thread at a time (the program is not re-entrant on one
// arena).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_SESSION_H
#define TRC_RUNTIME_SESSION_H

#include "runtime/artifact/Artifact.h"
#include "runtime/backends/Backend.h"
#include "runtime/support/Tensor.h"

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace trc::rt {

class Session {
public:
  /// `shardIndex`: this process's rank in the group its sharded params
  /// (manifest `shard` records) are split over; it loads that chunk.
  static Status create(const Artifact &artifact, Backend &backend,
                       std::unique_ptr<Session> &out, int64_t shardIndex = 0);

  const Manifest &manifest() const { return artifact_.manifest(); }
  Status setInput(std::string_view name, const HostTensor &value);
  Status run();
  Status getOutput(std::string_view name, HostTensor &out) const;
  Status setParam(std::string_view name, const HostTensor &value);
  Status getParam(std::string_view name, HostTensor &out) const;
  /// Copies every output "update:X" over slot X (a param or an input);
  /// with `which`, only those whose X it accepts.
  Status applyUpdates(const std::function<bool(std::string_view)> &which = nullptr);

private:
  Status writeSlot(const Slot &slot, const char *what, const HostTensor &value);
  Status readSlot(const Slot &slot, const char *what, HostTensor &out) const;
  Session(const Artifact &artifact, Backend &backend)
      : artifact_(artifact), backend_(backend) {}

  const Artifact &artifact_;
  Backend &backend_;
  DeviceBuffer arena_;
  std::vector<DeviceBuffer> buffers_; // by slot index
  std::vector<void *> slotPointers_;  // by slot index
  std::vector<bool> bound_;           // by slot index (inputs)
  bool ran_ = false;
};

/// Loads the artifact at `dir` for `backend` and creates its session
/// (`shardIndex`: this rank's chunk of sharded parameters).
Status openSession(const std::string &dir, Backend &backend, std::unique_ptr<Artifact> &artifact,
                   std::unique_ptr<Session> &session, int64_t shardIndex = 0);

} // namespace trc::rt

#endif // TRC_RUNTIME_SESSION_H
