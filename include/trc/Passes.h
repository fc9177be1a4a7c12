//===- Passes.h - declarations of all trc passes ----------------*- C++ -*-===//
//
// Generated from passes/Passes.td: create functions and registration for every
// trc pass. `registerTrcPasses()` makes them available to trc-opt.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PASSES_H
#define TRC_PASSES_H

#include "trc/Dialect/Trc.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace trc {
#define GEN_PASS_DECL
#include "Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Passes.h.inc"

/// trc-decompose-composites' rewrites (each composite op into core ops), for
/// passes that decompose only some ops (trc-shard-tensor-parallel).
void populateDecomposeCompositePatterns(mlir::RewritePatternSet &patterns);
} // namespace trc

#endif // TRC_PASSES_H
