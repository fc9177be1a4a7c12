//===- Parse.cpp - strict, locale-independent number parsing and splitting --===//
//
// See Parse.h. std::from_chars never reads the locale and never skips
// spaces; it accepts a leading '-' only for signed and floating types and
// reports a value out of range as result_out_of_range.
//
//===----------------------------------------------------------------------===//
#include "runtime/support/Parse.h"

#include "absl/strings/str_split.h"

#include <charconv>
#include <cmath>
#include <system_error>

namespace trc::rt {

namespace {

// The whole of `text` as a T, or nullopt.
template <typename T> std::optional<T> whole(std::string_view text) {
  if (text.empty())
    return std::nullopt;
  const char *b = text.data(), *e = b + text.size();
  T value{};
  auto [p, ec] = std::from_chars(b, e, value);
  if (ec != std::errc() || p != e)
    return std::nullopt;
  return value;
}

} // namespace

std::optional<int64_t> parseInt64(std::string_view text, int64_t lo,
                                  int64_t hi) {
  std::optional<int64_t> v = whole<int64_t>(text);
  if (!v || *v < lo || *v > hi)
    return std::nullopt;
  return v;
}

std::optional<uint64_t> parseUint64(std::string_view text, uint64_t hi) {
  std::optional<uint64_t> v = whole<uint64_t>(text);
  if (!v || *v > hi)
    return std::nullopt;
  return v;
}

std::optional<double> parseDouble(std::string_view text) {
  // from_chars(double) also reads "inf", "nan" and "infinity".
  std::optional<double> v = whole<double>(text);
  if (!v || !std::isfinite(*v))
    return std::nullopt;
  return v;
}

std::vector<std::string_view> splitText(std::string_view text,
                                        char separator) {
  // Debian's Abseil has its own string_view (ABSL_OPTION_USE_STD_STRING_VIEW
  // is 0): convert at the edges.
  std::vector<std::string_view> pieces;
  for (absl::string_view piece :
       absl::StrSplit(absl::string_view(text.data(), text.size()), separator))
    pieces.emplace_back(piece.data(), piece.size());
  return pieces;
}

} // namespace trc::rt
