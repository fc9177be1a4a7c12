//===- Collectives.cpp - the collectives compiled programs call ------------===//
//
// See Collectives.h. Each entry checks the group against what the program
// was compiled for, then hands the buffers to the group's Communicator.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/Collectives.h"

#include "runtime/support/Profiler.h"
#include "trc/Abi/CollectiveAbi.h"

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

using namespace trc::rt;

namespace {

static_assert(int(DType::F32) == trc::abi::kF32 && int(DType::F64) == trc::abi::kF64 &&
                  int(DType::F16) == trc::abi::kF16 && int(DType::BF16) == trc::abi::kBF16 &&
                  int(DType::I1) == trc::abi::kI1 && int(DType::I64) == trc::abi::kI64,
              "CollectiveAbi.h's dtype codes follow rt::DType");

struct Registry {
  Communicator *groups[trc::abi::kNumGroups] = {};
  // Started collectives by ticket: their communicator (null: this process
  // alone, nothing to wait for) and its handle.
  std::map<int64_t, std::pair<Communicator *, uint64_t>> started;
  Backend *backend = nullptr; // copies between the program's buffers
  std::mutex mutex;
  std::string error; // the first failure, until taken
};

Registry &registry() {
  static Registry r;
  return r;
}

const char *groupName(int64_t group) {
  switch (group) {
  case trc::abi::kGroupWorld: return "world";
  case trc::abi::kGroupShard: return "shard";
  case trc::abi::kGroupReplica: return "replica";
  case trc::abi::kGroupTensor: return "tensor";
  case trc::abi::kGroupPipeline: return "pipeline";
  case trc::abi::kGroupContext: return "context";
  case trc::abi::kGroupDataContext: return "data x context";
  }
  return "unknown";
}

bool failed() {
  std::lock_guard<std::mutex> lock(registry().mutex);
  return !registry().error.empty();
}

void record(const std::string &message) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  if (registry().error.empty())
    registry().error = message;
}

/// The group's communicator (null: this process alone); false after
/// recording an error for a bad code or a size the program did not expect.
bool lookup(const char *what, int64_t group, int64_t shards, int64_t dtype,
            Communicator *&comm) {
  if (group < 0 || group >= trc::abi::kNumGroups || dtype < 0 || dtype > trc::abi::kI64) {
    record(std::string(what) + ": bad group or dtype code from the program");
    return false;
  }
  comm = registry().groups[group];
  int size = comm ? comm->size() : 1;
  if (shards > 0 && shards != size) {
    record(std::string(what) + ": the program splits tensors over " + std::to_string(shards) +
           " ranks, but its " + groupName(group) + " group has " + std::to_string(size) +
           " (compile for this world size and these shard and tensor degrees)");
    return false;
  }
  return true;
}

void check(const char *what, int64_t group, const Status &s) {
  if (!s)
    record(std::string(what) + " over the " + groupName(group) + " group: " + s.message());
}

ReduceOp reduceOpOf(int64_t code) {
  switch (code) {
  case trc::abi::kReduceAvg: return ReduceOp::Avg;
  case trc::abi::kReduceMax: return ReduceOp::Max;
  case trc::abi::kReduceMin: return ReduceOp::Min;
  default: return ReduceOp::Sum;
  }
}

/// --profile: the span of one collective the program issues, named by its
/// op and group ("all-reduce world"), with the group's size and the bytes
/// of the whole buffer (the unsharded side of a reduce-scatter or
/// all-gather). Host time: on CUDA, the time to issue it.
struct CollectiveSpan {
  ProfileScope scope;
  CollectiveSpan(const char *op, int64_t group, Communicator *comm, int64_t wholeCount,
                 int64_t dtype)
      : scope(Profiler::recording() ? std::string(op) + " " + groupName(group) : std::string(),
              profile::kCollective) {
    if (scope.active())
      scope.arg("op", op).arg("group", groupName(group)).arg("ranks", comm ? comm->size() : 1)
          .arg("bytes", wholeCount * int64_t(dtypeSize(DType(dtype))))
          .arg("dtype", dtypeName(DType(dtype)));
  }
};

void *address(int64_t p) { return reinterpret_cast<void *>(static_cast<intptr_t>(p)); }

/// A copy between two of the program's buffers (device memory on a GPU).
void copyBytes(void *dst, const void *src, size_t bytes) {
  if (!bytes || dst == src)
    return;
  if (Backend *backend = registry().backend) {
    if (Status s = backend->copyOnDevice(dst, src, bytes); !s)
      record("copy between device buffers: " + s.message());
    return;
  }
  std::memcpy(dst, src, bytes);
}

void copy(int64_t dtype, int64_t count, int64_t send, int64_t recv) {
  if (count > 0)
    copyBytes(address(recv), address(send), size_t(count) * dtypeSize(DType(dtype)));
}

} // namespace

extern "C" void trc_rt_broadcast(int64_t group, int64_t dtype, int64_t root, int64_t count,
                                 int64_t send, int64_t recv) {
  Communicator *comm;
  if (failed() || !lookup("broadcast", group, 0, dtype, comm))
    return;
  CollectiveSpan span("broadcast", group, comm, count, dtype);
  int size = comm ? comm->size() : 1;
  if (root >= size)
    return record("broadcast: root " + std::to_string(root) + " is not a rank of the " +
                  groupName(group) + " group (" + std::to_string(size) + " ranks)");
  copy(dtype, count, send, recv);
  if (size > 1)
    check("broadcast", group, comm->broadcast(address(recv), size_t(count), DType(dtype),
                                              int(root)));
}

extern "C" void trc_rt_shard_slice(int64_t group, int64_t dtype, int64_t shards,
                                   int64_t recvCount, int64_t send, int64_t recv) {
  Communicator *comm;
  if (failed() || !lookup("shard slice", group, shards, dtype, comm))
    return;
  int64_t rank = comm ? comm->rank() : 0;
  size_t bytes = size_t(recvCount) * dtypeSize(DType(dtype));
  copyBytes(address(recv), static_cast<const char *>(address(send)) + size_t(rank) * bytes,
            bytes);
}

namespace {

/// Checks a permute's shift against the group; false after recording.
bool checkShift(int64_t group, int64_t shift, int size) {
  if (shift >= 1 && shift < size)
    return true;
  record("collective permute: shift " + std::to_string(shift) + " is not a step of the " +
         groupName(group) + " group's ring (" + std::to_string(size) + " ranks)");
  return false;
}

/// Starts `call` on the group's communicator under `ticket`; without one
/// (this process alone) it is a copy, with nothing to wait for.
void startCall(const char *what, int64_t group, Communicator *comm, CollectiveCall call,
               int64_t ticket) {
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    if (registry().started.count(ticket)) {
      if (registry().error.empty())
        registry().error = std::string(what) + ": collective " + std::to_string(ticket) +
                           " started again before it finished (a program defect)";
      return;
    }
  }
  uint64_t handle = 0;
  if (!comm) { // every kind's count is then the whole buffer
    copyBytes(call.recv, call.send, call.count * dtypeSize(call.dtype));
  } else {
    StatusOr<uint64_t> started = comm->start(call);
    if (!started.ok())
      return check(what, group, started.status());
    handle = *started;
  }
  std::lock_guard<std::mutex> lock(registry().mutex);
  registry().started[ticket] = {comm, handle};
}

/// What the all-reduce, reduce-scatter, all-gather and permute entries
/// share: the group checked against the program (`shards`), the profile's
/// span (of the whole buffer: `call.count` times the group's size where
/// `perRank`), then `call` run to completion (ticket < 0; a group of one
/// copies) or started under `ticket`.
void issue(const char *what, const char *spanName, int64_t group, int64_t shards,
           int64_t dtype, const CollectiveCall &call, bool perRank, int64_t ticket) {
  Communicator *comm;
  if (failed() || !lookup(what, group, shards, dtype, comm))
    return;
  int size = comm ? comm->size() : 1;
  CollectiveSpan span(spanName, group, comm, int64_t(call.count) * (perRank ? size : 1), dtype);
  if (call.kind == CollectiveCall::Kind::Permute && !checkShift(group, call.shift, size))
    return;
  if (ticket >= 0)
    return startCall(what, group, comm, call, ticket);
  if (size == 1) // every kind's count is then the whole buffer
    return copyBytes(call.recv, call.send, call.count * dtypeSize(call.dtype));
  StatusOr<uint64_t> handle = comm->start(call);
  if (!handle.ok())
    return check(what, group, handle.status());
  check(what, group, comm->finish(*handle));
}

CollectiveCall callOf(CollectiveCall::Kind kind, int64_t send, int64_t recv, int64_t count,
                      int64_t dtype, ReduceOp op = ReduceOp::Sum, int64_t shift = 0) {
  return {kind, address(send), address(recv), size_t(count), DType(dtype), op, int(shift)};
}

} // namespace

using Kind = CollectiveCall::Kind;

extern "C" void trc_rt_all_reduce(int64_t group, int64_t dtype, int64_t reduction,
                                  int64_t count, int64_t send, int64_t recv) {
  trc_rt_all_reduce_start(group, dtype, reduction, count, send, recv, -1);
}

extern "C" void trc_rt_reduce_scatter(int64_t group, int64_t dtype, int64_t reduction,
                                      int64_t shards, int64_t recvCount, int64_t send,
                                      int64_t recv) {
  trc_rt_reduce_scatter_start(group, dtype, reduction, shards, recvCount, send, recv, -1);
}

extern "C" void trc_rt_all_gather(int64_t group, int64_t dtype, int64_t shards,
                                  int64_t sendCount, int64_t send, int64_t recv) {
  trc_rt_all_gather_start(group, dtype, shards, sendCount, send, recv, -1);
}

extern "C" void trc_rt_collective_permute(int64_t group, int64_t dtype, int64_t shards,
                                          int64_t shift, int64_t count, int64_t send,
                                          int64_t recv) {
  trc_rt_collective_permute_start(group, dtype, shards, shift, count, send, recv, -1);
}

// --- started collectives (trc-collectives-to-runtime-call{overlap}); a
// negative ticket (the blocking entries above) runs the call to completion.

extern "C" void trc_rt_all_reduce_start(int64_t group, int64_t dtype, int64_t reduction,
                                        int64_t count, int64_t send, int64_t recv,
                                        int64_t ticket) {
  issue("all-reduce", "all-reduce", group, 0, dtype,
        callOf(Kind::AllReduce, send, recv, count, dtype, reduceOpOf(reduction)), false, ticket);
}

extern "C" void trc_rt_reduce_scatter_start(int64_t group, int64_t dtype, int64_t reduction,
                                            int64_t shards, int64_t recvCount, int64_t send,
                                            int64_t recv, int64_t ticket) {
  issue("reduce-scatter", "reduce-scatter", group, shards, dtype,
        callOf(Kind::ReduceScatter, send, recv, recvCount, dtype, reduceOpOf(reduction)), true,
        ticket);
}

extern "C" void trc_rt_all_gather_start(int64_t group, int64_t dtype, int64_t shards,
                                        int64_t sendCount, int64_t send, int64_t recv,
                                        int64_t ticket) {
  issue("all-gather", "all-gather", group, shards, dtype,
        callOf(Kind::AllGather, send, recv, sendCount, dtype), true, ticket);
}

extern "C" void trc_rt_collective_permute_start(int64_t group, int64_t dtype, int64_t shards,
                                                int64_t shift, int64_t count, int64_t send,
                                                int64_t recv, int64_t ticket) {
  issue("collective permute", "collective-permute", group, shards, dtype,
        callOf(Kind::Permute, send, recv, count, dtype, ReduceOp::Sum, shift), false, ticket);
}

extern "C" void trc_rt_collective_finish(int64_t ticket, int64_t send, int64_t recv) {
  (void)send, (void)recv; // the program's: they keep both buffers live until here
  if (failed())
    return;
  std::pair<Communicator *, uint64_t> entry;
  {
    std::lock_guard<std::mutex> lock(registry().mutex);
    auto it = registry().started.find(ticket);
    if (it == registry().started.end()) {
      if (registry().error.empty())
        registry().error = "collective " + std::to_string(ticket) +
                           " finished but never started (a program defect)";
      return;
    }
    entry = it->second;
    registry().started.erase(it);
  }
  if (entry.first)
    if (Status s = entry.first->finish(entry.second); !s)
      record("collective " + std::to_string(ticket) + ": " + s.message());
}

namespace {

/// Hands the backend's compute stream to the group communicators; when every
/// one orders itself after it, the backend stops waiting for each launch.
/// Without a backend (it is going) they are told there is none, so that no
/// later call of theirs waits for a destroyed stream.
void followComputeStream() {
  Registry &r = registry();
  void *stream = r.backend ? r.backend->computeStream() : nullptr;
  bool any = false, all = true;
  for (Communicator *comm : r.groups)
    if (comm) {
      any = true;
      all = comm->setComputeStream(stream) && all;
    }
  if (stream && any && all)
    r.backend->collectivesFollowStream();
}

} // namespace

namespace trc::rt {

void setCollectiveGroups(Communicator *world, Communicator *shard, Communicator *replica,
                         Communicator *tensor) {
  Registry &r = registry();
  r.groups[trc::abi::kGroupWorld] = world;
  r.groups[trc::abi::kGroupShard] = shard;
  r.groups[trc::abi::kGroupReplica] = replica;
  r.groups[trc::abi::kGroupTensor] = tensor;
  followComputeStream();
}

void setPipelineGroup(Communicator *pipeline) {
  registry().groups[trc::abi::kGroupPipeline] = pipeline;
  followComputeStream();
}

void setContextGroups(Communicator *context, Communicator *dataContext) {
  registry().groups[trc::abi::kGroupContext] = context;
  registry().groups[trc::abi::kGroupDataContext] = dataContext;
  followComputeStream();
}

void setCollectiveBackend(Backend *backend) {
  registry().backend = backend;
  followComputeStream();
}

Status takeCollectiveError() {
  std::lock_guard<std::mutex> lock(registry().mutex);
  if (registry().error.empty())
    return Status::success();
  Status s = Status::error(registry().error);
  registry().error.clear();
  registry().started.clear(); // a failed run's tickets: the next run starts afresh
  return s;
}

const void *const *collectiveExports() {
  static const void *const table[] = {
      reinterpret_cast<const void *>(&trc_rt_all_reduce),
      reinterpret_cast<const void *>(&trc_rt_reduce_scatter),
      reinterpret_cast<const void *>(&trc_rt_all_gather),
      reinterpret_cast<const void *>(&trc_rt_broadcast),
      reinterpret_cast<const void *>(&trc_rt_shard_slice),
      reinterpret_cast<const void *>(&trc_rt_collective_permute),
      reinterpret_cast<const void *>(&trc_rt_all_reduce_start),
      reinterpret_cast<const void *>(&trc_rt_reduce_scatter_start),
      reinterpret_cast<const void *>(&trc_rt_all_gather_start),
      reinterpret_cast<const void *>(&trc_rt_collective_permute_start),
      reinterpret_cast<const void *>(&trc_rt_collective_finish),
      nullptr,
  };
  return table;
}

} // namespace trc::rt
