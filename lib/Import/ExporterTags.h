//===- ExporterTags.h - what an exporter recorded about each value -*- C++ -*-===//
//
// torch.onnx's dynamo exporter (torch >= 2.5) records, in the metadata of
// each initializer's value_info, the role torch.export gave it
// (pkg.torch.export.graph_signature.InputSpec.kind = PARAMETER, BUFFER,
// CONSTANT_TENSOR) and, for initializers its optimizer computed at export
// time, the values they were folded from (pkg.onnxscript.optimizer.
// folded_from = "['lin.weight', 'val_3']"). Those tags say which
// initializers are the model's parameters; this reads them.
//
// ValueInfoProto.metadata_props (field 4) is newer than Debian's libonnx
// 1.12, whose parser keeps it as an unknown field: both forms are read.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_IMPORT_EXPORTERTAGS_H
#define TRC_LIB_IMPORT_EXPORTERTAGS_H

#include "OnnxProto.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace trc::import {

/// The metadata key torch.export's input kind is recorded under, and the
/// kinds that matter here.
inline constexpr const char kTorchInputKindKey[] =
    "pkg.torch.export.graph_signature.InputSpec.kind";
inline constexpr const char kTorchParameterKind[] = "PARAMETER";
/// The metadata key of the values an initializer was folded from.
inline constexpr const char kFoldedFromKey[] = "pkg.onnxscript.optimizer.folded_from";
/// The metadata key of a node's torch.fx node ("%add : ... args = (%p_fc_weight, ...)"),
/// whose operands name the parameters it used (%p_<name with _ for .>).
inline constexpr const char kFxNodeKey[] = "pkg.torch.onnx.fx_node";

struct ExporterTags {
  /// Initializer name -> torch.export input kind (PARAMETER, BUFFER, ...).
  std::map<std::string, std::string> kinds;
  /// Initializer name -> the names it was folded from, in the exporter's order.
  std::map<std::string, std::vector<std::string>> foldedFrom;
  /// The parameters the torch.fx graph used, as torch.export spells their
  /// placeholders, lowercased ("fc_weight" for %p_fc_weight), from the
  /// nodes' metadata.
  std::set<std::string> fxParameters;

  /// Whether the exporter tagged any initializer: then an untagged float
  /// initializer is one the exporter made, not a parameter of the model.
  bool tagged() const { return !kinds.empty(); }
};

/// The tags of `graph`'s initializers (from value_info, inputs and outputs).
ExporterTags readExporterTags(const onnx::GraphProto &graph);

/// A tensor name as torch.export spells its placeholder, lowercased: every
/// character that is not a letter or a digit becomes '_'
/// ("h.0.LayerNorm.weight" -> "h_0_layernorm_weight").
std::string fxSpelling(const std::string &name);

/// The (key, value) pairs of a message's repeated StringStringEntryProto
/// field `fieldNumber`, whether this libonnx knows the field or kept it
/// unknown. Pairs that do not parse are skipped.
std::vector<std::pair<std::string, std::string>>
metadataProps(const google::protobuf::Message &message, int fieldNumber);

} // namespace trc::import

#endif
