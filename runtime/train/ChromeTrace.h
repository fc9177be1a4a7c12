//===- ChromeTrace.h - rank timelines as one Chrome-trace JSON file -*- C++ -*-===//
//
// The file `trc-run --profile FILE` writes: the Trace Event Format that
// Perfetto (ui.perfetto.dev) and chrome://tracing open,
//   {"traceEvents":[...], "displayTimeUnit":"ms"}
// with, per rank, a process (pid = rank) named by process_name metadata
// ("rank 1 (data 0, tensor 1)"), one thread per lane (tid 1 "compute",
// tid 2 "comm", then other lanes in the order they first appear; named by
// thread_name metadata), and one complete ("ph":"X") event per span: ts and
// dur in microseconds from the common origin, cat = the span's category,
// args = its args. Events of a rank are sorted by start, longer first, so
// a span and the spans inside it nest in the viewers. A span of category
// profile::kCounter is a counter ("ph":"C") event instead: its numeric args
// are the counters' values at ts, drawn as a track of the rank's process
// (the utilisation samples of RunProfile). Strings are escaped
// by runtime/formats/Json.h. Pure: no files, no clocks.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_CHROMETRACE_H
#define TRC_RUNTIME_TRAIN_CHROMETRACE_H

#include "runtime/support/Profiler.h"

#include <string>
#include <vector>

namespace trc::rt {

/// The trace file's text for the ranks' timelines (any order).
std::string chromeTraceJson(const std::vector<RankTimeline> &ranks);

} // namespace trc::rt

#endif // TRC_RUNTIME_TRAIN_CHROMETRACE_H
