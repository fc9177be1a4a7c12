//===- FakeCuda.h - what the fake driver shares with the fake cuBLASLt ------===//
//
// The fake CUDA driver (FakeCudaDriver.cpp, built as fake-cuda/libcuda.so.1),
// the fake cuBLASLt (FakeCublasLt.cpp, fake-cuda/libcublasLt.so.13) and the
// one-rank fake NCCL (FakeNccl.cpp, fake-nccl/libnccl.so.2) run
// the CUDA backend's host logic on the CPU for CI, which has no GPU: device
// memory is host memory, work enqueued on a stream runs at once (or is
// recorded while the stream is being captured, and runs when the graph is
// launched). See FakeCudaDriver.cpp for what is checked. NOT a CUDA
// implementation: only what the runtime and its tests use.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TESTS_FAKECUDA_H
#define TRC_RUNTIME_TESTS_FAKECUDA_H

#include <cstddef>
#include <functional>
#include <string>

namespace trc::fakecuda {

// Runs `work` on `stream` (now, or when the captured graph is launched).
void enqueue(void *stream, std::function<void()> work);
// Whether [p, p + bytes) lies inside one live allocation.
bool inBounds(const void *p, size_t bytes);
// Makes the next synchronization fail with CUDA_ERROR_ILLEGAL_ADDRESS.
void illegalAddress(const char *what);
// A line of trc_fake_cuda_trace() (the fake NCCL's calls), and a stream's
// name in it ("s2"; "s0" for the null stream).
void note(const std::string &line);
std::string streamName(void *stream);

} // namespace trc::fakecuda

#endif // TRC_RUNTIME_TESTS_FAKECUDA_H
