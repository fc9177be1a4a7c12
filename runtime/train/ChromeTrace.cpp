//===- ChromeTrace.cpp - rank timelines as one Chrome-trace JSON file ------===//
//
// See ChromeTrace.h. One event per line, so a trace is also readable (and
// diffable) as text.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/ChromeTrace.h"

#include "runtime/formats/Json.h"

#include <algorithm>
#include <map>

namespace trc::rt {
namespace {

/// Lane names to thread ids for one rank: the two known lanes first, so
/// every rank draws them in the same order.
std::map<std::string, int64_t> laneIds(const RankTimeline &rank) {
  std::map<std::string, int64_t> ids{{profile::kComputeLane, 1}, {profile::kCommLane, 2}};
  for (const Span &s : rank.spans)
    if (s.category != profile::kCounter && !ids.count(s.lane))
      ids.emplace(s.lane, int64_t(ids.size()) + 1);
  return ids;
}

void appendMicroseconds(std::string &out, int64_t ns) { appendJsonDouble(out, double(ns) / 1e3); }

/// One metadata ("ph":"M") event: {"name":NAME,"ph":"M","pid":P,"tid":T,"args":{KEY:VALUE}}.
void appendMetadata(std::string &out, const char *name, int64_t pid, int64_t tid,
                    const char *key, const std::string &text, int64_t number, bool isText) {
  out += "{\"name\":";
  appendJsonString(out, name);
  out += ",\"ph\":\"M\",\"pid\":";
  appendJsonInt(out, pid);
  out += ",\"tid\":";
  appendJsonInt(out, tid);
  out += ",\"args\":{";
  appendJsonString(out, key);
  out += ':';
  if (isText)
    appendJsonString(out, text);
  else
    appendJsonInt(out, number);
  out += "}},\n";
}

/// A complete ("X") event, or for a counter sample a "C" event (no
/// duration or thread: counters belong to the process).
void appendSpan(std::string &out, const Span &s, int64_t pid, int64_t tid) {
  const bool counter = s.category == profile::kCounter;
  out += "{\"name\":";
  appendJsonString(out, s.name);
  out += ",\"cat\":";
  appendJsonString(out, s.category);
  out += counter ? ",\"ph\":\"C\",\"ts\":" : ",\"ph\":\"X\",\"ts\":";
  appendMicroseconds(out, s.startNs);
  if (!counter) {
    out += ",\"dur\":";
    appendMicroseconds(out, std::max<int64_t>(s.durationNs, 0));
  }
  out += ",\"pid\":";
  appendJsonInt(out, pid);
  if (!counter) {
    out += ",\"tid\":";
    appendJsonInt(out, tid);
  }
  if (!s.args.empty()) {
    out += ",\"args\":{";
    for (size_t i = 0; i < s.args.size(); ++i) {
      if (i)
        out += ',';
      appendJsonString(out, s.args[i].key);
      out += ':';
      if (s.args[i].number)
        out += s.args[i].value; // number text made by ProfileScope::arg
      else
        appendJsonString(out, s.args[i].value);
    }
    out += '}';
  }
  out += "},\n";
}

} // namespace

std::string chromeTraceJson(const std::vector<RankTimeline> &ranks) {
  std::string out = "{\"traceEvents\":[\n";
  for (const RankTimeline &rank : ranks) {
    const int64_t pid = rank.rank;
    std::string label = rank.label.empty() ? "rank " + std::to_string(rank.rank) : rank.label;
    appendMetadata(out, "process_name", pid, 0, "name", label, 0, true);
    appendMetadata(out, "process_sort_index", pid, 0, "sort_index", "", pid, false);
    std::map<std::string, int64_t> lanes = laneIds(rank);
    for (const auto &[lane, tid] : lanes) {
      appendMetadata(out, "thread_name", pid, tid, "name", lane, 0, true);
      appendMetadata(out, "thread_sort_index", pid, tid, "sort_index", "", tid, false);
    }
    std::vector<const Span *> order;
    for (const Span &s : rank.spans)
      order.push_back(&s);
    std::stable_sort(order.begin(), order.end(), [](const Span *a, const Span *b) {
      return a->startNs != b->startNs ? a->startNs < b->startNs : a->durationNs > b->durationNs;
    });
    for (const Span *s : order)
      appendSpan(out, *s, pid, s->category == profile::kCounter ? 0 : lanes.at(s->lane));
  }
  if (out.size() >= 2 && out.compare(out.size() - 2, 2, ",\n") == 0)
    out.erase(out.size() - 2, 1); // no comma after the last event
  out += "],\n\"displayTimeUnit\":\"ms\"}\n";
  return out;
}

} // namespace trc::rt
