//===- MixedPrecision.cpp - trc-mixed-precision -----------------------------===//
//
// Retypes @main's f32 computation to bf16 or f16 in place (see Passes.td).
// Ops are visited in order; an op "goes low" when it is not on the keep-f32
// list and reads a low value or computes f32 from f32: its f32 operands are
// converted down
// (one convert per value, shared by all users) and its f32 result types
// become the low type. Keep-f32 ops convert their low operands back up.
// Every trc op's verifier holds afterwards because all float operands of a
// low op are low and all float operands of a kept op are f32.
// Preconditions: @main has one block; parameters are arguments.
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/Passes.h"
#include "trc/Abi/SlotNames.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

namespace trc {
#define GEN_PASS_DEF_MIXEDPRECISION
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using namespace trc;

namespace {

bool hasElementType(Value v, Type element) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t && t.getElementType() == element;
}

/// Ops computed in f32 whatever their inputs: reductions and the composites
/// built on them, exp/log/pow (range), and gather (embedding gradients).
bool keepsF32(Operation *op) {
  return isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp, CrossEntropyOp, ReduceOp, ExpOp, LogOp,
             PowOp, GatherOp>(op);
}

struct MixedPrecision : trc::impl::MixedPrecisionBase<MixedPrecision> {
  using MixedPrecisionBase::MixedPrecisionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Builder types(module.getContext());
    if (type != "bf16" && type != "f16") {
      module.emitError("trc-mixed-precision: type must be bf16 or f16, got '") << type << "'";
      return signalPassFailure();
    }
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.getBody().empty() || !main.getBody().hasOneBlock()) {
      module.emitError("trc-mixed-precision needs a function @main with one block");
      return signalPassFailure();
    }
    Type f32 = types.getF32Type();
    Type low = type == "bf16" ? Type(types.getBF16Type()) : Type(types.getF16Type());
    Block &body = main.getBody().front();

    // One convert per (value, target type), placed right after the value.
    DenseMap<std::pair<Value, Type>, Value> converted;
    auto convert = [&](Value v, Type element) -> Value {
      auto [it, inserted] = converted.try_emplace({v, element});
      if (!inserted)
        return it->second;
      OpBuilder b(module.getContext());
      if (auto arg = dyn_cast<BlockArgument>(v))
        b.setInsertionPointToStart(arg.getOwner());
      else
        b.setInsertionPointAfter(v.getDefiningOp());
      auto t = cast<RankedTensorType>(v.getType());
      it->second = b.create<ConvertOp>(v.getLoc(), t.clone(element), v);
      return it->second;
    };
    for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
      if (keepsF32(&op)) {
        for (OpOperand &operand : op.getOpOperands())
          if (hasElementType(operand.get(), low))
            operand.set(convert(operand.get(), f32));
        continue;
      }
      // Low when it reads a low value, or computes f32 from f32; an op that
      // reads only f32 sources into non-floats (a mask compare) stays as is.
      auto any = [&](ValueRange values, Type element) {
        return llvm::any_of(values, [&](Value v) { return hasElementType(v, element); });
      };
      if (!any(op.getOperands(), low) &&
          !(any(op.getOperands(), f32) && any(op.getResults(), f32)))
        continue;
      for (OpOperand &operand : op.getOpOperands())
        if (hasElementType(operand.get(), f32))
          operand.set(convert(operand.get(), low));
      for (Value result : op.getResults())
        if (hasElementType(result, f32))
          result.setType(cast<RankedTensorType>(result.getType()).clone(low));
      // A convert from f32 to the low type itself is now low -> low.
      if (auto c = dyn_cast<ConvertOp>(op); c && c.getOperand().getType() == c.getType()) {
        c.replaceAllUsesWith(c.getOperand());
        c.erase();
      }
    }

    auto ret = cast<func::ReturnOp>(body.getTerminator());
    for (OpOperand &operand : ret->getOpOperands())
      if (hasElementType(operand.get(), low) &&
          main.getResultTypes()[operand.getOperandNumber()] != operand.get().getType())
        operand.set(convert(operand.get(), f32));

    if (lossScale)
      scaleLoss(main, ret);
    if (failed(mlir::verify(main)))
      return signalPassFailure();
  }

  /// loss * trc.loss_scale as the first result (loss scaling for f16).
  void scaleLoss(func::FuncOp main, func::ReturnOp ret) {
    OpBuilder b(ret);
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    unsigned index = main.getNumArguments();
    (void)main.insertArgument(index, scalar,
                              b.getDictionaryAttr(b.getNamedAttr(
                                  trc::abi::kInputAttr, b.getStringAttr(trc::abi::kLossScale))),
                              main.getLoc());
    Value loss = ret.getOperand(0);
    if (loss.getType() != scalar) {
      main.emitError("loss scaling needs @main's first result to be a tensor<f32> loss");
      return signalPassFailure();
    }
    ret.setOperand(0, b.create<MulOp>(ret.getLoc(), loss, main.getArgument(index)));
  }
};

} // namespace
