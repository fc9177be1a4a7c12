//===- PrintFusionSummary.cpp - trc-print-fusion-summary ------------------===//
//
// Prints, per function and in total, the kernels and the device memory bytes
// they move before and after trc-fuse (see Passes.td). "Before" is what
// trc-fuse recorded in `trc.unfused_cost`; without it (an unfused function)
// before and after are the function as it is. The IR is unchanged.
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/Analysis/FusionCostModel.h"

#include "trc/AnalysisPasses.h"

#include "llvm/Support/Format.h"

namespace trc {
#define GEN_PASS_DEF_PRINTFUSIONSUMMARY
#include "AnalysisPasses.h.inc"
} // namespace trc

using namespace mlir;
using namespace trc;
using namespace trc::fusion;

namespace {

struct Line {
  KernelTotals before, after;
  int64_t byKind[3] = {0, 0, 0};
};

void print(llvm::raw_ostream &os, StringRef name, const Line &l) {
  os << name << ": kernels " << l.before.kernels << " -> " << l.after.kernels
     << ", bytes " << l.before.bytes << " -> " << l.after.bytes;
  if (l.before.bytes > 0)
    os << " (" << llvm::format("%.1f", 100.0 * l.after.bytes / l.before.bytes) << "%)";
  os << ", fusions " << l.byKind[0] << " elementwise, " << l.byKind[1] << " reduction, "
     << l.byKind[2] << " matmul_epilogue\n";
}

struct PrintFusionSummary : trc::impl::PrintFusionSummaryBase<PrintFusionSummary> {
  void runOnOperation() override {
    auto &os = llvm::outs();
    os << "fusion summary (kernels, device memory bytes: before -> after fusion)\n";
    Line total;
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (!fn.getBody().hasOneBlock())
        continue;
      Line l;
      l.after = measure(fn.getBody().front());
      l.before = l.after;
      if (auto recorded = fn->getAttrOfType<DenseI64ArrayAttr>(trc::abi::kUnfusedCostAttr);
          recorded && recorded.size() == 2)
        l.before = {recorded[0], recorded[1]};
      for (auto fusion : fn.getBody().front().getOps<FusionOp>())
        ++l.byKind[static_cast<int>(fusion.getKind())];
      print(os, ("@" + fn.getSymName()).str(), l);
      total.before.kernels += l.before.kernels;
      total.before.bytes += l.before.bytes;
      total.after.kernels += l.after.kernels;
      total.after.bytes += l.after.bytes;
      for (int k = 0; k < 3; ++k)
        total.byKind[k] += l.byKind[k];
    }
    print(os, "total", total);
    markAllAnalysesPreserved();
  }
};

} // namespace
