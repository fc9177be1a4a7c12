//===- Json.cpp - a strict, bounded JSON parser and writing helpers ---------===//
//
// A recursive-descent parser over the grammar of RFC 8259 (see Json.h for
// its limits), and the number/string spelling used by every JSON file the
// runtime writes.
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/Json.h"

#include "runtime/support/Parse.h"

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace trc::rt {

//===----------------------------------------------------------------------===//
// JsonValue
//===----------------------------------------------------------------------===//

static bool isIntegerText(const std::string &t) {
  return t.find_first_of(".eE") == std::string::npos;
}

bool JsonValue::asInt64(int64_t &out) const {
  if (kind_ != Kind::Number || !isIntegerText(text_))
    return false;
  std::optional<int64_t> v = parseInt64(text_);
  if (v)
    out = *v;
  return v.has_value();
}

bool JsonValue::asUint64(uint64_t &out) const {
  if (kind_ != Kind::Number || !isIntegerText(text_))
    return false;
  std::optional<uint64_t> v = parseUint64(text_); // "-0" is not unsigned
  if (v)
    out = *v;
  return v.has_value();
}

bool JsonValue::asDouble(double &out) const {
  if (kind_ != Kind::Number)
    return false;
  std::optional<double> v = parseDouble(text_);
  if (v)
    out = *v;
  return v.has_value();
}

const JsonValue *JsonValue::find(std::string_view key) const {
  for (const auto &m : members_)
    if (m.first == key)
      return &m.second;
  return nullptr;
}

const char *JsonValue::kindName(Kind kind) {
  switch (kind) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return "a boolean";
  case Kind::Number:
    return "a number";
  case Kind::String:
    return "a string";
  case Kind::Array:
    return "an array";
  case Kind::Object:
    return "an object";
  }
  return "?";
}

//===----------------------------------------------------------------------===//
// Parser
//===----------------------------------------------------------------------===//

namespace {

using Members = std::vector<std::pair<std::string, JsonValue>>;

// The keys of one object seen so far, as indexes into its members: a set of
// string_views into the keys would dangle when the vector grows (short keys
// live inside their std::string), and copies would double a header's memory.
// Lookups take the new key's text (heterogeneous lookup), so duplicate
// detection is linear in the number of keys, not quadratic.
struct KeyHash {
  using is_transparent = void;
  const Members *members;
  size_t operator()(std::string_view key) const {
    return absl::Hash<std::string_view>()(key);
  }
  size_t operator()(size_t index) const {
    return (*this)(std::string_view((*members)[index].first));
  }
};

struct KeyEq {
  using is_transparent = void;
  const Members *members;
  std::string_view text(std::string_view key) const { return key; }
  std::string_view text(size_t index) const {
    return (*members)[index].first;
  }
  template <typename A, typename B> bool operator()(A a, B b) const {
    return text(a) == text(b);
  }
};

using KeySet = absl::flat_hash_set<size_t, KeyHash, KeyEq>;

} // namespace

class JsonParser {
public:
  JsonParser(std::string_view text, const JsonLimits &limits)
      : s(text), limits(limits) {}

  Status parse(JsonValue &out) {
    skipSpace();
    if (!parseValue(out, 0))
      return Status::error(problem);
    skipSpace();
    if (pos != s.size()) {
      fail("unexpected characters after the JSON value");
      return Status::error(problem);
    }
    return Status::success();
  }

private:
  std::string_view s;
  const JsonLimits &limits;
  size_t pos = 0;
  size_t values = 0;
  std::string problem;

  bool fail(const std::string &what) {
    if (problem.empty())
      problem = what + " at byte " + std::to_string(pos);
    return false;
  }

  void skipSpace() {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' ||
                              s[pos] == '\n' || s[pos] == '\r'))
      ++pos;
  }

  bool literal(std::string_view word) {
    if (s.substr(pos, word.size()) != word)
      return false;
    pos += word.size();
    return true;
  }

  bool parseValue(JsonValue &v, size_t depth) {
    if (++values > limits.maxValues)
      return fail("more than " + std::to_string(limits.maxValues) +
                  " JSON values");
    if (pos >= s.size())
      return fail("unexpected end of JSON text");
    char c = s[pos];
    if (c == '{' || c == '[') {
      if (depth >= limits.maxDepth)
        return fail("JSON nested more than " +
                    std::to_string(limits.maxDepth) + " levels deep");
      return c == '{' ? parseObject(v, depth) : parseArray(v, depth);
    }
    if (c == '"') {
      v.kind_ = JsonValue::Kind::String;
      return parseString(v.text_);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind_ = JsonValue::Kind::Number;
      return parseNumber(v.text_);
    }
    if (literal("true")) {
      v.kind_ = JsonValue::Kind::Bool;
      v.bool_ = true;
      return true;
    }
    if (literal("false")) {
      v.kind_ = JsonValue::Kind::Bool;
      v.bool_ = false;
      return true;
    }
    if (literal("null")) {
      v.kind_ = JsonValue::Kind::Null;
      return true;
    }
    return fail("expected a JSON value");
  }

  bool parseObject(JsonValue &v, size_t depth) {
    v.kind_ = JsonValue::Kind::Object;
    ++pos; // '{'
    skipSpace();
    if (pos < s.size() && s[pos] == '}') {
      ++pos;
      return true;
    }
    KeySet keys(0, KeyHash{&v.members_}, KeyEq{&v.members_});
    while (true) {
      skipSpace();
      if (pos >= s.size() || s[pos] != '"')
        return fail("expected a quoted object key");
      size_t keyPos = pos;
      std::string key;
      if (!parseString(key))
        return false;
      if (keys.contains(std::string_view(key))) {
        pos = keyPos;
        return fail("duplicate key \"" + key + "\"");
      }
      skipSpace();
      if (pos >= s.size() || s[pos] != ':')
        return fail("expected ':'");
      ++pos;
      skipSpace();
      v.members_.emplace_back(std::move(key), JsonValue());
      keys.insert(v.members_.size() - 1);
      if (!parseValue(v.members_.back().second, depth + 1))
        return false;
      skipSpace();
      if (pos < s.size() && s[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < s.size() && s[pos] == '}') {
        ++pos;
        return true;
      }
      return fail("expected ',' or '}'");
    }
  }

  bool parseArray(JsonValue &v, size_t depth) {
    v.kind_ = JsonValue::Kind::Array;
    ++pos; // '['
    skipSpace();
    if (pos < s.size() && s[pos] == ']') {
      ++pos;
      return true;
    }
    while (true) {
      skipSpace();
      v.elements_.emplace_back();
      if (!parseValue(v.elements_.back(), depth + 1))
        return false;
      skipSpace();
      if (pos < s.size() && s[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < s.size() && s[pos] == ']') {
        ++pos;
        return true;
      }
      return fail("expected ',' or ']'");
    }
  }

  bool digits() {
    size_t start = pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9')
      ++pos;
    return pos > start;
  }

  bool parseNumber(std::string &text) {
    size_t start = pos;
    if (s[pos] == '-')
      ++pos;
    if (pos < s.size() && s[pos] == '0') {
      ++pos;
    } else if (!digits()) {
      return fail("expected digits in a number");
    }
    if (pos < s.size() && s[pos] == '.') {
      ++pos;
      if (!digits())
        return fail("expected digits after '.'");
    }
    if (pos < s.size() && (s[pos] == 'e' || s[pos] == 'E')) {
      ++pos;
      if (pos < s.size() && (s[pos] == '+' || s[pos] == '-'))
        ++pos;
      if (!digits())
        return fail("expected digits in the exponent");
    }
    if (pos - start > 400)
      return fail("a number more than 400 characters long");
    text.assign(s.substr(start, pos - start));
    return true;
  }

  static void appendUtf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xc0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += char(0xe0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3f));
      out += char(0x80 | (cp & 0x3f));
    } else {
      out += char(0xf0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3f));
      out += char(0x80 | ((cp >> 6) & 0x3f));
      out += char(0x80 | (cp & 0x3f));
    }
  }

  bool hex4(uint32_t &v) {
    if (s.size() - pos < 4)
      return fail("expected 4 hex digits after \\u");
    v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = s[pos + i];
      int d;
      if (c >= '0' && c <= '9')
        d = c - '0';
      else if (c >= 'a' && c <= 'f')
        d = c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        d = c - 'A' + 10;
      else
        return fail("expected 4 hex digits after \\u");
      v = v * 16 + uint32_t(d);
    }
    pos += 4;
    return true;
  }

  // One UTF-8 sequence starting at pos, copied to out; false if invalid.
  bool utf8Sequence(std::string &out) {
    unsigned char c = static_cast<unsigned char>(s[pos]);
    size_t n;
    uint32_t cp, min;
    if (c < 0x80) {
      out += char(c);
      ++pos;
      return true;
    } else if ((c & 0xe0) == 0xc0) {
      n = 2, cp = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
      n = 3, cp = c & 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
      n = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return fail("invalid UTF-8 in a string");
    }
    if (s.size() - pos < n)
      return fail("invalid UTF-8 in a string");
    for (size_t i = 1; i < n; ++i) {
      unsigned char d = static_cast<unsigned char>(s[pos + i]);
      if ((d & 0xc0) != 0x80)
        return fail("invalid UTF-8 in a string");
      cp = (cp << 6) | (d & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return fail("invalid UTF-8 in a string");
    out.append(s.substr(pos, n));
    pos += n;
    return true;
  }

  bool parseString(std::string &out) {
    ++pos; // '"'
    out.clear();
    while (true) {
      if (pos >= s.size())
        return fail("unterminated string");
      char c = s[pos];
      if (c == '"') {
        ++pos;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("control character in a string");
      if (c != '\\') {
        if (!utf8Sequence(out))
          return false;
        continue;
      }
      ++pos;
      if (pos >= s.size())
        return fail("unterminated string");
      char e = s[pos++];
      switch (e) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case '/':
        out += '/';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp = 0;
        if (!hex4(cp))
          return false;
        if (cp >= 0xdc00 && cp <= 0xdfff)
          return fail("unpaired surrogate in a \\u escape");
        if (cp >= 0xd800 && cp <= 0xdbff) {
          uint32_t lo = 0;
          if (s.substr(pos, 2) != "\\u")
            return fail("unpaired surrogate in a \\u escape");
          pos += 2;
          if (!hex4(lo))
            return false;
          if (lo < 0xdc00 || lo > 0xdfff)
            return fail("unpaired surrogate in a \\u escape");
          cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        --pos;
        return fail("invalid escape in a string");
      }
    }
  }
};

StatusOr<JsonValue> parseJson(std::string_view text, const JsonLimits &limits) {
  JsonValue out;
  JsonParser parser(text, limits);
  if (Status s = parser.parse(out); !s)
    return s;
  return out;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

void appendJsonString(std::string &out, std::string_view s) {
  static const char hex[] = "0123456789abcdef";
  out += '"';
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      if (c < 0x20) {
        out += "\\u00";
        out += hex[c >> 4];
        out += hex[c & 0xf];
      } else {
        out += ch;
      }
    }
  }
  out += '"';
}

void appendJsonInt(std::string &out, int64_t value) {
  out += std::to_string(value);
}

void appendJsonUint(std::string &out, uint64_t value) {
  out += std::to_string(value);
}

void appendJsonDouble(std::string &out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  out.append(buf, ec == std::errc() ? p : buf);
}

void appendJsonFloat(std::string &out, float value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), value,
                               std::chars_format::general, 9);
  out.append(buf, ec == std::errc() ? p : buf);
}

} // namespace trc::rt
