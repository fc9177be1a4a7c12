//===- ParametersToArguments.cpp - trc-parameters-to-arguments -----------===//
//
// Makes the parameters @main reads explicit arguments (see Passes.td), so
// later stages see a pure function of (inputs, parameters).
// Precondition: a function @main with a body.
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/Passes.h"

namespace trc {
#define GEN_PASS_DEF_PARAMETERSTOARGUMENTS
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {
struct ParametersToArguments
    : trc::impl::ParametersToArgumentsBase<ParametersToArguments> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.getBody().empty()) {
      module.emitError("trc-parameters-to-arguments needs a function @main with a body");
      return signalPassFailure();
    }
    llvm::MapVector<StringRef, SmallVector<trc::GetParameterOp>> reads;
    for (auto param : module.getOps<trc::ParameterOp>())
      reads[param.getSymName()];
    main.walk([&](trc::GetParameterOp op) { reads[op.getName()].push_back(op); });
    Builder b(module.getContext());
    for (auto &[name, ops] : reads) {
      if (ops.empty())
        continue;
      unsigned index = main.getNumArguments();
      if (failed(main.insertArgument(
              index, ops.front().getType(),
              b.getDictionaryAttr(b.getNamedAttr(trc::abi::kParamAttr, b.getStringAttr(name))),
              ops.front().getLoc())))
        return signalPassFailure();
      for (auto op : ops) {
        op.replaceAllUsesWith(main.getArgument(index));
        op.erase();
      }
    }
  }
};
} // namespace
