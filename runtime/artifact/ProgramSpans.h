//===- ProgramSpans.h - per-op spans of a running CPU program ---*- C++ -*-===//
//
// trc-profile-calls brackets each loop nest and matrix product of a CPU
// program with trc_rt_profile_begin/end(id) (include/trc/Abi/
// ProfileSpans.h); the manifest's `span` records name the ids. While a
// Session runs a program, a ProgramSpansScope makes its table the calling
// thread's, and while the Profiler records, each begin/end pair becomes a
// span (category profile::kOp, args: the ONNX node and the function) inside
// the program's span. When not recording, a hook is one relaxed atomic load.
// Precondition: the program calls the hooks from the thread that runs it
// (nests run their OpenMP regions inside the call), nested properly.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_ARTIFACT_PROGRAMSPANS_H
#define TRC_RUNTIME_ARTIFACT_PROGRAMSPANS_H

#include "runtime/formats/Manifest.h"

#include <cstdint>
#include <vector>

namespace trc::rt {

class ProgramSpansScope {
public:
  explicit ProgramSpansScope(const std::vector<Manifest::ProfileSpan> &spans);
  ~ProgramSpansScope();
  ProgramSpansScope(const ProgramSpansScope &) = delete;
  ProgramSpansScope &operator=(const ProgramSpansScope &) = delete;

private:
  const std::vector<Manifest::ProfileSpan> *previous_;
};

} // namespace trc::rt

extern "C" void trc_rt_profile_begin(int64_t id);
extern "C" void trc_rt_profile_end(int64_t id);

#endif // TRC_RUNTIME_ARTIFACT_PROGRAMSPANS_H
