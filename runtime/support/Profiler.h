//===- Profiler.h - a process-wide recorder of timed spans ------*- C++ -*-===//
//
// The per-rank timeline behind `trc-run --profile` (docs: README
// "Profiling"). A span is one timed piece of work: a name ("all-reduce
// world"), a category (what kind of work; profile::k* below, or any other
// string), a lane (the row it is drawn on: "compute", "comm"), a start and
// a duration in nanoseconds from the profiler's origin, and optional args
// (key -> number or text) shown beside it in the viewer.
//
// Recording is off until Profiler::start(); while off, a ProfileScope is
// one relaxed atomic load and nothing else (no clock read, no allocation),
// so the hooks stay in the hot paths for good. start() sets the origin:
// trainers call it right after a barrier, so the ranks' timelines line up
// (steady_clock is system-wide on one host; across hosts the ranks agree
// to within the barrier's latency). pause()/resume() skip steps without
// moving the origin; stop() ends recording and keeps the spans.
//
// Spans end in the order their scopes close: a scope opened inside another
// (a program run inside a "compute" phase, a collective inside the program)
// is recorded first and lies within its parent's interval, which is how the
// Chrome-trace viewers nest "X" events of one lane.
//
// Host-side time: a span measures the host thread between its scope's
// construction and destruction. Backends whose calls return before the
// device is done must synchronize before a span ends to be measured
// correctly; the CUDA backend already synchronizes its stream at the end of
// every run and copy, so the trainer's phase spans are device-accurate
// without extra synchronization. Spans opened while a program runs
// (collectives it calls) measure issue time on the host, which on CUDA is
// not the device's time (and with CUDA graphs they appear only on the run
// that captures the graph).
//
// Thread safety: record() takes a mutex; start/stop/pause/resume are meant
// for the thread that drives the run, between steps.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_SUPPORT_PROFILER_H
#define TRC_RUNTIME_SUPPORT_PROFILER_H

#include "runtime/support/Status.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace trc::rt {

/// Well-known categories and lanes. A summary counts kProgram and kCompute
/// spans as compute, kCollective and kP2p as communication, and kPhase
/// spans (outside those) as host work; kStep spans are the steps whose time
/// the shares divide.
namespace profile {
inline constexpr const char kStep[] = "step";             // one optimizer step, whole
inline constexpr const char kPhase[] = "phase";           // data, feed, compute, readback, update, checkpoint
inline constexpr const char kProgram[] = "program";       // one run of a compiled program
inline constexpr const char kCompute[] = "compute";       // other device work (a pipeline's forward/backward)
inline constexpr const char kOp[] = "op";                 // a loop nest or BLAS call inside a program
inline constexpr const char kCollective[] = "collective"; // a collective a program issues
inline constexpr const char kP2p[] = "p2p";               // send / recv (a recv's wait included)
inline constexpr const char kCounter[] = "counter";       // a sample of counters (its args), no duration
inline constexpr const char kComputeLane[] = "compute";
inline constexpr const char kCommLane[] = "comm";
/// The default lane of a category: kCommLane for kCollective and kP2p,
/// else kComputeLane.
const char *defaultLane(std::string_view category);
} // namespace profile

/// One span's extra detail: `value` is JSON number text when `number`,
/// else plain text.
struct SpanArg {
  std::string key, value;
  bool number = false;
  bool operator==(const SpanArg &o) const {
    return key == o.key && value == o.value && number == o.number;
  }
};

struct Span {
  std::string name, category, lane;
  int64_t startNs = 0, durationNs = 0; // from the origin
  std::vector<SpanArg> args;
  int64_t endNs() const { return startNs + durationNs; }
};

/// One rank's recording: who it is and what it did.
struct RankTimeline {
  int rank = 0;
  std::string label; // "rank 1 (data 0, tensor 1)"
  std::vector<Span> spans;
};

/// A timeline as bytes (to send to rank 0) and back; parseTimeline checks
/// every length against the bytes it has.
std::string serializeTimeline(const RankTimeline &timeline);
StatusOr<RankTimeline> parseTimeline(std::string_view bytes);

class Profiler {
public:
  /// The process's profiler.
  static Profiler &instance();

  /// Whether spans are being recorded now (cheap: one relaxed load).
  static bool recording() { return recording_.load(std::memory_order_relaxed); }

  /// Drops earlier spans, sets the origin to now and starts recording.
  void start();
  /// Stops and resumes recording (skipped steps); the origin stays.
  void pause() { recording_.store(false, std::memory_order_relaxed); }
  void resume() { recording_.store(started_, std::memory_order_relaxed); }
  /// Stops recording; the spans stay until takeSpans() or start().
  void stop();

  /// Nanoseconds since the origin (the steady clock's epoch before start()).
  int64_t nowNs() const;
  /// Appends a finished span (recorded even while paused: callers check
  /// recording() when they open it).
  void record(Span span);
  /// The spans recorded so far, in the order they ended; empties the list.
  std::vector<Span> takeSpans();

private:
  static std::atomic<bool> recording_;
  bool started_ = false;
  std::chrono::steady_clock::time_point origin_{};
  std::mutex mutex_;
  std::vector<Span> spans_;
};

/// Times its own lifetime as a span while the profiler records (decided
/// when it is constructed); otherwise does nothing.
///   ProfileScope scope("all-reduce world", profile::kCollective);
///   scope.arg("bytes", int64_t(n));
class ProfileScope {
public:
  explicit ProfileScope(std::string_view name, const char *category = profile::kPhase,
                        const char *lane = nullptr);
  ~ProfileScope() { end(); }
  ProfileScope(const ProfileScope &) = delete;
  ProfileScope &operator=(const ProfileScope &) = delete;

  bool active() const { return active_; }
  ProfileScope &arg(std::string_view key, std::string_view text);
  ProfileScope &arg(std::string_view key, const char *text) {
    return arg(key, std::string_view(text));
  }
  ProfileScope &arg(std::string_view key, int64_t value);
  ProfileScope &arg(std::string_view key, int value) { return arg(key, int64_t(value)); }
  ProfileScope &arg(std::string_view key, double value);
  /// Ends the span now (the destructor then does nothing).
  void end();

private:
  bool active_ = false;
  Span span_;
};

} // namespace trc::rt

#endif // TRC_RUNTIME_SUPPORT_PROFILER_H
