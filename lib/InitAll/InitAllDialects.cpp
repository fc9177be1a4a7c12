//===- InitAllDialects.cpp - every dialect a trc tool works with ----------===//
//
// trc::registerAllDialects and loadAllDialects (include/trc/InitAllDialects.h):
// the one place that lists what a context for trc IR needs.
//
//===----------------------------------------------------------------------===//
#include "trc/InitAllDialects.h"

#include "trc/Conversion/Bufferization.h"
#include "trc/Dialect/Trc.h"
#include "trc/Parallel/Sharding.h"
#include "trc/Training/Vjp.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"

void trc::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<TrcDialect>();
  autodiff::registerVjpRules(registry);
  parallel::registerShardingRules(registry);
  registerBufferizationModels(registry);
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
}

void trc::loadAllDialects(mlir::MLIRContext &context) {
  mlir::DialectRegistry registry;
  trc::registerAllDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
}
