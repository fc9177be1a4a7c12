//===- Profiler.cpp - a process-wide recorder of timed spans ---------------===//
//
// See Profiler.h. The byte form of a timeline (serializeTimeline) is only
// exchanged between the ranks of one run (same build, same byte order):
// "trc-timeline 1\n", then little-endian-as-stored int64s and
// length-prefixed strings.
//
//===----------------------------------------------------------------------===//
#include "runtime/support/Profiler.h"

#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>

namespace trc::rt {

const char *profile::defaultLane(std::string_view category) {
  return category == kCollective || category == kP2p ? kCommLane : kComputeLane;
}

std::atomic<bool> Profiler::recording_{false};

Profiler &Profiler::instance() {
  static Profiler profiler;
  return profiler;
}

void Profiler::start() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    spans_.clear();
  }
  origin_ = std::chrono::steady_clock::now();
  started_ = true;
  recording_.store(true, std::memory_order_relaxed);
}

void Profiler::stop() {
  started_ = false;
  recording_.store(false, std::memory_order_relaxed);
}

int64_t Profiler::nowNs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              origin_)
      .count();
}

void Profiler::record(Span span) {
  std::lock_guard<std::mutex> lock(mutex_);
  spans_.push_back(std::move(span));
}

std::vector<Span> Profiler::takeSpans() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Span> out;
  out.swap(spans_);
  return out;
}

ProfileScope::ProfileScope(std::string_view name, const char *category, const char *lane) {
  if (!Profiler::recording())
    return;
  active_ = true;
  span_.name = name;
  span_.category = category;
  span_.lane = lane ? lane : profile::defaultLane(category);
  span_.startNs = Profiler::instance().nowNs();
}

ProfileScope &ProfileScope::arg(std::string_view key, std::string_view text) {
  if (active_)
    span_.args.push_back({std::string(key), std::string(text), false});
  return *this;
}

ProfileScope &ProfileScope::arg(std::string_view key, int64_t value) {
  if (active_)
    span_.args.push_back({std::string(key), std::to_string(value), true});
  return *this;
}

ProfileScope &ProfileScope::arg(std::string_view key, double value) {
  if (!active_)
    return *this;
  if (!std::isfinite(value)) // JSON has no spelling for these
    return arg(key, std::string_view(std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf"));
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  span_.args.push_back(
      {std::string(key), ec == std::errc() ? std::string(buffer, end) : "0", true});
  return *this;
}

void ProfileScope::end() {
  if (!active_)
    return;
  active_ = false;
  Profiler &profiler = Profiler::instance();
  span_.durationNs = profiler.nowNs() - span_.startNs;
  profiler.record(std::move(span_));
}

//===----------------------------------------------------------------------===//
// Byte form
//===----------------------------------------------------------------------===//

namespace {

constexpr std::string_view kMagic = "trc-timeline 1\n";

void putInt(std::string &out, int64_t v) { out.append(reinterpret_cast<const char *>(&v), 8); }

void putText(std::string &out, std::string_view s) {
  putInt(out, int64_t(s.size()));
  out.append(s);
}

/// Reads what putInt/putText wrote; false once the bytes run out.
struct Reader {
  std::string_view bytes;
  size_t at = 0;
  bool getInt(int64_t &v) {
    if (bytes.size() - at < 8)
      return false;
    std::memcpy(&v, bytes.data() + at, 8);
    at += 8;
    return true;
  }
  bool getText(std::string &s) {
    int64_t n;
    if (!getInt(n) || n < 0 || uint64_t(n) > bytes.size() - at)
      return false;
    s.assign(bytes.data() + at, size_t(n));
    at += size_t(n);
    return true;
  }
  /// A count of items, each at least `minBytes` long (bounds allocations).
  bool getCount(int64_t &n, size_t minBytes) {
    return getInt(n) && n >= 0 && uint64_t(n) <= (bytes.size() - at) / minBytes;
  }
};

} // namespace

std::string serializeTimeline(const RankTimeline &t) {
  std::string out(kMagic);
  putInt(out, t.rank);
  putText(out, t.label);
  putInt(out, int64_t(t.spans.size()));
  for (const Span &s : t.spans) {
    putText(out, s.name);
    putText(out, s.category);
    putText(out, s.lane);
    putInt(out, s.startNs);
    putInt(out, s.durationNs);
    putInt(out, int64_t(s.args.size()));
    for (const SpanArg &a : s.args) {
      putText(out, a.key);
      putText(out, a.value);
      putInt(out, a.number ? 1 : 0);
    }
  }
  return out;
}

StatusOr<RankTimeline> parseTimeline(std::string_view bytes) {
  auto bad = [] { return Status::error("a rank's timeline is truncated or not a timeline"); };
  if (bytes.substr(0, kMagic.size()) != kMagic)
    return bad();
  Reader r{bytes, kMagic.size()};
  RankTimeline t;
  int64_t rank, spans;
  if (!r.getInt(rank) || rank < 0 || rank > INT32_MAX || !r.getText(t.label) ||
      !r.getCount(spans, 6 * 8))
    return bad();
  t.rank = int(rank);
  t.spans.resize(size_t(spans));
  for (Span &s : t.spans) {
    int64_t args;
    if (!r.getText(s.name) || !r.getText(s.category) || !r.getText(s.lane) ||
        !r.getInt(s.startNs) || !r.getInt(s.durationNs) || !r.getCount(args, 3 * 8))
      return bad();
    s.args.resize(size_t(args));
    for (SpanArg &a : s.args) {
      int64_t number;
      if (!r.getText(a.key) || !r.getText(a.value) || !r.getInt(number))
        return bad();
      a.number = number != 0;
    }
  }
  if (r.at != bytes.size())
    return bad();
  return t;
}

} // namespace trc::rt
