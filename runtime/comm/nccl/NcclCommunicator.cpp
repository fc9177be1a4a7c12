//===- NcclCommunicator.cpp - the NCCL backend (CUDA device memory) ---------===//
//
// See NcclCommunicator.h. CudaDevice is the device state the communicators
// of a process share (primary context, stream, a scratch word for barrier,
// the call mutex); each NcclCommunicator owns one ncclComm_t and keeps the
// host communicator it was bootstrapped over.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/nccl/NcclCommunicator.h"

#include "runtime/support/DynamicLibrary.h"
#include "runtime/comm/CommunicatorSupport.h"
#include "runtime/comm/LaunchEnvironment.h"
#include "runtime/comm/mpi/MpiCommunicator.h"
#include "runtime/comm/nccl/NcclAbi.h"
#include "runtime/comm/Watchdog.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
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
    if (scratch)
      gCuda.MemFree(scratch);
    gCuda.DevicePrimaryCtxRelease(device);
  }
  std::mutex mutex;
  int ordinal = 0, device = 0;
  void *ctx = nullptr, *stream = nullptr;
  unsigned long long scratch = 0; // one int32 for barrier
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

class NcclCommunicator final : public Communicator {
public:
  NcclCommunicator(std::shared_ptr<CudaDevice> dev,
                   std::shared_ptr<Communicator> host, void *comm, int rank,
                   int size, std::vector<int> worldRanks)
      : dev_(std::move(dev)), host_(std::move(host)), comm_(comm),
        rank_(rank), size_(size), worldRanks_(std::move(worldRanks)) {}
  ~NcclCommunicator() override {
    std::lock_guard<std::mutex> lock(dev_->mutex);
    gCuda.CtxSetCurrent(dev_->ctx);
    if (!aborted_)
      gNccl.CommDestroy(comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char *backendName() const override { return "nccl"; }

  Status allReduce(const void *send, void *recv, size_t count, DType dtype,
                   ReduceOp op) override {
    if (Status s = comm::checkAllReduce(send, recv, count, dtype); !s)
      return s;
    int type = 0, nop = 0;
    if (Status s = ncclType("allReduce", dtype, &op, type, &nop); !s)
      return s;
    return run("allReduce", -1, [&] {
      return gNccl.AllReduce(send, recv, count, type, nop, comm_,
                             dev_->stream);
    });
  }
  Status allGather(const void *send, void *recv, size_t count,
                   DType dtype) override {
    if (StatusOr<bool> inPlace = comm::checkAllGather(send, recv, count, dtype, rank_, size_);
        !inPlace.ok())
      return inPlace.status();
    int type = 0;
    if (Status s = ncclType("allGather", dtype, nullptr, type, nullptr); !s)
      return s;
    return run("allGather", -1, [&] {
      return gNccl.AllGather(send, recv, count, type, comm_, dev_->stream);
    });
  }
  Status reduceScatter(const void *send, void *recv, size_t count, DType dtype,
                       ReduceOp op) override {
    if (Status s =
            comm::checkReduceScatter(send, recv, count, dtype, size_);
        !s)
      return s;
    int type = 0, nop = 0;
    if (Status s = ncclType("reduceScatter", dtype, &op, type, &nop); !s)
      return s;
    return run("reduceScatter", -1, [&] {
      return gNccl.ReduceScatter(send, recv, count, type, nop, comm_,
                                 dev_->stream);
    });
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
  StatusOr<std::unique_ptr<Communicator>> split(int color, int key) override;

  // Makes the NCCL communicator of `host`'s ranks (null host: one process).
  static StatusOr<std::unique_ptr<Communicator>> bootstrap(std::shared_ptr<CudaDevice> dev,
                                                           std::shared_ptr<Communicator> host,
                                                           std::vector<int> worldRanks);

private:
  Status ncclType(const char *what, DType dtype, const ReduceOp *op, int &type,
                  int *ncclOp) const;
  Status ncclError(const char *what, int peer, int rc) const {
    std::string msg = std::string(what) +
                      (peer >= 0 ? " rank " + std::to_string(peer) : "") +
                      ": NCCL error: " + gNccl.GetErrorString(rc);
    const char *last = gNccl.GetLastError ? gNccl.GetLastError(comm_) : nullptr;
    if (last && *last)
      msg += std::string(" (") + last + ")";
    return Status::error(msg);
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
    if (rc)
      return Status::error(std::string(what) + ": " + cudaErrorString(rc));
    rc = enqueue();
    if (rc != ncclabi::kSuccess)
      return ncclError(what, peer, rc);
    return wait(what, peer);
  }
  Status wait(const char *what, int peer) {
    for (unsigned spins = 0;; ++spins) {
      int q = gCuda.StreamQuery(dev_->stream);
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
      if (spins < 1000)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  std::shared_ptr<CudaDevice> dev_;
  std::shared_ptr<Communicator> host_;
  void *comm_;
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
  void *comm = nullptr;
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
  }
  return std::unique_ptr<Communicator>(std::make_unique<NcclCommunicator>(
      std::move(dev), std::move(host), comm, rank, size, std::move(worldRanks)));
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
