//===- MpiCommunicator.cpp - the MPI backend (host memory) ------------------===//
//
// See MpiCommunicator.h. MpiRuntime is the process's one MPI: the loaded
// library, its entry points and predefined handles, the call mutex and the
// world identity; every MpiCommunicator holds it, and the last one to go
// finalizes MPI.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/mpi/MpiCommunicator.h"
#include "runtime/comm/CommunicatorSupport.h"
#include "runtime/support/LaunchEnvironment.h"
#include "runtime/comm/mpi/MpiAbi.h"
#include "runtime/comm/Watchdog.h"
#include "runtime/support/HalfFloat.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <vector>

namespace trc::rt {

namespace {

using mpiabi::Handle;

// Open MPI's entry points, typed with opaque handles.
struct MpiApi {
  int (*Init_thread)(int *, char ***, int, int *) = nullptr;
  int (*Initialized)(int *) = nullptr;
  int (*Finalized)(int *) = nullptr;
  int (*Finalize)() = nullptr;
  int (*Comm_rank)(Handle, int *) = nullptr;
  int (*Comm_size)(Handle, int *) = nullptr;
  int (*Comm_split)(Handle, int, int, Handle *) = nullptr;
  int (*Comm_free)(Handle *) = nullptr;
  int (*Comm_set_errhandler)(Handle, Handle) = nullptr;
  int (*Allreduce)(const void *, void *, int, Handle, Handle, Handle) = nullptr;
  int (*Allgather)(const void *, int, Handle, void *, int, Handle,
                   Handle) = nullptr;
  int (*Reduce_scatter_block)(const void *, void *, int, Handle, Handle,
                              Handle) = nullptr;
  int (*Bcast)(void *, int, Handle, int, Handle) = nullptr;
  int (*Send)(const void *, int, Handle, int, int, Handle) = nullptr;
  int (*Recv)(void *, int, Handle, int, int, Handle, void *) = nullptr;
  int (*Get_count)(const void *, Handle, int *) = nullptr;
  int (*Isend)(const void *, int, Handle, int, int, Handle, Handle *) = nullptr;
  int (*Irecv)(void *, int, Handle, int, int, Handle, Handle *) = nullptr;
  int (*Wait)(Handle *, void *) = nullptr;
  int (*Test)(Handle *, int *, void *) = nullptr;
  int (*Cancel)(Handle *) = nullptr;
  int (*Comm_get_attr)(Handle, int, void *, int *) = nullptr;
  int (*Barrier)(Handle) = nullptr;
  int (*Error_string)(int, char *, int *) = nullptr;

  Handle commWorld = nullptr, errorsReturn = nullptr, byte = nullptr;
  Handle f32 = nullptr, f64 = nullptr, i8 = nullptr, u8 = nullptr,
         i16 = nullptr, u16 = nullptr, i32 = nullptr, u32 = nullptr,
         i64 = nullptr, u64 = nullptr;
  Handle opSum = nullptr, opProd = nullptr, opMin = nullptr, opMax = nullptr;
};

// The loaded library (never unloaded: Open MPI registers exit handlers).
void *gLibrary = nullptr;
MpiApi gApi;
std::string gLibraryName;

Status loadMpi() {
  if (gLibrary)
    return Status::success();
  const char *override = ::getenv("TRC_MPI_LIBRARY");
  std::string name = mpiLibraryName();
  ::dlerror();
  // RTLD_GLOBAL: Open MPI's plugins resolve libmpi's symbols globally.
  void *lib = ::dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    const char *why = ::dlerror();
    std::string msg = "cannot load the MPI library ";
    if (override && *override)
      msg += "'" + name + "' (named by TRC_MPI_LIBRARY)";
    else
      msg += name + " (Open MPI; Debian: apt-get install libopenmpi3 "
                    "openmpi-bin, or set TRC_MPI_LIBRARY to its path)";
    return Status::error(msg + ": " + (why ? why : "unknown dlopen error"));
  }
  MpiApi api;
  std::string missing;
  auto sym = [&](const char *symbol) -> void * {
    void *p = ::dlsym(lib, symbol);
    if (!p && missing.empty())
      missing = symbol;
    return p;
  };
  auto fn = [&](auto &slot, const char *symbol) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(
        sym(symbol));
  };
  fn(api.Init_thread, "MPI_Init_thread");
  fn(api.Initialized, "MPI_Initialized");
  fn(api.Finalized, "MPI_Finalized");
  fn(api.Finalize, "MPI_Finalize");
  fn(api.Comm_rank, "MPI_Comm_rank");
  fn(api.Comm_size, "MPI_Comm_size");
  fn(api.Comm_split, "MPI_Comm_split");
  fn(api.Comm_free, "MPI_Comm_free");
  fn(api.Comm_set_errhandler, "MPI_Comm_set_errhandler");
  fn(api.Allreduce, "MPI_Allreduce");
  fn(api.Allgather, "MPI_Allgather");
  fn(api.Reduce_scatter_block, "MPI_Reduce_scatter_block");
  fn(api.Bcast, "MPI_Bcast");
  fn(api.Send, "MPI_Send");
  fn(api.Recv, "MPI_Recv");
  fn(api.Get_count, "MPI_Get_count");
  fn(api.Isend, "MPI_Isend");
  fn(api.Irecv, "MPI_Irecv");
  fn(api.Wait, "MPI_Wait");
  fn(api.Test, "MPI_Test");
  fn(api.Cancel, "MPI_Cancel");
  fn(api.Comm_get_attr, "MPI_Comm_get_attr");
  fn(api.Barrier, "MPI_Barrier");
  fn(api.Error_string, "MPI_Error_string");
  bool isMpi = missing.empty();
  api.commWorld = sym(mpiabi::kCommWorld);
  api.errorsReturn = sym(mpiabi::kErrorsReturn);
  api.byte = sym(mpiabi::kByte);
  api.f32 = sym(mpiabi::kFloat);
  api.f64 = sym(mpiabi::kDouble);
  api.i8 = sym(mpiabi::kInt8);
  api.u8 = sym(mpiabi::kUint8);
  api.i16 = sym(mpiabi::kInt16);
  api.u16 = sym(mpiabi::kUint16);
  api.i32 = sym(mpiabi::kInt32);
  api.u32 = sym(mpiabi::kUint32);
  api.i64 = sym(mpiabi::kInt64);
  api.u64 = sym(mpiabi::kUint64);
  api.opSum = sym(mpiabi::kOpSum);
  api.opProd = sym(mpiabi::kOpProd);
  api.opMin = sym(mpiabi::kOpMin);
  api.opMax = sym(mpiabi::kOpMax);
  if (!missing.empty()) {
    // Leave the library loaded (unloading half-initialized MPI is unsafe).
    return Status::error("the MPI library " + name + " has no symbol " +
                         missing +
                         (isMpi ? ": trc needs Open MPI (libmpi.so.40), not "
                                  "another MPI's ABI"
                                : ": it is not an MPI library"));
  }
  gApi = api;
  gLibrary = lib;
  gLibraryName = name;
  return Status::success();
}

std::string mpiErrorString(int rc) {
  char text[mpiabi::kMaxErrorString + 64] = {0};
  int len = 0;
  if (gApi.Error_string && gApi.Error_string(rc, text, &len) == 0 && len > 0)
    return std::string(text, size_t(std::min(len, int(sizeof text) - 1)));
  return "MPI error code " + std::to_string(rc);
}

// Every rank's process, exchanged once at start-up (fixed size, as bytes).
struct WireProcess {
  int64_t pid;
  uint64_t startTime;
  char namespaceKey[160];
  char host[64];
};

void copyString(char *dst, size_t size, const std::string &src) {
  size_t n = std::min(size - 1, src.size());
  std::memcpy(dst, src.data(), n);
  dst[n] = 0;
}

class MpiRuntime {
public:
  ~MpiRuntime();
  // The whole-process lock around every MPI call.
  std::mutex mutex;
  bool ownsInit = false;
  int worldRank = 0, worldSize = 1;
  int maxTag = mpiabi::kMinTagUb; // MPI_TAG_UB
};

std::mutex gRuntimeMutex;
std::weak_ptr<MpiRuntime> gRuntime;
std::atomic<bool> gFinalizedByUs{false};
std::atomic<bool> gLeavingAlone{false}; // leaveMpiWithoutFinalize
std::atomic<bool> gDeferFinalize{false}; // deferMpiFinalize
std::atomic<bool> gFinalizePending{false};

void finalizeWatched() {
  WatchedCall call;
  call.what = "MPI_Finalize";
  call.checkPeers = false; // finished peers legitimately exit
  auto guard = Watchdog::process().watch(call);
  (void)gApi.Finalize();
  gFinalizedByUs = true;
}

MpiRuntime::~MpiRuntime() {
  if (!ownsInit || gLeavingAlone)
    return;
  if (gDeferFinalize) {
    gFinalizePending = true;
    return;
  }
  std::lock_guard<std::mutex> lock(mutex);
  finalizeWatched();
}

// The watchdog's view of a point-to-point wait on `worldPeer` (`what`
// must outlive the guard).
Watchdog::Guard watchPeer(const char *what, int worldPeer) {
  WatchedCall watched;
  watched.what = what;
  watched.peer = worldPeer;
  return Watchdog::process().watch(watched);
}

// An isend/irecv in flight: one MPI request per piece of at most INT_MAX
// elements (the pieces of a message stay in order: MPI messages of one
// peer and tag do not overtake each other). The caller holds rt->mutex
// around start/finish/poll; the destructor takes it itself.
struct MpiRequest final : P2PState {
  MpiRequest(const Communicator *owner, bool isSend, int peer, int tag,
             std::shared_ptr<MpiRuntime> rt, int worldPeer, DType dtype,
             Handle type)
      : P2PState(owner, isSend, peer, tag), rt(std::move(rt)),
        worldPeer(worldPeer), dtype(dtype), type(type),
        watchName(std::string(isSend ? "isend" : "irecv") + " tag " +
                  std::to_string(tag) + (isSend ? " to" : " from")) {}
  ~MpiRequest() override;

  bool pending() const { return done < pieces.size(); }
  // Posts the next piece (`elements` at `buf`).
  Status start(void *buf, int elements, Handle comm);
  // Waits for every piece left (blocking, watched); the first error.
  Status finish();
  // Completes the pieces that are done; whether all are (or an error).
  StatusOr<bool> poll();

  std::shared_ptr<MpiRuntime> rt; // keeps MPI initialized while in flight
  int worldPeer;
  DType dtype;
  Handle type;
  std::vector<Handle> pieces; // MPI_Request of each posted piece
  std::vector<int> counts;    // its element count
  size_t done = 0;            // pieces complete
  size_t received = 0;        // irecv: elements that arrived
  bool short_ = false;        // irecv: a piece arrived short
  Status error;               // the first failure
  std::string watchName;      // "irecv tag 7 from" (+ " rank 1" by the watchdog)

private:
  // Records piece `done` as complete with MPI's `rc` and `status`.
  void completed(int rc, const void *status);
};

MpiRequest::~MpiRequest() {
  if (!pending())
    return;
  // Nobody waits for it any more: cancel a receive (it completes at once
  // if not yet matched) and wait for the rest, so the buffer is free.
  std::lock_guard<std::mutex> lock(rt->mutex);
  auto guard = watchPeer(watchName.c_str(), worldPeer);
  for (; done < pieces.size(); ++done) {
    if (!isSend)
      (void)gApi.Cancel(&pieces[done]);
    (void)gApi.Wait(&pieces[done], nullptr);
  }
}

Status MpiRequest::start(void *buf, int elements, Handle comm) {
  Handle request = nullptr;
  auto guard = watchPeer(watchName.c_str(), worldPeer);
  int rc = isSend ? gApi.Isend(buf, elements, type, peer, tag, comm, &request)
                  : gApi.Irecv(buf, elements, type, peer, tag, comm, &request);
  if (rc != mpiabi::kSuccess)
    return Status::error(describe() + ": MPI error: " + mpiErrorString(rc));
  pieces.push_back(request);
  counts.push_back(elements);
  return Status::success();
}

void MpiRequest::completed(int rc, const void *status) {
  int got = -1;
  if (rc == mpiabi::kSuccess && !isSend)
    rc = gApi.Get_count(status, type, &got);
  if (rc != mpiabi::kSuccess && error)
    error = Status::error(describe() + ": MPI error: " + mpiErrorString(rc));
  if (!isSend) {
    received += size_t(std::max(got, 0));
    short_ |= got != counts[done];
  }
  ++done;
  if (!pending() && short_ && error) {
    size_t expected = 0;
    for (int c : counts)
      expected += size_t(c);
    error = comm::countMismatch(*this, received, expected, dtype);
  }
}

Status MpiRequest::finish() {
  auto guard = watchPeer(watchName.c_str(), worldPeer);
  while (pending()) {
    alignas(16) unsigned char status[mpiabi::kStatusBytes] = {0};
    int rc = gApi.Wait(&pieces[done], status);
    completed(rc, status);
  }
  return error;
}

StatusOr<bool> MpiRequest::poll() {
  while (pending()) {
    alignas(16) unsigned char status[mpiabi::kStatusBytes] = {0};
    int flag = 0;
    int rc = gApi.Test(&pieces[done], &flag, status);
    if (rc == mpiabi::kSuccess && !flag)
      return false;
    completed(rc, status);
  }
  if (!error)
    return error;
  return true;
}

class MpiCommunicator final : public Communicator {
public:
  MpiCommunicator(std::shared_ptr<MpiRuntime> rt, Handle comm, bool owned,
                  int rank, int size, std::vector<int> worldRanks)
      : rt_(std::move(rt)), comm_(comm), owned_(owned), rank_(rank),
        size_(size), worldRanks_(std::move(worldRanks)) {}
  ~MpiCommunicator() override {
    if (!owned_)
      return;
    std::lock_guard<std::mutex> lock(rt_->mutex);
    (void)gApi.Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char *backendName() const override { return "mpi"; }

  Status allReduce(const void *send, void *recv, size_t count, DType dtype,
                   ReduceOp op) override;
  Status allGather(const void *send, void *recv, size_t count,
                   DType dtype) override;
  Status reduceScatter(const void *send, void *recv, size_t count, DType dtype,
                       ReduceOp op) override;
  Status broadcast(void *buf, size_t count, DType dtype, int root) override;
  Status send(const void *buf, size_t count, DType dtype, int peer) override;
  Status recv(void *buf, size_t count, DType dtype, int peer) override;
  Status barrier() override;
  int maxTag() const override { return rt_->maxTag; }
  StatusOr<P2PRequest> isend(const void *buf, size_t count, DType dtype,
                             int peer, int tag) override {
    return start(true, const_cast<void *>(buf), count, dtype, peer, tag);
  }
  StatusOr<P2PRequest> irecv(void *buf, size_t count, DType dtype, int peer,
                             int tag) override {
    return start(false, buf, count, dtype, peer, tag);
  }
  Status wait(P2PRequest &request) override;
  StatusOr<bool> test(P2PRequest &request) override;
  StatusOr<std::unique_ptr<Communicator>> split(int color, int key) override;

private:
  StatusOr<P2PRequest> start(bool isSend, void *buf, size_t count,
                             DType dtype, int peer, int tag);

  // Runs `call` (returning an MPI error code) under the process lock and
  // the watchdog; `peer` is a rank of this communicator or -1.
  template <typename F>
  Status blocking(const char *what, int peer, F &&call) {
    std::lock_guard<std::mutex> lock(rt_->mutex);
    WatchedCall watched;
    watched.what = what;
    watched.peer = peer >= 0 ? worldRanks_[size_t(peer)] : -1;
    watched.group = &worldRanks_;
    auto guard = Watchdog::process().watch(watched);
    int rc = call();
    if (rc != mpiabi::kSuccess)
      return Status::error(std::string(what) +
                           (peer >= 0 ? " rank " + std::to_string(peer) : "") +
                           ": MPI error: " + mpiErrorString(rc));
    return Status::success();
  }

  std::shared_ptr<MpiRuntime> rt_;
  Handle comm_;
  bool owned_;
  int rank_, size_;
  // World rank of each rank of this communicator.
  std::vector<int> worldRanks_;
};

// The MPI datatype moving `dtype` (reductions: `op` must apply to it).
Status mpiType(const char *what, DType dtype, const ReduceOp *op,
               Handle &out) {
  switch (dtype) {
  case DType::F32: out = gApi.f32; break;
  case DType::F64: out = gApi.f64; break;
  case DType::I8: out = gApi.i8; break;
  case DType::U8: out = gApi.u8; break;
  case DType::I16: out = gApi.i16; break;
  case DType::U16: out = gApi.u16; break;
  case DType::I32: out = gApi.i32; break;
  case DType::U32: out = gApi.u32; break;
  case DType::I64: out = gApi.i64; break;
  case DType::U64: out = gApi.u64; break;
  case DType::F16:
  case DType::BF16: // reductions were widened to f32 (isHalf)
    if (op)
      return Status::error(std::string(what) + ": " + dtypeName(dtype) +
                           " reductions are not supported by the MPI backend "
                           "(reduce in f32)");
    out = gApi.u16;
    break;
  case DType::I1:
    if (op && *op != ReduceOp::Min && *op != ReduceOp::Max)
      return Status::error(std::string(what) + ": i1 reduces only with min "
                           "or max in the MPI backend, not " +
                           reduceOpName(*op));
    out = gApi.u8;
    break;
  }
  return Status::success();
}

Handle mpiOp(ReduceOp op) {
  switch (op) {
  case ReduceOp::Sum:
  case ReduceOp::Avg:
    return gApi.opSum;
  case ReduceOp::Prod:
    return gApi.opProd;
  case ReduceOp::Min:
    return gApi.opMin;
  case ReduceOp::Max:
    return gApi.opMax;
  }
  return gApi.opSum;
}

// Counts above INT_MAX: the largest piece MPI's int count takes.
constexpr size_t kMaxPiece = size_t(INT_MAX);

Status countFitsInt(const char *what, size_t count) {
  if (count > kMaxPiece)
    return Status::error(std::string(what) + ": element count " +
                         std::to_string(count) +
                         " exceeds MPI's limit of 2147483647 per rank");
  return Status::success();
}

// MPI has no half-precision reductions: f16 and bf16 ones run in f32 (as
// NCCL accumulates) and are rounded once at the end.
bool isHalf(DType dtype) { return dtype == DType::F16 || dtype == DType::BF16; }

std::vector<float> widened(const void *data, size_t count, DType dtype) {
  const uint16_t *in = static_cast<const uint16_t *>(data);
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i)
    out[i] = dtype == DType::BF16 ? bf16ToFloat(in[i]) : f16ToFloat(in[i]);
  return out;
}

void narrow(const std::vector<float> &values, void *data, DType dtype) {
  uint16_t *out = static_cast<uint16_t *>(data);
  for (size_t i = 0; i < values.size(); ++i)
    out[i] = dtype == DType::BF16 ? floatToBf16(values[i]) : floatToF16(values[i]);
}

Status MpiCommunicator::allReduce(const void *send, void *recv, size_t count,
                                  DType dtype, ReduceOp op) {
  if (Status s = comm::checkAllReduce(send, recv, count, dtype); !s)
    return s;
  if (isHalf(dtype)) {
    std::vector<float> in = widened(send, count, dtype), out(count);
    if (Status s = allReduce(in.data(), out.data(), count, DType::F32, op); !s)
      return s;
    narrow(out, recv, dtype);
    return Status::success();
  }
  Handle type;
  if (Status s = mpiType("allReduce", dtype, &op, type); !s)
    return s;
  size_t elem = dtypeSize(dtype);
  size_t done = 0;
  do {
    size_t piece = std::min(count - done, kMaxPiece);
    const void *in = send == recv
                         ? reinterpret_cast<const void *>(mpiabi::kInPlace)
                         : static_cast<const char *>(send) + done * elem;
    void *out = static_cast<char *>(recv) + done * elem;
    if (Status s = blocking("allReduce", -1, [&] {
          return gApi.Allreduce(in, out, int(piece), type, mpiOp(op), comm_);
        });
        !s)
      return s;
    done += piece;
  } while (done < count);
  if (op == ReduceOp::Avg)
    comm::divideHost(recv, count, dtype, size_);
  return Status::success();
}

Status MpiCommunicator::allGather(const void *send, void *recv, size_t count,
                                  DType dtype) {
  StatusOr<bool> inPlace = comm::checkAllGather(send, recv, count, dtype, rank_, size_);
  if (!inPlace.ok())
    return inPlace.status();
  if (Status s = countFitsInt("allGather", count); !s)
    return s;
  Handle type;
  if (Status s = mpiType("allGather", dtype, nullptr, type); !s)
    return s;
  const void *in =
      *inPlace ? reinterpret_cast<const void *>(mpiabi::kInPlace) : send;
  return blocking("allGather", -1, [&] {
    return gApi.Allgather(in, int(count), type, recv, int(count), type, comm_);
  });
}

Status MpiCommunicator::reduceScatter(const void *send, void *recv,
                                      size_t count, DType dtype, ReduceOp op) {
  if (Status s = comm::checkReduceScatter(send, recv, count, dtype, size_); !s)
    return s;
  if (isHalf(dtype)) {
    std::vector<float> in = widened(send, count * size_t(size_), dtype), out(count);
    if (Status s = reduceScatter(in.data(), out.data(), count, DType::F32, op); !s)
      return s;
    narrow(out, recv, dtype);
    return Status::success();
  }
  if (Status s = countFitsInt("reduceScatter", count); !s)
    return s;
  Handle type;
  if (Status s = mpiType("reduceScatter", dtype, &op, type); !s)
    return s;
  if (Status s = blocking("reduceScatter", -1, [&] {
        return gApi.Reduce_scatter_block(send, recv, int(count), type,
                                         mpiOp(op), comm_);
      });
      !s)
    return s;
  if (op == ReduceOp::Avg)
    comm::divideHost(recv, count, dtype, size_);
  return Status::success();
}

Status MpiCommunicator::broadcast(void *buf, size_t count, DType dtype,
                                  int root) {
  if (StatusOr<size_t> bytes = comm::byteCount("broadcast", count, dtype, 1); !bytes.ok())
    return bytes.status();
  if (Status s = comm::checkRank("broadcast", "root", root, size_); !s)
    return s;
  Handle type;
  if (Status s = mpiType("broadcast", dtype, nullptr, type); !s)
    return s;
  size_t elem = dtypeSize(dtype);
  size_t done = 0;
  do {
    size_t piece = std::min(count - done, kMaxPiece);
    void *p = static_cast<char *>(buf) + done * elem;
    if (Status s = blocking("broadcast", -1, [&] {
          return gApi.Bcast(p, int(piece), type, root, comm_);
        });
        !s)
      return s;
    done += piece;
  } while (done < count);
  return Status::success();
}

Status MpiCommunicator::send(const void *buf, size_t count, DType dtype,
                             int peer) {
  if (StatusOr<size_t> bytes = comm::byteCount("send", count, dtype, 1); !bytes.ok())
    return bytes.status();
  if (Status s = comm::checkPeer("send", peer, rank_, size_); !s)
    return s;
  Handle type;
  if (Status s = mpiType("send", dtype, nullptr, type); !s)
    return s;
  size_t elem = dtypeSize(dtype);
  size_t done = 0;
  do {
    size_t piece = std::min(count - done, kMaxPiece);
    const void *p = static_cast<const char *>(buf) + done * elem;
    if (Status s = blocking("send to", peer, [&] {
          return gApi.Send(p, int(piece), type, peer, 0, comm_);
        });
        !s)
      return s;
    done += piece;
  } while (done < count);
  return Status::success();
}

Status MpiCommunicator::recv(void *buf, size_t count, DType dtype, int peer) {
  if (StatusOr<size_t> bytes = comm::byteCount("recv", count, dtype, 1); !bytes.ok())
    return bytes.status();
  if (Status s = comm::checkPeer("recv", peer, rank_, size_); !s)
    return s;
  Handle type;
  if (Status s = mpiType("recv", dtype, nullptr, type); !s)
    return s;
  size_t elem = dtypeSize(dtype);
  size_t done = 0;
  do {
    size_t piece = std::min(count - done, kMaxPiece);
    void *p = static_cast<char *>(buf) + done * elem;
    alignas(16) unsigned char status[mpiabi::kStatusBytes] = {0};
    int got = -1;
    if (Status s = blocking("recv from", peer, [&] {
          int rc = gApi.Recv(p, int(piece), type, peer, 0, comm_, status);
          return rc ? rc : gApi.Get_count(status, type, &got);
        });
        !s)
      return s;
    if (got < 0 || size_t(got) != piece)
      return Status::error("recv from rank " + std::to_string(peer) + ": got " +
                           std::to_string(done + size_t(std::max(got, 0))) +
                           " " + dtypeName(dtype) + " elements, expected " +
                           std::to_string(count));
    done += piece;
  } while (done < count);
  return Status::success();
}

StatusOr<P2PRequest> MpiCommunicator::start(bool isSend, void *buf,
                                             size_t count, DType dtype,
                                             int peer, int tag) {
  const char *what = isSend ? "isend" : "irecv";
  // Messages to self are fine in MPI (the receive may be posted later).
  if (Status s = comm::checkP2P(what, count, dtype, peer, tag, rank_, size_,
                                maxTag(), /*selfAllowed=*/true);
      !s)
    return s;
  Handle type;
  if (Status s = mpiType(what, dtype, nullptr, type); !s)
    return s;
  auto request = std::make_unique<MpiRequest>(
      this, isSend, peer, tag, rt_, worldRanks_[size_t(peer)], dtype, type);
  size_t elem = dtypeSize(dtype), done = 0;
  do {
    size_t piece = std::min(count - done, kMaxPiece);
    void *p = static_cast<char *>(buf) + done * elem;
    // Locked per piece: on an error, the request's destructor (which
    // takes the lock) completes the pieces already posted.
    std::lock_guard<std::mutex> lock(rt_->mutex);
    if (Status s = request->start(p, int(piece), comm_); !s)
      return s;
    done += piece;
  } while (done < count);
  return P2PRequest(std::move(request));
}

Status MpiCommunicator::wait(P2PRequest &request) {
  StatusOr<P2PState *> state = comm::ownState("wait", *this, request);
  if (!state.ok())
    return state.status();
  if (!*state)
    return Status::success();
  Status result;
  {
    std::lock_guard<std::mutex> lock(rt_->mutex);
    result = static_cast<MpiRequest *>(*state)->finish();
  }
  request.finish();
  return result;
}

StatusOr<bool> MpiCommunicator::test(P2PRequest &request) {
  StatusOr<P2PState *> state = comm::ownState("test", *this, request);
  if (!state.ok())
    return state.status();
  if (!*state)
    return true;
  StatusOr<bool> done = false;
  {
    std::lock_guard<std::mutex> lock(rt_->mutex);
    done = static_cast<MpiRequest *>(*state)->poll();
  }
  if (!done.ok() || *done)
    request.finish();
  return done;
}

Status MpiCommunicator::barrier() {
  return blocking("barrier", -1, [&] { return gApi.Barrier(comm_); });
}

StatusOr<std::unique_ptr<Communicator>> MpiCommunicator::split(int color, int key) {
  if (color < kNoGroup)
    return Status::error("split: color " + std::to_string(color) +
                         " is negative (kNoGroup is -1)");
  Handle newComm = nullptr;
  if (Status s = blocking("split", -1, [&] {
        return gApi.Comm_split(comm_,
                               color == kNoGroup ? mpiabi::kUndefined : color,
                               key, &newComm);
      });
      !s)
    return s;
  if (color == kNoGroup) {
    // MPI_COMM_NULL: nothing to free.
    return std::unique_ptr<Communicator>();
  }
  int rank = 0, size = 0;
  std::vector<int> worldRanks;
  auto comm = std::make_unique<MpiCommunicator>(rt_, newComm, true, 0, 1,
                                                std::vector<int>());
  {
    std::lock_guard<std::mutex> lock(rt_->mutex);
    int rc = gApi.Comm_set_errhandler(newComm, gApi.errorsReturn);
    if (!rc)
      rc = gApi.Comm_rank(newComm, &rank);
    if (!rc)
      rc = gApi.Comm_size(newComm, &size);
    if (rc)
      return Status::error("split: MPI error: " + mpiErrorString(rc));
  }
  comm->rank_ = rank;
  comm->size_ = size;
  comm->worldRanks_.assign(size_t(size), -1);
  comm->worldRanks_[size_t(rank)] = worldRanks_[size_t(rank_)];
  int mine = worldRanks_[size_t(rank_)];
  if (Status s = comm->blocking("split", -1, [&] {
        return gApi.Allgather(&mine, 1, gApi.i32, comm->worldRanks_.data(), 1,
                              gApi.i32, newComm);
      });
      !s)
    return s;
  return std::unique_ptr<Communicator>(std::move(comm));
}

} // namespace

void leaveMpiWithoutFinalize() { gLeavingAlone = true; }

void deferMpiFinalize() { gDeferFinalize = true; }

void finishMpi() {
  std::lock_guard<std::mutex> lock(gRuntimeMutex);
  if (gFinalizePending.exchange(false) && !gLeavingAlone && gRuntime.expired())
    finalizeWatched();
}

std::string mpiLibraryName() {
  const char *override = ::getenv("TRC_MPI_LIBRARY");
  return override && *override ? override : mpiabi::kDefaultLibrary;
}

StatusOr<std::unique_ptr<Communicator>> createMpiCommunicator() {
  std::lock_guard<std::mutex> lock(gRuntimeMutex);
  std::shared_ptr<MpiRuntime> rt = gRuntime.lock();
  if (!rt) {
    if (gFinalizedByUs)
      return Status::error("MPI was finalized in this process when its last "
                           "communicator was destroyed; it cannot be "
                           "initialized again");
    StatusOr<LaunchEnvironment> launch = readLaunchEnvironment();
    if (!launch.ok())
      return launch.status();
    const LaunchEnvironment &env = *launch;
    StatusOr<double> timeout = readCollectiveTimeout();
    if (!timeout.ok())
      return timeout.status();
    if (Status s = loadMpi(); !s)
      return s;
    Watchdog &dog = Watchdog::process();
    dog.setTimeout(*timeout);
    rt = std::make_shared<MpiRuntime>();
    int initialized = 0, finalized = 0;
    if (gApi.Initialized(&initialized) || gApi.Finalized(&finalized))
      return Status::error("MPI_Initialized failed in " + gLibraryName);
    if (finalized)
      return Status::error("MPI was already finalized in this process");
    if (!initialized) {
      WatchedCall call;
      call.what = "MPI_Init";
      call.checkPeers = false;
      auto guard = dog.watch(call);
      int provided = 0;
      int rc = gApi.Init_thread(nullptr, nullptr, mpiabi::kThreadSerialized,
                                &provided);
      if (rc != mpiabi::kSuccess)
        return Status::error("MPI_Init_thread failed: " + mpiErrorString(rc));
      rt->ownsInit = true;
    }
    int rc = gApi.Comm_set_errhandler(gApi.commWorld, gApi.errorsReturn);
    if (!rc)
      rc = gApi.Comm_rank(gApi.commWorld, &rt->worldRank);
    if (!rc)
      rc = gApi.Comm_size(gApi.commWorld, &rt->worldSize);
    if (rc)
      return Status::error("MPI set-up failed: " + mpiErrorString(rc));
    // MPI_TAG_UB is an attribute of MPI_COMM_WORLD (a pointer to the int).
    int *tagUb = nullptr, found = 0;
    if (gApi.Comm_get_attr(gApi.commWorld, mpiabi::kTagUbKeyval, &tagUb,
                           &found) == mpiabi::kSuccess &&
        found && tagUb && *tagUb >= mpiabi::kMinTagUb)
      rt->maxTag = *tagUb;
    if (env.size > 0 && env.size != rt->worldSize)
      return Status::error(
          "MPI reports a world of " + std::to_string(rt->worldSize) +
          " process(es) but this process is " + env.describe() + ": " +
          gLibraryName + " cannot talk to this launcher (under srun, use "
          "--mpi=pmix with an Open MPI built for it, or launch with mpirun)");
    if (env.launched() && env.rank != rt->worldRank)
      return Status::error("MPI gives this process rank " +
                           std::to_string(rt->worldRank) + " but it is " +
                           env.describe());
    // Tell the watchdog who everyone is.
    PeerProcess selfProc = identifyThisProcess();
    WireProcess self{};
    self.pid = selfProc.pid;
    self.startTime = selfProc.startTime;
    copyString(self.namespaceKey, sizeof self.namespaceKey,
               selfProc.namespaceKey);
    copyString(self.host, sizeof self.host, selfProc.host);
    std::vector<WireProcess> all(size_t(rt->worldSize));
    {
      WatchedCall call;
      call.what = "start-up exchange";
      call.checkPeers = false;
      auto guard = dog.watch(call);
      rc = gApi.Allgather(&self, int(sizeof self), gApi.byte, all.data(),
                          int(sizeof self), gApi.byte, gApi.commWorld);
    }
    if (rc)
      return Status::error("MPI start-up exchange failed: " +
                           mpiErrorString(rc));
    std::vector<PeerProcess> peers(all.size());
    for (size_t i = 0; i < all.size(); ++i) {
      all[i].namespaceKey[sizeof all[i].namespaceKey - 1] = 0;
      all[i].host[sizeof all[i].host - 1] = 0;
      peers[i].pid = all[i].pid;
      peers[i].startTime = all[i].startTime;
      peers[i].namespaceKey = all[i].namespaceKey;
      peers[i].host = all[i].host;
    }
    dog.setPeers(rt->worldRank, rt->worldSize, std::move(peers));
    gRuntime = rt;
  }
  std::vector<int> worldRanks(size_t(rt->worldSize));
  for (int r = 0; r < rt->worldSize; ++r)
    worldRanks[size_t(r)] = r;
  int rank = rt->worldRank, size = rt->worldSize;
  return std::unique_ptr<Communicator>(std::make_unique<MpiCommunicator>(
      rt, gApi.commWorld, false, rank, size, std::move(worldRanks)));
}

} // namespace trc::rt
