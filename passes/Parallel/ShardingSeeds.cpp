//===- ShardingSeeds.cpp - what the seeding passes share (ShardingSeeds.h) -===//
#include "ShardingSeeds.h"

#include "trc/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace trc::parallel {

Grid setGridAxis(ModuleOp module, StringRef axis, int64_t size) {
  Grid grid = Grid::read(module);
  llvm::erase_if(grid.axes, [&](auto &a) { return a.first == axis; });
  grid.axes.push_back({axis.str(), size});
  grid.write(module);
  return grid;
}

llvm::SetVector<Operation *> ancestors(Value v) {
  llvm::SetVector<Operation *> seen;
  SmallVector<Value> work{v};
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || !seen.insert(def))
      continue;
    work.append(def->operand_begin(), def->operand_end());
  }
  return seen;
}

LogicalResult decomposeComposites(MLIRContext *context, ArrayRef<Operation *> ops) {
  if (ops.empty())
    return success();
  RewritePatternSet patterns(context);
  populateDecomposeCompositePatterns(patterns);
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
  return applyOpPatternsGreedily(ops, std::move(patterns), config);
}

} // namespace trc::parallel
