//===- LowerDropout.cpp - trc-lower-dropout ---------------------------------===//
//
// Replaces each trc.dropout of @main by select(u >= p, x / (1 - p), 0) with
// u = trc.random_uniform of a new key input trc.rng_key (abi::kRngKey; see Passes.td).
// Preconditions: a function @main with one block; run before trc-autodiff.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"
#include "trc/Abi/AttrNames.h"
#include "trc/Abi/SlotNames.h"
#include "trc/Training/Optimizers.h"

#include "mlir/IR/Builders.h"

namespace trc {
#define GEN_PASS_DEF_LOWERDROPOUT
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using namespace trc;

namespace {
struct LowerDropout : trc::impl::LowerDropoutBase<LowerDropout> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.getBody().empty()) {
      module.emitError("trc-lower-dropout needs a function @main with a body");
      return signalPassFailure();
    }
    SmallVector<DropoutOp> dropouts;
    main.walk([&](DropoutOp op) { dropouts.push_back(op); });
    if (dropouts.empty())
      return;

    OpBuilder b(module.getContext());
    auto keyType = RankedTensorType::get({}, b.getI64Type());
    unsigned keyIndex = main.getNumArguments();
    if (failed(main.insertArgument(keyIndex, keyType,
                                   b.getDictionaryAttr(b.getNamedAttr(
                                       trc::abi::kInputAttr, b.getStringAttr(trc::abi::kRngKey))),
                                   main.getLoc())))
      return signalPassFailure();
    Value key = main.getArgument(keyIndex);

    for (auto [k, op] : llvm::enumerate(dropouts)) {
      b.setInsertionPoint(op);
      Location loc = op.getLoc();
      auto type = cast<RankedTensorType>(op.getType());
      double ratio = op.getRatio().convertToDouble();
      auto uniformType = RankedTensorType::get(type.getShape(), b.getF32Type());
      training::UpdateBuilder x(b, loc, type), uniform(b, loc, uniformType);
      int64_t stream = (op.getSeed() << 20) + static_cast<int64_t>(k);
      Value u = b.create<RandomUniformOp>(loc, uniformType, key, stream);
      Value keep = b.create<CompareOp>(
          loc, RankedTensorType::get(type.getShape(), b.getI1Type()), CompareDirection::GE,
          u, uniform.constant(ratio));
      Value scaled = x.mul(op.getOperand(), x.constant(1.0 / (1.0 - ratio)));
      Value result = x.select(keep, scaled, x.constant(0.0));
      op.replaceAllUsesWith(result);
      op.erase();
    }
  }
};
} // namespace
