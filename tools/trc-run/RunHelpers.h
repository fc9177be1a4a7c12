//===- RunHelpers.h - pieces shared by trc-run's two modes ------*- C++ -*-===//
//
// Evaluation (trc-run.cpp) and the training flags (TrainFlags.cpp) read
// numbers with the runtime's one set of strict, locale-independent parsers
// (runtime/support/Parse.h).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_TOOLS_TRC_RUN_RUNHELPERS_H
#define TRC_TOOLS_TRC_RUN_RUNHELPERS_H

#include "runtime/support/Parse.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace trc {

/// `text` as a whole decimal integer in [lo, hi].
inline bool parseInt(const std::string &text, int64_t lo, int64_t &out,
                     int64_t hi = std::numeric_limits<int64_t>::max()) {
  std::optional<int64_t> v = rt::parseInt64(text, lo, hi);
  if (v)
    out = *v;
  return v.has_value();
}

/// `text` as a whole finite number.
inline bool parseFloat(const std::string &text, double &out) {
  std::optional<double> v = rt::parseDouble(text);
  if (v)
    out = *v;
  return v.has_value();
}

} // namespace trc

#endif
