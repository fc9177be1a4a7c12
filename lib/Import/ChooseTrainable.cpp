//===- ChooseTrainable.cpp - the rule of InitializerRoles.h, applied ------===//
#include "ChooseTrainable.h"
#include "DerivedInitializers.h"
#include "TensorData.h"
#include "trc/Abi/AttrNames.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"

#include <cmath>
#include <cstring>

namespace trc {

const char *describeInitializerReason(InitializerReason reason) {
  switch (reason) {
  case InitializerReason::TrainableFlag: return "--trainable";
  case InitializerReason::FreezeFlag: return "--freeze";
  case InitializerReason::FrozenMetadata: return "listed in the model's trc.frozen";
  case InitializerReason::ExportedParameter: return "tagged PARAMETER by the exporter";
  case InitializerReason::ExportedBuffer: return "tagged BUFFER by the exporter";
  case InitializerReason::ExportedConstant: return "tagged CONSTANT_TENSOR by the exporter";
  case InitializerReason::Folded: return "computed by the exporter's constant folding";
  case InitializerReason::Untagged: return "float initializers of an untagged export";
  }
  return "";
}

namespace import {
namespace {
// Operand positions that hold a layer's weight: what a parameter feeds and
// a mask or a folded scale does not.
bool isWeightOperand(llvm::StringRef op, int input) {
  if (op == "MatMul" || op == "Gemm" || op == "Einsum")
    return input <= 1;
  if (op == "Gather")
    return input == 0;
  if (op == "Conv" || op == "ConvTranspose")
    return input == 1;
  return false;
}

// A folded-from name that is a named tensor of the model: torch.export's
// state-dict names are dotted paths ("transformer.wpe.weight"); the
// exporter's own values ("val_12", "slice_1", "alias") never are.
bool isModelTensorName(llvm::StringRef name) { return name.contains('.'); }

} // namespace

std::string checkNamePatterns(const std::vector<std::string> &patterns, const char *flag) {
  for (const std::string &p : patterns) {
    std::string problem;
    if (!llvm::Regex("^(" + p + ")$").isValid(problem))
      return std::string(flag) + " '" + p + "' is not a valid regular expression: " + problem;
  }
  return "";
}

bool isMaskOrFill(mlir::ElementsAttr value) {
  auto type = llvm::dyn_cast<mlir::FloatType>(value.getElementType());
  llvm::ArrayRef<char> bytes = elementsBytes(value);
  if (!type || bytes.empty())
    return false;
  const unsigned bits = type.getWidth();
  if (bits % 8 || bytes.size() % (bits / 8))
    return false;
  const size_t width = bits / 8, count = bytes.size() / width;
  if (isFill(llvm::StringRef(bytes.data(), bytes.size()), int64_t(width)))
    return true;
  const llvm::fltSemantics &semantics = type.getFloatSemantics();
  for (size_t i = 0; i < count; ++i) {
    uint64_t word = 0;
    std::memcpy(&word, bytes.data() + i * width, width); // little-endian host
    llvm::APFloat f(semantics, llvm::APInt(bits, word));
    bool lost;
    f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lost);
    double v = f.convertToDouble();
    if (!(v == 0 || v == 1 || std::isinf(v) || std::fabs(v) >= 1e4))
      return false; // neither a fill nor a mask
  }
  return true;
}

TrainableChooser::TrainableChooser(const onnx::ModelProto &model,
                                   const std::vector<std::string> &freeze,
                                   const std::vector<std::string> &trainable)
    : tags_(readExporterTags(model.graph())) {
  for (const auto &prop : model.metadata_props()) {
    if (prop.key() != abi::kFrozenMetadataKey)
      continue;
    llvm::SmallVector<llvm::StringRef> names;
    llvm::StringRef(prop.value()).split(names, ',', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef n : names)
      frozenMetadata_.insert(n.trim().str());
  }
  for (const std::string &p : freeze)
    freeze_.emplace_back("^(" + p + ")$");
  for (const std::string &p : trainable)
    trainable_.emplace_back("^(" + p + ")$");
  if (!tags_.tagged())
    return;
  for (const onnx::NodeProto &node : model.graph().node())
    for (int i = 0; i < node.input_size(); ++i)
      if (isWeightOperand(node.op_type(), i) && !weightUses_.count(node.input(i)))
        weightUses_[node.input(i)] = node.op_type() + " '" + node.name() + "' input " +
                                     std::to_string(i);
}

std::vector<std::string> TrainableChooser::lostParameters() const {
  std::set<std::string> present;
  for (const auto &[name, kind] : tags_.kinds)
    present.insert(fxSpelling(name));
  for (const auto &[name, sources] : tags_.foldedFrom)
    for (const std::string &source : sources)
      present.insert(fxSpelling(source));
  std::vector<std::string> lost;
  for (const std::string &p : tags_.fxParameters)
    if (!present.count(p))
      lost.push_back(p);
  return lost;
}

bool TrainableChooser::matches(const std::vector<llvm::Regex> &patterns,
                               const std::string &name) const {
  return llvm::any_of(patterns, [&](const llvm::Regex &r) { return r.match(name); });
}

std::optional<InitializerChoice> TrainableChooser::choose(const std::string &name,
                                                          mlir::ElementsAttr value,
                                                          std::string &why) const {
  using R = InitializerReason;
  if (matches(trainable_, name))
    return InitializerChoice{name, true, R::TrainableFlag};
  if (matches(freeze_, name))
    return InitializerChoice{name, false, R::FreezeFlag};
  if (frozenMetadata_.count(name))
    return InitializerChoice{name, false, R::FrozenMetadata};
  if (!tags_.tagged())
    return InitializerChoice{name, true, R::Untagged};
  if (auto kind = tags_.kinds.find(name); kind != tags_.kinds.end()) {
    if (kind->second == kTorchParameterKind)
      return InitializerChoice{name, true, R::ExportedParameter};
    return InitializerChoice{name, false,
                             kind->second == "BUFFER" ? R::ExportedBuffer : R::ExportedConstant};
  }
  // Untagged: the exporter made it. A parameter folded into it?
  std::vector<std::string> sources;
  if (auto folded = tags_.foldedFrom.find(name); folded != tags_.foldedFrom.end())
    for (const std::string &source : folded->second)
      if (isModelTensorName(source))
        sources.push_back("'" + source + "'");
  auto use = weightUses_.find(name);
  if ((sources.empty() && use == weightUses_.end()) || isMaskOrFill(value))
    return InitializerChoice{name, false, R::Folded};
  why.clear();
  if (!sources.empty())
    why = "folded from " + llvm::join(sources, ", ");
  if (use != weightUses_.end())
    why += (why.empty() ? "" : ", ") + std::string("feeds ") + use->second;
  return std::nullopt;
}

} // namespace import
} // namespace trc
