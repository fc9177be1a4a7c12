//===- StatusTest.cpp - Status and Abseil's Status / StatusOr ---------------===//
//
// rt::Status converts to absl::Status and back without losing anything the
// runtime relies on: an error's message byte for byte (the `error:` lines
// users see are made from it), a reported() failure (empty message) stays
// reported, ok stays ok. A function returning StatusOr<T> returns either
// `Status::error(...)` or its value; a function returning Status forwards a
// StatusOr's error with `return r.status();`.
//
//===----------------------------------------------------------------------===//
#include "runtime/support/Status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <type_traits>

using namespace trc::rt;

static_assert(std::is_convertible_v<Status, absl::Status>);
static_assert(std::is_convertible_v<absl::Status, Status>);
static_assert(std::is_convertible_v<Status, StatusOr<std::string>>);
static_assert(std::is_same_v<StatusOr<int>, absl::StatusOr<int>>);

namespace {

// Bytes a message may hold: quotes, a newline, a NUL, a non-UTF-8 byte.
const std::string kOddMessage =
    std::string("x.npy: bad 'descr' \"<f4\"\n\xff") + std::string(1, '\0') + "end";

StatusOr<std::string> produce(bool fail) {
  if (fail)
    return Status::error("x.npy: cannot open: No such file or directory");
  std::string value = "bytes";
  return value;
}

StatusOr<std::unique_ptr<int>> produceOwned(bool fail) {
  if (fail)
    return Status::reported();
  return std::make_unique<int>(7);
}

Status forward(bool fail, std::string &seen) {
  StatusOr<std::string> r = produce(fail);
  if (!r.ok())
    return r.status();
  seen = *r;
  return Status::success();
}

Status forwardWithPrefix(bool fail) {
  StatusOr<std::string> r = produce(fail);
  if (!r.ok())
    return Status(r.status()).withPrefix("--input x: ");
  return Status::success();
}

} // namespace

TEST(Status, AnErrorKeepsItsMessageThroughAbseil) {
  absl::Status a = Status::error(kOddMessage);
  EXPECT_FALSE(a.ok());
  EXPECT_EQ(a.code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(std::string(a.message()), kOddMessage);
  Status back = a;
  EXPECT_FALSE(back.ok());
  EXPECT_FALSE(back.isReported());
  EXPECT_EQ(back.message(), kOddMessage);
}

TEST(Status, AnAbseilErrorOfAnyCodeKeepsItsMessage) {
  Status s = absl::InvalidArgumentError("--lr: bad value 'x'");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "--lr: bad value 'x'");
  Status n = absl::NotFoundError("d/latest: no checkpoint");
  EXPECT_EQ(n.message(), "d/latest: no checkpoint");
}

TEST(Status, ReportedStaysReported) {
  absl::Status a = Status::reported();
  EXPECT_FALSE(a.ok());
  EXPECT_TRUE(a.message().empty());
  Status back = a;
  EXPECT_FALSE(back.ok());
  EXPECT_TRUE(back.isReported());
  Status fromAbseil = absl::UnknownError("");
  EXPECT_TRUE(fromAbseil.isReported());
}

TEST(Status, OkStaysOk) {
  absl::Status a = Status::success();
  EXPECT_TRUE(a.ok());
  Status back = a;
  EXPECT_TRUE(back.ok());
  EXPECT_TRUE(back.message().empty());
  Status fromAbseil = absl::OkStatus();
  EXPECT_TRUE(fromAbseil.ok());
}

TEST(Status, StatusOrHoldsTheValueOrTheError) {
  StatusOr<std::string> good = produce(false);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, "bytes");
  StatusOr<std::string> bad = produce(true);
  ASSERT_FALSE(bad.ok());
  Status s = bad.status();
  EXPECT_EQ(s.message(), "x.npy: cannot open: No such file or directory");

  StatusOr<std::unique_ptr<int>> owned = produceOwned(false);
  ASSERT_TRUE(owned.ok());
  EXPECT_EQ(**owned, 7);
  StatusOr<std::unique_ptr<int>> reported = produceOwned(true);
  ASSERT_FALSE(reported.ok());
  EXPECT_TRUE(Status(reported.status()).isReported());
}

TEST(Status, AStatusOrErrorForwardsAsAStatus) {
  std::string seen;
  Status ok = forward(false, seen);
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(seen, "bytes");
  Status bad = forward(true, seen);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.message(), "x.npy: cannot open: No such file or directory");
  EXPECT_EQ(forwardWithPrefix(true).message(),
            "--input x: x.npy: cannot open: No such file or directory");
  EXPECT_TRUE(forwardWithPrefix(false).ok());
}
