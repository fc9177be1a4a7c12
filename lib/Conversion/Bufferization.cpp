//===- Bufferization.cpp - BufferizableOpInterface of trc ops --------------===//
//
// trc.optimization_barrier is an alias of its operand (like tensor.cast): it
// neither reads nor writes memory, its result is the operand's buffer, and
// bufferizing it erases it. Its job (keeping CSE from merging recomputed
// ops back into the forward) ends with the tensor-level passes. Also the
// buffers the pre-bufferization passes hand to calls and kernels.
//
//===----------------------------------------------------------------------===//
#include "trc/Conversion/Bufferization.h"
#include "trc/Dialect/Trc.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"

using namespace mlir;
using namespace mlir::bufferization;

namespace trc {
namespace {

struct BarrierBufferization
    : BufferizableOpInterface::ExternalModel<BarrierBufferization, OptimizationBarrierOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &, const AnalysisState &) const {
    return false;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &, const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &, const AnalysisState &) const {
    return {{op->getResult(0), BufferRelation::Equivalent}};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    FailureOr<Value> buffer = getBuffer(rewriter, op->getOperand(0), options, state);
    if (failed(buffer))
      return failure();
    replaceOpWithBufferizedValues(rewriter, op, *buffer);
    return success();
  }
};

} // namespace

void registerBufferizationModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, TrcDialect *) {
    OptimizationBarrierOp::attachInterface<BarrierBufferization>(*context);
  });
}

Value readOnlyBuffer(OpBuilder &b, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  auto view = ToBufferOp::create(b, loc, MemRefType::get(type.getShape(), type.getElementType()),
                                 tensor);
  view.setReadOnly(true);
  return view;
}

memref::AllocOp freshBuffer(OpBuilder &b, Location loc, Type tensorType) {
  auto type = cast<RankedTensorType>(tensorType);
  return memref::AllocOp::create(b, loc, MemRefType::get(type.getShape(), type.getElementType()));
}

Value bufferAsTensor(OpBuilder &b, Location loc, Value buffer, Type tensorType) {
  auto tensor = ToTensorOp::create(b, loc, tensorType, buffer);
  tensor.setRestrict(true);
  tensor.setWritable(true);
  return tensor;
}

} // namespace trc
