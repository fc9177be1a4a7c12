//===- Session.cpp - one loaded artifact bound to a backend -----------------===//
//
// See Session.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/artifact/Session.h"

#include "runtime/backends/Offload.h"
#include "trc/Abi/PipelineNames.h"
#include "trc/Abi/SlotNames.h"

#include "runtime/comm/Collectives.h"
#include "runtime/formats/Initializer.h"
#include "runtime/artifact/ProgramSpans.h"
#include "runtime/support/Names.h"
#include "runtime/support/Profiler.h"
#include "runtime/support/TensorSplit.h"
#include "runtime/support/ThreadPool.h"

#include <algorithm>
#include <cstring>

namespace trc::rt {

namespace {
std::string nameList(const Manifest &m, SlotKind kind) {
  std::string list;
  size_t shown = 0;
  std::vector<const Slot *> slots = m.slotsOfKind(kind);
  for (const Slot *slot : slots) {
    if (shown == 16) {
      list += ", ...";
      break;
    }
    if (shown++)
      list += ", ";
    list += "'" + percentEncode(slot->name) + "'";
  }
  return list.empty() ? "none" : list;
}

// Makes elements [first, first + count) of an initialized param's full
// tensor (its `init` record) and copies them to `dst` on the device, a
// chunk at a time through one host buffer of at most 4 Mi elements (so a
// huge tensor never needs a second full copy on the host); each chunk is
// filled by the thread pool, the values do not depend on how.
Status fillInitialized(Backend &backend, const Slot &slot, void *dst, uint64_t first,
                       uint64_t count) {
  constexpr uint64_t kChunk = uint64_t(1) << 22, kPiece = uint64_t(1) << 15;
  size_t elementSize = dtypeSize(slot.dtype);
  std::vector<unsigned char> host(size_t(std::min(count, kChunk)) * elementSize);
  for (uint64_t done = 0; done < count; done += kChunk) {
    uint64_t n = std::min(kChunk, count - done);
    parallelFor(int64_t((n + kPiece - 1) / kPiece), [&](int64_t piece) {
      uint64_t begin = uint64_t(piece) * kPiece, end = std::min(n, begin + kPiece);
      fillInitializer(slot.init, slot.dtype, first + done + begin, end - begin,
                      host.data() + begin * elementSize);
    });
    if (Status st = backend.copyToDevice(static_cast<unsigned char *>(dst) + done * elementSize,
                                         host.data(), size_t(n * elementSize));
        !st)
      return st;
  }
  return Status::success();
}

/// The elements [first, first + count) of the slot's local tensor this
/// process holds: all of it, or its shard's chunk (the padding past the
/// end not included).
Status shardRange(const Slot &slot, int64_t shardIndex, uint64_t &first, uint64_t &count) {
  first = 0;
  count = uint64_t(slot.numElements);
  if (!slot.shardDegree)
    return Status::success();
  if (shardIndex < 0 || shardIndex >= slot.shardDegree)
    return Status::error("sharded over " + std::to_string(slot.shardDegree) + " ranks; rank " +
                         std::to_string(shardIndex) + " of its group has no shard");
  uint64_t local = uint64_t(slot.localElements());
  first = std::min(uint64_t(shardIndex) * uint64_t(slot.numElements), local);
  count = std::min(uint64_t(slot.numElements), local - first);
  return Status::success();
}

/// A split param: elements [first, first + count) of tensor rank
/// `tensorIndex`'s part of the logical tensor, taken from the weights or
/// made from the init record (by logical index) on the host, then copied
/// to `dst`.
Status loadSplitParam(Backend &backend, const Artifact &artifact, const Slot &slot, void *dst,
                      uint64_t first, uint64_t count, int64_t tensorIndex) {
  if (tensorIndex < 0 || tensorIndex >= slot.split.degree)
    return Status::error("split over " + std::to_string(slot.split.degree) +
                         " tensor ranks; tensor rank " + std::to_string(tensorIndex) +
                         " has no part");
  struct Run {
    uint64_t logical, local, count; // local: from `first`
  };
  std::vector<Run> runs;
  forEachSplitRun(slot.splitShape, slot.split, tensorIndex,
                  [&](int64_t fullFirst, int64_t partFirst, int64_t n) {
                    uint64_t lo = std::max(uint64_t(partFirst), first);
                    uint64_t hi = std::min(uint64_t(partFirst + n), first + count);
                    if (lo < hi)
                      runs.push_back({uint64_t(fullFirst) + (lo - uint64_t(partFirst)),
                                      lo - first, hi - lo});
                  });
  size_t elementSize = dtypeSize(slot.dtype);
  if (!count)
    return Status::success();
  std::vector<unsigned char> host(size_t(count) * elementSize);
  const unsigned char *weights = artifact.weights() + slot.offset;
  parallelFor(int64_t(runs.size()), [&](int64_t i) {
    const Run &r = runs[size_t(i)];
    unsigned char *out = host.data() + r.local * elementSize;
    if (slot.initialized)
      fillInitializer(slot.init, slot.dtype, r.logical, r.count, out);
    else
      std::memcpy(out, weights + r.logical * elementSize, size_t(r.count) * elementSize);
  });
  return backend.copyToDevice(dst, host.data(), host.size());
}

/// A param's values on the device: this process's elements of the tensor
/// in weights.bin or made by its init record (split: its tensor rank's
/// part; sharded: its chunk, the padding past the end left zero), the same
/// values on every rank.
Status loadParam(Backend &backend, const Artifact &artifact, const Slot &slot, void *dst,
                 int64_t shardIndex, int64_t tensorIndex) {
  uint64_t first = 0, count = 0;
  if (Status st = shardRange(slot, shardIndex, first, count); !st)
    return st;
  if (slot.isSplit())
    return loadSplitParam(backend, artifact, slot, dst, first, count, tensorIndex);
  if (slot.initialized)
    return fillInitialized(backend, slot, dst, first, count);
  size_t elementSize = dtypeSize(slot.dtype);
  if (!count)
    return Status::success();
  return backend.copyToDevice(dst, artifact.weights() + slot.offset + first * elementSize,
                              size_t(count) * elementSize);
}

} // namespace

/// A slot of `owner` this slot can alias: a param, or an input named
/// "<kind>:<name>" (state, accumulators), of the same name, dtype and shape.
static void *sharedSlot(const Slot &slot, const std::vector<const Session *> &owners) {
  bool shareable = slot.kind == SlotKind::Param ||
                   (slot.kind == SlotKind::Input && abi::isStateSlot(slot.name));
  if (!shareable)
    return nullptr;
  for (const Session *owner : owners)
    if (const Slot *other = owner->manifest().find(slot.kind, slot.name);
        other && other->dtype == slot.dtype && other->shape == slot.shape &&
        other->shardDegree == slot.shardDegree)
      return owner->slotPointer(*other);
  return nullptr;
}

StatusOr<std::unique_ptr<Session>> Session::create(const Artifact &artifact, Backend &backend,
                                                   int64_t shardIndex, int64_t tensorIndex,
                                                   const std::vector<const Session *> &shareWith) {
  // Programs call the collectives' trc_rt_* entries: referencing their
  // table keeps them in executables that link the static runtime libraries
  // (the backends sit below comm and cannot).
  (void)collectiveExports();
  std::unique_ptr<Session> s(new Session(artifact, backend));
  const Manifest &m = artifact.manifest();
  if (Status st = s->arena_.allocate(backend, size_t(m.arenaBytes)); !st)
    return st.withPrefix("arena: ");
  if (m.hostArenaBytes)
    if (Status st = s->hostArena_.allocate(backend, size_t(m.hostArenaBytes)); !st)
      return st.withPrefix("host arena: ");
  s->buffers_.resize(m.slots.size());
  s->slotPointers_.resize(m.slots.size());
  s->bound_.assign(m.slots.size(), false);
  for (const Slot &slot : m.slots) {
    if (void *shared = sharedSlot(slot, shareWith)) {
      s->slotPointers_[size_t(slot.index)] = shared;
      s->bound_[size_t(slot.index)] = true; // the owner's program keeps it
      continue;
    }
    DeviceBuffer &buf = s->buffers_[size_t(slot.index)];
    if (Status st = buf.allocate(backend, size_t(slot.byteSize)); !st)
      return st.withPrefix(std::string(slotKindName(slot.kind)) + " '" +
                           percentEncode(slot.name) + "': ");
    s->slotPointers_[size_t(slot.index)] = buf.get();
    if (slot.kind != SlotKind::Param)
      continue;
    // The manifest parser checked offset + bytes <= weights size, and the
    // artifact checked the file has that size.
    if (!slot.initialized && slot.offset + slot.weightBytes() > artifact.weightsSize())
      return Status::error("param '" + percentEncode(slot.name) +
                           "' lies past the end of the weights");
    if (Status st = loadParam(backend, artifact, slot, buf.get(), shardIndex, tensorIndex); !st)
      return st.withPrefix("param '" + percentEncode(slot.name) + "': ");
  }
  return s;
}

Status Session::setInput(std::string_view name, const HostTensor &value) {
  const Manifest &m = manifest();
  const Slot *slot = m.find(SlotKind::Input, name);
  if (!slot)
    return Status::error("unknown input '" + percentEncode(name) +
                         "' (the artifact's inputs: " +
                         nameList(m, SlotKind::Input) + ")");
  if (value.dtype != slot->dtype || value.shape != slot->shape)
    return Status::error("input '" + percentEncode(name) + "' expects " +
                         formatType(slot->dtype, slot->shape) + ", got " +
                         formatType(value.dtype, value.shape));
  if (value.byteSize() != slot->byteSize)
    return Status::error("input '" + percentEncode(name) + "': the buffer holds " +
                         std::to_string(value.byteSize()) + " bytes, expected " +
                         std::to_string(slot->byteSize));
  // An index input (a `bound` record) outside its table's rows, or labels
  // (a `labels` record) outside the classes, would make the program read
  // outside its buffers.
  if (slot->indexBound || slot->labelClasses)
    for (int64_t k = 0, n = value.numElements(); k < n; ++k) {
      int64_t v = slot->dtype == DType::I64 ? value.as<int64_t>()[k]
                                            : int64_t(value.as<int32_t>()[k]);
      bool inTable = !slot->indexBound || (v >= -slot->indexBound && v < slot->indexBound);
      bool aClass = !slot->labelClasses || (v >= 0 && v < slot->labelClasses) ||
                    (slot->labelIgnore && v == *slot->labelIgnore);
      if (inTable && aClass)
        continue;
      std::string at;
      for (size_t d = slot->shape.size(), rest = size_t(k); d-- > 0;) {
        size_t dim = size_t(std::max<int64_t>(slot->shape[d], 1));
        at = std::to_string(rest % dim) + (at.empty() ? "" : ", ") + at;
        rest /= dim;
      }
      std::string what =
          !inTable ? "is not an index into the " + std::to_string(slot->indexBound) +
                         " rows of the table it reads (" + std::to_string(-slot->indexBound) +
                         " to " + std::to_string(slot->indexBound - 1) + ")"
                   : "is not a class of the loss (0 to " +
                         std::to_string(slot->labelClasses - 1) +
                         (slot->labelIgnore
                              ? ", or the ignore index " + std::to_string(*slot->labelIgnore)
                              : std::string()) +
                         ")";
      return Status::error("input '" + percentEncode(name) + "' element [" + at + "]: " +
                           std::to_string(v) + " " + what);
    }
  size_t i = size_t(slot->index);
  if (slot->byteSize)
    if (Status st = backend_.copyToDevice(slotPointers_[i], value.data(),
                                          size_t(slot->byteSize));
        !st)
      return st.withPrefix("input '" + percentEncode(name) + "': ");
  bound_[i] = true;
  return Status::success();
}

/// "program NAME": NAME is the artifact folder's last component (with its
/// stage folder for a pipeline stage's program).
static std::string programSpanName(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  size_t last = dir.find_last_of('/');
  std::string name = dir.substr(last + 1);
  // A pipeline stage's program: "stage1/forward".
  if (last != std::string::npos && last > 0) {
    size_t before = dir.find_last_of('/', last - 1);
    std::string parent = dir.substr(before == std::string::npos ? 0 : before + 1,
                                    last - (before == std::string::npos ? 0 : before + 1));
    if (parent.rfind(abi::kStagePrefix, 0) == 0)
      name = parent + "/" + name;
  }
  return "program " + name;
}

Status Session::run() {
  const Manifest &m = manifest();
  std::string missing;
  size_t count = 0;
  for (const Slot &slot : m.slots) {
    if (slot.kind != SlotKind::Input || bound_[size_t(slot.index)])
      continue;
    if (count++)
      missing += ", ";
    missing += "'" + percentEncode(slot.name) + "' (expects " +
               formatType(slot.dtype, slot.shape) + ")";
  }
  if (count)
    return Status::error(std::string(count == 1 ? "missing input " :
                                                  "missing inputs ") +
                         missing);
  ran_ = false;
  // --profile: one "program" span per run, named by the artifact's folder.
  ProfileScope program(Profiler::recording() ? programSpanName(artifact_.dir())
                                             : std::string(),
                       profile::kProgram);
  ProgramSpansScope ops(m.spans); // the program's per-op spans (CPU)
  Status ran = Status::success();
  if (m.hostArenaBytes) {
    // Offloaded activations: the program's copies go through the backend's
    // engine into this session's host arena.
    StatusOr<CopyEngine *> engine = backend_.copyEngine();
    if (!engine.ok())
      return engine.status();
    OffloadScope offload(**engine, hostArena_.get(), size_t(m.hostArenaBytes));
    ran = backend_.run(artifact_.entry(), slotPointers_.data(),
                       m.arenaBytes ? arena_.get() : nullptr);
  } else {
    ran = backend_.run(artifact_.entry(), slotPointers_.data(),
                       m.arenaBytes ? arena_.get() : nullptr);
  }
  // A copy the program started failed, or was never waited for.
  Status copies = takeOffloadError();
  if (!ran)
    return ran;
  if (!copies)
    return copies;
  // A collective inside the program failed (lost peer, wrong group size).
  if (Status st = takeCollectiveError(); !st)
    return st;
  ran_ = true;
  return Status::success();
}

Status Session::writeSlot(const Slot &slot, const char *what, const HostTensor &value) {
  std::string label = std::string(what) + " '" + percentEncode(slot.name) + "'";
  if (value.dtype != slot.dtype || value.shape != slot.shape)
    return Status::error(label + " expects " + formatType(slot.dtype, slot.shape) +
                         ", got " + formatType(value.dtype, value.shape));
  if (slot.byteSize)
    if (Status st = backend_.copyToDevice(slotPointers_[size_t(slot.index)], value.data(),
                                          size_t(slot.byteSize));
        !st)
      return st.withPrefix(label + ": ");
  return Status::success();
}

StatusOr<HostTensor> Session::readSlot(const Slot &slot, const char *what) const {
  std::string label = std::string(what) + " '" + percentEncode(slot.name) + "'";
  HostTensor out;
  if (Status st = out.allocate(slot.dtype, slot.shape); !st)
    return st.withPrefix(label + ": ");
  if (slot.byteSize)
    if (Status st = backend_.copyToHost(out.data(), slotPointers_[size_t(slot.index)],
                                        size_t(slot.byteSize));
        !st)
      return st.withPrefix(label + ": ");
  return out;
}

Status Session::setParam(std::string_view name, const HostTensor &value) {
  const Slot *slot = manifest().find(SlotKind::Param, name);
  if (!slot)
    return Status::error("unknown parameter '" + percentEncode(name) + "'");
  return writeSlot(*slot, "parameter", value);
}

StatusOr<HostTensor> Session::getParam(std::string_view name) const {
  const Slot *slot = manifest().find(SlotKind::Param, name);
  if (!slot)
    return Status::error("unknown parameter '" + percentEncode(name) + "'");
  return readSlot(*slot, "parameter");
}

StatusOr<HostTensor> Session::getInput(std::string_view name) const {
  const Slot *slot = manifest().find(SlotKind::Input, name);
  if (!slot)
    return Status::error("unknown input '" + percentEncode(name) + "'");
  return readSlot(*slot, "input");
}

Status Session::applyUpdates(const std::function<bool(std::string_view)> &which) {
  if (!ran_)
    return Status::error("no updates to apply: the program has not run");
  const Manifest &m = manifest();
  constexpr std::string_view kPrefix = abi::kUpdatePrefix;
  for (const Slot &out : m.slots) {
    if (out.kind != SlotKind::Output || out.name.compare(0, kPrefix.size(), kPrefix) != 0)
      continue;
    std::string_view target = std::string_view(out.name).substr(kPrefix.size());
    if (which && !which(target))
      continue;
    const Slot *dst = m.find(SlotKind::Param, target);
    if (!dst)
      dst = m.find(SlotKind::Input, target);
    if (!dst || dst->dtype != out.dtype || dst->shape != out.shape)
      return Status::error("output '" + percentEncode(out.name) +
                           "' updates no parameter or input of its type");
    if (out.byteSize)
      if (Status st = backend_.copyOnDevice(slotPointers_[size_t(dst->index)],
                                            slotPointers_[size_t(out.index)],
                                            size_t(out.byteSize));
          !st)
        return st.withPrefix("update of '" + percentEncode(target) + "': ");
  }
  return Status::success();
}

Status Session::bindSlot(SlotKind kind, std::string_view name, void *device) {
  const Slot *slot = manifest().find(kind, name);
  if (!slot)
    return Status::error(std::string("unknown ") + slotKindName(kind) + " '" +
                         percentEncode(name) + "'");
  size_t i = size_t(slot->index);
  slotPointers_[i] = device ? device : buffers_[i].get();
  if (kind == SlotKind::Input)
    bound_[i] = device != nullptr || bound_[i];
  return Status::success();
}

StatusOr<HostTensor> Session::getOutput(std::string_view name) const {
  const Manifest &m = manifest();
  const Slot *slot = m.find(SlotKind::Output, name);
  if (!slot)
    return Status::error("unknown output '" + percentEncode(name) +
                         "' (the artifact's outputs: " +
                         nameList(m, SlotKind::Output) + ")");
  if (!ran_)
    return Status::error("output '" + percentEncode(name) +
                         "' is not available: the program has not run");
  HostTensor out;
  if (Status st = out.allocate(slot->dtype, slot->shape); !st)
    return st.withPrefix("output '" + percentEncode(name) + "': ");
  if (slot->byteSize)
    if (Status st = backend_.copyToHost(out.data(), slotPointers_[size_t(slot->index)],
                                        size_t(slot->byteSize));
        !st)
      return st.withPrefix("output '" + percentEncode(name) + "': ");
  return out;
}

StatusOr<LoadedSession> openSession(const std::string &dir, Backend &backend, int64_t shardIndex,
                                    int64_t tensorIndex) {
  LoadedSession opened;
  StatusOr<std::unique_ptr<Artifact>> artifact = Artifact::load(dir, backend.target());
  if (!artifact.ok())
    return artifact.status();
  opened.artifact = *std::move(artifact);
  StatusOr<std::unique_ptr<Session>> session =
      Session::create(*opened.artifact, backend, shardIndex, tensorIndex);
  if (!session.ok())
    return session.status();
  opened.session = *std::move(session);
  return opened;
}

} // namespace trc::rt
