//===- Communicator.cpp - backend choice, subgroups, shared checks ----------===//
//
// See Communicator.h and CommunicatorSupport.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/Communicator.h"
#include "runtime/comm/CommunicatorSupport.h"
#include "runtime/support/LaunchEnvironment.h"
#include "runtime/comm/mpi/MpiCommunicator.h"
#include "runtime/comm/nccl/NcclCommunicator.h"
#include "runtime/comm/SingleProcessCommunicator.h"

#include <cstdint>
#include <vector>

namespace trc::rt {

const char *reduceOpName(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
    return "sum";
  case ReduceOp::Prod:
    return "prod";
  case ReduceOp::Min:
    return "min";
  case ReduceOp::Max:
    return "max";
  case ReduceOp::Avg:
    return "avg";
  }
  return "?";
}

StatusOr<std::unique_ptr<Communicator>> Communicator::subgroup(const std::vector<int> &ranks) {
  // The same checks on every rank (all pass the same list), so either all
  // ranks split or none does.
  if (ranks.empty())
    return Status::error("subgroup: the list of ranks is empty");
  std::vector<bool> seen(size_t(size()), false);
  int key = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    int r = ranks[i];
    if (Status s = comm::checkRank("subgroup", "listed", r, size()); !s)
      return s;
    if (seen[size_t(r)])
      return Status::error("subgroup: rank " + std::to_string(r) +
                           " is listed twice");
    seen[size_t(r)] = true;
    if (r == rank())
      key = int(i);
  }
  return split(key >= 0 ? 0 : kNoGroup, key >= 0 ? key : 0);
}

P2PRequest::P2PRequest() = default;
P2PRequest::P2PRequest(std::unique_ptr<P2PState> state) : state_(std::move(state)) {}
P2PRequest::P2PRequest(P2PRequest &&other) noexcept = default;
P2PRequest &P2PRequest::operator=(P2PRequest &&other) noexcept = default;
P2PRequest::~P2PRequest() = default;

std::string P2PRequest::describe() const { return state_ ? state_->describe() : ""; }

void P2PRequest::finish() { state_.reset(); }

std::string P2PState::describe() const {
  return std::string(isSend ? "isend to" : "irecv from") + " rank " + std::to_string(peer) +
         " tag " + std::to_string(tag);
}

Status Communicator::waitAll(std::vector<P2PRequest> &requests) {
  // Every request is waited for even after an error: their buffers must be
  // free when this returns.
  Status first;
  for (P2PRequest &r : requests) {
    Status s = wait(r);
    if (!s && first)
      first = s;
  }
  return first;
}

StatusOr<uint64_t> Communicator::start(const CollectiveCall &call) {
  using Kind = CollectiveCall::Kind;
  switch (call.kind) {
  case Kind::AllReduce:
    if (Status s = allReduce(call.send, call.recv, call.count, call.dtype, call.op); !s)
      return s;
    return 0;
  case Kind::AllGather:
    if (Status s = allGather(call.send, call.recv, call.count, call.dtype); !s)
      return s;
    return 0;
  case Kind::ReduceScatter:
    if (Status s = reduceScatter(call.send, call.recv, call.count, call.dtype, call.op); !s)
      return s;
    return 0;
  case Kind::Permute:
    break;
  }
  // Receive from the rank `shift` before, send to the one `shift` on; both
  // posted before either is waited for, so the ring cannot deadlock. Tag 0:
  // a program's groups carry no other point-to-point traffic while it runs.
  int from = (rank() - call.shift % size() + size()) % size();
  int to = (rank() + call.shift) % size();
  std::vector<P2PRequest> requests;
  StatusOr<P2PRequest> in = irecv(call.recv, call.count, call.dtype, from, 0);
  if (!in.ok())
    return in.status();
  requests.push_back(*std::move(in));
  // On failure the posted receive's request completes it as it goes.
  StatusOr<P2PRequest> out = isend(call.send, call.count, call.dtype, to, 0);
  if (!out.ok())
    return out.status();
  requests.push_back(*std::move(out));
  if (Status s = waitAll(requests); !s)
    return s;
  return 0;
}

Status Communicator::finish(uint64_t handle) {
  (void)handle; // start ran the call to completion
  return Status::success();
}

StatusOr<std::unique_ptr<Communicator>> createCommunicator(const std::string &backend) {
  if (backend == "single")
    return std::unique_ptr<Communicator>(std::make_unique<SingleProcessCommunicator>());
  if (backend == "mpi")
    return createMpiCommunicator();
  if (backend == "nccl")
    return createNcclCommunicator();
  if (backend != "auto")
    return Status::error("unknown communicator backend '" + backend +
                         "' (expected auto, single, mpi or nccl)");
  StatusOr<LaunchEnvironment> env = readLaunchEnvironment();
  if (!env.ok())
    return env.status();
  if (!env->multiProcess())
    return std::unique_ptr<Communicator>(std::make_unique<SingleProcessCommunicator>());
  StatusOr<std::unique_ptr<Communicator>> mpi = createMpiCommunicator();
  if (!mpi.ok())
    return Status(mpi.status()).withPrefix("this process is " + env->describe() + ": ");
  return mpi;
}

namespace comm {

StatusOr<size_t> byteCount(const char *what, size_t count, DType dtype, size_t factor) {
  size_t elem = dtypeSize(dtype);
  if (factor == 0 || elem == 0)
    return size_t(0);
  if (count > SIZE_MAX / elem / factor)
    return Status::error(std::string(what) + ": element count " +
                         std::to_string(count) + " overflows");
  return count * elem * factor;
}

bool overlaps(const void *a, size_t aBytes, const void *b, size_t bBytes) {
  if (!aBytes || !bBytes)
    return false;
  uintptr_t x = reinterpret_cast<uintptr_t>(a);
  uintptr_t y = reinterpret_cast<uintptr_t>(b);
  return x < y + bBytes && y < x + aBytes;
}

Status checkRank(const char *what, const char *role, int rank, int size) {
  if (rank < 0 || rank >= size)
    return Status::error(std::string(what) + ": " + role + " rank " +
                         std::to_string(rank) +
                         " is not in a communicator of size " +
                         std::to_string(size));
  return Status::success();
}

Status checkAllReduce(const void *send, void *recv, size_t count,
                      DType dtype) {
  StatusOr<size_t> counted = byteCount("allReduce", count, dtype, 1);
  if (!counted.ok())
    return counted.status();
  size_t bytes = *counted;
  if (send != recv && overlaps(send, bytes, recv, bytes))
    return Status::error("allReduce: send and recv overlap without being "
                         "the same buffer");
  return Status::success();
}

StatusOr<bool> checkAllGather(const void *send, void *recv, size_t count, DType dtype,
                              int rank, int size) {
  StatusOr<size_t> bytes = byteCount("allGather", count, dtype, 1);
  if (!bytes.ok())
    return bytes.status();
  StatusOr<size_t> total = byteCount("allGather", count, dtype, size_t(size));
  if (!total.ok())
    return total.status();
  bool inPlace = *bytes && send == static_cast<char *>(recv) + size_t(rank) * *bytes;
  if (!inPlace && overlaps(send, *bytes, recv, *total))
    return Status::error("allGather: send overlaps recv other than as this "
                         "rank's slice (in place)");
  return inPlace;
}

Status checkReduceScatter(const void *send, void *recv, size_t count,
                          DType dtype, int size) {
  StatusOr<size_t> bytes = byteCount("reduceScatter", count, dtype, 1);
  if (!bytes.ok())
    return bytes.status();
  StatusOr<size_t> total = byteCount("reduceScatter", count, dtype, size_t(size));
  if (!total.ok())
    return total.status();
  if (overlaps(send, *total, recv, *bytes))
    return Status::error("reduceScatter: send and recv overlap");
  return Status::success();
}

Status checkPeer(const char *what, int peer, int rank, int size) {
  if (Status s = checkRank(what, "peer", peer, size); !s)
    return s;
  if (peer == rank)
    return Status::error(std::string(what) + ": peer rank " +
                         std::to_string(peer) + " is this rank");
  return Status::success();
}

Status checkP2P(const char *what, size_t count, DType dtype, int peer, int tag,
                int rank, int size, int maxTag, bool selfAllowed) {
  if (StatusOr<size_t> bytes = byteCount(what, count, dtype, 1); !bytes.ok())
    return bytes.status();
  Status peerOk = selfAllowed ? checkRank(what, "peer", peer, size)
                              : checkPeer(what, peer, rank, size);
  if (!peerOk)
    return peerOk;
  if (tag < 0 || tag > maxTag)
    return Status::error(std::string(what) + " with rank " + std::to_string(peer) + ": tag " +
                         std::to_string(tag) + " is outside 0.." + std::to_string(maxTag));
  return Status::success();
}

StatusOr<P2PState *> ownState(const char *what, const Communicator &self,
                              const P2PRequest &request) {
  P2PState *state = request.state();
  if (state && state->owner != &self)
    return Status::error(std::string(what) + ": " + state->describe() +
                         " was made by another communicator");
  return state;
}

Status countMismatch(const P2PState &state, size_t got, size_t expected, DType dtype) {
  return Status::error(state.describe() + ": got " + std::to_string(got) + " " +
                       dtypeName(dtype) + " elements, expected " + std::to_string(expected));
}

namespace {
template <typename T> void divide(void *buf, size_t count, int n) {
  T *p = static_cast<T *>(buf);
  for (size_t i = 0; i < count; ++i)
    p[i] = static_cast<T>(p[i] / static_cast<T>(n));
}
} // namespace

void divideHost(void *buf, size_t count, DType dtype, int n) {
  switch (dtype) {
  case DType::F32:
    return divide<float>(buf, count, n);
  case DType::F64:
    return divide<double>(buf, count, n);
  case DType::I8:
    return divide<int8_t>(buf, count, n);
  case DType::I16:
    return divide<int16_t>(buf, count, n);
  case DType::I32:
    return divide<int32_t>(buf, count, n);
  case DType::I64:
    return divide<int64_t>(buf, count, n);
  case DType::U8:
  case DType::I1:
    return divide<uint8_t>(buf, count, n);
  case DType::U16:
    return divide<uint16_t>(buf, count, n);
  case DType::U32:
    return divide<uint32_t>(buf, count, n);
  case DType::U64:
    return divide<uint64_t>(buf, count, n);
  case DType::F16:
  case DType::BF16:
    return; // refused before reducing
  }
}

} // namespace comm

} // namespace trc::rt
