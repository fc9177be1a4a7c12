//===- OnnxImporter.cpp - ONNX ModelProto -> trc IR driver -----------------===//
//
// Order of work: parse; check opsets and report every unsupported op at
// once; check and order the graph; fix input shapes; declare parameters;
// import node by node (each handler verifies what it builds); cross-check
// shapes with ONNX's inference; return the graph outputs; drop dead ops.
//
//===----------------------------------------------------------------------===//
#include "trc/Import/OnnxImporter.h"

#include "trc/Abi/AttrNames.h"

#include "ChooseTrainable.h"
#include "DerivedInitializers.h"
#include "GraphOrder.h"
#include "LabelShift.h"
#include "HandlerRegistry.h"
#include "ImportContext.h"
#include "OnnxShapeInference.h"
#include "Subgraph.h"
#include "TensorData.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

#include <google/protobuf/io/coded_stream.h>
#include <climits>
#include <set>

using namespace mlir;

namespace trc {
namespace {
using namespace import;

bool isDefaultDomain(const std::string &domain) {
  return domain.empty() || domain == "ai.onnx";
}

// The folder external data is read from; "" refuses all external data.
std::string externalDataDir(llvm::StringRef path, const ImportOptions &options) {
  if (!options.allowExternalData || path.empty())
    return "";
  llvm::StringRef dir = llvm::sys::path::parent_path(path);
  return dir.empty() ? std::string(".") : dir.str();
}

// The opset version the model imports for a non-default `domain`, or 0.
int64_t importedVersion(const onnx::ModelProto &model, const std::string &domain) {
  for (const auto &op : model.opset_import())
    if (op.domain() == domain)
      return op.version();
  return 0;
}

class GraphImporter {
public:
  GraphImporter(const onnx::ModelProto &model, llvm::StringRef path,
                MLIRContext *context, const ImportOptions &options,
                llvm::raw_ostream &diag, std::vector<InitializerChoice> *choices)
      : model_(model), graph_(model.graph()), context_(context), options_(options),
        diag_(diag), choices_(choices), builder_(context),
        external_(externalDataDir(path, options)) {
    state_.fileName = path.str();
    state_.evaluation = options.evaluation;
  }

  OwningOpRef<ModuleOp> run();
  /// Imports re-specializing a static export (Respecialize.h): `retrace`
  /// records this import's shape operands and re-derives the previous one's.
  void setRetrace(Retrace *retrace) { state_.retrace = retrace; }
  /// After a failed run: when the caller gave static inputs other sizes than
  /// the export traced, a note saying that this is the likely cause.
  void noteRetracedInputs();
  /// The values the import needed as compile-time constants (GraphState).
  const std::vector<std::string> &neededConstants() const { return state_.neededConstants; }
  /// The errors about what trc does not cover (GraphState).
  const std::vector<std::string> &unsupported() const { return state_.unsupported; }

private:
  bool checkOpsets();
  bool checkSupportedOps();
  int64_t nodeOpset(const onnx::NodeProto &node) const;
  bool resolveInputShapes();
  bool bindConstantInput(const onnx::ValueInfoProto &input);
  bool declareParameters(ModuleOp module);
  bool importNodes(const std::vector<int> &order);
  bool checkAgainstOnnx(const onnx::NodeProto &node);
  bool returnOutputs(func::FuncOp func);
  void eraseDeadOps(func::FuncOp func);

  bool error(const std::string &message) {
    diag_ << "error: " << state_.fileName << ": " << message << "\n";
    return false;
  }
  /// An error about what trc does not cover (ImportReport::unsupported).
  bool unsupported(const std::string &message) {
    state_.unsupported.push_back(message);
    return error(message);
  }
  void warning(const std::string &message) {
    diag_ << "warning: " << state_.fileName << ": " << message << "\n";
  }
  bool flushErrors() {
    for (const auto &e : state_.errors)
      error(e);
    bool ok = state_.errors.empty();
    state_.errors.clear();
    return ok;
  }

  const onnx::ModelProto &model_;
  const onnx::GraphProto &graph_;
  MLIRContext *context_;
  const ImportOptions &options_;
  llvm::raw_ostream &diag_;
  std::vector<InitializerChoice> *choices_; // may be null
  OpBuilder builder_;
  ExternalDataReader external_;
  GraphState state_;
  int64_t opset_ = 0;
  std::set<std::string> opsetDomains_;
  std::map<std::string, std::vector<int64_t>> inputShapes_;
  std::vector<const onnx::ValueInfoProto *> inputs_; // graph inputs, no initializers
  // "'x' [4, 16] -> [2, 16]": static inputs given other sizes (--input-shape).
  std::vector<std::string> retraced_;
  std::map<std::string, std::vector<int64_t>> onnxShapes_;
  std::map<std::string, ElementsAttr> constantInputs_;
};

bool GraphImporter::checkOpsets() {
  for (const auto &op : model_.opset_import()) {
    opsetDomains_.insert(op.domain());
    state_.opsets[isDefaultDomain(op.domain()) ? "" : op.domain()] = op.version();
    if (isDefaultDomain(op.domain()))
      opset_ = op.version();
  }
  bool usesDefaultDomain = llvm::any_of(
      graph_.node(), [](const onnx::NodeProto &n) { return isDefaultDomain(n.domain()); });
  if (opset_ == 0 && usesDefaultDomain)
    return error("the model imports no opset of the default domain 'ai.onnx'");
  if (opset_ == 0)
    return true; // only other domains: reported as unsupported next
  if (opset_ < kMinOpset || opset_ > kMaxOpset)
    return error("opset " + std::to_string(opset_) +
                 " of domain 'ai.onnx' is out of the supported range " +
                 std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset));
  return true;
}

int64_t GraphImporter::nodeOpset(const onnx::NodeProto &node) const {
  return isDefaultDomain(node.domain()) ? opset_ : importedVersion(model_, node.domain());
}

bool GraphImporter::checkSupportedOps() {
  const auto &registry = HandlerRegistry::get();
  bool ok = true;
  // Nodes of subgraphs (Loop bodies, If branches) are checked with the rest.
  forEachNode(graph_, [&](const onnx::NodeProto &node) {
    std::string domain = node.domain().empty() ? "ai.onnx" : node.domain();
    int64_t version = nodeOpset(node);
    std::string where = "op '" + node.op_type() + "' (domain '" + domain + "', " +
                        (version ? "opset " + std::to_string(version) : "no opset") +
                        ") at node '" + node.name() + "'";
    std::string key = HandlerRegistry::key(node.domain(), node.op_type());
    if (!isDefaultDomain(node.domain()) && !opsetDomains_.count(node.domain())) {
      ok = unsupported("unknown domain in " + where + ": the model does not import that domain");
    } else if (!isDefaultDomain(node.domain()) && !registry.knowsDomain(node.domain())) {
      ok = unsupported("unsupported " + where +
                       ": trc supports the domains ai.onnx and ai.onnx.preview.training");
    } else if (!registry.lookup(key, version)) {
      ok = unsupported("unsupported " + where);
    }
  });
  return ok;
}

bool GraphImporter::resolveInputShapes() {
  std::set<std::string> initializers;
  for (const auto &init : graph_.initializer())
    initializers.insert(init.name());
  // A misspelt --input-shape is reported before any dimension it may fix.
  std::set<std::string> inputNames;
  for (const auto &input : graph_.input())
    if (!initializers.count(input.name()))
      inputNames.insert(input.name());
  for (const auto &[name, shape] : options_.inputShapes)
    if (!inputNames.count(name))
      return error("--input-shape names '" + name + "', which is not a graph input");
  std::set<std::string> usedDims;
  for (const auto &input : graph_.input()) {
    if (initializers.count(input.name()))
      continue;
    if (!input.type().has_tensor_type())
      return unsupported("graph input '" + input.name() +
                         "' is not a tensor (sequence, map and optional types are not "
                         "supported)");
    if (options_.constantInputs.count(input.name())) {
      if (!bindConstantInput(input))
        return false;
      continue;
    }
    inputs_.push_back(&input);
    const auto &tensorType = input.type().tensor_type();
    if (!elementTypeOf(tensorType.elem_type(), context_))
      return unsupported("graph input '" + input.name() + "' has unsupported element type " +
                         onnxTypeName(tensorType.elem_type()));
    std::vector<int64_t> dims;
    auto given = options_.inputShapes.find(input.name());
    if (given != options_.inputShapes.end()) {
      dims = given->second;
      if (tensorType.has_shape() &&
          tensorType.shape().dim_size() != static_cast<int>(dims.size()))
        return error("--input-shape gives '" + input.name() + "' rank " +
                     std::to_string(dims.size()) + ", the model says " +
                     std::to_string(tensorType.shape().dim_size()));
      std::vector<int64_t> traced;
      bool differs = false;
      for (int i = 0; tensorType.has_shape() && i < tensorType.shape().dim_size(); ++i) {
        const auto &d = tensorType.shape().dim(i);
        traced.push_back(d.has_dim_value() ? d.dim_value() : dims[i]);
        differs |= d.has_dim_value() && d.dim_value() != dims[i];
      }
      if (differs)
        retraced_.push_back("'" + input.name() + "' " + shapeString(traced) + " -> " +
                            shapeString(dims));
    } else {
      if (!tensorType.has_shape())
        return error("graph input '" + input.name() +
                     "' has no shape; pass --input-shape " + input.name() + "=AxB...");
      for (int i = 0; i < tensorType.shape().dim_size(); ++i) {
        const auto &d = tensorType.shape().dim(i);
        if (d.has_dim_value()) {
          dims.push_back(d.dim_value());
          continue;
        }
        auto size = options_.dimSizes.find(d.dim_param());
        if (!d.dim_param().empty() && size != options_.dimSizes.end()) {
          usedDims.insert(d.dim_param());
          dims.push_back(size->second);
          continue;
        }
        return error("graph input '" + input.name() + "' dimension " +
                     std::to_string(i) +
                     (d.dim_param().empty() ? " is unknown"
                                            : " ('" + d.dim_param() + "') is dynamic") +
                     "; pass --dim " +
                     (d.dim_param().empty() ? "NAME" : d.dim_param()) +
                     "=N or --input-shape " + input.name() + "=AxB...");
      }
    }
    std::string bad = checkDims(dims);
    if (!bad.empty())
      return error("graph input '" + input.name() + "': " + bad);
    inputShapes_[input.name()] = dims;
  }
  for (const auto &[name, file] : options_.constantInputs)
    if (!constantInputs_.count(name))
      return error("--constant-input names '" + name + "', which is not a graph input");
  for (const auto &[name, size] : options_.dimSizes)
    if (!usedDims.count(name))
      warning("--dim " + name + " matches no dynamic dimension of a graph input");
  return true;
}

bool GraphImporter::bindConstantInput(const onnx::ValueInfoProto &input) {
  const std::string &file = options_.constantInputs.at(input.name());
  auto buffer = llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  onnx::TensorProto tensor;
  if (!buffer || (*buffer)->getBufferSize() > static_cast<size_t>(INT_MAX) ||
      !tensor.ParseFromArray((*buffer)->getBufferStart(),
                             static_cast<int>((*buffer)->getBufferSize())))
    return error("--constant-input " + input.name() + ": '" + file +
                 "' is not a readable serialized TensorProto");
  std::string message;
  RankedTensorType type = tensorTypeOf(tensor, context_, message);
  ExternalDataReader noExternalData("");
  ElementsAttr value =
      type ? readTensor(tensor, type, false, "", noExternalData, message) : nullptr;
  if (!value)
    return error("--constant-input " + input.name() + ": " + message);
  if (type.getElementType() !=
      elementTypeOf(input.type().tensor_type().elem_type(), context_))
    return error("--constant-input " + input.name() + ": element type " +
                 onnxTypeName(tensor.data_type()) + " differs from the input's " +
                 onnxTypeName(input.type().tensor_type().elem_type()));
  constantInputs_[input.name()] = value;
  return true;
}

bool GraphImporter::declareParameters(ModuleOp module) {
  for (auto [patterns, flag] : {std::pair{&options_.frozenPatterns, "--freeze"},
                                std::pair{&options_.trainablePatterns, "--trainable"}})
    if (std::string problem = checkNamePatterns(*patterns, flag); !problem.empty())
      return error(problem);
  TrainableChooser chooser(model_, options_.frozenPatterns, options_.trainablePatterns);
  if (std::vector<std::string> lost = chooser.lostParameters();
      !lost.empty() && options_.refuseFoldedParameters) {
    constexpr size_t kNamed = 8;
    std::vector<std::string> named;
    for (size_t i = 0; i < lost.size() && i < kNamed; ++i)
      named.push_back("'" + lost[i] + "'");
    if (lost.size() > kNamed)
      named.push_back("and " + std::to_string(lost.size() - kNamed) + " more");
    return error("the exporter's optimizer removed or merged parameters the model trains: " +
                 llvm::join(named, ", ") +
                 " (torch.fx names; it drops zero biases and merges initializers that are "
                 "equal, such as layer norms that start equal), so nothing in the file can "
                 "train as them. Export again keeping the parameters: "
                 "torch.onnx.export(model, args, path, dynamo=True, optimize=False) (or "
                 "scripts/export_torch.py)");
  }
  std::vector<std::string> folded; // parameters the exporter folded: refused
  std::vector<std::string> foldedPatterns; // their names as regexes, for the message

  std::map<std::string, DerivedInitializer> derived;
  auto bytesOf = [&](const onnx::TensorProto &t, int64_t byteSize,
                     llvm::ArrayRef<char> &bytes) {
    ExternalBytes held;
    std::string ignored; // the declaration below reports unreadable data
    if (!tensorBytes(t, byteSize, external_, held, ignored))
      return false;
    bytes = held.bytes; // the reader keeps the file mapped
    return true;
  };
  for (auto &d : findDerivedInitializers(graph_, chooser.tags(), bytesOf)) {
    warning("initializer '" + d.name + "' equals " +
            (d.transposed ? "the transpose of " : "") + "parameter '" + d.source +
            "' (an exporter folded it from the parameter); it is imported as " +
            (d.transposed ? "trc.transpose of " : "a use of ") + "'" + d.source +
            "' so the two stay tied. Export with do_constant_folding=False (torch 1.x) or "
            "optimize=False (torch 2.x) to avoid this.");
    derived.emplace(d.name, d);
  }

  // Parameters are declared above @main, in initializer order.
  OpBuilder moduleBuilder(&module.getBody()->front());
  std::set<std::string> seen;
  for (const auto &init : graph_.initializer()) {
    const std::string &name = init.name();
    if (name.empty())
      return error("an initializer has no name");
    if (!seen.insert(name).second)
      return error("initializer '" + name + "' is defined more than once");
    if (derived.count(name))
      continue;
    std::string message;
    RankedTensorType type = tensorTypeOf(init, context_, message);
    if (!type) {
      std::string what = "initializer '" + name + "': " + message;
      return isUnsupportedTensorType(init) ? unsupported(what) : error(what);
    }
    bool isParameter = isa<FloatType>(type.getElementType());
    ElementsAttr value = readTensor(init, type, /*asResource=*/isParameter, name,
                                    external_, message);
    if (!value)
      return error("initializer '" + name + "': " + message);
    Location loc = NameLoc::get(builder_.getStringAttr(name),
                                FileLineColLoc::get(context_, state_.fileName, 0, 0));
    if (!isParameter) {
      // Integer and boolean initializers are constants (shapes, indices).
      state_.values[name] = builder_.create<ConstantOp>(loc, value);
      continue;
    }
    std::string why;
    std::optional<InitializerChoice> choice = chooser.choose(name, value, why);
    if (!choice) {
      folded.push_back("'" + name + "' (" + why + ")");
      foldedPatterns.push_back(llvm::Regex::escape(name));
      choice = InitializerChoice{name, false, InitializerReason::Folded};
    }
    if (choices_)
      choices_->push_back(*choice);
    auto param = moduleBuilder.create<ParameterOp>(
        loc, builder_.getStringAttr(name), TypeAttr::get(type),
        choice->trains ? UnitAttr() : builder_.getUnitAttr(), value);
    state_.values[name] = builder_.create<GetParameterOp>(
        loc, type, FlatSymbolRefAttr::get(param.getSymNameAttr()));
  }
  if (!folded.empty() && options_.refuseFoldedParameters)
    return error(
        "the exporter folded parameters into new initializers: " + llvm::join(folded, ", ") +
        ". trc cannot tell whether they train (training a folded mask, or freezing a folded "
        "weight, is silently wrong). Export again keeping the parameters: "
        "torch.onnx.export(model, args, path, dynamo=True, optimize=False) (or "
        "scripts/export_torch.py); or say what they are: --trainable '" +
        llvm::join(foldedPatterns, "|") +
        "' trains each as it is (right when it is a copy, transpose or slice of one "
        "parameter), --freeze REGEX keeps those that are buffers (rotary tables) fixed");
  for (const auto &[name, d] : derived) {
    Value source = state_.values.lookup(d.source);
    if (!source)
      return error("initializer '" + d.source + "' is not a parameter");
    if (d.transposed) {
      auto t = cast<RankedTensorType>(source.getType());
      source = builder_.create<TransposeOp>(
          source.getLoc(),
          RankedTensorType::get({t.getDimSize(1), t.getDimSize(0)}, t.getElementType()),
          source, llvm::ArrayRef<int64_t>{1, 0});
    }
    state_.values[name] = source;
  }
  return true;
}

bool GraphImporter::checkAgainstOnnx(const onnx::NodeProto &node) {
  for (const auto &out : node.output()) {
    auto onnxShape = onnxShapes_.find(out);
    Value v = state_.values.lookup(out);
    if (out.empty() || !v || onnxShape == onnxShapes_.end())
      continue;
    auto ours = cast<RankedTensorType>(v.getType()).getShape();
    if (ours != llvm::ArrayRef<int64_t>(onnxShape->second))
      return error(describeNode(node) + ": output '" + out + "' has shape " +
                   shapeString(ours) + " here but ONNX shape inference gives " +
                   shapeString(onnxShape->second));
  }
  return true;
}

bool GraphImporter::importNodes(const std::vector<int> &order) {
  // Names something reads: an output nothing reads may stay unbound (e.g.
  // the mask of an active Dropout, which PyTorch's exports name but ignore).
  std::set<std::string> read = namesReadIn(graph_);
  for (int index : order) {
    const auto &node = graph_.node(index);
    if (failed(importNode(builder_, state_, node, read)))
      return flushErrors();
    if (!checkAgainstOnnx(node))
      return false;
  }
  return true;
}

bool GraphImporter::returnOutputs(func::FuncOp func) {
  SmallVector<Value> results;
  SmallVector<Type> types;
  for (const auto &out : graph_.output()) {
    Value v = state_.values.lookup(out.name());
    if (!v)
      return unsupported("graph output '" + out.name() +
                         "' is a sequence; sequence graph outputs are not supported (trc's "
                         "graph outputs are tensors)");
    auto type = cast<RankedTensorType>(v.getType());
    if (out.type().has_tensor_type()) {
      const auto &declared = out.type().tensor_type();
      Type elem = elementTypeOf(declared.elem_type(), context_);
      if (declared.elem_type() != 0 && elem != type.getElementType())
        return error("graph output '" + out.name() + "' is declared " +
                     onnxTypeName(declared.elem_type()) + " but computes " +
                     [&] {
                       std::string s;
                       llvm::raw_string_ostream os(s);
                       os << type.getElementType();
                       return s;
                     }());
      if (declared.has_shape()) {
        bool rankOk = declared.shape().dim_size() == type.getRank();
        for (int i = 0; rankOk && i < declared.shape().dim_size(); ++i)
          if (declared.shape().dim(i).has_dim_value() &&
              declared.shape().dim(i).dim_value() != type.getDimSize(i))
            rankOk = false;
        if (!rankOk)
          return error("graph output '" + out.name() + "' has shape " +
                       shapeString(type.getShape()) +
                       ", which does not match its declared shape (shape mismatch)");
      }
    }
    results.push_back(v);
    types.push_back(type);
  }
  // Parameters updated by the step (BatchNormalization's running
  // statistics) follow the outputs; they are frozen: the optimizer leaves them.
  for (const auto &[name, value] : state_.parameterUpdates) {
    results.push_back(value);
    types.push_back(value.getType());
    if (auto param = func->getParentOfType<ModuleOp>().lookupSymbol<ParameterOp>(name))
      param.setFrozen(true);
  }
  builder_.create<func::ReturnOp>(func.getLoc(), results);
  func.setType(builder_.getFunctionType(func.getArgumentTypes(), types));
  for (auto [i, out] : llvm::enumerate(graph_.output()))
    func.setResultAttr(i, trc::abi::kOutputAttr, builder_.getStringAttr(out.name()));
  for (auto [k, update] : llvm::enumerate(state_.parameterUpdates))
    func.setResultAttr(graph_.output_size() + k, trc::abi::kUpdateAttr,
                       builder_.getStringAttr(update.first));
  return true;
}

void GraphImporter::eraseDeadOps(func::FuncOp func) {
  // Reverse order: erasing a use can make its producer dead too.
  for (Operation &op : llvm::make_early_inc_range(
           llvm::reverse(func.getBody().front().getOperations())))
    if (op.use_empty() && !op.hasTrait<OpTrait::IsTerminator>() && isPure(&op))
      op.erase();
}

void GraphImporter::noteRetracedInputs() {
  if (retraced_.empty())
    return;
  diag_ << "note: " << state_.fileName << ": the export fixed its inputs' sizes (static "
        << "shapes) and this run gives others (" << llvm::join(retraced_, ", ")
        << "); trc re-derives the sizes the exporter traced into its shape constants (a "
        << "Reshape's target, a mask's slice) and could not here (the error above names the "
        << "node). Export with dynamic batch and sequence axes (torch 2.x: "
        << "dynamic_shapes=..., torch 1.13: dynamic_axes=...; scripts/export_torch.py does "
        << "either) or train at the traced sizes\n";
}

OwningOpRef<ModuleOp> GraphImporter::run() {
  if (!graph_.node_size() && !graph_.output_size())
    return error("the model has an empty graph (not an ONNX model?)"), nullptr;
  if (!checkOpsets() || !checkSupportedOps())
    return nullptr;
  std::vector<std::string> graphErrors;
  auto order = orderNodes(graph_, graphErrors);
  if (!order) {
    for (const auto &e : graphErrors)
      error(e);
    return nullptr;
  }
  if (!resolveInputShapes())
    return nullptr;
  if (options_.onnxShapeInference && opset_ <= kMaxOnnxInferenceOpset) {
    std::string note;
    auto shapes = inputShapes_;
    for (const auto &[name, value] : constantInputs_)
      {
        auto shape = cast<ShapedType>(value.getType()).getShape();
        shapes[name].assign(shape.begin(), shape.end());
      }
    onnxShapes_ = inferOnnxShapes(model_, shapes, note);
    if (!note.empty())
      return error("ONNX shape inference rejects the model: " + note), nullptr;
  }

  Location fileLoc = FileLineColLoc::get(context_, state_.fileName, 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  module->getOperation()->setAttr(trc::abi::kOpsetAttr, builder_.getI64IntegerAttr(opset_));
  if (!model_.producer_name().empty())
    module->getOperation()->setAttr(
        trc::abi::kProducerAttr,
        builder_.getStringAttr(llvm::StringRef(model_.producer_name() + " " +
                                               model_.producer_version())
                                   .rtrim()));

  SmallVector<Type> argTypes;
  for (const auto *input : inputs_)
    argTypes.push_back(RankedTensorType::get(
        inputShapes_[input->name()],
        elementTypeOf(input->type().tensor_type().elem_type(), context_)));
  builder_.setInsertionPointToEnd(module->getBody());
  auto func = builder_.create<func::FuncOp>(fileLoc, "main",
                                            builder_.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  for (auto [i, input] : llvm::enumerate(inputs_)) {
    func.setArgAttr(i, trc::abi::kInputAttr, builder_.getStringAttr(input->name()));
    state_.values[input->name()] = entry->getArgument(i);
  }
  builder_.setInsertionPointToEnd(entry);
  for (const auto &[name, value] : constantInputs_)
    state_.values[name] = builder_.create<ConstantOp>(fileLoc, value);
  if (!declareParameters(*module) || !importNodes(*order) || !returnOutputs(func))
    return nullptr;
  eraseDeadOps(func);

  std::string messages;
  {
    ScopedDiagnosticHandler capture(context_, [&](Diagnostic &d) {
      messages += d.str() + "; ";
      return success();
    });
    if (failed(mlir::verify(*module)))
      return error("internal error: imported IR does not verify: " + messages), nullptr;
  }
  return module;
}
/// A graph input the caller sizes other than the export fixed it.
struct RetracedInput {
  std::string name;
  std::vector<int64_t> traced, size; // dynamic dims: the given size in both
};

std::vector<RetracedInput> retracedInputs(const onnx::GraphProto &graph,
                                          const ImportOptions &options) {
  std::vector<RetracedInput> out;
  for (const auto &input : graph.input()) {
    auto given = options.inputShapes.find(input.name());
    if (given == options.inputShapes.end() || !input.type().has_tensor_type() ||
        !input.type().tensor_type().has_shape())
      continue;
    const auto &shape = input.type().tensor_type().shape();
    if (shape.dim_size() != static_cast<int>(given->second.size()))
      continue; // reported by the import
    RetracedInput r{input.name(), given->second, given->second};
    for (int i = 0; i < shape.dim_size(); ++i)
      if (shape.dim(i).has_dim_value())
        r.traced[i] = shape.dim(i).dim_value();
    if (r.traced != r.size && !checkDims(r.traced).size())
      out.push_back(r);
  }
  return out;
}

/// Imports a static export at other input sizes (Respecialize.h): at the
/// traced sizes first, then one step per changed size, each re-deriving the
/// shape operands the previous import recorded.
OwningOpRef<ModuleOp> importRespecialized(const onnx::ModelProto &model, llvm::StringRef path,
                                          MLIRContext *context, const ImportOptions &options,
                                          const std::vector<RetracedInput> &retraced,
                                          llvm::raw_ostream &diag,
                                          std::vector<InitializerChoice> *choices,
                                          ImportReport *report) {
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> pairs;
  ImportOptions passOptions = options;
  for (const RetracedInput &r : retraced) {
    pairs.push_back({r.traced, r.size});
    passOptions.inputShapes[r.name] = r.traced;
  }
  std::vector<RetraceStep> steps = planRetrace(pairs);
  std::vector<Retrace> passes(steps.size() + 1);
  for (size_t k = 0; k < passes.size(); ++k) {
    bool last = k + 1 == passes.size();
    if (k > 0) {
      RetraceStep step = steps[k - 1];
      passes[k].previous = &passes[k - 1].current;
      passes[k].step = step;
      for (const RetracedInput &r : retraced)
        for (size_t i = 0; i < r.traced.size(); ++i)
          if (r.traced[i] == step.traced && r.size[i] == step.size)
            passOptions.inputShapes[r.name][i] = step.size;
      // ONNX's own inference would read the traced constants.
      passOptions.onnxShapeInference = false;
    }
    std::string passDiagnostics;
    llvm::raw_string_ostream passDiag(passDiagnostics);
    GraphImporter importer(model, path, context, passOptions, last ? diag : passDiag,
                           last ? choices : nullptr);
    importer.setRetrace(&passes[k]);
    OwningOpRef<ModuleOp> module = importer.run();
    if (!module) {
      if (k > 0) // at its traced sizes the export fails for reasons of its own
        importer.noteRetracedInputs();
      diag << passDiagnostics;
      if (report) {
        report->neededConstants = importer.neededConstants();
        report->unsupported = importer.unsupported();
      }
      return nullptr;
    }
    if (!last)
      continue;
    if (report) {
      RespecializeReport &respecialized = report->respecialized;
      for (const RetracedInput &r : retraced) {
        respecialized.inputs.push_back("'" + r.name + "' " + shapeString(r.traced) + " -> " +
                                       shapeString(r.size));
        respecialized.tracedShapes[r.name] = r.traced;
      }
      for (const Retrace &pass : passes)
        respecialized.constants.insert(respecialized.constants.end(), pass.changes.begin(),
                                       pass.changes.end());
    }
    return module;
  }
  return nullptr;
}
} // namespace

void loadImportDialects(MLIRContext &context) {
  context.loadDialect<TrcDialect, func::FuncDialect>();
}

OwningOpRef<ModuleOp> importOnnxBytes(llvm::StringRef bytes, llvm::StringRef path,
                                      MLIRContext *context, const ImportOptions &options,
                                      llvm::raw_ostream &diag,
                                      std::vector<InitializerChoice> *choices,
                                      ImportReport *report) {
  if (report)
    *report = ImportReport();
  loadImportDialects(*context);
  auto fail = [&](const std::string &message) {
    diag << "error: " << path << ": " << message << "\n";
    return OwningOpRef<ModuleOp>();
  };
  if (bytes.empty())
    return fail("the file is empty");
  if (bytes.size() > static_cast<size_t>(INT_MAX))
    return fail("the file is larger than 2 GiB; a model that large must keep its "
                "weights as external data");
  onnx::ModelProto model;
  google::protobuf::io::CodedInputStream stream(
      reinterpret_cast<const uint8_t *>(bytes.data()), static_cast<int>(bytes.size()));
  stream.SetRecursionLimit(64);
  if (!model.ParseFromCodedStream(&stream) || !stream.ConsumedEntireMessage())
    return fail("not a valid ONNX model: the protobuf does not parse (truncated, "
                "corrupt or not an ONNX file)");
  if (!model.has_graph() || model.ir_version() <= 0)
    return fail("not a valid ONNX model: no graph or no IR version");
  std::vector<RetracedInput> retraced = retracedInputs(model.graph(), options);
  if (retraced.empty()) {
    GraphImporter importer(model, path, context, options, diag, choices);
    OwningOpRef<ModuleOp> module = importer.run();
    if (!module) {
      importer.noteRetracedInputs();
      if (report) {
        report->neededConstants = importer.neededConstants();
        report->unsupported = importer.unsupported();
      }
    }
    return module;
  }
  return importRespecialized(model, path, context, options, retraced, diag, choices, report);
}

OwningOpRef<ModuleOp> importOnnxFile(llvm::StringRef path, MLIRContext *context,
                                     const ImportOptions &options, llvm::raw_ostream &diag,
                                     std::vector<InitializerChoice> *choices,
                                     ImportReport *report) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    diag << "error: " << path << ": cannot read: " << buffer.getError().message() << "\n";
    return nullptr;
  }
  return importOnnxBytes((*buffer)->getBuffer(), path, context, options, diag, choices,
                         report);
}

bool listGraphInputs(llvm::StringRef path, std::vector<GraphInputInfo> &inputs,
                     std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path, false, false);
  onnx::ModelProto model;
  if (!buffer || (*buffer)->getBufferSize() > static_cast<size_t>(INT_MAX) ||
      !model.ParseFromArray((*buffer)->getBufferStart(),
                            static_cast<int>((*buffer)->getBufferSize()))) {
    error = path.str() + ": not a readable ONNX model";
    return false;
  }
  std::set<std::string> initializers;
  for (const auto &init : model.graph().initializer())
    initializers.insert(init.name());
  for (const auto &input : model.graph().input()) {
    if (initializers.count(input.name()) || !input.type().has_tensor_type())
      continue;
    const import::OnnxDType *type = import::findOnnxDType(input.type().tensor_type().elem_type());
    GraphInputInfo info;
    info.name = input.name();
    info.isInteger = type && type->isInteger();
    info.rank = input.type().tensor_type().shape().dim_size();
    if (type && type->dtype)
      info.dtype = rt::dtypeName(*type->dtype);
    for (const auto &dim : input.type().tensor_type().shape().dim())
      info.dims.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    if (info.isInteger)
      info.shiftedBy = import::findSequenceShift(model.graph(), info.name);
    inputs.push_back(info);
  }
  return true;
}

std::vector<TiedInitializer> findTiedInitializers(const onnx::GraphProto &graph) {
  std::vector<TiedInitializer> tied;
  for (auto &d : import::findDerivedInitializers(graph))
    tied.push_back({d.name, d.source, d.transposed});
  return tied;
}

bool parseDimSpec(llvm::StringRef spec, ImportOptions &options, std::string &error) {
  llvm::SmallVector<llvm::StringRef> items;
  spec.split(items, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef item : items) {
    auto [name, value] = item.split('=');
    int64_t size;
    if (name.empty() || value.getAsInteger(10, size) || size < 0 ||
        size > kMaxDimSize) {
      error = "--dim expects NAME=N with N a non-negative integer, got '" +
              item.str() + "'";
      return false;
    }
    options.dimSizes[name.trim().str()] = size;
  }
  return true;
}

bool parseConstantInputSpec(llvm::StringRef spec, ImportOptions &options,
                            std::string &error) {
  auto [name, file] = spec.split('=');
  if (name.empty() || file.empty()) {
    error = "--constant-input expects NAME=FILE.pb, got '" + spec.str() + "'";
    return false;
  }
  options.constantInputs[name.str()] = file.str();
  return true;
}

bool parseInputShapeSpec(llvm::StringRef spec, ImportOptions &options,
                         std::string &error) {
  auto [name, shape] = spec.split('=');
  std::vector<int64_t> dims;
  llvm::SmallVector<llvm::StringRef> parts;
  if (!shape.empty() && shape != "scalar")
    shape.split(parts, 'x');
  for (llvm::StringRef p : parts) {
    int64_t d;
    if (p.getAsInteger(10, d) || d < 0 || d > kMaxDimSize) {
      error = "--input-shape expects NAME=AxBxC (or NAME=scalar), got '" + spec.str() +
              "'";
      return false;
    }
    dims.push_back(d);
  }
  if (name.empty() || shape.empty()) {
    error = "--input-shape expects NAME=AxBxC (or NAME=scalar), got '" + spec.str() + "'";
    return false;
  }
  options.inputShapes[name.str()] = dims;
  return true;
}

} // namespace trc
