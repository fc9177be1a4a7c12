//===- FusionCostModel.cpp - device memory traffic of kernels -------------===//
//
// See FusionCostModel.h. Counts ideal traffic: each input read once and each
// output written once per kernel (tiling re-reads and caches are ignored).
//
//===----------------------------------------------------------------------===//
#include "trc/Analysis/FusionCostModel.h"
#include "trc/Analysis/ElementBytes.h"

#include "trc/Dialect/Trc.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseSet.h"

#include <limits>

using namespace mlir;

namespace trc::fusion {

OpClass classify(Operation *op) {
  if (isa<ConstantOp, GetParameterOp, ReshapeOp, ParameterOp, func::CallOp>(op))
    return OpClass::Free;
  if (isa<BroadcastInDimOp, IotaOp>(op))
    return OpClass::Broadcast;
  if (isa<ReduceOp, SoftmaxOp, LogSoftmaxOp, LayerNormOp, CrossEntropyOp>(op))
    return OpClass::Reduction;
  if (isa<DotGeneralOp>(op))
    return OpClass::Matmul;
  // Elementwise trc ops with one tensor result (the Elementwise trait marks
  // the unary and binary ops, compare, select, convert and gelu).
  if (isa<TrcDialect>(op->getDialect()) && op->hasTrait<OpTrait::Elementwise>() &&
      op->getNumResults() == 1 && op->getNumRegions() == 0)
    return OpClass::Elementwise;
  return OpClass::Opaque;
}

bool isKernel(Operation *op) {
  if (op->hasTrait<OpTrait::IsTerminator>())
    return false;
  return classify(op) != OpClass::Free;
}

int64_t tensorBytes(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return 0;
  return storageBytes(t);
}

bool isImmediate(Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  if (!constant)
    return false;
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  return dense && dense.isSplat();
}

int64_t readBytes(Value value) { return isImmediate(value) ? 0 : tensorBytes(value.getType()); }

int64_t kernelBytes(ArrayRef<Value> inputs, ArrayRef<Value> outputs) {
  int64_t bytes = 0;
  llvm::DenseSet<Value> seen;
  for (Value v : inputs)
    if (seen.insert(v).second)
      bytes += readBytes(v);
  for (Value v : outputs)
    bytes += tensorBytes(v.getType());
  return bytes;
}

int64_t unfusedBytes(Operation *op) {
  if (!isKernel(op))
    return 0;
  SmallVector<Value> inputs(op->getOperands()), outputs(op->getResults());
  return kernelBytes(inputs, outputs);
}

int64_t flopsPerElement(Operation *op) {
  switch (classify(op)) {
  case OpClass::Broadcast:
    return 0;
  case OpClass::Elementwise:
    break;
  default:
    return -1;
  }
  if (isa<DivOp, SqrtOp, RsqrtOp>(op))
    return 4;
  if (isa<ExpOp, LogOp, TanhOp, ErfOp, SinOp, CosOp, LogisticOp>(op))
    return 16;
  if (isa<PowOp>(op))
    return 20;
  if (isa<GeluOp>(op))
    return 24;
  return 1;
}

double recomputeCost(ArrayRef<Operation *> ops, const CostParameters &params) {
  double flops = 0;
  for (Operation *op : ops) {
    int64_t perElement = flopsPerElement(op);
    if (perElement < 0)
      return std::numeric_limits<double>::infinity();
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!type || !type.hasStaticShape())
      return std::numeric_limits<double>::infinity();
    flops += static_cast<double>(perElement) * static_cast<double>(type.getNumElements());
  }
  return flops * params.bytesPerFlop;
}

bool duplicationPays(int64_t bytesSaved, ArrayRef<Operation *> chain,
                     const CostParameters &params) {
  return static_cast<double>(bytesSaved) > recomputeCost(chain, params);
}

KernelTotals measure(Block &block) {
  KernelTotals totals;
  for (Operation &op : block) {
    if (auto fusion = dyn_cast<FusionOp>(op)) {
      ++totals.kernels;
      SmallVector<Value> inputs(fusion.getInputs()), outputs(fusion.getResults());
      totals.bytes += kernelBytes(inputs, outputs);
      continue;
    }
    if (!isKernel(&op))
      continue;
    ++totals.kernels;
    totals.bytes += unfusedBytes(&op);
  }
  return totals;
}

} // namespace trc::fusion
