//===- InitAllPasses.cpp - every pass and pipeline a trc tool runs ---------===//
//
// trc::registerAllPasses (include/trc/InitAllPasses.h).
//
//===----------------------------------------------------------------------===//
#include "trc/InitAllPasses.h"

#include "trc/Passes.h"
#include "trc/Pipelines/Pipelines.h"

#include "mlir/InitAllPasses.h"

void trc::registerAllPasses() {
  // Registering a pass name twice is an error in MLIR: once per process.
  static bool registered = [] {
    mlir::registerAllPasses();
    registerTrcPasses();
    registerTrcPipelines();
    return true;
  }();
  (void)registered;
}
