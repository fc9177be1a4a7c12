//===- Bufferization.h - trc ops that reach bufferization ------*- C++ -*-===//
//
// The few trc ops that survive trc-lower-to-linalg and are bufferized with
// the linalg ops around them (one-shot-bufferize): their
// BufferizableOpInterface models, attached to the dialect by
// trc::registerAllDialects.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_CONVERSION_BUFFERIZATION_H
#define TRC_CONVERSION_BUFFERIZATION_H

#include "mlir/IR/DialectRegistry.h"

namespace trc {

/// trc.optimization_barrier bufferizes to its operand's buffer.
void registerBufferizationModels(mlir::DialectRegistry &registry);

} // namespace trc

#endif // TRC_CONVERSION_BUFFERIZATION_H
