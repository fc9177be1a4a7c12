//===- Session.h - one loaded artifact bound to a backend -------------------===//
//
// Session::create allocates, once, the arena (and the host arena of
// offloaded activations, when the manifest has one) and one device buffer per slot
// and copies every param's bytes from the weights, or, for a param with an
// `init` record, makes its values (Initializer.h) on the host a chunk at a
// time and copies them over (a sharded or tensor-parallel split param: this
// process's part only). setInput() binds an input
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
  /// A session of `artifact` on `backend` (see above). `shardIndex`: this
  /// process's rank in the group its sharded params (manifest `shard`
  /// records) are split over; it loads that chunk. `tensorIndex`: its rank
  /// in the tensor group; a split param (manifest `split`) loads that
  /// tensor rank's part of the logical tensor (TensorSplit.h), then, when
  /// also sharded, its chunk of that part.
  /// `shareWith`: sessions of the same pipeline stage whose params and
  /// "<kind>:<name>" inputs (optimizer state, gradient accumulators) this
  /// session uses in place, by name, dtype and shape: one buffer, loaded
  /// once, that every program of the stage reads and updates.
  static StatusOr<std::unique_ptr<Session>> create(const Artifact &artifact, Backend &backend,
                                                   int64_t shardIndex = 0,
                                                   int64_t tensorIndex = 0,
                                                   const std::vector<const Session *> &shareWith = {});

  const Manifest &manifest() const { return artifact_.manifest(); }
  Status setInput(std::string_view name, const HostTensor &value);
  Status run();
  /// A copy of output `name` on the host.
  StatusOr<HostTensor> getOutput(std::string_view name) const;
  Status setParam(std::string_view name, const HostTensor &value);
  /// A copy of parameter `name` on the host.
  StatusOr<HostTensor> getParam(std::string_view name) const;
  /// A copy of input `name` on the host: what the next run reads (an
  /// updated input's new value once applyUpdates copied it).
  StatusOr<HostTensor> getInput(std::string_view name) const;
  /// Points slot `name` of `kind` at caller-owned device memory of its
  /// size (the pipeline executor's per-microbatch stash, send and receive
  /// buffers), or back at its own buffer (null). A bound input counts as
  /// set. The memory must outlive every run that uses it.
  Status bindSlot(SlotKind kind, std::string_view name, void *device);
  /// The device memory slot `slot` reads or writes now.
  void *slotPointer(const Slot &slot) const { return slotPointers_[size_t(slot.index)]; }
  /// Copies every output "update:X" over slot X (a param or an input);
  /// with `which`, only those whose X it accepts.
  Status applyUpdates(const std::function<bool(std::string_view)> &which = nullptr);

private:
  Status writeSlot(const Slot &slot, const char *what, const HostTensor &value);
  StatusOr<HostTensor> readSlot(const Slot &slot, const char *what) const;
  Session(const Artifact &artifact, Backend &backend)
      : artifact_(artifact), backend_(backend) {}

  const Artifact &artifact_;
  Backend &backend_;
  DeviceBuffer arena_;
  HostBuffer hostArena_; // manifest host_arena: the program's copies run in an OffloadScope
  std::vector<DeviceBuffer> buffers_; // by slot index
  std::vector<void *> slotPointers_;  // by slot index
  std::vector<bool> bound_;           // by slot index (inputs)
  bool ran_ = false;
};

/// An artifact and the session that runs it; `session` refers to
/// `artifact` (destroyed first, as declared after it).
struct LoadedSession {
  std::unique_ptr<Artifact> artifact;
  std::unique_ptr<Session> session;
};

/// Loads the artifact at `dir` for `backend` and creates its session
/// (`shardIndex`, `tensorIndex`: as Session::create's).
StatusOr<LoadedSession> openSession(const std::string &dir, Backend &backend,
                                    int64_t shardIndex = 0, int64_t tensorIndex = 0);

} // namespace trc::rt

#endif // TRC_RUNTIME_SESSION_H
