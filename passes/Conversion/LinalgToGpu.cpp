//===- LinalgToGpu.cpp - trc-linalg-to-gpu ----------------------------------===//
//
// Every linalg op on buffers -> one gpu.launch (see Passes.td). This file
// decides what becomes a kernel, in program order: fills folded into the
// reduction after them, named ops generalized, a reduction and the row ops
// after it as one row kernel, each other generic as its own kernel, host
// loop nests as loop kernels; the emitters are lib/Conversion/Gpu*Kernel.cpp
// (include/trc/Conversion/GpuKernels.h). Preconditions: bufferized IR with
// static shapes and strides; buffers are at least 16-byte aligned (slots and
// the arena are 64-byte aligned and the memory plan's offsets are multiples
// of 64). Afterwards the host only does pointer arithmetic, launches and
// trc_rt_* calls, which is checked.
//
//===----------------------------------------------------------------------===//
#include "trc/Conversion/GpuKernels.h"
#include "trc/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/RegionUtils.h"

namespace trc {
#define GEN_PASS_DEF_LINALGTOGPU
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using namespace trc::gpukernels;

namespace {

/// `memref.reshape` with a static result and a constant shape operand ->
/// `memref.reinterpret_cast` (the shape buffer is never read).
void reshapesToCasts(func::FuncOp func) {
  SmallVector<memref::ReshapeOp> reshapes;
  func.walk([&](memref::ReshapeOp op) { reshapes.push_back(op); });
  for (auto op : reshapes) {
    auto result = cast<MemRefType>(op.getType());
    if (!result.hasStaticShape() || !result.getLayout().isIdentity())
      continue;
    SmallVector<int64_t> strides(result.getRank(), 1);
    for (int64_t i = result.getRank() - 2; i >= 0; --i)
      strides[i] = strides[i + 1] * result.getDimSize(i + 1);
    OpBuilder b(op);
    Value cast = memref::ReinterpretCastOp::create(b, op.getLoc(), result, op.getSource(), 0,
                                                     result.getShape(), strides);
    op.replaceAllUsesWith(cast);
    op.erase();
  }
}

struct LinalgToGpu : trc::impl::LinalgToGpuBase<LinalgToGpu> {
  /// The kernels made here are later translated to LLVM IR by MLIR's NVVM
  /// target (gpu-module-to-binary), which needs these translations in the
  /// context: registering them here makes any pipeline with this pass work
  /// (trc-opt registers no translations itself).
  void getDependentDialects(DialectRegistry &registry) const override {
    LinalgToGpuBase::getDependentDialects(registry);
    registerBuiltinDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
    registerNVVMDialectTranslation(registry);
    registerGPUDialectTranslation(registry);
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    reshapesToCasts(func);
    // Launches built before bufferization (trc-attention-to-gpu's) read
    // what bufferization made constant globals: sunk as the kernels made
    // here sink theirs.
    SmallVector<gpu::LaunchOp> built;
    func.walk([&](gpu::LaunchOp launch) { built.push_back(launch); });
    for (gpu::LaunchOp launch : built)
      if (failed(sinkConstants(launch)))
        return signalPassFailure();

    // Kernels are numbered in program order: linalg ops and host loop
    // nests (what trc-lower-to-linalg writes as scf.for: scatter_add).
    SmallVector<Operation *> work;
    for (Operation &op : func.getBody().front())
      if (isa<linalg::LinalgOp, scf::ForOp>(op))
        work.push_back(&op);
    IRRewriter rewriter(&getContext());
    folded.clear();
    llvm::SmallPtrSet<Operation *, 8> gone; // fills folded into reductions
    for (Operation *op : work)
      if (auto named = dyn_cast<linalg::LinalgOp>(op); named && !gone.contains(op))
        if (SmallVector<Value> fills = foldFills(rewriter, named, gone); !fills.empty())
          folded[op] = std::move(fills);
    // Named ops become generics (their names kept for the kernels').
    llvm::DenseMap<Operation *, std::string> names;
    SmallVector<Operation *> items;
    for (Operation *op : work) {
      if (gone.contains(op))
        continue; // a fill folded into the reduction after it
      auto named = dyn_cast<linalg::LinalgOp>(op);
      if (!named) {
        items.push_back(op);
        continue;
      }
      std::string name = named->getName().stripDialect().str();
      FailureOr<linalg::GenericOp> generic = prepare(rewriter, named); // may erase `named`
      if (failed(generic))
        return signalPassFailure();
      if (*generic) {
        names[*generic] = name;
        if (auto it = folded.find(op); it != folded.end() && op != *generic) {
          SmallVector<Value> fills = std::move(it->second);
          folded.erase(it);
          folded[*generic] = std::move(fills);
        }
        items.push_back(*generic);
      } else {
        folded.erase(op); // nothing to compute: erased
      }
    }

    int counter = 0;
    std::string prefix = (func.getSymName() + "_k").str();
    for (size_t i = 0; i < items.size(); ++i) {
      if (auto loop = dyn_cast<scf::ForOp>(items[i])) {
        if (failed(lowerLoopNest(rewriter, loop, counter)))
          return signalPassFailure();
        continue;
      }
      // A reduction and the row ops after it: one kernel.
      SmallVector<linalg::GenericOp> run;
      for (size_t j = i; j < items.size() && isa<linalg::GenericOp>(items[j]); ++j)
        run.push_back(cast<linalg::GenericOp>(items[j]));
      RowGroup group = formRowGroup(run, 0, &folded);
      // A lone reduction over rows is a row kernel when a warp can share
      // each row (a thread per output point otherwise, as any generic).
      if (group.ops.size() > 1 || (group.ops.size() == 1 && warpSharesRows(group))) {
        markStores(group);
        std::string name = prefix + std::to_string(counter++) + "_rows";
        if (failed(emitRowKernel(group, rewriter, folded, name))) {
          group.ops.front()->emitError("cannot build the kernel's launch");
          return signalPassFailure();
        }
        for (linalg::GenericOp op : group.ops)
          rewriter.eraseOp(op);
        i += group.ops.size() - 1;
        continue;
      }
      auto generic = cast<linalg::GenericOp>(items[i]);
      std::string name = prefix + std::to_string(counter++) + "_" + names[generic];
      rewriter.setInsertionPoint(generic);
      if (failed(emitGenericKernel(generic, rewriter, folded.lookup(generic), name))) {
        generic->emitError("cannot build the kernel's launch");
        return signalPassFailure();
      }
      rewriter.eraseOp(generic);
    }

    // Host code left behind: drop what is dead, then everything else must
    // be pointer arithmetic, a launch or a runtime call.
    Block &entry = func.getBody().front();
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(entry)))
      if (isOpTriviallyDead(&op))
        op.erase();
    bool failedCheck = false;
    func.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (op == func.getOperation() || isa<func::ReturnOp>(op))
        return WalkResult::advance();
      if (isa<gpu::LaunchOp>(op))
        return WalkResult::skip();
      auto complain = [&](const Twine &why) {
        op->emitError() << "'" << op->getName() << "' " << why
                        << ": the CUDA backend runs every computation in a kernel "
                           "and the host cannot read device memory";
        failedCheck = true;
        return WalkResult::interrupt();
      };
      if (auto call = dyn_cast<func::CallOp>(op)) {
        if (call.getCallee().starts_with("trc_rt_"))
          return WalkResult::advance();
        return complain("calls @" + call.getCallee() + " on the host");
      }
      if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
        Operation *user = *global->user_begin();
        return complain("reads constant @" + global.getName() + " on the host (for '" +
                        user->getName().getStringRef() + "')");
      }
      if (isa<memref::AllocOp, memref::AllocaOp>(op))
        return complain("allocates on the host (the memory plan places every buffer)");
      if (!isMemoryEffectFree(op))
        return complain("would run on the host");
      return WalkResult::advance();
    });
    folded.clear();
    if (failedCheck)
      signalPassFailure();
  }

  // For the function being converted: reduction -> the values its outputs
  // start from (folded fills).
  llvm::DenseMap<Operation *, SmallVector<Value>> folded;

  LogicalResult lowerLoopNest(IRRewriter &rewriter, scf::ForOp nest, int &counter) {
    WalkResult nested = nest.walk([&](Operation *op) {
      if (isa<linalg::LinalgOp, gpu::LaunchOp, func::CallOp>(op)) {
        op->emitError("the CUDA backend cannot run this op inside a host loop");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (nested.wasInterrupted())
      return failure();
    std::string kernel =
        (getOperation().getSymName() + "_k" + Twine(counter++) + "_loop").str();
    rewriter.setInsertionPoint(nest);
    bool parallel = false;
    if (failed(emitLoopNestKernel(nest, rewriter, kernel, parallel)))
      return nest->emitError("cannot build the kernel's launch");
    if (!parallel)
      nest->emitRemark("this loop nest runs on one GPU thread (its iterations could "
                       "not be shown independent)");
    rewriter.eraseOp(nest);
    return success();
  }

  /// A reduction whose outputs were just filled with a constant (its
  /// identity: -inf for max, 0 for sums) starts from that value: the fill
  /// kernel disappears when nothing else reads the filled buffer in between.
  SmallVector<Value> foldFills(IRRewriter &rewriter, linalg::LinalgOp op,
                               llvm::SmallPtrSetImpl<Operation *> &erased) {
    SmallVector<Value> fills;
    if (llvm::all_of(op.getIteratorTypesArray(), linalg::isParallelIterator))
      return fills;
    bool any = false;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      fills.push_back(Value());
      if (llvm::is_contained(op.getDpsInputs(), init.get()))
        continue; // the op reads the filled buffer as an input too
      // The fill is an earlier op of the same block with only pointer
      // arithmetic (no kernels or calls) between it and the reduction.
      for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
        auto fill = dyn_cast<linalg::FillOp>(prev);
        if (fill && fill.getDpsInits()[0] == init.get() &&
            matchPattern(fill.getDpsInputs()[0], m_Constant())) {
          OpBuilder::InsertionGuard guard(rewriter);
          rewriter.setInsertionPoint(op);
          fills.back() = rewriter.clone(*fill.getDpsInputs()[0].getDefiningOp())->getResult(0);
          erased.insert(fill);
          rewriter.eraseOp(fill);
          any = true;
          break;
        }
        if (!isMemoryEffectFree(prev))
          break;
      }
    }
    return any ? fills : SmallVector<Value>();
  }

  /// Checks `named` and returns it as a generic, or null when it has
  /// nothing to compute (it is then erased).
  FailureOr<linalg::GenericOp> prepare(IRRewriter &rewriter, linalg::LinalgOp named) {
    if (!named.hasPureBufferSemantics())
      return named->emitError("the CUDA backend takes linalg ops on buffers only");
    for (Value operand : named->getOperands()) {
      auto type = dyn_cast<MemRefType>(operand.getType());
      SmallVector<int64_t> strides;
      int64_t offset;
      if (type && failed(staticLayout(type, strides, offset)))
        return named->emitError("the CUDA backend needs static shapes, strides and "
                                "offsets, not ")
               << type;
    }
    rewriter.setInsertionPoint(named);
    linalg::GenericOp generic = dyn_cast<linalg::GenericOp>(named.getOperation());
    if (!generic) {
      FailureOr<linalg::GenericOp> generalized = linalg::generalizeNamedOp(rewriter, named);
      if (failed(generalized))
        return named->emitError("the CUDA backend cannot generalize this op");
      generic = *generalized;
    }
    SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
    int64_t points = 1;
    for (auto [dim, type] : llvm::enumerate(generic.getIteratorTypesArray()))
      if (linalg::isParallelIterator(type))
        points *= ranges[dim];
    for (OpOperand &init : generic.getDpsInitsMutable()) {
      AffineMap map = generic.getMatchingIndexingMap(&init);
      for (auto [dim, type] : llvm::enumerate(generic.getIteratorTypesArray()))
        if (!linalg::isParallelIterator(type) && map.isFunctionOfDim(dim))
          return generic->emitError("the CUDA backend cannot lower a linalg op whose "
                                    "outputs depend on its reduction dimensions");
    }
    if (points == 0) { // nothing to compute
      rewriter.eraseOp(generic);
      return linalg::GenericOp();
    }
    return generic;
  }
};

} // namespace
