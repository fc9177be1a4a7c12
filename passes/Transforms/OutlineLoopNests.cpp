//===- OutlineLoopNests.cpp - trc-outline-loop-nests -----------------------===//
//
// Moves each loop nest at the top of a function's body into a function of
// its own (see Passes.td). OpenMP's IR builder scans the whole enclosing
// function once per parallel region it outlines, so one step function with
// thousands of loop nests translated in time quadratic in its size (GPT-2
// 124M's training step on the CPU: 52 s of a 77 s compile). Preconditions:
// bufferized loops (scf.parallel / scf.for on memrefs) in func.func bodies.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/RegionUtils.h"

namespace trc {
#define GEN_PASS_DEF_OUTLINELOOPNESTS
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {
/// The backends call functions with bare pointers for memrefs, which needs
/// a layout the callee can rebuild from the type alone.
bool passableAsArgument(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref)
    return type.isIntOrIndexOrFloat();
  if (!memref.hasStaticShape())
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(memref.getStridesAndOffset(strides, offset)))
    return false;
  return ShapedType::isStatic(offset) && llvm::all_of(strides, ShapedType::isStatic);
}

struct OutlineLoopNests : trc::impl::OutlineLoopNestsBase<OutlineLoopNests> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    for (func::FuncOp fn : functions) {
      if (fn.isExternal())
        continue;
      SmallVector<Operation *> nests;
      for (Block &block : fn.getBody())
        for (Operation &op : block)
          if (isa<scf::ParallelOp, scf::ForOp>(op))
            nests.push_back(&op);
      // A function of one loop nest is already as small as it gets.
      if (nests.size() < 2)
        continue;
      unsigned counter = 0;
      for (Operation *nest : nests)
        outline(nest, fn, symbols, counter);
    }
  }

  /// @<fn>_loop<N>(captured values) holding `nest`, called where it was.
  /// Constants it reads are cloned in rather than passed.
  void outline(Operation *nest, func::FuncOp parent, SymbolTable &symbols, unsigned &counter) {
    llvm::SetVector<Value> captured;
    for (Value operand : nest->getOperands())
      captured.insert(operand);
    for (Region &region : nest->getRegions())
      getUsedValuesDefinedAbove(region, captured);
    SmallVector<Value> arguments;
    SmallVector<Operation *> constants;
    for (Value value : captured) {
      Operation *def = value.getDefiningOp();
      if (def && def->getNumResults() == 1 && matchPattern(def, m_Constant()))
        constants.push_back(def);
      else if (passableAsArgument(value.getType()))
        arguments.push_back(value);
      else
        return; // stays inline
    }

    OpBuilder b(parent);
    Location loc = nest->getLoc();
    auto type = b.getFunctionType(ValueRange(arguments).getTypes(), nest->getResultTypes());
    auto callee = func::FuncOp::create(
        b, loc, (parent.getSymName() + "_loop" + llvm::Twine(counter++)).str(), type);
    callee.setPrivate();
    // Kept out of line in LLVM too: inlined back, the step is one huge
    // function again for LLVM's optimizer and code generator.
    callee->setAttr("passthrough", b.getArrayAttr({b.getStringAttr("noinline")}));
    symbols.insert(callee, Block::iterator(parent));

    Block *body = callee.addEntryBlock();
    OpBuilder inside = OpBuilder::atBlockBegin(body);
    IRMapping mapping;
    for (auto [value, argument] : llvm::zip(arguments, body->getArguments()))
      mapping.map(value, argument);
    for (Operation *constant : constants)
      inside.clone(*constant, mapping);
    Operation *moved = inside.clone(*nest, mapping);
    func::ReturnOp::create(inside, loc, moved->getResults());

    OpBuilder at(nest);
    auto call = func::CallOp::create(at, loc, callee, arguments);
    nest->replaceAllUsesWith(call.getResults());
    nest->erase();
  }
};
} // namespace
