//===- ProgramSpans.cpp - per-op spans of a running CPU program ------------===//
//
// See ProgramSpans.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/artifact/ProgramSpans.h"

#include "runtime/support/Profiler.h"

namespace trc::rt {
namespace {
thread_local const std::vector<Manifest::ProfileSpan> *tlsSpans = nullptr;
// Start times of the open begin/end pairs (the calls nest).
thread_local std::vector<int64_t> tlsStarts;
} // namespace

ProgramSpansScope::ProgramSpansScope(const std::vector<Manifest::ProfileSpan> &spans)
    : previous_(tlsSpans) {
  tlsSpans = &spans;
}

ProgramSpansScope::~ProgramSpansScope() {
  tlsSpans = previous_;
  tlsStarts.clear();
}

} // namespace trc::rt

using namespace trc::rt;

extern "C" void trc_rt_profile_begin(int64_t) {
  if (!Profiler::recording() || !tlsSpans)
    return;
  tlsStarts.push_back(Profiler::instance().nowNs());
}

extern "C" void trc_rt_profile_end(int64_t id) {
  if (tlsStarts.empty())
    return; // its begin came while not recording
  int64_t start = tlsStarts.back();
  tlsStarts.pop_back();
  if (!Profiler::recording() || !tlsSpans || id < 0 || size_t(id) >= tlsSpans->size())
    return;
  const Manifest::ProfileSpan &named = (*tlsSpans)[size_t(id)];
  Span span;
  span.name = named.name;
  span.category = profile::kOp;
  span.lane = profile::kComputeLane;
  span.startNs = start;
  span.durationNs = Profiler::instance().nowNs() - start;
  if (!named.node.empty())
    span.args.push_back({"node", named.node, false});
  span.args.push_back({"function", named.function, false});
  Profiler::instance().record(std::move(span));
}
