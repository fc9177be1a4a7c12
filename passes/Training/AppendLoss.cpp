//===- AppendLoss.cpp - trc-append-loss ------------------------------------===//
//
// Turns a logits model into a loss model (see Passes.td): @main's first
// result [d0..dk, C] is flattened to [N, C], a targets argument [d0..dk] of
// i64 is added, and @main returns trc.cross_entropy (mean, ignore_index)
// instead of its outputs (its parameters' new values, trc.update results
// such as running statistics, stay). Precondition: a function @main with a body whose first result is
// the logits.
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/Passes.h"
#include "trc/Abi/SlotNames.h"

#include "mlir/IR/Builders.h"

namespace trc {
#define GEN_PASS_DEF_APPENDLOSS
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {
struct AppendLoss : trc::impl::AppendLossBase<AppendLoss> {
  using AppendLossBase::AppendLossBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.getBody().empty() || main.getNumResults() == 0) {
      module.emitError("trc-append-loss needs a function @main with a body and a result");
      return signalPassFailure();
    }
    auto logitsType = dyn_cast<RankedTensorType>(main.getResultTypes()[0]);
    auto outputName = main.getResultAttrOfType<StringAttr>(0, trc::abi::kOutputAttr);
    std::string what = outputName ? "output '" + outputName.str() + "'" : "the first result";
    if (logitsType && logitsType.getRank() == 0) {
      main.emitError() << what << " is already a scalar (the model computes its loss); "
                       << "train it without a loss option";
      return signalPassFailure();
    }
    if (!logitsType || logitsType.getRank() < 2 || !logitsType.hasStaticShape() ||
        !isa<FloatType>(logitsType.getElementType())) {
      main.emitError() << what << " must be logits [..., classes], a float tensor of rank "
                       << ">= 2 with a static shape; got " << main.getResultTypes()[0];
      return signalPassFailure();
    }
    for (unsigned i = 0; i < main.getNumArguments(); ++i)
      if (auto name = main.getArgAttrOfType<StringAttr>(i, trc::abi::kInputAttr);
          name && name.getValue() == targetsName) {
        main.emitError() << "an input is already named '" << targetsName
                         << "'; choose another name for the targets";
        return signalPassFailure();
      }

    OpBuilder b(module.getContext());
    ArrayRef<int64_t> shape = logitsType.getShape();
    int64_t classes = shape.back(), rows = 1;
    for (int64_t d : shape.drop_back())
      rows *= d;
    auto targetsType = RankedTensorType::get(shape.drop_back(), b.getI64Type());
    unsigned index = main.getNumArguments();
    if (failed(main.insertArgument(
            index, targetsType,
            b.getDictionaryAttr(b.getNamedAttr(trc::abi::kInputAttr, b.getStringAttr(targetsName))),
            main.getLoc())))
      return signalPassFailure();

    auto ret = cast<func::ReturnOp>(main.getBody().front().getTerminator());
    b.setInsertionPoint(ret);
    Location loc = ret.getLoc();
    Type element = logitsType.getElementType();
    Value logits = b.create<trc::ReshapeOp>(
        loc, RankedTensorType::get({rows, classes}, element), ret.getOperand(0));
    Value targets = b.create<trc::ReshapeOp>(
        loc, RankedTensorType::get({rows}, b.getI64Type()), main.getArgument(index));
    Value loss = b.create<trc::CrossEntropyOp>(
        loc, RankedTensorType::get({}, element), logits, targets,
        trc::LossReductionAttr::get(b.getContext(), trc::LossReduction::Mean),
        b.getI64IntegerAttr(ignoreIndex), UnitAttr());
    // The loss replaces the model's outputs; new values of its parameters
    // (BatchNormalization's running statistics) stay results.
    SmallVector<Value> results{loss};
    SmallVector<DictionaryAttr> resultAttrs{
        b.getDictionaryAttr(b.getNamedAttr(trc::abi::kOutputAttr,
                                           b.getStringAttr(trc::abi::kLossOutput)))};
    for (unsigned r = 0; r < ret.getNumOperands(); ++r)
      if (main.getResultAttr(r, trc::abi::kUpdateAttr)) {
        results.push_back(ret.getOperand(r));
        resultAttrs.push_back(main.getResultAttrDict(r));
      }
    b.create<func::ReturnOp>(loc, results);
    ret.erase();
    main.setType(b.getFunctionType(main.getArgumentTypes(), ValueRange(results).getTypes()));
    main.setAllResultAttrs(resultAttrs);
  }
};
} // namespace
