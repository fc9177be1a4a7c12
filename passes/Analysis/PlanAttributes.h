//===- PlanAttributes.h - reading a plan's dictionary attribute -*- C++ -*-===//
//
// The printers of the recomputation and offloading plans (module attributes
// that are dictionaries of numbers) read their fields with these: a missing
// key reads as 0. Header-only; no state.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PASSES_ANALYSIS_PLANATTRIBUTES_H
#define TRC_PASSES_ANALYSIS_PLANATTRIBUTES_H

#include "mlir/IR/BuiltinAttributes.h"

namespace trc {

inline int64_t intOf(mlir::DictionaryAttr d, llvm::StringRef key) {
  auto a = d.getAs<mlir::IntegerAttr>(key);
  return a ? a.getInt() : 0;
}

inline double floatOf(mlir::DictionaryAttr d, llvm::StringRef key) {
  auto a = d.getAs<mlir::FloatAttr>(key);
  return a ? a.getValueAsDouble() : 0.0;
}

} // namespace trc

#endif // TRC_PASSES_ANALYSIS_PLANATTRIBUTES_H
