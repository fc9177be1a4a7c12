//===- RunHelpers.h - pieces shared by trc-run's two modes ------*- C++ -*-===//
//
// Evaluation (trc-run.cpp) and the training flags (TrainFlags.cpp) parse
// integer flag values the same way.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_TOOLS_TRC_RUN_RUNHELPERS_H
#define TRC_TOOLS_TRC_RUN_RUNHELPERS_H

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace trc {

/// `text` as a whole decimal integer of at least `lo`.
inline bool parseInt(const std::string &text, int64_t lo, int64_t &out) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < lo)
    return false;
  out = v;
  return true;
}

} // namespace trc

#endif
