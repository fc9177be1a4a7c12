//===- Tensor.cpp - 64-byte-aligned host buffers and tensors ----------------===//
//
// AlignedBuffer over aligned_alloc (sizes rounded up to 64 bytes, at least
// one block), and HostTensor allocation with the element cap (see Tensor.h).
//
//===----------------------------------------------------------------------===//
#include "runtime/support/Tensor.h"

#include <cstdlib>
#include <cstring>

namespace trc::rt {

AlignedBuffer &AlignedBuffer::operator=(AlignedBuffer &&other) noexcept {
  if (this != &other) {
    reset();
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

Status AlignedBuffer::allocate(size_t bytes) {
  reset();
  if (bytes > SIZE_MAX - kAlignment)
    return Status::error("cannot allocate " + std::to_string(bytes) +
                         " bytes: out of memory");
  size_t rounded = bytes == 0 ? kAlignment
                              : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void *p = std::aligned_alloc(kAlignment, rounded);
  if (!p)
    return Status::error("cannot allocate " + std::to_string(bytes) +
                         " bytes: out of memory");
  std::memset(p, 0, rounded);
  data_ = p;
  size_ = bytes;
  return Status::success();
}

void AlignedBuffer::reset() {
  std::free(data_);
  data_ = nullptr;
  size_ = 0;
}

Status HostTensor::allocate(DType newDtype, std::vector<int64_t> newShape) {
  int64_t count = 0;
  if (!elementCount(newShape, count))
    return Status::error("shape " + formatShape(newShape) +
                         " is invalid or has more than 2^40 elements");
  dtype = newDtype;
  shape = std::move(newShape);
  return buffer.allocate(size_t(count) * dtypeSize(dtype));
}

int64_t HostTensor::numElements() const {
  int64_t count = 0;
  return elementCount(shape, count) ? count : 0;
}

} // namespace trc::rt
