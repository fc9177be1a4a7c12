//===- HandlerRegistry.h - ONNX op handlers by op type and opset -*- C++ -*-===//
//
// Each op family file registers its handlers with the opset version from
// which each applies; lookup picks the newest version <= the model's opset,
// so semantics that changed between opsets (Softmax, Squeeze, Split...) get
// the right handler. Ops of other domains (ai.onnx.preview.training) are
// keyed "domain::OpType" and versioned by that domain's opset.
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
constexpr int64_t kMaxOpset = 23;

using OpHandler = mlir::LogicalResult (*)(ImportContext &);

class HandlerRegistry {
public:
  /// The registry with every family's handlers.
  static const HandlerRegistry &get();

  /// The registry key of an op: its type, prefixed by "domain::" outside the
  /// default domain.
  static std::string key(llvm::StringRef domain, llvm::StringRef opType);
  /// Whether any handler belongs to `domain` (the default domain: always).
  bool knowsDomain(llvm::StringRef domain) const;

  /// Registers `handler` for `key` from opset `sinceVersion` on.
  void add(llvm::StringRef key, int64_t sinceVersion, OpHandler handler);
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
void registerPadHandlers(HandlerRegistry &registry);
void registerRotaryHandlers(HandlerRegistry &registry);
void registerAttentionHandlers(HandlerRegistry &registry);
void registerConstantHandlers(HandlerRegistry &registry);
void registerReductionHandlers(HandlerRegistry &registry);
void registerTrainingHandlers(HandlerRegistry &registry);
void registerIndexingHandlers(HandlerRegistry &registry);
void registerPoolingHandlers(HandlerRegistry &registry);
void registerConvHandlers(HandlerRegistry &registry);
void registerResizeHandlers(HandlerRegistry &registry);
void registerActivationHandlers(HandlerRegistry &registry);
void registerSequenceHandlers(HandlerRegistry &registry);
void registerControlFlowHandlers(HandlerRegistry &registry);

} // namespace trc::import

#endif
