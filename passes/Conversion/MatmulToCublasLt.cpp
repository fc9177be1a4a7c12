//===- MatmulToCublasLt.cpp - trc-matmul-to-cublaslt -----------------------===//
//
// Renames the runtime's BLAS entries trc_rt_matmul_<t> (made by
// trc-matmul-to-runtime-call) to its cuBLASLt entries
// trc_rt_cublaslt_matmul_<t> (see Passes.td): same arguments, device
// pointers. Precondition: the calls are declared as private func.func.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"

#include "mlir/IR/SymbolTable.h"

namespace trc {
#define GEN_PASS_DEF_MATMULTOCUBLASLT
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {
struct MatmulToCublasLt : trc::impl::MatmulToCublasLtBase<MatmulToCublasLt> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto fn : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      StringRef name = fn.getSymName();
      if (!fn.isExternal() || !name.consume_front("trc_rt_matmul_"))
        continue;
      auto renamed = StringAttr::get(&getContext(), "trc_rt_cublaslt_matmul_" + name);
      if (failed(SymbolTable::replaceAllSymbolUses(fn, renamed, module))) {
        fn.emitError("cannot rename the uses of @") << fn.getSymName();
        return signalPassFailure();
      }
      fn.setSymName(renamed);
    }
  }
};
} // namespace
