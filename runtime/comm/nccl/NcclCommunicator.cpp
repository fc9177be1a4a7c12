//===- NcclCommunicator.cpp - the NCCL backend (CUDA device memory) ---------===//
//
// See NcclCommunicator.h. CudaDevice is the device state the communicators
// of a process share (primary context, stream, a scratch word for barrier,
// the call mutex); each NcclCommunicator owns one ncclComm_t and keeps the
// host communicator it was bootstrapped over, a p2p stream, and the
// isend/irecv recorded but not yet launched (NcclP2PQueue, NcclRequest).
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/nccl/NcclCommunicator.h"

#include "runtime/support/DynamicLibrary.h"
#include "runtime/comm/CommunicatorSupport.h"
#include "runtime/support/LaunchEnvironment.h"
#include "runtime/comm/mpi/MpiCommunicator.h"
#include "runtime/comm/nccl/NcclAbi.h"
#include "runtime/comm/Watchdog.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace trc::rt {

namespace {

using ncclabi::UniqueId;

struct NcclApi {
  int (*GetVersion)(int *) = nullptr;
  int (*GetUniqueId)(UniqueId *) = nullptr;
  int (*CommInitRank)(void **, int, UniqueId, int) = nullptr;
  int (*CommDestroy)(void *) = nullptr;
  int (*CommAbort)(void *) = nullptr;
  int (*CommGetAsyncError)(void *, int *) = nullptr;
  const char *(*GetErrorString)(int) = nullptr;
  const char *(*GetLastError)(void *) = nullptr; // NCCL >= 2.13; optional
  int (*AllReduce)(const void *, void *, size_t, int, int, void *,
                   void *) = nullptr;
  int (*AllGather)(const void *, void *, size_t, int, void *, void *) = nullptr;
  int (*ReduceScatter)(const void *, void *, size_t, int, int, void *,
                       void *) = nullptr;
  int (*Broadcast)(const void *, void *, size_t, int, int, void *,
                   void *) = nullptr;
  int (*Send)(const void *, size_t, int, int, void *, void *) = nullptr;
  int (*Recv)(void *, size_t, int, int, void *, void *) = nullptr;
  int (*GroupStart)() = nullptr;
  int (*GroupEnd)() = nullptr;
  int version = 0; // X * 10000 + Y * 100 + Z
};

struct CudaApi {
  int (*Init)(unsigned) = nullptr;
  int (*DeviceGetCount)(int *) = nullptr;
  int (*DeviceGet)(int *, int) = nullptr;
  int (*DevicePrimaryCtxRetain)(void **, int) = nullptr;
  int (*DevicePrimaryCtxRelease)(int) = nullptr;
  int (*CtxSetCurrent)(void *) = nullptr;
  int (*StreamCreate)(void **, unsigned) = nullptr;
  int (*StreamDestroy)(void *) = nullptr;
  int (*StreamQuery)(void *) = nullptr;
  int (*EventCreate)(void **, unsigned) = nullptr;
  int (*EventRecord)(void *, void *) = nullptr;
  int (*StreamWaitEvent)(void *, void *, unsigned) = nullptr;
  int (*EventQuery)(void *) = nullptr;
  int (*EventDestroy)(void *) = nullptr;
  int (*MemAlloc)(unsigned long long *, size_t) = nullptr;
  int (*MemFree)(unsigned long long) = nullptr;
  int (*GetErrorString)(int, const char **) = nullptr;
};

std::mutex gLoadMutex;
NcclApi gNccl;
CudaApi gCuda;
bool gNcclLoaded = false, gCudaLoaded = false;

Status loadNccl() {
  if (gNcclLoaded)
    return Status::success();
  std::string name = ncclLibraryName(), why;
  void *lib = openLibrary(name, why);
  if (!lib) {
    const char *override = ::getenv("TRC_NCCL_LIBRARY");
    return Status::error(
        "nccl: " + name +
        (override && *override ? " (named by TRC_NCCL_LIBRARY)" : "") +
        " not found or not loadable (install NCCL or set TRC_NCCL_LIBRARY): " +
        why);
  }
  NcclApi api;
  SymbolBinder bind{lib, {}};
  bind(api.GetVersion, "ncclGetVersion");
  bind(api.GetUniqueId, "ncclGetUniqueId");
  bind(api.CommInitRank, "ncclCommInitRank");
  bind(api.CommDestroy, "ncclCommDestroy");
  bind(api.CommAbort, "ncclCommAbort");
  bind(api.CommGetAsyncError, "ncclCommGetAsyncError");
  bind(api.GetErrorString, "ncclGetErrorString");
  bind(api.GetLastError, "ncclGetLastError", /*optional=*/true);
  bind(api.AllReduce, "ncclAllReduce");
  bind(api.AllGather, "ncclAllGather");
  bind(api.ReduceScatter, "ncclReduceScatter");
  bind(api.Broadcast, "ncclBroadcast");
  bind(api.Send, "ncclSend");
  bind(api.Recv, "ncclRecv");
  bind(api.GroupStart, "ncclGroupStart");
  bind(api.GroupEnd, "ncclGroupEnd");
  if (!bind.missing.empty())
    return Status::error("nccl: " + name + " has no symbol " + bind.missing +
                         " (NCCL 2.7 or newer is needed)");
  int code = 0;
  if (api.GetVersion(&code) != ncclabi::kSuccess)
    return Status::error("nccl: ncclGetVersion failed in " + name);
  // Before 2.9 the code was X * 1000 + Y * 100 + Z.
  api.version = code < 10000
                    ? code / 1000 * 10000 + code % 1000 / 100 * 100 + code % 100
                    : code;
  if (api.version < ncclabi::kVersionSendRecv)
    return Status::error("nccl: " + name + " is NCCL " +
                         std::to_string(api.version / 10000) + "." +
                         std::to_string(api.version / 100 % 100) +
                         "; 2.7 or newer is needed");
  gNccl = api;
  gNcclLoaded = true;
  return Status::success();
}

std::string cudaErrorString(int rc) {
  const char *text = nullptr;
  if (gCuda.GetErrorString && gCuda.GetErrorString(rc, &text) == 0 && text)
    return text;
  return "CUDA error " + std::to_string(rc);
}

Status loadCuda() {
  if (gCudaLoaded)
    return Status::success();
  std::string why;
  void *lib = openLibrary(ncclabi::kDriverLibrary, why);
  if (!lib)
    return Status::error(std::string("nccl: no CUDA device: the CUDA driver ") +
                         ncclabi::kDriverLibrary + " is not installed (" + why +
                         ")");
  CudaApi api;
  SymbolBinder bind{lib, {}};
  bind(api.Init, "cuInit");
  bind(api.DeviceGetCount, "cuDeviceGetCount");
  bind(api.DeviceGet, "cuDeviceGet");
  bind(api.DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  bind(api.DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  bind(api.CtxSetCurrent, "cuCtxSetCurrent");
  bind(api.StreamCreate, "cuStreamCreate");
  bind(api.StreamDestroy, "cuStreamDestroy_v2");
  bind(api.StreamQuery, "cuStreamQuery");
  bind(api.EventCreate, "cuEventCreate");
  bind(api.EventRecord, "cuEventRecord");
  bind(api.StreamWaitEvent, "cuStreamWaitEvent");
  bind(api.EventQuery, "cuEventQuery");
  bind(api.EventDestroy, "cuEventDestroy_v2");
  bind(api.MemAlloc, "cuMemAlloc_v2");
  bind(api.MemFree, "cuMemFree_v2");
  bind(api.GetErrorString, "cuGetErrorString");
  if (!bind.missing.empty())
    return Status::error(std::string("nccl: the CUDA driver ") +
                         ncclabi::kDriverLibrary + " has no symbol " +
                         bind.missing);
  gCuda = api;
  int rc = gCuda.Init(0);
  if (rc == ncclabi::kCudaErrorNoDevice)
    return Status::error("nccl: no CUDA device (cuInit: " +
                         cudaErrorString(rc) + ")");
  if (rc != ncclabi::kCudaSuccess)
    return Status::error("nccl: cuInit failed: " + cudaErrorString(rc));
  int count = 0;
  rc = gCuda.DeviceGetCount(&count);
  if (rc != ncclabi::kCudaSuccess || count == 0)
    return Status::error("nccl: no CUDA device" +
                         (rc ? " (" + cudaErrorString(rc) + ")"
                             : std::string(" is visible")));
  gCudaLoaded = true;
  return Status::success();
}

// The device state the process's NCCL communicators share.
struct CudaDevice {
  ~CudaDevice() {
    if (!ctx)
      return;
    gCuda.CtxSetCurrent(ctx);
    if (stream)
      gCuda.StreamDestroy(stream);
    if (computeEvent)
      gCuda.EventDestroy(computeEvent);
    if (scratch)
      gCuda.MemFree(scratch);
    gCuda.DevicePrimaryCtxRelease(device);
  }
  std::mutex mutex;
  int ordinal = 0, device = 0;
  void *ctx = nullptr, *stream = nullptr;
  unsigned long long scratch = 0; // one int32 for barrier
  // The stream compiled programs run on (setComputeStream; null: none), and
  // the event that orders `stream` after it.
  void *compute = nullptr, *computeEvent = nullptr;
};

Status openDevice(int ordinal, std::shared_ptr<CudaDevice> &out) {
  auto dev = std::make_shared<CudaDevice>();
  dev->ordinal = ordinal;
  int rc = gCuda.DeviceGet(&dev->device, ordinal);
  if (!rc)
    rc = gCuda.DevicePrimaryCtxRetain(&dev->ctx, dev->device);
  if (rc)
    return Status::error("nccl: cannot open CUDA device " +
                         std::to_string(ordinal) + ": " + cudaErrorString(rc));
  rc = gCuda.CtxSetCurrent(dev->ctx);
  if (!rc)
    rc = gCuda.StreamCreate(&dev->stream, ncclabi::kStreamNonBlocking);
  if (!rc)
    rc = gCuda.MemAlloc(&dev->scratch, 256);
  if (rc)
    return Status::error("nccl: CUDA device " + std::to_string(ordinal) +
                         " set-up failed: " + cudaErrorString(rc));
  out = std::move(dev);
  return Status::success();
}

// Polls `query` (a CUresult: success, not ready, or an error) until it is
// not "not ready"; `ready` says which. Stops early when `block` is false.
template <typename Query> int pollCuda(Query query, bool block) {
  for (unsigned spins = 0;; ++spins) {
    int q = query();
    if (q != ncclabi::kCudaErrorNotReady || !block)
      return q;
    if (spins < 1000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// One launch of recorded operations (an NCCL group) and the event after it.
struct NcclLaunch {
  explicit NcclLaunch(std::shared_ptr<CudaDevice> dev) : dev(std::move(dev)) {}
  ~NcclLaunch() {
    if (event) {
      gCuda.CtxSetCurrent(dev->ctx);
      gCuda.EventDestroy(event);
    }
  }
  std::shared_ptr<CudaDevice> dev;
  void *event = nullptr;
};

struct NcclRequest;

// A communicator's p2p stream and its operations recorded, not launched.
struct NcclP2PQueue {
  void *stream = nullptr;
  std::vector<NcclRequest *> recorded; // in posting order
};

// An isend/irecv: recorded (launch null), launched (launch set), or
// dropped (a failed launch or a destroyed communicator; `failed` says why).
// Changed only under dev->mutex.
struct NcclRequest final : P2PState {
  NcclRequest(const Communicator *owner, bool isSend, int peer, int tag)
      : P2PState(owner, isSend, peer, tag),
        watchName(std::string(isSend ? "isend" : "irecv") + " tag " +
                  std::to_string(tag) + (isSend ? " to" : " from")) {}
  ~NcclRequest() override {
    std::lock_guard<std::mutex> lock(dev->mutex);
    if (!launch) {
      auto &r = queue->recorded;
      r.erase(std::remove(r.begin(), r.end(), this), r.end());
      return;
    }
    // In flight: the buffer is NCCL's until the event (errors are lost).
    gCuda.CtxSetCurrent(dev->ctx);
    WatchedCall watched;
    watched.what = watchName.c_str();
    watched.peer = worldPeer;
    auto guard = Watchdog::process().watch(watched);
    (void)pollCuda([&] { return gCuda.EventQuery(launch->event); }, true);
  }

  std::shared_ptr<CudaDevice> dev;
  std::shared_ptr<NcclP2PQueue> queue;
  void *buf = nullptr;
  size_t count = 0;
  int type = 0, worldPeer = -1;
  std::shared_ptr<NcclLaunch> launch;
  bool dropped = false;
  Status failed;
  std::string watchName; // "irecv tag 7 from" (+ " rank 1" by the watchdog)
};

class NcclCommunicator final : public Communicator {
public:
  NcclCommunicator(std::shared_ptr<CudaDevice> dev,
                   std::shared_ptr<Communicator> host, void *comm,
                   void *p2pStream, int rank, int size,
                   std::vector<int> worldRanks)
      : dev_(std::move(dev)), host_(std::move(host)), comm_(comm),
        p2p_(std::make_shared<NcclP2PQueue>()), rank_(rank), size_(size),
        worldRanks_(std::move(worldRanks)) {
    p2p_->stream = p2pStream;
  }
  ~NcclCommunicator() override {
    std::lock_guard<std::mutex> lock(dev_->mutex);
    gCuda.CtxSetCurrent(dev_->ctx);
    // Operations never launched cannot be any more; launched ones finish
    // before the communicator goes.
    for (NcclRequest *r : p2p_->recorded) {
      r->dropped = true;
      r->failed = Status::error(r->describe() +
                                ": its communicator was destroyed first");
    }
    p2p_->recorded.clear();
    if (!started_.empty() && !aborted_) {
      // Collectives started and never finished (a failed run): done first.
      WatchedCall watched;
      watched.what = "collective drain";
      watched.group = &worldRanks_;
      auto guard = Watchdog::process().watch(watched);
      (void)pollCuda([&] { return gCuda.StreamQuery(dev_->stream); }, true);
    }
    for (auto &entry : started_)
      gCuda.EventDestroy(entry.second);
    if (!aborted_) {
      WatchedCall watched;
      watched.what = "p2p drain";
      watched.group = &worldRanks_;
      auto guard = Watchdog::process().watch(watched);
      (void)pollCuda([&] { return gCuda.StreamQuery(p2p_->stream); }, true);
      gNccl.CommDestroy(comm_);
    }
    gCuda.StreamDestroy(p2p_->stream);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char *backendName() const override { return "nccl"; }

  Status allReduce(const void *send, void *recv, size_t count, DType dtype,
                   ReduceOp op) override {
    return runCall({CollectiveCall::Kind::AllReduce, send, recv, count, dtype, op});
  }
  Status allGather(const void *send, void *recv, size_t count,
                   DType dtype) override {
    return runCall({CollectiveCall::Kind::AllGather, send, recv, count, dtype});
  }
  Status reduceScatter(const void *send, void *recv, size_t count, DType dtype,
                       ReduceOp op) override {
    return runCall({CollectiveCall::Kind::ReduceScatter, send, recv, count, dtype, op});
  }
  bool setComputeStream(void *stream) override {
    std::lock_guard<std::mutex> lock(dev_->mutex);
    dev_->compute = stream;
    return true;
  }
  StatusOr<uint64_t> start(const CollectiveCall &call) override {
    const char *what = "";
    StatusOr<std::function<int()>> enqueue = enqueueOf(call, what);
    if (!enqueue.ok())
      return enqueue.status();
    {
      std::lock_guard<std::mutex> lock(dev_->mutex);
      if (dev_->compute)
        return launch(what, *enqueue);
    }
    // No compute stream to order after: the host waits, as for the blocking
    // calls.
    if (Status s = run(what, -1, *enqueue); !s)
      return s;
    return 0;
  }
  Status finish(uint64_t handle) override {
    if (handle == 0)
      return Status::success();
    std::lock_guard<std::mutex> lock(dev_->mutex);
    auto it = started_.find(handle);
    if (it == started_.end())
      return Status::error("nccl: finish of collective " + std::to_string(handle) +
                           ", which was not started or has finished");
    void *event = it->second;
    started_.erase(it);
    int rc = gCuda.CtxSetCurrent(dev_->ctx);
    if (!rc && dev_->compute)
      rc = gCuda.StreamWaitEvent(dev_->compute, event, 0);
    else if (!rc) // the compute stream went since the start: the host waits
      rc = pollCuda([&] { return gCuda.EventQuery(event); }, true);
    gCuda.EventDestroy(event); // released once recorded work completes
    if (rc)
      return Status::error("nccl: ordering the compute stream after a collective: " +
                           cudaErrorString(rc));
    return asyncError("collective");
  }
  Status broadcast(void *buf, size_t count, DType dtype, int root) override {
    if (StatusOr<size_t> bytes = comm::byteCount("broadcast", count, dtype, 1); !bytes.ok())
      return bytes.status();
    if (Status s = comm::checkRank("broadcast", "root", root, size_); !s)
      return s;
    int type = 0;
    if (Status s = ncclType("broadcast", dtype, nullptr, type, nullptr); !s)
      return s;
    return run("broadcast", -1, [&] {
      return gNccl.Broadcast(buf, buf, count, type, root, comm_, dev_->stream);
    });
  }
  Status send(const void *buf, size_t count, DType dtype, int peer) override {
    if (StatusOr<size_t> bytes = comm::byteCount("send", count, dtype, 1); !bytes.ok())
      return bytes.status();
    if (Status s = comm::checkPeer("send", peer, rank_, size_); !s)
      return s;
    int type = 0;
    if (Status s = ncclType("send", dtype, nullptr, type, nullptr); !s)
      return s;
    return run("send to", peer, [&] {
      return gNccl.Send(buf, count, type, peer, comm_, dev_->stream);
    });
  }
  Status recv(void *buf, size_t count, DType dtype, int peer) override {
    if (StatusOr<size_t> bytes = comm::byteCount("recv", count, dtype, 1); !bytes.ok())
      return bytes.status();
    if (Status s = comm::checkPeer("recv", peer, rank_, size_); !s)
      return s;
    int type = 0;
    if (Status s = ncclType("recv", dtype, nullptr, type, nullptr); !s)
      return s;
    return run("recv from", peer, [&] {
      return gNccl.Recv(buf, count, type, peer, comm_, dev_->stream);
    });
  }
  Status barrier() override {
    void *word = reinterpret_cast<void *>(dev_->scratch);
    return run("barrier", -1, [&] {
      return gNccl.AllReduce(word, word, 1, ncclabi::kInt32, ncclabi::kSum,
                             comm_, dev_->stream);
    });
  }
  int maxTag() const override { return INT_MAX; }
  StatusOr<P2PRequest> isend(const void *buf, size_t count, DType dtype,
                             int peer, int tag) override {
    return record(true, const_cast<void *>(buf), count, dtype, peer, tag);
  }
  StatusOr<P2PRequest> irecv(void *buf, size_t count, DType dtype, int peer,
                             int tag) override {
    return record(false, buf, count, dtype, peer, tag);
  }
  Status wait(P2PRequest &request) override {
    StatusOr<P2PState *> state = comm::ownState("wait", *this, request);
    if (!state.ok())
      return state.status();
    if (!*state)
      return Status::success();
    bool done = false;
    Status s = complete(static_cast<NcclRequest *>(*state), true, done);
    request.finish(); // after the lock: its destructor takes it
    return s;
  }
  StatusOr<bool> test(P2PRequest &request) override {
    StatusOr<P2PState *> state = comm::ownState("test", *this, request);
    if (!state.ok())
      return state.status();
    if (!*state)
      return true;
    bool done = false;
    Status s = complete(static_cast<NcclRequest *>(*state), false, done);
    if (done)
      request.finish();
    if (!s)
      return s;
    return done;
  }
  StatusOr<std::unique_ptr<Communicator>> split(int color, int key) override;

  // Makes the NCCL communicator of `host`'s ranks (null host: one process).
  static StatusOr<std::unique_ptr<Communicator>> bootstrap(std::shared_ptr<CudaDevice> dev,
                                                           std::shared_ptr<Communicator> host,
                                                           std::vector<int> worldRanks);

private:
  Status ncclType(const char *what, DType dtype, const ReduceOp *op, int &type,
                  int *ncclOp) const;
  // Checks `call` and returns what enqueues it on the device stream; `what`
  // names it for errors.
  StatusOr<std::function<int()>> enqueueOf(const CollectiveCall &call, const char *&what) {
    using Kind = CollectiveCall::Kind;
    int type = 0, nop = 0;
    ReduceOp op = call.op;
    const void *send = call.send;
    void *recv = call.recv;
    size_t count = call.count;
    void *stream = dev_->stream, *nc = comm_;
    switch (call.kind) {
    case Kind::AllReduce:
      what = "allReduce";
      if (Status s = comm::checkAllReduce(send, recv, count, call.dtype); !s)
        return s;
      if (Status s = ncclType(what, call.dtype, &op, type, &nop); !s)
        return s;
      return std::function<int()>([=] {
        return gNccl.AllReduce(send, recv, count, type, nop, nc, stream);
      });
    case Kind::AllGather:
      what = "allGather";
      if (StatusOr<bool> inPlace =
              comm::checkAllGather(send, recv, count, call.dtype, rank_, size_);
          !inPlace.ok())
        return inPlace.status();
      if (Status s = ncclType(what, call.dtype, nullptr, type, nullptr); !s)
        return s;
      return std::function<int()>(
          [=] { return gNccl.AllGather(send, recv, count, type, nc, stream); });
    case Kind::ReduceScatter:
      what = "reduceScatter";
      if (Status s = comm::checkReduceScatter(send, recv, count, call.dtype, size_); !s)
        return s;
      if (Status s = ncclType(what, call.dtype, &op, type, &nop); !s)
        return s;
      return std::function<int()>([=] {
        return gNccl.ReduceScatter(send, recv, count, type, nop, nc, stream);
      });
    case Kind::Permute:
      break;
    }
    what = "permute";
    if (StatusOr<size_t> bytes = comm::byteCount(what, count, call.dtype, 1); !bytes.ok())
      return bytes.status();
    if (call.shift < 1 || call.shift >= size_)
      return Status::error("permute: shift " + std::to_string(call.shift) +
                           " is not a step of a ring of " + std::to_string(size_));
    if (Status s = ncclType(what, call.dtype, nullptr, type, nullptr); !s)
      return s;
    int from = (rank_ - call.shift + size_) % size_, to = (rank_ + call.shift) % size_;
    // A send and its receive in one group: NCCL runs them together.
    return std::function<int()>([=] {
      int rc = gNccl.GroupStart();
      if (!rc)
        rc = gNccl.Recv(recv, count, type, from, nc, stream);
      if (!rc)
        rc = gNccl.Send(send, count, type, to, nc, stream);
      int end = gNccl.GroupEnd();
      return rc ? rc : end;
    });
  }
  Status runCall(const CollectiveCall &call) {
    const char *what = "";
    StatusOr<std::function<int()>> enqueue = enqueueOf(call, what);
    if (!enqueue.ok())
      return enqueue.status();
    return run(what, -1, *enqueue);
  }
  // Orders the device stream after the compute stream's work so far
  // (device lock held, context current).
  int afterCompute() {
    if (!dev_->compute)
      return ncclabi::kCudaSuccess;
    int rc = dev_->computeEvent
                 ? ncclabi::kCudaSuccess
                 : gCuda.EventCreate(&dev_->computeEvent, ncclabi::kEventDisableTiming);
    if (!rc)
      rc = gCuda.EventRecord(dev_->computeEvent, dev_->compute);
    if (!rc)
      rc = gCuda.StreamWaitEvent(dev_->stream, dev_->computeEvent, 0);
    return rc;
  }
  // Enqueues a started call after the compute stream's work and records the
  // event finish waits for (device lock held).
  StatusOr<uint64_t> launch(const char *what, const std::function<int()> &enqueue) {
    if (aborted_)
      return Status::error(std::string(what) +
                           ": the NCCL communicator was aborted after an earlier error");
    int rc = gCuda.CtxSetCurrent(dev_->ctx);
    if (!rc)
      rc = afterCompute();
    if (rc)
      return Status::error(std::string(what) + ": " + cudaErrorString(rc));
    if (int nrc = enqueue(); nrc != ncclabi::kSuccess)
      return ncclError(what, -1, nrc);
    void *event = nullptr;
    rc = gCuda.EventCreate(&event, ncclabi::kEventDisableTiming);
    if (!rc)
      rc = gCuda.EventRecord(event, dev_->stream);
    if (rc) {
      if (event)
        gCuda.EventDestroy(event);
      return Status::error(std::string(what) + ": " + cudaErrorString(rc));
    }
    started_[nextHandle_] = event;
    return nextHandle_++;
  }
  // An asynchronous NCCL error, if one happened (the communicator is then
  // aborted); never waits (device lock held).
  Status asyncError(const char *what) {
    int async = ncclabi::kSuccess;
    if (gNccl.CommGetAsyncError(comm_, &async) == ncclabi::kSuccess &&
        async != ncclabi::kSuccess && async != ncclabi::kInProgress) {
      Status s = ncclError(what, -1, async);
      gNccl.CommAbort(comm_);
      aborted_ = true;
      return s;
    }
    return Status::success();
  }
  Status ncclError(const char *what, int peer, int rc) const {
    std::string msg = std::string(what) +
                      (peer >= 0 ? " rank " + std::to_string(peer) : "") +
                      ": NCCL error: " + gNccl.GetErrorString(rc);
    const char *last = gNccl.GetLastError ? gNccl.GetLastError(comm_) : nullptr;
    if (last && *last)
      msg += std::string(" (") + last + ")";
    return Status::error(msg);
  }
  StatusOr<P2PRequest> record(bool isSend, void *buf, size_t count,
                              DType dtype, int peer, int tag) {
    const char *what = isSend ? "isend" : "irecv";
    if (Status s = comm::checkP2P(what, count, dtype, peer, tag, rank_, size_,
                                  maxTag(), /*selfAllowed=*/false);
        !s)
      return s;
    int type = 0;
    if (Status s = ncclType(what, dtype, nullptr, type, nullptr); !s)
      return s;
    auto request = std::make_unique<NcclRequest>(this, isSend, peer, tag);
    request->dev = dev_;
    request->queue = p2p_;
    request->buf = buf;
    request->count = count;
    request->type = type;
    request->worldPeer = worldRanks_[size_t(peer)];
    std::lock_guard<std::mutex> lock(dev_->mutex);
    p2p_->recorded.push_back(request.get());
    return P2PRequest(std::move(request));
  }
  // Launches every recorded operation as one group (device lock held,
  // context current). On failure the communicator is aborted and every
  // recorded request dropped with the error.
  Status launchRecorded() {
    auto launch = std::make_shared<NcclLaunch>(dev_);
    int rc = gCuda.EventCreate(&launch->event, ncclabi::kEventDisableTiming);
    if (rc) {
      launch->event = nullptr;
      return dropRecorded(Status::error("p2p launch: CUDA error: " +
                                        cudaErrorString(rc)),
                          false);
    }
    Status failed;
    rc = gNccl.GroupStart();
    if (rc)
      failed = ncclError("p2p launch (ncclGroupStart)", -1, rc);
    for (NcclRequest *r : p2p_->recorded) {
      if (!failed)
        break;
      rc = r->isSend ? gNccl.Send(r->buf, r->count, r->type, r->peer, comm_,
                                  p2p_->stream)
                     : gNccl.Recv(r->buf, r->count, r->type, r->peer, comm_,
                                  p2p_->stream);
      if (rc)
        failed = ncclError(r->describe().c_str(), -1, rc);
    }
    rc = gNccl.GroupEnd();
    if (rc && failed)
      failed = ncclError("p2p launch (ncclGroupEnd)", -1, rc);
    if (failed) {
      rc = gCuda.EventRecord(launch->event, p2p_->stream);
      if (rc)
        failed = Status::error("p2p launch: CUDA error: " +
                               cudaErrorString(rc));
    }
    if (!failed)
      return dropRecorded(failed, true);
    for (NcclRequest *r : p2p_->recorded)
      r->launch = launch;
    p2p_->recorded.clear();
    return Status::success();
  }
  Status dropRecorded(const Status &why, bool abort) {
    for (NcclRequest *r : p2p_->recorded) {
      r->dropped = true;
      r->failed = why;
    }
    p2p_->recorded.clear();
    if (abort && !aborted_) {
      // Part of the group may be in flight: stop it.
      gNccl.CommAbort(comm_);
      aborted_ = true;
    }
    return why;
  }
  // Launches `r` if needed and polls its event (blocking: until done);
  // `done` says whether `r` is complete (also when it failed).
  Status complete(NcclRequest *r, bool block, bool &done) {
    std::lock_guard<std::mutex> lock(dev_->mutex);
    done = true;
    if (r->dropped)
      return r->failed;
    if (!r->launch && aborted_)
      return dropRecorded(Status::error(r->describe() +
                                        ": the NCCL communicator was aborted "
                                        "after an earlier error"),
                          false);
    int rc = gCuda.CtxSetCurrent(dev_->ctx);
    if (rc)
      return Status::error(r->describe() + ": " + cudaErrorString(rc));
    if (!r->launch)
      if (Status s = launchRecorded(); !s)
        return s;
    WatchedCall watched;
    watched.what = r->watchName.c_str();
    watched.peer = r->worldPeer;
    auto guard = Watchdog::process().watch(watched);
    std::string what = r->describe();
    Status s = drain(
        what.c_str(), -1,
        [&] { return gCuda.EventQuery(r->launch->event); }, block, done);
    return s;
  }

  // Enqueues (under the device lock and the watchdog) and waits.
  template <typename F> Status run(const char *what, int peer, F &&enqueue) {
    std::lock_guard<std::mutex> lock(dev_->mutex);
    if (aborted_)
      return Status::error(std::string(what) +
                           ": the NCCL communicator was aborted after an "
                           "earlier error");
    WatchedCall watched;
    watched.what = what;
    watched.peer = peer >= 0 ? worldRanks_[size_t(peer)] : -1;
    watched.group = &worldRanks_;
    auto guard = Watchdog::process().watch(watched);
    int rc = gCuda.CtxSetCurrent(dev_->ctx);
    if (!rc)
      rc = afterCompute();
    if (rc)
      return Status::error(std::string(what) + ": " + cudaErrorString(rc));
    rc = enqueue();
    if (rc != ncclabi::kSuccess)
      return ncclError(what, peer, rc);
    bool done = false;
    return drain(what, peer, [&] { return gCuda.StreamQuery(dev_->stream); },
                 true, done);
  }
  // Polls `query` (cuStreamQuery or cuEventQuery) until the work is done
  // (blocking) or once; an asynchronous NCCL error aborts the
  // communicator. `done`: the work is done or failed.
  template <typename Query>
  Status drain(const char *what, int peer, Query query, bool block,
               bool &done) {
    for (unsigned spins = 0;; ++spins) {
      done = true;
      int q = query();
      if (q == ncclabi::kCudaSuccess)
        return Status::success();
      if (q != ncclabi::kCudaErrorNotReady)
        return Status::error(std::string(what) + ": CUDA error: " +
                             cudaErrorString(q));
      int async = ncclabi::kSuccess;
      if (gNccl.CommGetAsyncError(comm_, &async) == ncclabi::kSuccess &&
          async != ncclabi::kSuccess && async != ncclabi::kInProgress) {
        Status s = ncclError(what, peer, async);
        gNccl.CommAbort(comm_);
        aborted_ = true;
        return s;
      }
      done = false;
      if (!block)
        return Status::success();
      if (spins < 1000)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  std::shared_ptr<CudaDevice> dev_;
  std::shared_ptr<Communicator> host_;
  void *comm_;
  std::shared_ptr<NcclP2PQueue> p2p_;
  std::map<uint64_t, void *> started_; // start's handles and their events
  uint64_t nextHandle_ = 1;
  int rank_, size_;
  std::vector<int> worldRanks_;
  bool aborted_ = false;
};

Status NcclCommunicator::ncclType(const char *what, DType dtype,
                                  const ReduceOp *op, int &type,
                                  int *ncclOp) const {
  bool reducible = true;
  switch (dtype) {
  case DType::F32: type = ncclabi::kFloat32; break;
  case DType::F64: type = ncclabi::kFloat64; break;
  case DType::F16: type = ncclabi::kFloat16; break;
  case DType::BF16:
    if (gNccl.version < ncclabi::kVersionAvgBf16)
      return Status::error(std::string(what) +
                           ": bf16 needs NCCL 2.10 or newer");
    type = ncclabi::kBfloat16;
    break;
  case DType::I8: type = ncclabi::kInt8; break;
  case DType::U8: type = ncclabi::kUint8; break;
  case DType::I32: type = ncclabi::kInt32; break;
  case DType::U32: type = ncclabi::kUint32; break;
  case DType::I64: type = ncclabi::kInt64; break;
  case DType::U64: type = ncclabi::kUint64; break;
  case DType::I1:
    type = ncclabi::kUint8;
    if (op && *op != ReduceOp::Min && *op != ReduceOp::Max)
      return Status::error(std::string(what) + ": i1 reduces only with min "
                           "or max in the NCCL backend, not " +
                           reduceOpName(*op));
    break;
  case DType::I16:
  case DType::U16:
    type = ncclabi::kFloat16; // 16-bit words, moved not reduced
    reducible = false;
    break;
  }
  if (!op)
    return Status::success();
  if (!reducible)
    return Status::error(std::string(what) + ": " + dtypeName(dtype) +
                         " reductions are not supported by the NCCL backend");
  switch (*op) {
  case ReduceOp::Sum: *ncclOp = ncclabi::kSum; break;
  case ReduceOp::Prod: *ncclOp = ncclabi::kProd; break;
  case ReduceOp::Min: *ncclOp = ncclabi::kMin; break;
  case ReduceOp::Max: *ncclOp = ncclabi::kMax; break;
  case ReduceOp::Avg:
    if (gNccl.version < ncclabi::kVersionAvgBf16)
      return Status::error(std::string(what) +
                           ": avg needs NCCL 2.10 or newer");
    *ncclOp = ncclabi::kAvg;
    break;
  }
  return Status::success();
}

StatusOr<std::unique_ptr<Communicator>>
NcclCommunicator::bootstrap(std::shared_ptr<CudaDevice> dev, std::shared_ptr<Communicator> host,
                            std::vector<int> worldRanks) {
  int rank = host ? host->rank() : 0, size = host ? host->size() : 1;
  // The id, then one byte: whether rank 0 could make it (so that every
  // rank fails together instead of waiting for a broken rank 0).
  unsigned char message[ncclabi::kUniqueIdBytes + 1] = {0};
  UniqueId id{};
  std::string rootError;
  if (rank == 0) {
    int rc = gNccl.GetUniqueId(&id);
    if (rc == ncclabi::kSuccess) {
      std::memcpy(message, id.internal, sizeof id.internal);
      message[ncclabi::kUniqueIdBytes] = 1;
    } else {
      rootError = gNccl.GetErrorString(rc);
    }
  }
  if (host) {
    if (Status s = host->broadcast(message, sizeof message, DType::U8, 0); !s)
      return s.withPrefix("nccl bootstrap: ");
  }
  if (!message[ncclabi::kUniqueIdBytes])
    return Status::error("nccl: rank 0 could not make the NCCL unique id" +
                         (rootError.empty() ? "" : ": " + rootError));
  std::memcpy(id.internal, message, sizeof id.internal);
  void *comm = nullptr, *p2pStream = nullptr;
  {
    std::lock_guard<std::mutex> lock(dev->mutex);
    int rc = gCuda.CtxSetCurrent(dev->ctx);
    if (rc)
      return Status::error("nccl: " + cudaErrorString(rc));
    WatchedCall watched;
    watched.what = "ncclCommInitRank";
    watched.group = &worldRanks;
    auto guard = Watchdog::process().watch(watched);
    rc = gNccl.CommInitRank(&comm, size, id, rank);
    if (rc != ncclabi::kSuccess)
      return Status::error(std::string("nccl: ncclCommInitRank failed on "
                                       "CUDA device ") +
                           std::to_string(dev->ordinal) + ": " +
                           gNccl.GetErrorString(rc));
    // isend/irecv run on their own stream, apart from the collectives.
    rc = gCuda.StreamCreate(&p2pStream, ncclabi::kStreamNonBlocking);
    if (rc) {
      gNccl.CommDestroy(comm);
      return Status::error("nccl: cannot make the p2p stream on CUDA device " +
                           std::to_string(dev->ordinal) + ": " +
                           cudaErrorString(rc));
    }
  }
  return std::unique_ptr<Communicator>(std::make_unique<NcclCommunicator>(
      std::move(dev), std::move(host), comm, p2pStream, rank, size,
      std::move(worldRanks)));
}

StatusOr<std::unique_ptr<Communicator>> NcclCommunicator::split(int color, int key) {
  if (color < kNoGroup)
    return Status::error("split: color " + std::to_string(color) +
                         " is negative (kNoGroup is -1)");
  if (!host_) {
    if (color == kNoGroup)
      return std::unique_ptr<Communicator>();
    return bootstrap(dev_, nullptr, worldRanks_);
  }
  StatusOr<std::unique_ptr<Communicator>> hostSplit = host_->split(color, key);
  if (!hostSplit.ok())
    return hostSplit.status();
  std::unique_ptr<Communicator> sub = *std::move(hostSplit);
  if (!sub)
    return std::unique_ptr<Communicator>();
  int mine = worldRanks_[size_t(rank_)];
  std::vector<int> ranks(size_t(sub->size()));
  if (Status s = sub->allGather(&mine, ranks.data(), 1, DType::I32); !s)
    return s.withPrefix("split: ");
  return bootstrap(dev_, std::shared_ptr<Communicator>(std::move(sub)), std::move(ranks));
}

} // namespace

std::string ncclLibraryName() {
  const char *override = ::getenv("TRC_NCCL_LIBRARY");
  return override && *override ? override : ncclabi::kDefaultLibrary;
}

StatusOr<std::unique_ptr<Communicator>> createNcclCommunicator() {
  {
    std::lock_guard<std::mutex> lock(gLoadMutex);
    if (Status s = loadNccl(); !s)
      return s;
    if (Status s = loadCuda(); !s)
      return s;
  }
  StatusOr<LaunchEnvironment> launch = readLaunchEnvironment();
  if (!launch.ok())
    return launch.status();
  const LaunchEnvironment &env = *launch;
  StatusOr<double> timeout = readCollectiveTimeout();
  if (!timeout.ok())
    return timeout.status();
  Watchdog::process().setTimeout(*timeout);
  std::shared_ptr<Communicator> host;
  if (env.multiProcess()) {
    StatusOr<std::unique_ptr<Communicator>> mpi = createMpiCommunicator();
    if (!mpi.ok())
      return Status(mpi.status()).withPrefix("nccl bootstrap over MPI: ");
    host = *std::move(mpi);
  }
  int count = 0;
  if (int rc = gCuda.DeviceGetCount(&count); rc || count == 0)
    return Status::error("nccl: no CUDA device");
  int ordinal = env.localRank % count;
  std::shared_ptr<CudaDevice> dev;
  if (Status s = openDevice(ordinal, dev); !s)
    return s;
  int size = host ? host->size() : 1;
  std::vector<int> worldRanks(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r)
    worldRanks[size_t(r)] = r;
  return NcclCommunicator::bootstrap(std::move(dev), std::move(host), std::move(worldRanks));
}

} // namespace trc::rt
