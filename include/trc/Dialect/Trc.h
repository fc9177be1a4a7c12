//===- Trc.h - the trc graph dialect ----------------------------*- C++ -*-===//
//
// Declares the trc dialect, its enums, attributes, op interfaces and ops
// (generated from dialects/Trc/*.td). Include this to build or inspect trc IR.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_DIALECT_TRC_H
#define TRC_DIALECT_TRC_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "TrcDialect.h.inc"
#include "TrcEnums.h.inc"

namespace trc {
namespace autodiff {
class VjpContext; // include/trc/Training/Vjp.h
} // namespace autodiff

/// The trait of an op without a VJP rule by design (Trc_NoVjp in
/// dialects/Trc/TrcInterfaces.td).
template <typename ConcreteType>
class NoVjp : public mlir::OpTrait::TraitBase<ConcreteType, NoVjp> {};
template <typename ConcreteType>
class NoSharding : public mlir::OpTrait::TraitBase<ConcreteType, NoSharding> {};
} // namespace trc

#include "trc/Dialect/ShardingRule.h"

#include "TrcInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "TrcAttrs.h.inc"

#define GET_OP_CLASSES
#include "TrcOps.h.inc"

#endif // TRC_DIALECT_TRC_H
