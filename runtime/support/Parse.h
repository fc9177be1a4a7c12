//===- Parse.h - strict, locale-independent number parsing and splitting ----===//
//
// The one set of text-to-number helpers of the runtime. Each takes the whole
// text or nothing: no leading or trailing spaces, no '+', no trailing junk,
// no "0x", and the C spelling whatever the process's locale says (std::
// from_chars: "1.5" is one and a half under LC_NUMERIC=de_DE too, "1,5" is
// never a number). A value out of the type's or the caller's range is
// rejected, never clamped or wrapped. They return std::nullopt on any
// failure; callers write the message, naming the flag, file or key.
//
//   parseInt64   -?[0-9]+ in [lo, hi]
//   parseUint64  [0-9]+ in [0, hi] (so "-0" and "-1" are not unsigned)
//   parseDouble  a decimal or exponent number ("1", "-2.5", ".5", "1e-3"),
//                finite: "inf", "nan" and overflow (1e999) are rejected
//
// splitText cuts text at every `separator` (absl::StrSplit): empty pieces
// are kept, so "a,,b" is {"a", "", "b"} and "" is {""}.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_PARSE_H
#define TRC_RUNTIME_PARSE_H

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

namespace trc::rt {

std::optional<int64_t>
parseInt64(std::string_view text,
           int64_t lo = std::numeric_limits<int64_t>::min(),
           int64_t hi = std::numeric_limits<int64_t>::max());

std::optional<uint64_t>
parseUint64(std::string_view text,
            uint64_t hi = std::numeric_limits<uint64_t>::max());

std::optional<double> parseDouble(std::string_view text);

// The pieces of `text` between separators (views into `text`).
std::vector<std::string_view> splitText(std::string_view text, char separator);

} // namespace trc::rt

#endif // TRC_RUNTIME_PARSE_H
