//===- StatusTesting.h - GoogleTest helpers for StatusOr results ------------===//
//
// TRC_ASSERT_OK_AND_ASSIGN(lhs, expr): evaluates `expr` (a StatusOr<T>),
// fails the test with the error's message (and returns from the test
// function) when it holds an error, else moves the value into `lhs`, which
// may declare a variable (`TRC_ASSERT_OK_AND_ASSIGN(auto a, load(...))`).
// Like ASSERT_*, it can only be used in functions returning void.
//
// errorOf(r): the error message of a StatusOr (or Status), "" when it
// holds a value, for EXPECT_EQ / EXPECT_THAT on messages.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TESTS_STATUSTESTING_H
#define TRC_RUNTIME_TESTS_STATUSTESTING_H

#include "runtime/support/Status.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#define TRC_STATUS_TESTING_CONCAT_(a, b) a##b
#define TRC_STATUS_TESTING_CONCAT(a, b) TRC_STATUS_TESTING_CONCAT_(a, b)
#define TRC_ASSERT_OK_AND_ASSIGN(lhs, expr)                                                        \
  TRC_ASSERT_OK_AND_ASSIGN_IMPL_(TRC_STATUS_TESTING_CONCAT(trcStatusOr_, __LINE__), lhs, expr)
#define TRC_ASSERT_OK_AND_ASSIGN_IMPL_(result, lhs, expr)                                          \
  auto result = (expr);                                                                            \
  ASSERT_TRUE(result.ok()) << result.status().message();                                           \
  lhs = *std::move(result)

namespace trc::rt::test {

template <typename T> std::string errorOf(const StatusOr<T> &r) {
  return r.ok() ? std::string() : std::string(r.status().message());
}
inline std::string errorOf(const Status &s) { return s.message(); }

} // namespace trc::rt::test

#endif // TRC_RUNTIME_TESTS_STATUSTESTING_H
