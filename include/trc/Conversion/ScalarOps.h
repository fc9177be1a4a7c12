//===- ScalarOps.h - scalar arith/math bodies of trc elementwise ops -*- C++ -*-===//
//
// The scalar computation of each elementwise trc op, for linalg bodies (CPU
// and, later, GPU kernels share these). Preconditions: float or signless
// integer element types.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_CONVERSION_SCALAROPS_H
#define TRC_CONVERSION_SCALAROPS_H

#include "trc/Dialect/Trc.h"

#include "mlir/IR/Builders.h"

namespace trc::scalar {

/// Emits `op`'s scalar form on `args` (one per operand); null if `op` is not
/// an elementwise trc op this knows.
mlir::Value emit(mlir::OpBuilder &b, mlir::Location loc, mlir::Operation *op,
                 mlir::ValueRange args);

/// Converts a scalar between element types (ONNX Cast semantics: float to
/// int truncates toward zero, anything to i1 is "non-zero").
mlir::Value convert(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                    mlir::Type to);

/// The identity of a reduction (0, 1, -inf/lowest, +inf/highest).
mlir::TypedAttr reductionIdentity(mlir::OpBuilder &b, ReduceKind kind,
                                  mlir::Type elementType);

/// Combines two scalars with a reduction's function.
mlir::Value combine(mlir::OpBuilder &b, mlir::Location loc, ReduceKind kind,
                    mlir::Value acc, mlir::Value v);

} // namespace trc::scalar

#endif // TRC_CONVERSION_SCALAROPS_H
