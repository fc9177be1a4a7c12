//===- ChooseTrainable.h - the rule of InitializerRoles.h, applied -*- C++ -*-===//
//
// Applies the precedence rule of trc/Import/InitializerRoles.h to a model's
// float initializers: reads the exporter's tags (ExporterTags.h), the
// model's trc.frozen list, the --freeze/--trainable regexes and, for values
// an exporter folded, where they are used. The importer calls `choose` as it
// declares each parameter and collects the folded parameters it refuses.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_IMPORT_CHOOSETRAINABLE_H
#define TRC_LIB_IMPORT_CHOOSETRAINABLE_H

#include "ExporterTags.h"
#include "OnnxProto.h"
#include "trc/Import/InitializerRoles.h"

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "llvm/Support/Regex.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace trc::import {

/// "" if every pattern is a valid regex, else a message naming `flag` and
/// the pattern.
std::string checkNamePatterns(const std::vector<std::string> &patterns, const char *flag);

/// Whether a float tensor holds only a mask's or a fill's values: every
/// element equal, or each 0, 1, infinite or of magnitude >= 1e4 (the large
/// negatives of additive attention masks). Parameters never look like that.
bool isMaskOrFill(mlir::ElementsAttr value);

class TrainableChooser {
public:
  /// Preconditions: the patterns passed checkNamePatterns.
  TrainableChooser(const onnx::ModelProto &model, const std::vector<std::string> &freeze,
                   const std::vector<std::string> &trainable);

  /// The decision for float initializer `name` holding `value`. When the
  /// rule refuses it (a folded parameter), returns nullopt and sets `why`
  /// (e.g. "folded from 'lin.weight', feeds MatMul 'node_3' input 1").
  std::optional<InitializerChoice> choose(const std::string &name, mlir::ElementsAttr value,
                                          std::string &why) const;

  /// Whether the export carries torch.export's tags.
  bool tagged() const { return tags_.tagged(); }
  /// The exporter's tags, read once per import.
  const ExporterTags &tags() const { return tags_; }

  /// Parameters the torch.fx graph used that the export no longer has in
  /// any form (neither an initializer of that name nor a source a value was
  /// folded from): the exporter's optimizer dropped them (a zero bias) or
  /// merged them with an equal one (layer norms that start equal). Nothing
  /// in the file can train as them. In fx spelling; empty without metadata.
  std::vector<std::string> lostParameters() const;

private:
  bool matches(const std::vector<llvm::Regex> &patterns, const std::string &name) const;

  ExporterTags tags_;
  std::set<std::string> frozenMetadata_;
  std::vector<llvm::Regex> freeze_, trainable_;
  // Initializer -> its first use as a weight operand ("MatMul 'n' input 1").
  std::map<std::string, std::string> weightUses_;
};

} // namespace trc::import

#endif
