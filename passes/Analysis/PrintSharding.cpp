//===- PrintSharding.cpp - test-trc-print-sharding -------------------------===//
//
// Prints each annotated value's sharding and each collective with the bytes
// a rank puts into it (see Passes.td). Values are named by their position:
// %argN for arguments (with the parameter's name), %N for the N-th op of
// the body, so lines are stable under unrelated renumbering.
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/AnalysisPasses.h"
#include "trc/Analysis/ValueFacts.h"
#include "trc/Parallel/Sharding.h"

#include "llvm/ADT/MapVector.h"

namespace trc {
#define GEN_PASS_DEF_TESTPRINTSHARDING
#include "AnalysisPasses.h.inc"
} // namespace trc

using namespace mlir;

namespace {

struct TestPrintSharding : trc::impl::TestPrintShardingBase<TestPrintSharding> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal())
        print(func);
  }

  void print(func::FuncOp func) {
    llvm::raw_ostream &os = llvm::outs();
    os << "sharding @" << func.getSymName() << "\n";
    for (BlockArgument arg : func.getArguments()) {
      auto s = trc::parallel::readSharding(arg);
      if (!s)
        continue;
      os << "  %arg" << arg.getArgNumber();
      if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), trc::abi::kParamAttr))
        os << " \"" << name.getValue() << "\"";
      os << ": " << s->str() << "\n";
    }
    llvm::MapVector<StringRef, std::pair<int64_t, int64_t>> totals; // count, bytes
    int64_t index = 0;
    for (Operation &op : func.getBody().front()) {
      for (Value r : op.getResults())
        if (auto s = trc::parallel::readSharding(r)) {
          os << "  %" << index;
          if (op.getNumResults() > 1)
            os << "#" << cast<OpResult>(r).getResultNumber();
          os << " " << op.getName() << ": " << s->str() << "\n";
        }
      if (isa<trc::AllReduceOp, trc::ReduceScatterOp, trc::AllGatherOp,
              trc::CollectivePermuteOp>(op)) {
        // Bytes into the collective: the operand (all-gather: the part sent).
        int64_t bytes = trc::analysis::tensorBytes(op.getOperand(0).getType());
        auto group = op.getAttrOfType<trc::CollectiveGroupAttr>("group");
        os << "  collective " << op.getName();
        if (auto ar = dyn_cast<trc::AllReduceOp>(op))
          os << " " << trc::stringifyCollectiveReduction(ar.getReduction());
        os << " " << (group ? trc::stringifyCollectiveGroup(group.getValue()) : "?") << ": "
           << bytes << " bytes\n";
        auto &[count, sum] = totals[op.getName().stripDialect()];
        ++count;
        sum += bytes;
      }
      ++index;
    }
    if (!totals.empty()) {
      os << "  collectives:";
      for (auto &[kind, entry] : totals)
        os << " " << entry.first << " " << kind << " " << entry.second << " bytes;";
      os << "\n";
    }
  }
};

} // namespace
