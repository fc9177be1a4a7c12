//===- AnalysisPasses.h - the printers of analyses --------------*- C++ -*-===//
//
// Generated from passes/Analysis/Passes.td: create functions and
// registration of the test-trc-print-* passes and trc-print-fusion-summary
// (library TrcAnalysisPasses). `registerTrcAnalysisPasses()` makes them
// available to trc-opt; no other tool links them.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_ANALYSISPASSES_H
#define TRC_ANALYSISPASSES_H

#include "trc/Passes.h"

namespace trc {
#define GEN_PASS_DECL
#include "AnalysisPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "AnalysisPasses.h.inc"
} // namespace trc

#endif // TRC_ANALYSISPASSES_H
