//===- ExporterTags.cpp - what an exporter recorded about each value ------===//
#include "ExporterTags.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/unknown_field_set.h>

namespace trc::import {
namespace {
// ValueInfoProto's and NodeProto's metadata_props (onnx >= 1.16).
constexpr int kValueInfoMetadataField = 4;
constexpr int kNodeMetadataField = 9;

// The parameter placeholders an fx node's text uses: "%p_NAME" operands.
void addFxParameters(llvm::StringRef text, std::set<std::string> &out) {
  for (size_t at = text.find("%p_"); at != llvm::StringRef::npos; at = text.find("%p_", at + 1)) {
    size_t end = at + 3;
    while (end < text.size() && (llvm::isAlnum(text[end]) || text[end] == '_'))
      ++end;
    if (end > at + 3)
      out.insert(text.slice(at + 3, end).lower());
  }
}

// "['a.weight', 'val_3']" (a Python list's repr) -> {"a.weight", "val_3"}.
std::vector<std::string> parseNameList(llvm::StringRef text) {
  std::vector<std::string> names;
  text = text.trim();
  if (!text.consume_front("[") || !text.consume_back("]"))
    return names;
  llvm::SmallVector<llvm::StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef item : items) {
    item = item.trim();
    if (item.size() >= 2 && (item.front() == '\'' || item.front() == '"') &&
        item.back() == item.front())
      item = item.drop_front().drop_back();
    if (!item.empty())
      names.push_back(item.str());
  }
  return names;
}
} // namespace

std::vector<std::pair<std::string, std::string>>
metadataProps(const google::protobuf::Message &message, int fieldNumber) {
  std::vector<std::pair<std::string, std::string>> props;
  const auto *reflection = message.GetReflection();
  if (const auto *field = message.GetDescriptor()->FindFieldByNumber(fieldNumber)) {
    if (field->is_repeated() &&
        field->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE)
      for (int i = 0, n = reflection->FieldSize(message, field); i < n; ++i) {
        const auto &entry = reflection->GetRepeatedMessage(message, field, i);
        if (const auto *e = dynamic_cast<const onnx::StringStringEntryProto *>(&entry))
          props.emplace_back(e->key(), e->value());
      }
    return props;
  }
  const google::protobuf::UnknownFieldSet &unknown = reflection->GetUnknownFields(message);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField &f = unknown.field(i);
    if (f.number() != fieldNumber || f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      continue;
    onnx::StringStringEntryProto entry;
    if (entry.ParseFromString(f.length_delimited()))
      props.emplace_back(entry.key(), entry.value());
  }
  return props;
}

std::string fxSpelling(const std::string &name) {
  std::string out = name;
  for (char &c : out)
    c = llvm::isAlnum(c) ? llvm::toLower(c) : '_';
  return out;
}

ExporterTags readExporterTags(const onnx::GraphProto &graph) {
  ExporterTags tags;
  auto read = [&](const onnx::ValueInfoProto &info) {
    for (const auto &[key, value] : metadataProps(info, kValueInfoMetadataField)) {
      if (key == kTorchInputKindKey)
        tags.kinds[info.name()] = value;
      else if (key == kFoldedFromKey)
        tags.foldedFrom[info.name()] = parseNameList(value);
    }
  };
  for (const auto &info : graph.value_info())
    read(info);
  for (const auto &info : graph.input())
    read(info);
  for (const auto &info : graph.output())
    read(info);
  for (const auto &node : graph.node())
    for (const auto &[key, value] : metadataProps(node, kNodeMetadataField))
      if (key == kFxNodeKey)
        addFxParameters(value, tags.fxParameters);
  // Graph inputs are tagged too (USER_INPUT); only initializers' tags count.
  std::map<std::string, std::string> initializerKinds;
  for (const auto &init : graph.initializer())
    if (auto it = tags.kinds.find(init.name()); it != tags.kinds.end())
      initializerKinds.insert(*it);
  tags.kinds = std::move(initializerKinds);
  return tags;
}

} // namespace trc::import
