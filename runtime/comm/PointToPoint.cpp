//===- PointToPoint.cpp - send and recv as profiled spans ------------------===//
#include "runtime/comm/PointToPoint.h"

#include "runtime/support/Profiler.h"

#include <string>

namespace trc::rt {
namespace {

/// The span's name, built only while recording.
std::string spanName(const char *what, int peer) {
  return Profiler::recording() ? std::string(what) + std::to_string(peer) : std::string();
}

void describe(ProfileScope &scope, size_t count, DType dtype, int peer) {
  if (scope.active())
    scope.arg("peer", peer).arg("bytes", int64_t(count * dtypeSize(dtype)));
}

} // namespace

Status sendTo(Communicator &comm, const void *buf, size_t count, DType dtype, int peer) {
  ProfileScope scope(spanName("send to rank ", peer), profile::kP2p);
  describe(scope, count, dtype, peer);
  return comm.send(buf, count, dtype, peer);
}

Status recvFrom(Communicator &comm, void *buf, size_t count, DType dtype, int peer) {
  ProfileScope scope(spanName("recv from rank ", peer), profile::kP2p);
  describe(scope, count, dtype, peer);
  return comm.recv(buf, count, dtype, peer);
}

} // namespace trc::rt
