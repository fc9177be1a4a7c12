//===- Json.h - a strict, bounded JSON parser and writing helpers -----------===//
//
// parseJson reads exactly one RFC 8259 value (surrounded by optional
// whitespace) into a JsonValue tree. It is meant for files that may be
// hostile (safetensors headers, checkpoint state), so it is strict and
// bounded: nesting at most `maxDepth` deep, strings valid UTF-8 (escapes
// included, surrogates paired), duplicate object keys rejected (found with
// a hash set, so a header of a million keys parses in linear time), no NaN,
// Infinity, comments or trailing commas. Numbers keep their text, so
// integers convert exactly (asInt64/asUint64) and others through
// Parse.h (whole-text, locale-independent). Errors say what was expected and at
// which byte ("expected ':' at byte 17").
//
// The writing helpers append JSON text: escaped strings, integers, and
// doubles/floats spelled so that they read back to the same value (null for
// NaN and infinities).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_JSON_H
#define TRC_RUNTIME_JSON_H

#include "runtime/support/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trc::rt {

class JsonValue {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isNumber() const { return kind_ == Kind::Number; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }

  bool boolValue() const { return bool_; }
  // String: the decoded text. Number: its source text.
  const std::string &text() const { return text_; }
  // Number conversions: false if not a number, not an integer (fraction or
  // exponent present) or out of range.
  bool asInt64(int64_t &out) const;
  bool asUint64(uint64_t &out) const;
  // Any number (false if not a number or out of double's range).
  bool asDouble(double &out) const;

  const std::vector<JsonValue> &elements() const { return elements_; }
  // Members in file order.
  const std::vector<std::pair<std::string, JsonValue>> &members() const {
    return members_;
  }
  // The member named `key`, or null when absent (or not an object).
  const JsonValue *find(std::string_view key) const;

  // Names of kinds for messages: "null", "a boolean", "a number", ...
  static const char *kindName(Kind kind);

private:
  friend class JsonParser;
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  std::string text_;
  std::vector<JsonValue> elements_;
  std::vector<std::pair<std::string, JsonValue>> members_;
};

struct JsonLimits {
  size_t maxDepth = 64;
  // Most values (of any kind, containers included) in one document; bounds
  // the memory a hostile document can make the parser allocate.
  size_t maxValues = size_t(1) << 22;
};

/// Parses `text` into its value; the message of a failure is the problem
/// and its byte offset (callers prefix the file name).
StatusOr<JsonValue> parseJson(std::string_view text, const JsonLimits &limits = {});

// Appends `s` as a JSON string (quoted; ", \ and control characters
// escaped as serde_json does: \b \f \n \r \t, else \u00XX; other bytes
// copied as they are).
void appendJsonString(std::string &out, std::string_view s);
void appendJsonInt(std::string &out, int64_t value);
void appendJsonUint(std::string &out, uint64_t value);
// Shortest text that reads back to the same double; null if not finite.
void appendJsonDouble(std::string &out, double value);
// printf's %.9g (9 significant digits, enough to read back the same float);
// null if not finite. Locale-independent.
void appendJsonFloat(std::string &out, float value);

} // namespace trc::rt

#endif // TRC_RUNTIME_JSON_H
