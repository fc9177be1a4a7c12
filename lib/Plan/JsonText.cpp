//===- JsonText.cpp - a parsed JSON value written back as text (JsonText.h) ===//
#include "JsonText.h"

namespace trc::plan {

std::string jsonText(const rt::JsonValue &v) {
  switch (v.kind()) {
  case rt::JsonValue::Kind::Null:
    return "null";
  case rt::JsonValue::Kind::Bool:
    return v.boolValue() ? "true" : "false";
  case rt::JsonValue::Kind::Number:
    return v.text();
  case rt::JsonValue::Kind::String: {
    std::string out;
    rt::appendJsonString(out, v.text());
    return out;
  }
  case rt::JsonValue::Kind::Array: {
    std::string out = "[";
    for (size_t i = 0; i < v.elements().size(); ++i)
      out += (i ? "," : "") + jsonText(v.elements()[i]);
    return out + "]";
  }
  case rt::JsonValue::Kind::Object: {
    std::string out = "{";
    bool first = true;
    for (const auto &[key, member] : v.members()) {
      out += first ? "" : ",";
      first = false;
      rt::appendJsonString(out, key);
      out += ":" + jsonText(member);
    }
    return out + "}";
  }
  }
  return "null";
}

} // namespace trc::plan
