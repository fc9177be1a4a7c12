//===- Status.h - success or an error message -------------------------------===//
//
// The runtime reports every failure as a Status carrying one human-readable
// message (no "error: " prefix; the tool adds it). Nothing in the runtime
// throws across its API: a fallible function returns Status, or, when it
// produces a value, StatusOr<T> (Abseil's absl::StatusOr): the value or the
// error, never both, and no out-parameter.
//
// Status and absl::Status convert into each other implicitly, so that
// `return Status::error("...");` and `return value;` both work in a function
// returning StatusOr<T>, and `if (!r.ok()) return r.status();` in one
// returning Status. An error becomes absl::UnknownError(message) (the
// runtime's errors carry no code) and comes back as an error with the same
// message, byte for byte; reported() (an empty message) stays reported; ok
// stays ok.
//
// Preconditions: a StatusOr is never made from a successful Status (Abseil
// turns that into an internal error): return the value instead.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_STATUS_H
#define TRC_RUNTIME_STATUS_H

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include <string>
#include <utility>

namespace trc::rt {

class [[nodiscard]] Status {
public:
  Status() = default;
  /// An Abseil status: ok is ok, an error keeps its message (an error with
  /// an empty message is reported()).
  Status(const absl::Status &status)
      : failed_(!status.ok()), message_(failed_ ? std::string(status.message()) : "") {}
  static Status success() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.failed_ = true;
    s.message_ = std::move(message);
    return s;
  }
  // A failure whose diagnostics were already printed (a compiler's `error:`
  // lines): the caller prints nothing more.
  static Status reported() { return error(""); }
  bool isReported() const { return failed_ && message_.empty(); }
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string &message() const { return message_; }
  // The same error with `prefix` in front of its message (no-op on success).
  Status withPrefix(const std::string &prefix) const {
    return ok() ? *this : error(prefix + message_);
  }
  /// As an Abseil status: absl::OkStatus(), or absl::UnknownError(message()).
  operator absl::Status() const {
    return ok() ? absl::OkStatus() : absl::UnknownError(message_);
  }

private:
  bool failed_ = false;
  std::string message_;
};

/// The result of a fallible function that produces a value: the value, or
/// an error Status (never a successful one).
template <typename T> using StatusOr = absl::StatusOr<T>;

} // namespace trc::rt

#endif // TRC_RUNTIME_STATUS_H
