//===- Tensor.h - 64-byte-aligned host buffers and tensors ------------------===//
//
// AlignedBuffer owns a block of host memory aligned to 64 bytes (the
// alignment ARTIFACT.md promises for every slot buffer). A zero-byte buffer
// still owns a valid, non-null 64-byte block, so slot pointers are never null.
// HostTensor is a dtype, a shape and an AlignedBuffer of exactly the dense
// row-major size. Allocation failure is reported, never thrown.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TENSOR_H
#define TRC_RUNTIME_TENSOR_H

#include "runtime/support/DType.h"
#include "runtime/support/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace trc::rt {

constexpr size_t kAlignment = 64;

class AlignedBuffer {
public:
  AlignedBuffer() = default;
  ~AlignedBuffer() { reset(); }
  AlignedBuffer(AlignedBuffer &&other) noexcept { *this = std::move(other); }
  AlignedBuffer &operator=(AlignedBuffer &&other) noexcept;
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(const AlignedBuffer &) = delete;

  // Allocates `bytes` bytes (64-byte aligned, zero-filled), replacing any
  // previous block. Fails with a message when memory is exhausted.
  Status allocate(size_t bytes);
  void reset();

  void *data() { return data_; }
  const void *data() const { return data_; }
  size_t size() const { return size_; }

private:
  void *data_ = nullptr;
  size_t size_ = 0;
};

struct HostTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  AlignedBuffer buffer;

  // Allocates a zero-filled buffer for `dtype` and `shape`; fails on a shape
  // over the element cap or when memory is exhausted.
  Status allocate(DType dtype, std::vector<int64_t> shape);
  int64_t numElements() const;
  size_t byteSize() const { return buffer.size(); }
  void *data() { return buffer.data(); }
  const void *data() const { return buffer.data(); }
  template <typename T> T *as() { return static_cast<T *>(buffer.data()); }
  template <typename T> const T *as() const {
    return static_cast<const T *>(buffer.data());
  }
};

// A tensor with its name (checkpoints, .npz arrays).
struct NamedTensor {
  std::string name;
  HostTensor tensor;
};

} // namespace trc::rt

#endif // TRC_RUNTIME_TENSOR_H
