//===- OnnxModelSpec.cpp - a GPT description derived from an ONNX model ------===//
//
// Imports MODEL.onnx (as trc-run does, tools/trc-run/CompileInProcess.cpp),
// runs trc-parameters-to-arguments and func.func(trc-fuse-attention), then:
//   layers  the number of trc.attention ops, or (attention the fusion does not
//           match: Hugging Face's causal masks) of softmaxes over square
//           [batch..., heads, T, T] scores;
//   heads   dim -3 of the first attention's query [batch..., heads, T, D]
//           (or scores), hidden heads x D (D: what the scores' product
//           contracts), seq T;
//   vocab   rows of the table the token input's trc.gather reads (an integer
//           input of @main, directly or through reshapes; tables that are
//           parameters win over other gathers);
//   ffn     the widest F != hidden with both an hidden->F and an F->hidden
//           trc.dot_general (the MLP's up and down projections), else 4h;
//           mlp=swiglu when there are two hidden->F products per layer;
//   kv_heads  W / head width for a hidden->W product (W < hidden) made twice
//           per layer (grouped-query K and V projections), else heads;
//   positions learned when another hidden-wide parameter table than the
//           token table is gathered from, else rotary (or none);
//   tied    when the token table also feeds a product (the output layer);
//   bias    when the model has layer norms (trc.layer_norm), not RMSNorm;
// and counts the elements of every trc.parameter. Without attention or a
// token embedding (a CNN, a ViT) there is no shape to read: the
// description says so, and the planner prices the compiled step alone.
//
//===----------------------------------------------------------------------===//
#include "trc/Driver/OnnxModelSpec.h"

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

#include <map>
#include <set>
#include <utility>

namespace trc::plan {

namespace {

/// The embedding table an integer input of `main` indexes (tables that are
/// parameters win over other gathers): its rows (0: none) and its value.
struct TokenTable {
  int64_t rows = 0;
  mlir::Value table;
};

bool isParameter(mlir::func::FuncOp main, mlir::Value v) {
  auto arg = llvm::dyn_cast<mlir::BlockArgument>(v);
  return (arg && main.getArgAttr(arg.getArgNumber(), trc::abi::kParamAttr)) ||
         llvm::isa_and_nonnull<GetParameterOp>(v.getDefiningOp());
}

TokenTable tokenTable(mlir::func::FuncOp main) {
  TokenTable fromParameter, other;
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
          TokenTable &best = isParameter(main, gather.getOperand()) ? fromParameter : other;
          if (rows > best.rows)
            best = {rows, gather.getOperand()};
        }
        if (llvm::isa<ReshapeOp>(user))
          worklist.push_back(user->getResult(0));
      }
    }
  }
  return fromParameter.rows ? fromParameter : other;
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

/// The dot_generals' (contracted K, free N of the right side) pairs, each
/// with how many products have it.
std::map<std::pair<int64_t, int64_t>, int64_t> products(mlir::ModuleOp module) {
  std::map<std::pair<int64_t, int64_t>, int64_t> counts;
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
      ++counts[{k, n}];
  });
  return counts;
}

/// The widest F with an hidden->F and an F->hidden product, or 0; `gated`
/// when there are two hidden->F products per layer (SwiGLU's gate and up).
int64_t ffnWidth(const std::map<std::pair<int64_t, int64_t>, int64_t> &counts, int64_t hidden,
                 int64_t layers, bool &gated) {
  int64_t best = 0;
  gated = false;
  for (auto [kn, count] : counts)
    if (kn.first == hidden && kn.second != hidden && counts.count({kn.second, hidden}) &&
        kn.second > best) {
      best = kn.second;
      gated = count >= 2 * layers;
    }
  return best;
}

/// Key/value heads: a hidden->W product with W a multiple of the head width
/// below hidden, two per layer (K and V projections of grouped-query
/// attention); else `heads`.
int64_t keyValueHeads(const std::map<std::pair<int64_t, int64_t>, int64_t> &counts,
                      int64_t hidden, int64_t heads, int64_t layers) {
  int64_t headWidth = hidden / heads;
  for (auto [kn, count] : counts)
    if (kn.first == hidden && kn.second < hidden && kn.second % headWidth == 0 &&
        heads % (kn.second / headWidth) == 0 && count >= 2 * layers)
      return kn.second / headWidth;
  return heads;
}

/// Whether another parameter table [R, hidden] than the token table is
/// gathered from (a learned position table).
bool learnedPositions(mlir::func::FuncOp main, mlir::Value tokens, int64_t hidden) {
  bool found = false;
  main.walk([&](GatherOp g) {
    auto type = llvm::cast<mlir::RankedTensorType>(g.getOperand().getType());
    if (g.getOperand() != tokens && isParameter(main, g.getOperand()) && type.getRank() == 2 &&
        type.getDimSize(1) == hidden)
      found = true;
  });
  return found;
}

/// Whether the token table also feeds a product (directly or transposed):
/// the output layer shares it.
bool tiedOutput(mlir::Value tokens) {
  for (mlir::Operation *user : tokens.getUsers()) {
    if (llvm::isa<DotGeneralOp>(user))
      return true;
    if (llvm::isa<TransposeOp>(user))
      for (mlir::Operation *next : user->getResult(0).getUsers())
        if (llvm::isa<DotGeneralOp>(next))
          return true;
  }
  return false;
}

struct AttentionShape {
  int64_t layers = 0, heads = 0, seq = 0, headWidth = 0;
  std::string problem; // why the shape cannot be read
};

std::string typeText(mlir::Type t) {
  std::string text;
  llvm::raw_string_ostream(text) << t;
  return text;
}

/// From the trc.attention ops: the first query's [batch..., heads, T, D].
AttentionShape fusedAttention(mlir::ModuleOp module) {
  AttentionShape a;
  mlir::RankedTensorType query;
  module.walk([&](AttentionOp op) {
    if (!a.layers++)
      query = llvm::dyn_cast<mlir::RankedTensorType>(op.getQ().getType());
  });
  if (!a.layers)
    return a;
  if (!query || query.getRank() < 3 || !query.hasStaticShape()) {
    a.problem = "attention query " + (query ? typeText(query) : std::string("of unknown type")) +
                " is not a static [batch..., heads, T, D] tensor";
    return a;
  }
  int64_t r = query.getRank();
  a.heads = query.getDimSize(r - 3);
  a.seq = query.getDimSize(r - 2);
  a.headWidth = query.getDimSize(r - 1);
  return a;
}

/// From the softmaxes over square [batch..., heads, T, T] scores; the head
/// width is what the product making the scores contracts (found through
/// the mask's and scale's elementwise ops).
AttentionShape decomposedAttention(mlir::ModuleOp module) {
  AttentionShape a;
  module.walk([&](SoftmaxOp softmax) {
    auto scores = llvm::dyn_cast<mlir::RankedTensorType>(softmax.getOperand().getType());
    if (!scores || scores.getRank() < 3 || !scores.hasStaticShape())
      return;
    int64_t r = scores.getRank();
    if (scores.getDimSize(r - 1) != scores.getDimSize(r - 2))
      return;
    if (a.layers++)
      return;
    a.heads = scores.getDimSize(r - 3);
    a.seq = scores.getDimSize(r - 1);
    llvm::SmallVector<mlir::Value> worklist{softmax.getOperand()};
    for (int visited = 0; !worklist.empty() && visited < 16 && !a.headWidth; ++visited) {
      mlir::Operation *op = worklist.pop_back_val().getDefiningOp();
      if (!op)
        continue;
      // The scores' elements, in any layout ([batch x heads, T, T] too).
      auto sameElements = [&](mlir::Type t) {
        auto type = llvm::dyn_cast<mlir::RankedTensorType>(t);
        return type && type.hasStaticShape() && type.getNumElements() == scores.getNumElements();
      };
      if (auto dot = llvm::dyn_cast<DotGeneralOp>(op)) {
        auto lhs = llvm::dyn_cast<mlir::RankedTensorType>(dot.getLhs().getType());
        if (lhs && sameElements(dot.getType()))
          a.headWidth = product(lhs, dot.getLhsContractingDims(), /*complement=*/false);
        continue;
      }
      for (mlir::Value operand : op->getOperands())
        if (sameElements(operand.getType()))
          worklist.push_back(operand);
    }
  });
  if (a.layers && a.headWidth <= 0)
    a.problem = "no product making the attention scores found: cannot tell the head width";
  return a;
}

} // namespace

rt::Status describeOnnxModel(const std::string &path, const std::string &dims,
                             OnnxModelDescription &out) {
  auto err = [&](const std::string &m) { return rt::Status::error("--model " + path + ": " + m); };
  out = OnnxModelDescription();
  ImportOptions options;
  // The plan needs the sizes; a folded parameter counts as frozen here and
  // trc-run, which trains, says what to do about it.
  options.refuseFoldedParameters = false;
  std::string error;
  if (!dims.empty() && !parseDimSpec(dims, options, error))
    return rt::Status::error("--dim: " + error);

  mlir::MLIRContext context;
  trc::loadAllDialects(context);
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
  // Attention the fusion recognized; else (a causal mask it does not
  // match, as Hugging Face's exports build) each softmax over a square
  // [batch..., heads, T, T] of scores.
  AttentionShape attention = fusedAttention(*module);
  if (!attention.layers)
    attention = decomposedAttention(*module);
  out.countedParams = params;
  if (!attention.layers) {
    out.notTransformer = "no attention (no trc.attention, no softmax over [batch..., heads, T, T] "
                         "scores)";
    return rt::Status::success();
  }
  if (attention.problem.size())
    return err(attention.problem + " (set dynamic axes with --dim)");
  GptModel m;
  m.layers = attention.layers;
  m.heads = attention.heads;
  m.seq = attention.seq;
  m.hidden = attention.heads * attention.headWidth;
  TokenTable tokens = tokenTable(main);
  m.vocab = tokens.rows;
  if (!m.vocab) {
    out.notTransformer = "no token embedding (no trc.gather of an integer input)";
    return rt::Status::success();
  }
  // Scores laid out [batch x heads, T, T] (OPT) fold the batch into the
  // heads: the token table's width is the hidden size.
  auto table = llvm::cast<mlir::RankedTensorType>(tokens.table.getType());
  if (table.getRank() == 2 && table.getDimSize(1) != m.hidden &&
      table.getDimSize(1) % attention.headWidth == 0) {
    m.hidden = table.getDimSize(1);
    m.heads = m.hidden / attention.headWidth;
  }
  auto counts = products(*module);
  m.ffn = ffnWidth(counts, m.hidden, m.layers, m.gatedMlp);
  if (!m.ffn)
    m.ffn = 4 * m.hidden;
  m.kvHeads = keyValueHeads(counts, m.hidden, m.heads, m.layers);
  m.learnedPositions = learnedPositions(main, tokens.table, m.hidden);
  m.tiedOutput = tiedOutput(tokens.table);
  bool layerNorm = false;
  module->walk([&](LayerNormOp) { layerNorm = true; });
  m.biases = layerNorm;
  out.model = m;
  out.spec = m.spec();
  return rt::Status::success();
}

} // namespace trc::plan
