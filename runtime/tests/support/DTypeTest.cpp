//===- DTypeTest.cpp - dtypes, shapes and aligned buffers ----------------------===//
//
// dtype names and sizes (and the one storage rule, trc/Abi/ElementBytes.h,
// they follow), the 2^40 element cap, shape formatting, 64-byte alignment of
// host buffers (zero-byte ones included). The backends' buffers and device
// names: backends/BackendTest.cpp.
//
//===----------------------------------------------------------------------===//
#include "runtime/support/DType.h"
#include "runtime/support/Tensor.h"
#include "trc/Abi/ElementBytes.h"

#include "StatusTesting.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

using ::testing::HasSubstr;
using namespace trc::rt;

TEST(DType, NamesAndSizes) {
  struct Case {
    const char *name;
    size_t size;
  } cases[] = {{"f32", 4}, {"f64", 8}, {"f16", 2},  {"bf16", 2}, {"i1", 1},
               {"i8", 1},  {"i16", 2}, {"i32", 4},  {"i64", 8},  {"u8", 1},
               {"u16", 2}, {"u32", 4}, {"u64", 8}};
  for (const Case &c : cases) {
    DType dt;
    ASSERT_TRUE(parseDType(c.name, dt)) << c.name;
    EXPECT_EQ(dtypeSize(dt), c.size) << c.name;
    EXPECT_STREQ(dtypeName(dt), c.name);
  }
  DType dt;
  EXPECT_FALSE(parseDType("f128", dt));
  EXPECT_FALSE(parseDType("", dt));
  EXPECT_FALSE(parseDType("float32", dt));
}

// The compiler's memory plan and the runtime size elements by one rule:
// whole bytes, i1 and sub-byte integers one byte each, complex two parts.
TEST(DType, OneStorageRule) {
  using trc::abi::storageBytesPerElement;
  static_assert(storageBytesPerElement(1) == 1, "i1 takes a whole byte");
  EXPECT_EQ(storageBytesPerElement(1), 1);   // i1
  EXPECT_EQ(storageBytesPerElement(4), 1);   // i4: not packed
  EXPECT_EQ(storageBytesPerElement(8), 1);   // i8, u8
  EXPECT_EQ(storageBytesPerElement(16), 2);  // bf16, f16
  EXPECT_EQ(storageBytesPerElement(32), 4);  // f32
  EXPECT_EQ(storageBytesPerElement(64), 8);  // f64
  EXPECT_EQ(storageBytesPerElement(32, /*isComplex=*/true), 8);  // complex<f32>
  EXPECT_EQ(storageBytesPerElement(64, /*isComplex=*/true), 16); // complex<f64>
  EXPECT_EQ(storageBytesPerElement(16, /*isComplex=*/true), 4);  // complex<f16>
  EXPECT_EQ(storageBytesPerElement(0), 0);
  EXPECT_EQ(dtypeSize(DType::I1), size_t(storageBytesPerElement(1)));
  EXPECT_EQ(dtypeSize(DType::BF16), size_t(storageBytesPerElement(16)));
  EXPECT_EQ(dtypeSize(DType::F64), size_t(storageBytesPerElement(64)));
}

TEST(DType, ElementCountCap) {
  int64_t n = 0;
  EXPECT_TRUE(elementCount({}, n));
  EXPECT_EQ(n, 1);
  EXPECT_TRUE(elementCount({2, 3, 4}, n));
  EXPECT_EQ(n, 24);
  EXPECT_TRUE(elementCount({0, int64_t(1) << 40}, n));
  EXPECT_EQ(n, 0);
  EXPECT_TRUE(elementCount({int64_t(1) << 20, int64_t(1) << 20}, n));
  EXPECT_FALSE(elementCount({int64_t(1) << 20, int64_t(1) << 20, 2}, n));
  EXPECT_FALSE(elementCount({-1, 2}, n));
  EXPECT_FALSE(elementCount({INT64_MAX, INT64_MAX}, n));
  EXPECT_FALSE(elementCount(std::vector<int64_t>(65, 1), n));
}

TEST(DType, Formatting) {
  EXPECT_EQ(formatShape({}), "[]");
  EXPECT_EQ(formatShape({2, 3}), "[2, 3]");
  EXPECT_EQ(formatType(DType::BF16, {7}), "bf16 [7]");
}

TEST(Tensor, AlignedAndZeroed) {
  for (size_t bytes : {size_t(0), size_t(1), size_t(63), size_t(64), size_t(1000)}) {
    AlignedBuffer b;
    ASSERT_TRUE(b.allocate(bytes));
    ASSERT_NE(b.data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
    EXPECT_EQ(b.size(), bytes);
    for (size_t i = 0; i < bytes; ++i)
      ASSERT_EQ(static_cast<unsigned char *>(b.data())[i], 0);
  }
  HostTensor t;
  ASSERT_TRUE(t.allocate(DType::F64, {3, 5}));
  EXPECT_EQ(t.byteSize(), 120u);
  EXPECT_EQ(t.numElements(), 15);
  AlignedBuffer moved = std::move(t.buffer);
  EXPECT_EQ(moved.size(), 120u);
  EXPECT_EQ(t.buffer.data(), nullptr);
}

TEST(Tensor, RefusesAbsurdShapes) {
  HostTensor t;
  Status s = t.allocate(DType::F32, {int64_t(1) << 30, int64_t(1) << 30});
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("more than 2^40 elements"));
}

TEST(Tensor, ReportsOutOfMemory) {
  AlignedBuffer b;
  Status s = b.allocate(SIZE_MAX / 2);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("out of memory"));
}
