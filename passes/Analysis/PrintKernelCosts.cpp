//===- PrintKernelCosts.cpp - trc-print-kernel-costs ------------------------===//
//
// Prices the CUDA step kernel by kernel as plain data (see Passes.td): for
// each gpu.launch the bytes of the buffers it uses from outside and its
// floating-point operations, for each cuBLASLt product 2 b m n k FLOPs and
// its operands' bytes; printed as one JSON object for
// bench/predict_gpu_step.py. Precondition: the IR after trc-linalg-to-gpu
// (static shapes; kernels not yet outlined). The IR is unchanged.
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/Analysis/ElementBytes.h"
#include "trc/AnalysisPasses.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/JSON.h"

#include <map>
#include <tuple>

namespace trc {
#define GEN_PASS_DEF_PRINTKERNELCOSTS
#include "AnalysisPasses.h.inc"
} // namespace trc

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kCublasLtPrefix = "trc_rt_cublaslt_matmul_";

int64_t constantOr(Value v, int64_t fallback) {
  std::optional<int64_t> c = getConstantIntValue(v);
  return c ? *c : fallback;
}

/// Iterations of an scf.for with a static step and upper bound (a lower
/// bound that is not constant, a thread's first index, counts as 0), or
/// the mean over threads its kernel recorded (kMeanTripsAttr).
int64_t tripCount(scf::ForOp loop) {
  if (auto mean = loop->getAttrOfType<IntegerAttr>(trc::abi::kMeanTripsAttr))
    return mean.getInt();
  int64_t step = constantOr(loop.getStep(), 0), ub = constantOr(loop.getUpperBound(), -1);
  if (step <= 0 || ub < 0)
    return 1;
  int64_t lb = std::max<int64_t>(constantOr(loop.getLowerBound(), 0), 0);
  return ub > lb ? (ub - lb + step - 1) / step : 0;
}

/// How often `op` runs per run of `stop`'s body: the enclosing loops' trips.
int64_t repeats(Operation *op, Operation *stop) {
  int64_t n = 1;
  for (Operation *p = op->getParentOp(); p && p != stop; p = p->getParentOp())
    if (auto loop = dyn_cast<scf::ForOp>(p))
      n *= tripCount(loop);
  return n;
}

/// One floating-point operation per lane for arithmetic and math ops;
/// conversions, selects and constants are none.
int64_t flopsOf(Operation *op) {
  if (op->getNumResults() != 1 || !op->getDialect())
    return 0;
  StringRef dialect = op->getDialect()->getNamespace();
  if (dialect != "arith" && dialect != "math")
    return 0;
  if (isa<arith::ConstantOp, arith::SelectOp, arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp,
          arith::UIToFPOp, arith::FPToSIOp, arith::FPToUIOp, arith::BitcastOp>(op))
    return 0;
  Type type = op->getOperand(0).getType();
  int64_t lanes = 1;
  if (auto vector = dyn_cast<VectorType>(type)) {
    lanes = vector.getNumElements();
    type = vector.getElementType();
  }
  return isa<FloatType>(type) ? lanes : 0;
}

struct Item {
  std::string kind, type; // type: the product's operand type
  int64_t threads = 0, flops = 0, bytes = 0, batch = 0, m = 0, n = 0, k = 0;
  auto key() const { return std::tie(kind, type, threads, flops, bytes, batch, m, n, k); }
  bool operator<(const Item &o) const { return key() < o.key(); }
};

Item priceLaunch(gpu::LaunchOp launch) {
  Item item;
  item.kind = "kernel";
  int64_t threads = 1;
  for (Value v : {launch.getGridSizeX(), launch.getGridSizeY(), launch.getGridSizeZ(),
                  launch.getBlockSizeX(), launch.getBlockSizeY(), launch.getBlockSizeZ()})
    threads *= constantOr(v, 1);
  item.threads = threads;
  llvm::SetVector<Value> outside;
  getUsedValuesDefinedAbove(launch.getBody(), outside);
  for (Value v : outside)
    if (auto type = dyn_cast<MemRefType>(v.getType()); type && type.hasStaticShape())
      item.bytes += trc::storageBytes(type);
  int64_t perThread = 0;
  launch.getBody().walk([&](Operation *op) {
    if (int64_t f = flopsOf(op))
      perThread += f * repeats(op, launch);
  });
  item.flops = perThread * threads;
  return item;
}

/// trc_rt_cublaslt_matmul_<t>(batch, m, n, k, a, lda, strideA, transA, b,
/// ldb, strideB, transB, c, ldc, strideC) (docs/ARTIFACT.md).
FailureOr<Item> priceMatmul(func::CallOp call, StringRef type) {
  auto operands = call.getOperands();
  if (operands.size() != 15) {
    call.emitError("trc-print-kernel-costs: ") << call.getCallee() << " has "
                                               << operands.size() << " operands, not 15";
    return failure();
  }
  std::optional<int64_t> sizes[4];
  for (int i = 0; i < 4; ++i)
    sizes[i] = getConstantIntValue(operands[i]);
  if (!sizes[0] || !sizes[1] || !sizes[2] || !sizes[3]) {
    call.emitError("trc-print-kernel-costs: the sizes of this matrix product are not "
                   "constants; it cannot be priced");
    return failure();
  }
  Item item;
  item.kind = "matmul";
  item.type = type.str();
  item.batch = *sizes[0], item.m = *sizes[1], item.n = *sizes[2], item.k = *sizes[3];
  // <t> names the operands; bf16/f16 products write f32 unless a second
  // name gives the result's type (bf16_bf16).
  auto [operands16, result16] = type.split('_');
  int64_t operandBytes = operands16 == "f64" ? 8 : operands16 == "f32" ? 4 : 2;
  int64_t resultBytes = operands16 == "f64" ? 8 : result16.empty() ? 4 : 2;
  auto copies = [&](Value stride) { return constantOr(stride, 1) == 0 ? 1 : item.batch; };
  item.flops = 2 * item.batch * item.m * item.n * item.k;
  item.bytes = (copies(operands[6]) * item.m * item.k +
                copies(operands[10]) * item.k * item.n) * operandBytes +
               item.batch * item.m * item.n * resultBytes;
  return item;
}

struct PrintKernelCosts : trc::impl::PrintKernelCostsBase<PrintKernelCosts> {
  void runOnOperation() override {
    std::map<Item, int64_t> counts;
    bool failed = false;
    getOperation()->walk<WalkOrder::PreOrder>([&](Operation *op) -> WalkResult {
      if (auto launch = dyn_cast<gpu::LaunchOp>(op)) {
        counts[priceLaunch(launch)] += repeats(launch, nullptr);
        return WalkResult::skip();
      }
      if (auto call = dyn_cast<func::CallOp>(op)) {
        StringRef callee = call.getCallee();
        if (callee.consume_front(kCublasLtPrefix)) {
          FailureOr<Item> item = priceMatmul(call, callee);
          if (mlir::failed(item))
            failed = true;
          else
            counts[*item] += repeats(call, nullptr);
        }
      }
      return WalkResult::advance();
    });
    if (failed)
      return signalPassFailure();
    int64_t kernels = 0, matmuls = 0;
    llvm::json::Array items;
    for (const auto &[item, count] : counts) {
      (item.kind == "kernel" ? kernels : matmuls) += count;
      llvm::json::Object o{{"kind", item.kind}, {"count", count}, {"flops", item.flops},
                           {"bytes", item.bytes}};
      if (item.kind == "kernel") {
        o["threads"] = item.threads;
      } else {
        o["type"] = item.type;
        o["batch"] = item.batch;
        o["m"] = item.m;
        o["n"] = item.n;
        o["k"] = item.k;
      }
      items.push_back(std::move(o));
    }
    llvm::json::Object all{{"kernels", kernels}, {"matmuls", matmuls},
                           {"items", std::move(items)}};
    llvm::outs() << llvm::formatv("{0:1}", llvm::json::Value(std::move(all))) << "\n";
    markAllAnalysesPreserved();
  }
};

} // namespace
