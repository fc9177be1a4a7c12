//===- CompiledModelWork.cpp - an ONNX model's steps counted for the planner ===//
//
// See trc/Driver/CompiledModelWork.h.
//
//===----------------------------------------------------------------------===//
#include "trc/Driver/CompiledModelWork.h"

#include "trc/Abi/AttrNames.h"
#include "trc/Dialect/Trc.h"
#include "trc/Import/OnnxImporter.h"
#include "trc/InitAllDialects.h"
#include "trc/Parallel/StageHomes.h"
#include "trc/Parallel/StageWork.h"
#include "trc/Pipelines/TrainingPipeline.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

namespace trc::plan {

struct CompiledModelWork::Impl {
  std::string path;
  ImportOptions options;   // the user's --dim
  std::map<std::string, std::vector<int64_t>> inputs; // data inputs as imported
  bool outputsLoss = false;
  // By what changes the step: tensor degree, sequence parallelism, context
  // degree and ring, recomputation, rows.
  using Key = std::tuple<int, bool, int, bool, int, int>;
  struct Compiled {
    std::optional<CompiledWork> work;
    std::string why; // the compiler's diagnostics when it did not compile
  };
  std::map<Key, Compiled> cache;
  static Key cacheKey(const Candidate &c) {
    return {c.tensor, c.tensor > 1 && c.sequenceParallel, c.context,
            c.context > 1 && c.contextRing, int(c.recompute), c.microbatchSize};
  }

  Compiled compile(const Candidate &c) const;
};

namespace {

struct Context {
  mlir::MLIRContext context;
  std::string diagText;
  llvm::raw_string_ostream diag{diagText};
  std::unique_ptr<mlir::ScopedDiagnosticHandler> handler;
  Context() {
    trc::loadAllDialects(context);
    handler = std::make_unique<mlir::ScopedDiagnosticHandler>(&context, [this](mlir::Diagnostic &d) {
      diag << d << "\n";
      return mlir::success();
    });
  }
};

} // namespace

CompiledModelWork::Impl::Compiled CompiledModelWork::Impl::compile(const Candidate &c) const {
  Context ctx;
  auto failed = [&]() -> Compiled {
    return {std::nullopt, llvm::StringRef(ctx.diagText).trim().str()};
  };
  ImportOptions o = options;
  for (auto [name, shape] : inputs) {
    shape[0] = c.microbatchSize;
    o.inputShapes[name] = shape;
  }
  mlir::OwningOpRef<mlir::ModuleOp> module = importOnnxFile(path, &ctx.context, o, ctx.diag);
  if (!module)
    return failed();
  TrainingPipelineOptions p;
  std::string problem;
  if (!setLossAndPrecision(p, outputsLoss ? "none" : "cross_entropy",
                           AppendLossOptions().ignoreIndex, "fp32", problem)) {
    ctx.diag << problem;
    return failed();
  }
  RecomputeOptions recompute;
  recompute.policy = recomputeName(c.recompute);
  p.recompute = recompute;
  if (c.tensor > 1) {
    ShardTensorParallelOptions tp;
    tp.degree = c.tensor;
    tp.sequenceParallel = c.sequenceParallel;
    p.tensorParallel = tp;
  }
  if (c.context > 1) {
    ShardContextParallelOptions cp;
    cp.degree = c.context;
    cp.balance = c.contextRing; // trc-run's default with p2p
    p.contextParallel = cp;
    p.ringAttention = c.contextRing;
  }
  PipelineStagesOptions pieces;
  pieces.stages = 1;
  pieces.balance = "pieces";
  p.pipeline = pieces;
  p.stopAtGradients = true;
  mlir::PassManager pm(&ctx.context);
  buildTrainingPipeline(pm, p);
  if (mlir::failed(pm.run(*module)))
    return failed();
  auto grad = module->lookupSymbol<mlir::func::FuncOp>("main_grad");
  if (!grad) {
    ctx.diag << "no @main_grad after the training pipeline";
    return failed();
  }
  mlir::FailureOr<parallel::StageHomes> homes =
      parallel::findStageHomes(grad, std::numeric_limits<int64_t>::max());
  if (mlir::failed(homes))
    return failed();
  return {parallel::summarizeStageWork(grad, *homes), ""};
}

CompiledModelWork::CompiledModelWork(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CompiledModelWork::~CompiledModelWork() = default;

rt::StatusOr<std::unique_ptr<CompiledModelWork>> CompiledModelWork::open(const std::string &path,
                                                                         const std::string &dims) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  std::string error;
  if (!dims.empty() && !parseDimSpec(dims, impl->options, error))
    return rt::Status::error("--dim: " + error);
  Context ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      importOnnxFile(path, &ctx.context, impl->options, ctx.diag);
  if (!module)
    return rt::Status::error("--model " + path + ": cannot import: " +
                             llvm::StringRef(ctx.diagText).trim().str());
  auto main = module->lookupSymbol<mlir::func::FuncOp>("main");
  if (!main || main.getNumResults() == 0)
    return rt::Status::error("--model " + path + ": no @main with results after import");
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    auto name = main.getArgAttrOfType<mlir::StringAttr>(i, abi::kInputAttr);
    auto type = llvm::dyn_cast<mlir::RankedTensorType>(main.getArgument(i).getType());
    if (!name || !type || !type.hasStaticShape() || type.getRank() == 0)
      continue;
    impl->inputs[name.str()] = std::vector<int64_t>(type.getShape().begin(), type.getShape().end());
  }
  auto loss = llvm::dyn_cast<mlir::RankedTensorType>(main.getResultTypes()[0]);
  impl->outputsLoss = loss && loss.getRank() == 0;
  return std::unique_ptr<CompiledModelWork>(new CompiledModelWork(std::move(impl)));
}

const CompiledWork *CompiledModelWork::work(const Candidate &c) {
  Impl::Key key = Impl::cacheKey(c);
  auto it = impl_->cache.find(key);
  if (it == impl_->cache.end())
    it = impl_->cache.emplace(key, impl_->compile(c)).first;
  return it->second.work ? &*it->second.work : nullptr;
}

namespace {

// The candidate compiled at the model's imported rows, no recomputation.
Candidate atImportedRows(const std::map<std::string, std::vector<int64_t>> &inputs) {
  Candidate c;
  c.recompute = Recompute::None;
  if (!inputs.empty())
    c.microbatchSize = int(inputs.begin()->second[0]);
  return c;
}

} // namespace

const CompiledWork *CompiledModelWork::probe() { return work(atImportedRows(impl_->inputs)); }

rt::Status CompiledModelWork::check() {
  if (probe())
    return rt::Status::success();
  return rt::Status::error("--model " + impl_->path + ": its training step does not compile, "
                           "so the planner cannot price it: " +
                           impl_->cache.at(Impl::cacheKey(atImportedRows(impl_->inputs))).why);
}

int CompiledModelWork::compiled() const { return int(impl_->cache.size()); }

} // namespace trc::plan
