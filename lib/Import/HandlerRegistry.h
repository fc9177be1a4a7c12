//===- HandlerRegistry.h - ONNX op handlers by op type and opset -*- C++ -*-===//
//
// Each op family file registers its handlers with the opset version from
// which each applies; lookup picks the newest version <= the model's opset,
// so semantics that changed between opsets (Softmax, Squeeze, Split...) get
// the right handler. Only the default ONNX domain is supported.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_IMPORT_HANDLERREGISTRY_H
#define TRC_LIB_IMPORT_HANDLERREGISTRY_H

#include "ImportContext.h"

#include "llvm/ADT/StringMap.h"

#include <vector>

namespace trc::import {

/// Opsets of the default domain the importer accepts.
constexpr int64_t kMinOpset = 1;
constexpr int64_t kMaxOpset = 21;

using OpHandler = mlir::LogicalResult (*)(ImportContext &);

class HandlerRegistry {
public:
  /// The registry with every family's handlers.
  static const HandlerRegistry &get();

  /// Registers `handler` for `opType` from opset `sinceVersion` on.
  void add(llvm::StringRef opType, int64_t sinceVersion, OpHandler handler);
  /// The handler for `opType` at `opset`, or null.
  OpHandler lookup(llvm::StringRef opType, int64_t opset) const;
  /// Every registered op type, sorted.
  std::vector<std::string> opTypes() const;

private:
  struct Entry {
    int64_t sinceVersion;
    OpHandler handler;
  };
  llvm::StringMap<std::vector<Entry>> handlers_;
};

// One registration function per op family (lib/Import/Ops/*.cpp).
void registerElementwiseHandlers(HandlerRegistry &registry);
void registerMatrixHandlers(HandlerRegistry &registry);
void registerNormalizationHandlers(HandlerRegistry &registry);
void registerLossHandlers(HandlerRegistry &registry);
void registerShapeHandlers(HandlerRegistry &registry);
void registerConstantHandlers(HandlerRegistry &registry);
void registerReductionHandlers(HandlerRegistry &registry);

} // namespace trc::import

#endif
