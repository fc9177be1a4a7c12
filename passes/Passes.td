//===- Passes.td - every trc pass --------------------------*- tablegen -*-===//
//
// One def per pass; flag `trc-<area>-<verb>`, implemented in
// passes/<Area>/<Name>.cpp and declared in passes/<Area>/Passes.td. This file
// gathers the areas into one Passes.h.inc (GEN_PASS_DECL, GEN_PASS_DEF_<NAME>,
// registerTrcPasses). The printers of analyses (test-trc-print-*, the fusion
// summary) are a library of their own that only trc-opt links:
// passes/Analysis/Passes.td, registerTrcAnalysisPasses.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PASSES_TD
#define TRC_PASSES_TD

include "mlir/Pass/PassBase.td"

include "Transforms/Passes.td"
include "Training/Passes.td"
include "Parallel/Passes.td"
include "Fusion/Passes.td"
include "Memory/Passes.td"
include "Conversion/Passes.td"

#endif // TRC_PASSES_TD
