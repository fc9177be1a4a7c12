//===- OnnxModelSpec.cpp - a GPT description derived from an ONNX model ------===//
//
// Imports MODEL.onnx (as trc-run does, tools/trc-run/CompileInProcess.cpp),
// runs trc-parameters-to-arguments and func.func(trc-fuse-attention), then:
//   layers  the number of trc.attention ops;
//   heads   dim -3 of the first attention's query [batch..., heads, T, D],
//   hidden  heads x D, seq T;
//   vocab   rows of the table the token input's trc.gather reads (an integer
//           input of @main, directly or through reshapes; tables that are
//           parameters win over other gathers);
//   ffn     the widest F != hidden with both an hidden->F and an F->hidden
//           trc.dot_general (the MLP's up and down projections), else 4h;
// and counts the elements of every trc.parameter.
//
//===----------------------------------------------------------------------===//
#include "OnnxModelSpec.h"

#include "trc/Abi/AttrNames.h"
#include "trc/Dialect/Trc.h"
#include "trc/Import/OnnxImporter.h"
#include "trc/InitAllDialects.h"
#include "trc/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <set>
#include <utility>

namespace trc::plan {

namespace {

/// Rows of the embedding table an integer input of `main` indexes, or 0.
int64_t vocabulary(mlir::func::FuncOp main) {
  int64_t fromParameter = 0, other = 0;
  for (mlir::BlockArgument arg : main.getArguments()) {
    auto type = llvm::dyn_cast<mlir::RankedTensorType>(arg.getType());
    if (!type || !type.getElementType().isInteger())
      continue;
    llvm::SmallVector<mlir::Value> worklist{arg};
    while (!worklist.empty()) {
      mlir::Value v = worklist.pop_back_val();
      for (mlir::Operation *user : v.getUsers()) {
        if (auto gather = llvm::dyn_cast<GatherOp>(user); gather && gather.getIndices() == v) {
          auto table = llvm::cast<mlir::RankedTensorType>(gather.getOperand().getType());
          int64_t rows = table.getDimSize(gather.getAxis());
          if (mlir::ShapedType::isDynamic(rows))
            continue;
          auto tableArg = llvm::dyn_cast<mlir::BlockArgument>(gather.getOperand());
          bool isParameter =
              (tableArg && main.getArgAttr(tableArg.getArgNumber(), trc::abi::kParamAttr)) ||
              llvm::isa_and_nonnull<GetParameterOp>(gather.getOperand().getDefiningOp());
          (isParameter ? fromParameter : other) =
              std::max(isParameter ? fromParameter : other, rows);
        }
        if (llvm::isa<ReshapeOp>(user))
          worklist.push_back(user->getResult(0));
      }
    }
  }
  return fromParameter ? fromParameter : other;
}

int64_t product(mlir::RankedTensorType type, llvm::ArrayRef<int64_t> dims, bool complement) {
  int64_t n = 1;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    bool listed = llvm::is_contained(dims, d);
    if (listed == complement)
      continue;
    if (type.isDynamicDim(d))
      return -1;
    n *= type.getDimSize(d);
  }
  return n;
}

/// The widest F with an hidden->F and an F->hidden dot_general, or 0.
int64_t ffnWidth(mlir::ModuleOp module, int64_t hidden) {
  std::set<std::pair<int64_t, int64_t>> projections; // (contracted, rhs free)
  module.walk([&](DotGeneralOp dot) {
    auto lhs = llvm::dyn_cast<mlir::RankedTensorType>(dot.getLhs().getType());
    auto rhs = llvm::dyn_cast<mlir::RankedTensorType>(dot.getRhs().getType());
    if (!lhs || !rhs)
      return;
    int64_t k = product(lhs, dot.getLhsContractingDims(), /*complement=*/false);
    llvm::SmallVector<int64_t> notFree(dot.getRhsContractingDims());
    llvm::append_range(notFree, dot.getRhsBatchingDims());
    int64_t n = product(rhs, notFree, /*complement=*/true);
    if (k > 0 && n > 0)
      projections.insert({k, n});
  });
  int64_t best = 0;
  for (auto [k, n] : projections)
    if (k == hidden && n != hidden && projections.count({n, hidden}))
      best = std::max(best, n);
  return best;
}

} // namespace

rt::Status describeOnnxModel(const std::string &path, const std::string &dims,
                             OnnxModelDescription &out) {
  auto err = [&](const std::string &m) { return rt::Status::error("--model " + path + ": " + m); };
  ImportOptions options;
  // The plan needs the sizes; a folded parameter counts as frozen here and
  // trc-run, which trains, says what to do about it.
  options.refuseFoldedParameters = false;
  std::string error;
  if (!dims.empty() && !parseDimSpec(dims, options, error))
    return rt::Status::error("--dim: " + error);

  mlir::DialectRegistry registry;
  trc::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  std::string diagText;
  llvm::raw_string_ostream diag(diagText);
  // Import errors go to `diag`; MLIR diagnostics (from the passes) too.
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    diag << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module = importOnnxFile(path, &context, options, diag);
  if (!module) {
    llvm::StringRef text = llvm::StringRef(diagText).trim();
    text.consume_front("error: ");
    return err("cannot import: " + text.str());
  }

  double params = 0;
  module->walk([&](ParameterOp p) {
    mlir::RankedTensorType type = p.getTensorType();
    if (type.hasStaticShape())
      params += double(type.getNumElements());
  });

  mlir::PassManager pm(&context);
  pm.addPass(createParametersToArguments());
  pm.addNestedPass<mlir::func::FuncOp>(createFuseAttention());
  if (mlir::failed(pm.run(*module)))
    return err("trc-parameters-to-arguments, trc-fuse-attention failed: " +
               llvm::StringRef(diagText).trim().str());

  auto main = module->lookupSymbol<mlir::func::FuncOp>("main");
  if (!main)
    return err("no @main after import");
  int64_t layers = 0;
  mlir::RankedTensorType query;
  module->walk([&](AttentionOp a) {
    if (!layers++)
      query = llvm::dyn_cast<mlir::RankedTensorType>(a.getQ().getType());
  });
  if (!layers)
    return err("no attention found: trc-plan plans transformer models");
  if (!query || query.getRank() < 3 || !query.hasStaticShape()) {
    std::string t = "of unknown type";
    if (query) {
      t.clear();
      llvm::raw_string_ostream(t) << query;
    }
    return err("attention query " + t +
               " is not a static [batch..., heads, T, D] tensor (set dynamic axes with --dim)");
  }
  GptModel m;
  int64_t r = query.getRank();
  m.layers = layers;
  m.heads = query.getDimSize(r - 3);
  m.seq = query.getDimSize(r - 2);
  m.hidden = m.heads * query.getDimSize(r - 1);
  m.vocab = vocabulary(main);
  if (!m.vocab)
    return err("no embedding lookup (trc.gather) of an integer input found: cannot tell the "
               "vocabulary");
  m.ffn = ffnWidth(*module, m.hidden);
  if (!m.ffn)
    m.ffn = 4 * m.hidden;
  m.kvHeads = m.heads;
  out.model = m;
  out.countedParams = params;
  out.spec = m.spec();
  return rt::Status::success();
}

} // namespace trc::plan
