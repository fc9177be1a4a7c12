//===- Names.cpp - percent-encoding of tensor names -------------------------===//
//
// See Names.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/support/Names.h"

namespace trc::rt {

namespace {
int hexValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

void appendEscape(std::string &out, unsigned char c) {
  static const char digits[] = "0123456789ABCDEF";
  out += '%';
  out += digits[c >> 4];
  out += digits[c & 0xf];
}
} // namespace

bool isNameSafeChar(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == ':' ||
         c == '/' || c == '-';
}

bool percentDecode(std::string_view field, std::string &name,
                   std::string &problem) {
  name.clear();
  for (size_t i = 0; i < field.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(field[i]);
    if (c == '%') {
      int hi = i + 1 < field.size() ? hexValue(field[i + 1]) : -1;
      int lo = i + 2 < field.size() ? hexValue(field[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        problem = "malformed percent escape at byte " + std::to_string(i) +
                  " (expected %XX with two hex digits)";
        return false;
      }
      unsigned char decoded = static_cast<unsigned char>(hi * 16 + lo);
      if (decoded == 0) {
        problem = "the name contains a NUL byte (%00)";
        return false;
      }
      name += static_cast<char>(decoded);
      i += 2;
      continue;
    }
    if (!isNameSafeChar(c)) {
      std::string shown;
      appendEscape(shown, c);
      problem = "byte " + shown + " at position " + std::to_string(i) +
                " must be percent-encoded";
      return false;
    }
    name += static_cast<char>(c);
  }
  if (name.empty()) {
    problem = "the name is empty";
    return false;
  }
  return true;
}

std::string percentEncode(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char ch : name) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (isNameSafeChar(c))
      out += ch;
    else
      appendEscape(out, c);
  }
  return out;
}

std::string outputFileName(std::string_view name) {
  std::string out;
  out.reserve(name.size() + 4);
  for (char ch : name) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c == '/' || c == '%')
      appendEscape(out, c);
    else
      out += ch;
  }
  return out + ".npy";
}

} // namespace trc::rt
