//===- FakeNccl.cpp - a one-rank stand-in for libnccl.so.2 (tests only) ----===//
//
// Built as fake-nccl/libnccl.so.2 and named by TRC_NCCL_LIBRARY in the tests
// of started collectives (CudaBackendTest.cpp), with the fake driver
// (FakeCuda.h) on LD_LIBRARY_PATH: NcclCommunicator's host logic (which
// stream it enqueues on, the events that order it against the compute
// stream) runs in CI. One process, one rank: ncclCommInitRank with more
// ranks fails. Each collective is a copy enqueued on its stream (what NCCL
// computes with one rank) and a trace line, "nccl allReduce on s2", in the
// fake driver's trace; send and receive, which one rank cannot pair, fail
// with ncclInvalidUsage. NOT NCCL: only what the runtime calls.
//
//===----------------------------------------------------------------------===//
#include "FakeCuda.h"

#include <cstddef>
#include <cstring>
#include <string>

namespace {

constexpr int kSuccess = 0, kInvalidArgument = 4, kInvalidUsage = 5;

struct UniqueId {
  char internal[128];
};
int gComm = 0; // its address is the communicator handle

size_t elementBytes(int type) {
  static const size_t bytes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2}; // ncclDataType_t 0..9
  return type >= 0 && type < 10 ? bytes[type] : 0;
}

/// recv = send on `stream` (one rank's result of every collective here).
int copyOn(const char *name, const void *send, void *recv, size_t count, int type,
           void *comm, void *stream) {
  size_t bytes = count * elementBytes(type);
  if (comm != &gComm || !elementBytes(type) || (bytes && (!send || !recv)))
    return kInvalidArgument;
  trc::fakecuda::note(std::string("nccl ") + name + " on " + trc::fakecuda::streamName(stream));
  trc::fakecuda::enqueue(stream, [=] {
    if (bytes && send != recv)
      std::memmove(recv, send, bytes);
  });
  return kSuccess;
}

} // namespace

extern "C" {

int ncclGetVersion(int *version) {
  *version = 22304; // 2.23.4
  return kSuccess;
}
int ncclGetUniqueId(UniqueId *id) {
  std::memset(id, 0, sizeof *id);
  return kSuccess;
}
int ncclCommInitRank(void **comm, int nranks, UniqueId, int rank) {
  if (nranks != 1 || rank != 0)
    return kInvalidArgument;
  *comm = &gComm;
  return kSuccess;
}
int ncclCommDestroy(void *) { return kSuccess; }
int ncclCommAbort(void *) { return kSuccess; }
int ncclCommGetAsyncError(void *, int *error) {
  *error = kSuccess;
  return kSuccess;
}
const char *ncclGetErrorString(int rc) {
  return rc == kSuccess ? "no error" : "fake NCCL error";
}
int ncclAllReduce(const void *send, void *recv, size_t count, int type, int, void *comm,
                  void *stream) {
  return copyOn("allReduce", send, recv, count, type, comm, stream);
}
int ncclAllGather(const void *send, void *recv, size_t count, int type, void *comm,
                  void *stream) {
  return copyOn("allGather", send, recv, count, type, comm, stream);
}
int ncclReduceScatter(const void *send, void *recv, size_t count, int type, int, void *comm,
                      void *stream) {
  return copyOn("reduceScatter", send, recv, count, type, comm, stream);
}
int ncclBroadcast(const void *send, void *recv, size_t count, int type, int, void *comm,
                  void *stream) {
  return copyOn("broadcast", send, recv, count, type, comm, stream);
}
int ncclSend(const void *, size_t, int, int, void *, void *) { return kInvalidUsage; }
int ncclRecv(void *, size_t, int, int, void *, void *) { return kInvalidUsage; }
int ncclGroupStart() { return kSuccess; }
int ncclGroupEnd() { return kSuccess; }

} // extern "C"
