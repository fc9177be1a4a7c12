//===- InitializerTesting.h - init records the initializer tests share ---===//
//
// Two fixed recipes and a fill of the full tensor's elements as f32, shared
// by formats/InitializerTest.cpp (the generator) and
// artifact/InitializedParamsTest.cpp (sessions making params from it).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TESTS_INITIALIZERTESTING_H
#define TRC_RUNTIME_TESTS_INITIALIZERTESTING_H

#include "runtime/formats/Initializer.h"

#include <cstdint>
#include <vector>

namespace trc::rt::test {

/// Elements [first, first + count) of `init`'s full tensor, as f32.
inline std::vector<float> fillF32(const Initializer &init, uint64_t first, uint64_t count) {
  std::vector<float> v(count);
  fillInitializer(init, DType::F32, first, count, v.data());
  return v;
}

inline const Initializer kNormal{InitKind::Normal, 0.25, 0.02, 1234567};
inline const Initializer kUniform{InitKind::Uniform, -0.125, 0.25, 99};

} // namespace trc::rt::test

#endif // TRC_RUNTIME_TESTS_INITIALIZERTESTING_H
