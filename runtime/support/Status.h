//===- Status.h - success or an error message -------------------------------===//
//
// The runtime reports every failure as a Status carrying one human-readable
// message (no "error: " prefix; the tool adds it). Nothing in the runtime
// throws across its API: functions return Status and fill out-parameters.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_STATUS_H
#define TRC_RUNTIME_STATUS_H

#include <string>
#include <utility>

namespace trc::rt {

class [[nodiscard]] Status {
public:
  Status() = default;
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

private:
  bool failed_ = false;
  std::string message_;
};

} // namespace trc::rt

#endif // TRC_RUNTIME_STATUS_H
