//===- GpuLaunchToRuntimeCall.cpp - trc-gpu-launch-to-runtime-call --------===//
//
// gpu.launch_func (after gpu-to-llvm: LLVM-typed operands in an llvm.func)
// -> llvm.call @trc_rt_cuda_launch with cuLaunchKernel's parameter array
// (see Passes.td and docs/ARTIFACT.md); the kernel table is recorded as the
// module attribute `trc.cuda_kernels`. Preconditions: synchronous launches
// without clusters, inside llvm.func.
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/StringMap.h"

namespace trc {
#define GEN_PASS_DEF_GPULAUNCHTORUNTIMECALL
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {
constexpr const char *kLaunchEntry = "trc_rt_cuda_launch";

struct GpuLaunchToRuntimeCall
    : trc::impl::GpuLaunchToRuntimeCallBase<GpuLaunchToRuntimeCall> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto i32 = IntegerType::get(ctx, 32), i64 = IntegerType::get(ctx, 64);

    SmallVector<gpu::LaunchFuncOp> launches;
    module.walk([&](gpu::LaunchFuncOp op) { launches.push_back(op); });
    SmallVector<Attribute> names;
    llvm::StringMap<int32_t> indexOf;
    if (launches.empty()) {
      module->setAttr(trc::abi::kCudaKernelsAttr, ArrayAttr::get(ctx, names));
      return;
    }

    auto callee = module.lookupSymbol<LLVM::LLVMFuncOp>(kLaunchEntry);
    if (!callee) {
      OpBuilder top = OpBuilder::atBlockBegin(module.getBody());
      auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                              {i32, i64, i64, i64, i64, i64, i64, i32, ptr, i32});
      callee = LLVM::LLVMFuncOp::create(top, module.getLoc(), kLaunchEntry, type);
    }

    llvm::DenseMap<Operation *, Operation *> lastAlloca; // per function
    for (gpu::LaunchFuncOp launch : launches) {
      Location loc = launch.getLoc();
      auto fn = launch->getParentOfType<LLVM::LLVMFuncOp>();
      if (!fn) {
        launch.emitError("trc-gpu-launch-to-runtime-call runs after gpu-to-llvm "
                         "(the launch must be inside an llvm.func)");
        return signalPassFailure();
      }
      if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty() ||
          launch.hasClusterSize()) {
        launch.emitError("asynchronous launches and clusters are not supported");
        return signalPassFailure();
      }
      StringRef kernel = launch.getKernelName().getValue();
      auto [it, inserted] = indexOf.try_emplace(kernel, static_cast<int32_t>(names.size()));
      if (inserted)
        names.push_back(StringAttr::get(ctx, kernel));

      // Parameter storage lives in the entry block (static allocas), after
      // the previous launches'.
      ValueRange operands = launch.getKernelOperands();
      OpBuilder entry = OpBuilder::atBlockBegin(&fn.getBody().front());
      if (Operation *last = lastAlloca.lookup(fn))
        entry.setInsertionPointAfter(last);
      Value one = LLVM::ConstantOp::create(entry, loc, i64, 1);
      Value count = LLVM::ConstantOp::create(entry, 
          loc, i64, std::max<int64_t>(1, static_cast<int64_t>(operands.size())));
      Value params = LLVM::AllocaOp::create(entry, loc, ptr, ptr, count);
      SmallVector<Value> slots;
      for (Value operand : operands)
        slots.push_back(LLVM::AllocaOp::create(entry, loc, ptr, operand.getType(), one));
      lastAlloca[fn] = slots.empty() ? params.getDefiningOp() : slots.back().getDefiningOp();

      OpBuilder b(launch);
      for (auto [i, operand] : llvm::enumerate(operands)) {
        LLVM::StoreOp::create(b, loc, operand, slots[i]);
        Value at = LLVM::GEPOp::create(b, loc, ptr, ptr, params,
                                         ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
        LLVM::StoreOp::create(b, loc, slots[i], at);
      }
      auto asI64 = [&](Value v) -> Value {
        if (v.getType() == i64)
          return v;
        if (v.getType().isInteger(32))
          return LLVM::ZExtOp::create(b, loc, i64, v);
        return UnrealizedConversionCastOp::create(b, loc, i64, v).getResult(0);
      };
      Value kernelIndex = LLVM::ConstantOp::create(b, loc, i32, it->second);
      Value shared = launch.getDynamicSharedMemorySize();
      if (!shared)
        shared = LLVM::ConstantOp::create(b, loc, i32, 0);
      SmallVector<Value> args{
          kernelIndex,
          asI64(launch.getGridSizeX()),  asI64(launch.getGridSizeY()),
          asI64(launch.getGridSizeZ()),  asI64(launch.getBlockSizeX()),
          asI64(launch.getBlockSizeY()), asI64(launch.getBlockSizeZ()),
          shared,
          params,
          LLVM::ConstantOp::create(b, loc, i32, static_cast<int64_t>(operands.size()))};
      LLVM::CallOp::create(b, loc, callee, args);
      launch.erase();
    }
    module->setAttr(trc::abi::kCudaKernelsAttr, ArrayAttr::get(ctx, names));
  }
};
} // namespace
