//===- FlagValues.h - numbers in trc-run's flag values ----------*- C++ -*-===//
//
// Internal to the command line's readers (RunCommand.cpp, TrainFlags.cpp):
// flag values read with the runtime's one set of strict, locale-independent
// parsers (runtime/support/Parse.h).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_FLAGVALUES_H
#define TRC_RUNTIME_TRAIN_FLAGVALUES_H

#include "runtime/support/Parse.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace trc::rt {

/// `text` as a whole decimal integer in [lo, hi].
inline bool parseIntFlag(const std::string &text, int64_t lo, int64_t &out,
                     int64_t hi = std::numeric_limits<int64_t>::max()) {
  std::optional<int64_t> v = parseInt64(text, lo, hi);
  if (v)
    out = *v;
  return v.has_value();
}

/// `text` as a whole finite number.
inline bool parseFloatFlag(const std::string &text, double &out) {
  std::optional<double> v = parseDouble(text);
  if (v)
    out = *v;
  return v.has_value();
}

} // namespace trc::rt

#endif
