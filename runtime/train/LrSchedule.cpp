//===- LrSchedule.cpp - learning-rate schedules -----------------------------===//
//
// The schedule formulas and the spec parser (see LrSchedule.h).
//
//===----------------------------------------------------------------------===//
#include "runtime/train/LrSchedule.h"

#include "runtime/support/Parse.h"

#include <charconv>
#include <cmath>

namespace trc::rt {

const char *lrScheduleKindName(LrScheduleKind kind) {
  switch (kind) {
  case LrScheduleKind::Constant:
    return "constant";
  case LrScheduleKind::Cosine:
    return "cosine";
  case LrScheduleKind::Linear:
    return "linear";
  }
  return "?";
}

double LrSchedule::at(int64_t step) const {
  if (step < 0)
    step = 0;
  if (step < warmupSteps)
    return lr * double(step + warmupFrom) / double(warmupSteps);
  if (kind == LrScheduleKind::Constant)
    return lr;
  if (step >= totalSteps)
    return minLr;
  double d = double(step - warmupSteps) / double(totalSteps - warmupSteps);
  double coeff = kind == LrScheduleKind::Cosine
                     ? 0.5 * (1.0 + std::cos(M_PI * d))
                     : 1.0 - d;
  return minLr + coeff * (lr - minLr);
}

static std::string numberText(double v) {
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, ec == std::errc() ? p : buf);
}

Status LrSchedule::validate() const {
  if (!(lr > 0) || !std::isfinite(lr))
    return Status::error("the learning rate must be positive and finite, "
                         "got " + numberText(lr));
  if (!(minLr >= 0) || !(minLr <= lr))
    return Status::error("the minimum learning rate " + numberText(minLr) +
                         " must lie in [0, " + numberText(lr) + "]");
  if (warmupSteps < 0)
    return Status::error("warm-up steps must not be negative, got " +
                         std::to_string(warmupSteps));
  if (kind != LrScheduleKind::Constant && totalSteps <= warmupSteps)
    return Status::error(std::string("the ") + lrScheduleKindName(kind) +
                         " schedule needs total steps (" +
                         std::to_string(totalSteps) +
                         ") above the warm-up steps (" +
                         std::to_string(warmupSteps) + ")");
  return Status::success();
}

std::string LrSchedule::spec() const {
  std::string s = lrScheduleKindName(kind);
  std::string sep = ":";
  if (warmupSteps > 0) {
    s += sep + "warmup=" + std::to_string(warmupSteps);
    sep = ",";
    if (warmupFrom != 1)
      s += ",warmup_from=" + std::to_string(warmupFrom);
  }
  if (kind != LrScheduleKind::Constant) {
    s += sep + "min=" + numberText(minLr) + ",total=" +
         std::to_string(totalSteps);
  }
  return s;
}

bool differOnlyInTotal(std::string_view a, std::string_view b) {
  // spec() writes the total last: ",total=N".
  auto withoutTotal = [](std::string_view s) { return s.substr(0, s.rfind(",total=")); };
  return a != b && a.rfind(",total=") != std::string_view::npos &&
         b.rfind(",total=") != std::string_view::npos && withoutTotal(a) == withoutTotal(b);
}

StatusOr<LrSchedule> parseLrSchedule(std::string_view spec, double lr, int64_t defaultTotal) {
  std::string where = "--lr-schedule '" + std::string(spec) + "': ";
  size_t colon = spec.find(':');
  std::string_view kindText = spec.substr(0, colon);
  LrSchedule s;
  s.lr = lr;
  s.totalSteps = defaultTotal;
  if (kindText == "constant")
    s.kind = LrScheduleKind::Constant;
  else if (kindText == "cosine")
    s.kind = LrScheduleKind::Cosine;
  else if (kindText == "linear")
    s.kind = LrScheduleKind::Linear;
  else
    return Status::error(where + "unknown schedule '" + std::string(kindText) +
                         "' (expected constant, cosine or linear)");

  bool haveWarmup = false, haveFrom = false, haveMin = false, haveRatio = false,
       haveTotal = false;
  double ratio = 0;
  if (colon != std::string_view::npos) {
    for (std::string_view item : splitText(spec.substr(colon + 1), ',')) {
      size_t eq = item.find('=');
      if (eq == std::string_view::npos)
        return Status::error(where + "expected key=value, got '" +
                             std::string(item) + "'");
      std::string key(item.substr(0, eq));
      std::string_view value = item.substr(eq + 1);
      std::string bad =
          where + "bad value '" + std::string(value) + "' for " + key;
      bool *seen = key == "warmup"        ? &haveWarmup
                   : key == "warmup_from" ? &haveFrom
                   : key == "min"         ? &haveMin
                   : key == "min_ratio" ? &haveRatio
                   : key == "total"     ? &haveTotal
                                        : nullptr;
      if (!seen)
        return Status::error(where + "unknown key '" + key +
                             "' (expected warmup, warmup_from, min, min_ratio or total)");
      if (*seen)
        return Status::error(where + "duplicate key '" + key + "'");
      *seen = true;
      if (key == "warmup") {
        std::optional<int64_t> v = parseInt64(value, 0);
        if (!v)
          return Status::error(bad + " (expected a non-negative integer)");
        s.warmupSteps = *v;
      } else if (key == "warmup_from") {
        std::optional<int64_t> v = parseInt64(value, 0, 1);
        if (!v)
          return Status::error(bad + " (expected 0 or 1)");
        s.warmupFrom = int(*v);
      } else if (key == "total") {
        std::optional<int64_t> v = parseInt64(value, 1);
        if (!v)
          return Status::error(bad + " (expected a positive integer)");
        s.totalSteps = *v;
      } else if (key == "min") {
        std::optional<double> v = parseDouble(value);
        if (!v || *v < 0)
          return Status::error(bad + " (expected a non-negative number)");
        s.minLr = *v;
      } else {
        std::optional<double> v = parseDouble(value);
        if (!v || *v < 0 || *v > 1)
          return Status::error(bad + " (expected a number in [0, 1])");
        ratio = *v;
      }
    }
  }
  if (haveMin && haveRatio)
    return Status::error(where + "min and min_ratio exclude each other");
  if (s.kind == LrScheduleKind::Constant && (haveMin || haveRatio || haveTotal))
    return Status::error(where + "the constant schedule takes only warmup and warmup_from");
  if (haveRatio)
    s.minLr = ratio * lr;
  if (Status st = s.validate(); !st)
    return st.withPrefix(where);
  return s;
}

} // namespace trc::rt
