//===- ProfileSummary.cpp - where each rank's step time went ---------------===//
//
// See ProfileSummary.h. The shares come from one sweep over the spans'
// start and end points: between two consecutive points the set of open
// spans is fixed, so that stretch of time goes to one share.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/ProfileSummary.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>

namespace trc::rt {
namespace {

enum Kind { kStepKind, kCommKind, kComputeKind, kHostKind, kNumKinds, kOther };

Kind kindOf(const std::string &category) {
  if (category == profile::kStep)
    return kStepKind;
  if (category == profile::kCollective || category == profile::kP2p)
    return kCommKind;
  if (category == profile::kProgram || category == profile::kCompute)
    return kComputeKind;
  if (category == profile::kPhase)
    return kHostKind;
  return kOther;
}

double ms(int64_t ns) { return double(ns) / 1e6; }

} // namespace

RankProfileSummary summarizeTimeline(const RankTimeline &timeline, size_t topCount) {
  RankProfileSummary out;
  out.rank = timeline.rank;
  out.label = timeline.label.empty() ? "rank " + std::to_string(timeline.rank) : timeline.label;

  struct Point {
    int64_t at;
    int kind, delta;
  };
  std::vector<Point> points;
  bool anyStep = false;
  int64_t first = INT64_MAX, last = INT64_MIN;
  std::map<std::pair<std::string, std::string>, ProfileConsumer> consumers;
  for (const Span &s : timeline.spans) {
    if (s.category == profile::kCounter) // samples, not work
      continue;
    Kind kind = kindOf(s.category);
    int64_t end = s.startNs + std::max<int64_t>(s.durationNs, 0);
    first = std::min(first, s.startNs);
    last = std::max(last, end);
    if (kind == kStepKind) {
      anyStep = true;
      ++out.steps;
    } else {
      ProfileConsumer &c = consumers[{s.name, s.category}];
      c.name = s.name;
      c.category = s.category;
      c.totalMs += ms(end - s.startNs);
      ++c.count;
    }
    if (kind != kOther) {
      points.push_back({s.startNs, kind, +1});
      points.push_back({end, kind, -1});
    }
  }
  if (!anyStep && first < last) { // no steps recorded: the whole extent
    points.push_back({first, kStepKind, +1});
    points.push_back({last, kStepKind, -1});
  }
  std::sort(points.begin(), points.end(),
            [](const Point &a, const Point &b) { return a.at < b.at; });
  int open[kNumKinds] = {};
  int64_t share[kNumKinds] = {}; // step time by what ran: comm, compute, host; [0] idle
  for (size_t i = 0; i < points.size();) {
    int64_t at = points[i].at;
    for (; i < points.size() && points[i].at == at; ++i)
      open[points[i].kind] += points[i].delta;
    if (i == points.size())
      break;
    int64_t length = points[i].at - at;
    if (open[kStepKind] <= 0 || length <= 0)
      continue;
    int to = open[kCommKind] > 0      ? kCommKind
             : open[kComputeKind] > 0 ? kComputeKind
             : open[kHostKind] > 0    ? kHostKind
                                      : kStepKind; // idle
    share[to] += length;
  }
  out.communicationMs = ms(share[kCommKind]);
  out.computeMs = ms(share[kComputeKind]);
  out.hostMs = ms(share[kHostKind]);
  out.idleMs = ms(share[kStepKind]);
  out.stepMs = out.communicationMs + out.computeMs + out.hostMs + out.idleMs;

  for (auto &[key, c] : consumers) {
    c.percentOfSteps = out.stepMs > 0 ? 100.0 * c.totalMs / out.stepMs : 0;
    out.top.push_back(c);
  }
  std::stable_sort(out.top.begin(), out.top.end(),
                   [](const ProfileConsumer &a, const ProfileConsumer &b) {
                     return a.totalMs > b.totalMs;
                   });
  if (out.top.size() > topCount)
    out.top.resize(topCount);
  return out;
}

std::string formatProfileSummary(const std::vector<RankProfileSummary> &ranks) {
  std::string out;
  char line[512];
  auto pct = [](double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; };
  for (const RankProfileSummary &r : ranks) {
    std::snprintf(line, sizeof line,
                  "%s: %lld step%s, %.3f ms: compute %.1f%%, communication %.1f%%, "
                  "host %.1f%%, idle %.1f%%\n",
                  r.label.c_str(), static_cast<long long>(r.steps), r.steps == 1 ? "" : "s",
                  r.stepMs, pct(r.computeMs, r.stepMs), pct(r.communicationMs, r.stepMs),
                  pct(r.hostMs, r.stepMs), pct(r.idleMs, r.stepMs));
    out += line;
    std::snprintf(line, sizeof line, "  %-36s %-11s %11s %8s %7s\n", "name", "category",
                  "total ms", "% step", "count");
    out += line;
    for (const ProfileConsumer &c : r.top) {
      std::snprintf(line, sizeof line, "  %-36.36s %-11.11s %11.3f %7.1f%% %7lld\n",
                    c.name.c_str(), c.category.c_str(), c.totalMs, c.percentOfSteps,
                    static_cast<long long>(c.count));
      out += line;
    }
  }
  return out;
}

} // namespace trc::rt
