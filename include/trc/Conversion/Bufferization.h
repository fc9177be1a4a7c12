//===- Bufferization.h - trc ops that reach bufferization ------*- C++ -*-===//
//
// The few trc ops that survive trc-lower-to-linalg and are bufferized with
// the linalg ops around them (one-shot-bufferize): their
// BufferizableOpInterface models, attached to the dialect by
// trc::registerAllDialects. And the buffers of the passes that hand tensors
// to runtime calls or kernels before bufferization (collectives, offloaded
// copies, attention): a read-only view of each operand, a fresh buffer for
// each result and the tensor the ops after it read, so that one-shot
// bufferization and the memory plan treat them as any temporary.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_CONVERSION_BUFFERIZATION_H
#define TRC_CONVERSION_BUFFERIZATION_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectRegistry.h"

namespace trc {

/// trc.optimization_barrier bufferizes to its operand's buffer.
void registerBufferizationModels(mlir::DialectRegistry &registry);

/// `tensor` as a read-only buffer with its shape and an identity layout
/// (bufferization.to_buffer read_only).
mlir::Value readOnlyBuffer(mlir::OpBuilder &b, mlir::Location loc, mlir::Value tensor);

/// A fresh buffer of `tensorType`'s shape and element type (memref.alloc;
/// the memory plan places it).
mlir::memref::AllocOp freshBuffer(mlir::OpBuilder &b, mlir::Location loc,
                                  mlir::Type tensorType);

/// `buffer`, written before this point, as the tensor the ops after it read
/// (bufferization.to_tensor restrict writable: nothing else aliases it).
mlir::Value bufferAsTensor(mlir::OpBuilder &b, mlir::Location loc, mlir::Value buffer,
                           mlir::Type tensorType);

} // namespace trc

#endif // TRC_CONVERSION_BUFFERIZATION_H
