//===- FakeCudaDriver.cpp - a CPU stand-in for libcuda.so.1 (tests only) ----===//
//
// Built as fake-cuda/libcuda.so.1 and put first on LD_LIBRARY_PATH by the
// ctests `trc-*-tests-fake-cuda`, so that the GPU tests
// (CudaBackendTest.cpp) exercise the CUDA backend's host side in CI: the
// driver calls it makes, in which order, with which arguments, its error
// paths, graph capture and replay, and (with FakeCublasLt.cpp) the cuBLASLt
// descriptors it builds. It cannot tell whether real kernels or a real
// cuBLASLt behave; that needs a GPU (scripts/gpu-bundle.sh).
//
// One device (compute capability 9.0, "trc fake CUDA device"); primary
// contexts; device memory is 256-byte-aligned host memory and every copy,
// memset, kernel and matmul access is checked to lie inside one live
// allocation (out of bounds: CUDA_ERROR_INVALID_VALUE for copies, a sticky
// CUDA_ERROR_ILLEGAL_ADDRESS for kernels, as a GPU would). Modules: a cubin
// (ELF) or PTX text (cuModuleLoadData[Ex]; PTX without `.entry` fails with a
// JIT log); a function exists when its name is in the image. The test
// kernels trc_test_axpy / trc_test_bias (TestCudaArtifact.h) run on the CPU
// over grid x block threads; any other kernel (a compiled model's) runs as
// nothing, so that a whole training step's host side runs against this
// driver (the GPU bundle's dry run, scripts/gpu_bundle/device_run.py). Launches check the block
// size (at most 1024 threads). Streams run work at once, or record it while
// captured (thread-local capture); graphs replay the recording; a
// synchronization or a copy to or from pageable host memory during a
// capture invalidates it, and cuStreamEndCapture then fails, as CUDA's do
// (page-locked memory from cuMemHostAlloc may be copied). Events order
// nothing (work already ran) except in a capture, as CUDA's do: a stream
// that waits for an event recorded in a capture joins it (its work is
// recorded too), and cuStreamEndCapture fails with
// CUDA_ERROR_STREAM_CAPTURE_UNJOINED when a joined stream did work after
// the last event of it the capture waited for. trc_fake_cuda_trace() lists
// the event, launch, pinned-memory and asynchronous-copy calls (and the fake
// NCCL's, FakeCuda.h's note) in order (streams
// and events numbered from 1 as created), for tests of the order of the
// runtime's calls. Calls that need cuInit before it return
// CUDA_ERROR_NOT_INITIALIZED.
//
//===----------------------------------------------------------------------===//
#include "FakeCuda.h"

#include "runtime/backends/cuda/CudaAbi.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace abi = trc::rt::cudaabi;

namespace {

constexpr int kInvalidValue = 1, kOutOfMemory = 2, kNotInitialized = 3, kInvalidImage = 200,
              kInvalidContext = 201, kInvalidPtx = 218, kInvalidHandle = 400,
              kIllegalAddress = 700, kStreamCaptureUnsupported = 900,
              kStreamCaptureUnjoined = 904;

struct Kernel {
  std::string name;
};
Kernel gAxpy{"trc_test_axpy"}, gBias{"trc_test_bias"};
Kernel gUnemulated{"(a kernel this driver does not run)"};

struct Module {
  std::string image;
};
struct Stream {
  std::vector<std::function<void()>> *capture = nullptr;
  bool invalidated = false; // an illegal call during the capture (origin's)
  Stream *origin = nullptr; // the stream whose capture this one is in
  size_t work = 0;          // work enqueued so far
  size_t rejoined = 0;      // work the capture has waited for (a joined stream)
  int id = 0;
};
struct Event {
  Stream *stream = nullptr; // where it was last recorded
  size_t mark = 0;          // that stream's work then
  bool captured = false;    // recorded in a capture
  int id = 0;
};
struct Graph {
  std::vector<std::function<void()>> work;
};

std::mutex gMutex; // allocations, the sticky error and the trace
std::map<uintptr_t, size_t> gAllocations;
std::map<uintptr_t, size_t> gPinned; // cuMemHostAlloc
std::vector<Stream *> gStreams;
std::vector<std::string> gTrace;
std::string gTraceText;
int gStreamIds = 0, gEventIds = 0;

void trace(const std::string &line) {
  std::lock_guard<std::mutex> lock(gMutex);
  gTrace.push_back(line);
}

bool pinnedLocked(uintptr_t p, size_t bytes) {
  auto it = gPinned.upper_bound(p);
  if (it == gPinned.begin())
    return false;
  --it;
  return p >= it->first && p - it->first <= it->second && bytes <= it->second - (p - it->first);
}

bool pinned(const void *p, size_t bytes) {
  std::lock_guard<std::mutex> lock(gMutex);
  return pinnedLocked(reinterpret_cast<uintptr_t>(p), bytes);
}

std::string name(const Stream *s) { return s ? "s" + std::to_string(s->id) : "s0"; }
int gSticky = 0;
bool gInitialized = false;
int gPrimaryContext = 0; // its address is the context handle
int gRetains = 0;
thread_local void *tCurrent = nullptr;

bool inBoundsLocked(uintptr_t p, size_t bytes) {
  auto it = gAllocations.upper_bound(p);
  if (it == gAllocations.begin())
    return false;
  --it;
  return p >= it->first && p - it->first <= it->second && bytes <= it->second - (p - it->first);
}

int ready() {
  if (!gInitialized)
    return kNotInitialized;
  if (!tCurrent)
    return kInvalidContext;
  return abi::kSuccess;
}

// The test kernels, run on the CPU over every thread of the launch.
struct Dim {
  unsigned x, y, z;
};
void runKernel(const Kernel *k, Dim grid, Dim block, std::vector<uint64_t> params) {
  uint64_t threads = uint64_t(grid.x) * grid.y * grid.z * block.x * block.y * block.z;
  auto f32 = [](uint64_t bits) {
    float f;
    uint32_t b = uint32_t(bits);
    std::memcpy(&f, &b, 4);
    return f;
  };
  auto at = [](uint64_t base, uint64_t i) -> float * {
    return reinterpret_cast<float *>(uintptr_t(base + 4 * i));
  };
  auto check = [&](uint64_t base, uint64_t count, const char *what) {
    if (count == 0)
      return true;
    std::lock_guard<std::mutex> lock(gMutex);
    if (inBoundsLocked(uintptr_t(base), size_t(count) * 4))
      return true;
    if (!gSticky)
      gSticky = kIllegalAddress;
    (void)what;
    return false;
  };
  if (k == &gAxpy) {
    uint64_t x = params[0], y = params[1], z = params[2], n = uint32_t(params[4]);
    float a = f32(params[3]);
    uint64_t count = std::min(n, threads);
    if (!check(x, count, "x") || !check(y, count, "y") || !check(z, count, "z"))
      return;
    for (uint64_t i = 0; i < count; ++i)
      *at(z, i) = std::fma(a, *at(x, i), *at(y, i)); // the PTX's fma.rn.f32
  } else {
    uint64_t t = params[0], b = params[1], y = params[2];
    uint32_t cols = uint32_t(params[3]), n = uint32_t(params[4]);
    uint64_t count = std::min<uint64_t>(n, threads);
    if (cols == 0 || !check(t, count, "t") || !check(b, std::min<uint64_t>(cols, count), "b") ||
        !check(y, count, "y"))
      return;
    for (uint64_t i = 0; i < count; ++i)
      *at(y, i) = *at(t, i) + *at(b, i % cols);
  }
}

} // namespace

namespace trc::fakecuda {

void enqueue(void *stream, std::function<void()> work) {
  auto *s = static_cast<Stream *>(stream);
  if (s)
    ++s->work;
  if (s && s->capture)
    s->capture->push_back(std::move(work));
  else
    work();
}

bool inBounds(const void *p, size_t bytes) {
  std::lock_guard<std::mutex> lock(gMutex);
  return inBoundsLocked(reinterpret_cast<uintptr_t>(p), bytes);
}

void illegalAddress(const char *) {
  std::lock_guard<std::mutex> lock(gMutex);
  if (!gSticky)
    gSticky = kIllegalAddress;
}

void note(const std::string &line) { trace(line); }

std::string streamName(void *stream) { return name(static_cast<Stream *>(stream)); }

} // namespace trc::fakecuda

using trc::fakecuda::enqueue;

extern "C" {

int cuInit(unsigned flags) {
  if (flags != 0)
    return kInvalidValue;
  gInitialized = true;
  return abi::kSuccess;
}
int cuDriverGetVersion(int *v) {
  *v = 13000;
  return abi::kSuccess;
}
int cuGetErrorString(int rc, const char **text) {
  static const std::map<int, const char *> texts = {
      {0, "no error"}, {1, "invalid argument"}, {2, "out of memory"},
      {3, "initialization error"}, {200, "device kernel image is invalid"},
      {201, "invalid device context"}, {218, "a PTX JIT compilation failed"},
      {400, "invalid resource handle"}, {500, "named symbol not found"},
      {700, "an illegal memory access was encountered"},
      {900, "operation not permitted when stream is capturing"},
      {901, "operation failed due to a previous error during capture"},
      {904, "capture was not joined back into the origin stream"}};
  auto it = texts.find(rc);
  if (it == texts.end())
    return kInvalidValue;
  *text = it->second;
  return abi::kSuccess;
}
int cuGetErrorName(int rc, const char **name) {
  static const std::map<int, const char *> names = {
      {0, "CUDA_SUCCESS"}, {1, "CUDA_ERROR_INVALID_VALUE"}, {2, "CUDA_ERROR_OUT_OF_MEMORY"},
      {3, "CUDA_ERROR_NOT_INITIALIZED"}, {200, "CUDA_ERROR_INVALID_IMAGE"},
      {201, "CUDA_ERROR_INVALID_CONTEXT"}, {218, "CUDA_ERROR_INVALID_PTX"},
      {400, "CUDA_ERROR_INVALID_HANDLE"}, {500, "CUDA_ERROR_NOT_FOUND"},
      {700, "CUDA_ERROR_ILLEGAL_ADDRESS"}, {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"},
      {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"},
      {904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED"}};
  auto it = names.find(rc);
  if (it == names.end())
    return kInvalidValue;
  *name = it->second;
  return abi::kSuccess;
}
int cuDeviceGetCount(int *count) {
  if (!gInitialized)
    return kNotInitialized;
  *count = 1;
  return abi::kSuccess;
}
int cuDeviceGet(int *device, int ordinal) {
  if (!gInitialized)
    return kNotInitialized;
  if (ordinal != 0)
    return kInvalidValue;
  *device = 0;
  return abi::kSuccess;
}
int cuDeviceGetAttribute(int *value, int attr, int device) {
  if (device != 0)
    return kInvalidValue;
  switch (attr) {
  case abi::kAttrComputeCapabilityMajor: *value = 9; break;
  case abi::kAttrComputeCapabilityMinor: *value = 0; break;
  case abi::kAttrMultiprocessorCount: *value = 132; break;
  case abi::kAttrPciBusId: *value = 0x3b; break; // 00000000:3B:00.0, FakeNvml.cpp's GPU
  case abi::kAttrMaxSharedMemoryPerBlockOptin: *value = 232448; break;
  default: *value = 0;
  }
  return abi::kSuccess;
}
int cuDeviceGetName(char *name, int len, int device) {
  if (device != 0 || len <= 0)
    return kInvalidValue;
  std::strncpy(name, "trc fake CUDA device (tests only)", size_t(len) - 1);
  name[len - 1] = '\0';
  return abi::kSuccess;
}
int cuDeviceTotalMem_v2(size_t *bytes, int device) {
  if (device != 0)
    return kInvalidValue;
  *bytes = size_t(80) << 30;
  return abi::kSuccess;
}
int cuDevicePrimaryCtxRetain(void **ctx, int device) {
  if (!gInitialized)
    return kNotInitialized;
  if (device != 0)
    return kInvalidValue;
  ++gRetains;
  *ctx = &gPrimaryContext;
  return abi::kSuccess;
}
int cuDevicePrimaryCtxRelease_v2(int device) {
  if (device != 0 || gRetains == 0)
    return kInvalidValue;
  --gRetains;
  return abi::kSuccess;
}
int cuCtxSetCurrent(void *ctx) {
  if (ctx && ctx != &gPrimaryContext)
    return kInvalidContext;
  tCurrent = ctx;
  return abi::kSuccess;
}
int cuMemAlloc_v2(unsigned long long *p, size_t bytes) {
  if (int rc = ready())
    return rc;
  if (bytes == 0)
    return kInvalidValue;
  if (bytes > (size_t(80) << 30))
    return kOutOfMemory;
  size_t rounded = (bytes + 255) / 256 * 256;
  void *mem = std::aligned_alloc(256, rounded);
  if (!mem)
    return kOutOfMemory;
  std::memset(mem, 0xa5, rounded); // not zero: the runtime must zero-fill
  std::lock_guard<std::mutex> lock(gMutex);
  gAllocations[reinterpret_cast<uintptr_t>(mem)] = bytes;
  *p = reinterpret_cast<uintptr_t>(mem);
  return abi::kSuccess;
}
int cuMemFree_v2(unsigned long long p) {
  if (int rc = ready())
    return rc;
  std::lock_guard<std::mutex> lock(gMutex);
  auto it = gAllocations.find(uintptr_t(p));
  if (it == gAllocations.end())
    return kInvalidValue;
  gAllocations.erase(it);
  std::free(reinterpret_cast<void *>(uintptr_t(p)));
  return abi::kSuccess;
}

static int copy(void *dst, const void *src, size_t bytes, bool dstDevice, bool srcDevice,
                void *stream, bool async) {
  if (int rc = ready())
    return rc;
  if ((dstDevice && !trc::fakecuda::inBounds(dst, bytes)) ||
      (srcDevice && !trc::fakecuda::inBounds(src, bytes)))
    return kInvalidValue;
  auto *s = static_cast<Stream *>(stream);
  // Pageable host memory in a capture would be read at replay time, which
  // the runtime never wants (page-locked memory is the copy engine's host
  // arena); a synchronous copy during a capture is illegal.
  bool pageable = (!dstDevice && !pinned(dst, bytes)) || (!srcDevice && !pinned(src, bytes));
  if (!async || (s && s->capture && pageable)) {
    if (s && s->capture) {
      (s->origin ? s->origin : s)->invalidated = true;
      return kStreamCaptureUnsupported;
    }
    std::memmove(dst, src, bytes);
    return abi::kSuccess;
  }
  if (!dstDevice || !srcDevice)
    trace(name(s) + (dstDevice ? " htod " : " dtoh ") + std::to_string(bytes));
  enqueue(stream, [=] { std::memmove(dst, src, bytes); });
  return abi::kSuccess;
}
int cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t bytes) {
  return copy(reinterpret_cast<void *>(uintptr_t(dst)), src, bytes, true, false, nullptr, false);
}
int cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t bytes) {
  return copy(dst, reinterpret_cast<void *>(uintptr_t(src)), bytes, false, true, nullptr, false);
}
int cuMemcpyDtoD_v2(unsigned long long dst, unsigned long long src, size_t bytes) {
  return copy(reinterpret_cast<void *>(uintptr_t(dst)), reinterpret_cast<void *>(uintptr_t(src)),
              bytes, true, true, nullptr, false);
}
int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void *src, size_t bytes, void *stream) {
  return copy(reinterpret_cast<void *>(uintptr_t(dst)), src, bytes, true, false, stream, true);
}
int cuMemcpyDtoHAsync_v2(void *dst, unsigned long long src, size_t bytes, void *stream) {
  return copy(dst, reinterpret_cast<void *>(uintptr_t(src)), bytes, false, true, stream, true);
}
int cuMemcpyDtoDAsync_v2(unsigned long long dst, unsigned long long src, size_t bytes,
                         void *stream) {
  return copy(reinterpret_cast<void *>(uintptr_t(dst)), reinterpret_cast<void *>(uintptr_t(src)),
              bytes, true, true, stream, true);
}
int cuMemsetD8_v2(unsigned long long dst, unsigned char value, size_t bytes) {
  if (int rc = ready())
    return rc;
  void *p = reinterpret_cast<void *>(uintptr_t(dst));
  if (!trc::fakecuda::inBounds(p, bytes))
    return kInvalidValue;
  std::memset(p, value, bytes);
  return abi::kSuccess;
}
int cuMemsetD8Async(unsigned long long dst, unsigned char value, size_t bytes, void *stream) {
  if (int rc = ready())
    return rc;
  void *p = reinterpret_cast<void *>(uintptr_t(dst));
  if (!trc::fakecuda::inBounds(p, bytes))
    return kInvalidValue;
  enqueue(stream, [=] { std::memset(p, value, bytes); });
  return abi::kSuccess;
}
int cuMemsetD2D8Async(unsigned long long dst, size_t pitch, unsigned char value, size_t width,
                      size_t height, void *stream) {
  if (int rc = ready())
    return rc;
  if (height > 1 && pitch < width)
    return kInvalidValue;
  if (height && width &&
      !trc::fakecuda::inBounds(reinterpret_cast<void *>(uintptr_t(dst)),
                               (height - 1) * pitch + width))
    return kInvalidValue;
  enqueue(stream, [=] {
    for (size_t r = 0; r < height; ++r)
      std::memset(reinterpret_cast<void *>(uintptr_t(dst + r * pitch)), value, width);
  });
  return abi::kSuccess;
}
int cuStreamCreate(void **stream, unsigned flags) {
  if (int rc = ready())
    return rc;
  if (flags > 1)
    return kInvalidValue;
  auto *s = new Stream();
  std::lock_guard<std::mutex> lock(gMutex);
  s->id = ++gStreamIds;
  gStreams.push_back(s);
  *stream = s;
  return abi::kSuccess;
}
int cuStreamDestroy_v2(void *stream) {
  auto *s = static_cast<Stream *>(stream);
  {
    std::lock_guard<std::mutex> lock(gMutex);
    gStreams.erase(std::remove(gStreams.begin(), gStreams.end(), s), gStreams.end());
  }
  delete s;
  return abi::kSuccess;
}
int cuMemHostAlloc(void **p, size_t bytes, unsigned flags) {
  if (int rc = ready())
    return rc;
  if (bytes == 0 || flags > 0xf)
    return kInvalidValue;
  size_t rounded = (bytes + 4095) / 4096 * 4096;
  void *mem = std::aligned_alloc(4096, rounded);
  if (!mem)
    return kOutOfMemory;
  std::memset(mem, 0xa5, rounded); // not zero: the runtime must zero-fill
  {
    std::lock_guard<std::mutex> lock(gMutex);
    gPinned[reinterpret_cast<uintptr_t>(mem)] = bytes;
  }
  trace("hostalloc " + std::to_string(bytes));
  *p = mem;
  return abi::kSuccess;
}
int cuMemFreeHost(void *p) {
  {
    std::lock_guard<std::mutex> lock(gMutex);
    auto it = gPinned.find(reinterpret_cast<uintptr_t>(p));
    if (it == gPinned.end())
      return kInvalidValue;
    gPinned.erase(it);
  }
  std::free(p);
  trace("freehost");
  return abi::kSuccess;
}
int cuEventCreate(void **event, unsigned flags) {
  if (int rc = ready())
    return rc;
  if (flags > 0xf)
    return kInvalidValue;
  auto *e = new Event();
  std::lock_guard<std::mutex> lock(gMutex);
  e->id = ++gEventIds;
  *event = e;
  return abi::kSuccess;
}
int cuEventDestroy_v2(void *event) {
  delete static_cast<Event *>(event);
  return abi::kSuccess;
}
int cuEventRecord(void *event, void *stream) {
  if (int rc = ready())
    return rc;
  auto *e = static_cast<Event *>(event);
  auto *s = static_cast<Stream *>(stream);
  if (!e)
    return kInvalidHandle;
  e->stream = s;
  e->mark = s ? s->work : 0;
  e->captured = s && s->capture;
  trace("record e" + std::to_string(e->id) + " on " + name(s));
  return abi::kSuccess;
}
int cuStreamWaitEvent(void *stream, void *event, unsigned flags) {
  if (int rc = ready())
    return rc;
  auto *s = static_cast<Stream *>(stream);
  auto *e = static_cast<Event *>(event);
  if (!e || flags > 1)
    return kInvalidHandle;
  trace(name(s) + " waits e" + std::to_string(e->id));
  if (!e->captured || !s || !e->stream)
    return abi::kSuccess; // the work it marks has run
  Stream *origin = e->stream->origin ? e->stream->origin : e->stream;
  if (!s->capture) { // a fork: s joins the capture
    s->capture = e->stream->capture;
    s->origin = origin;
    s->rejoined = s->work;
  }
  if (e->stream != s)
    e->stream->rejoined = std::max(e->stream->rejoined, e->mark);
  return abi::kSuccess;
}
// Work runs when enqueued: a stream or event is always done (the NCCL
// communicator polls them).
int cuStreamQuery(void *) {
  if (int rc = ready())
    return rc;
  return abi::kSuccess;
}
int cuEventQuery(void *event) {
  if (int rc = ready())
    return rc;
  return event ? abi::kSuccess : kInvalidHandle;
}
int cuStreamSynchronize(void *stream) {
  if (int rc = ready())
    return rc;
  auto *s = static_cast<Stream *>(stream);
  if (s && s->capture) {
    (s->origin ? s->origin : s)->invalidated = true;
    return kStreamCaptureUnsupported;
  }
  std::lock_guard<std::mutex> lock(gMutex);
  return gSticky;
}

static int loadModule(void **module, const void *image, char *log, size_t logBytes) {
  if (int rc = ready())
    return rc;
  const char *bytes = static_cast<const char *>(image);
  if (std::memcmp(bytes, "\x7f" "ELF", 4) == 0) {
    // A cubin: its size is in the ELF header (e_shoff + e_shnum * e_shentsize).
    uint64_t shoff;
    uint16_t shentsize, shnum;
    std::memcpy(&shoff, bytes + 0x28, 8);
    std::memcpy(&shentsize, bytes + 0x3a, 2);
    std::memcpy(&shnum, bytes + 0x3c, 2);
    *module = new Module{std::string(bytes, size_t(shoff + uint64_t(shnum) * shentsize))};
    return abi::kSuccess;
  }
  std::string text(bytes);
  if (text.find(".version") == std::string::npos || text.find(".entry") == std::string::npos) {
    if (log && logBytes)
      std::snprintf(log, logBytes, "fake JIT: line 1: not PTX (no .version or .entry)");
    return text.find(".version") == std::string::npos ? kInvalidImage : kInvalidPtx;
  }
  *module = new Module{text};
  return abi::kSuccess;
}
int cuModuleLoadData(void **module, const void *image) {
  return loadModule(module, image, nullptr, 0);
}
int cuModuleLoadDataEx(void **module, const void *image, unsigned count, int *options,
                       void **values) {
  char *log = nullptr;
  size_t logBytes = 0;
  for (unsigned i = 0; i < count; ++i) {
    if (options[i] == abi::kJitErrorLogBuffer)
      log = static_cast<char *>(values[i]);
    else if (options[i] == abi::kJitErrorLogBufferSizeBytes)
      logBytes = size_t(reinterpret_cast<uintptr_t>(values[i]));
  }
  return loadModule(module, image, log, logBytes);
}
int cuModuleUnload(void *module) {
  if (!module)
    return kInvalidHandle;
  delete static_cast<Module *>(module);
  return abi::kSuccess;
}
int cuModuleGetFunction(void **function, void *module, const char *name) {
  if (int rc = ready())
    return rc;
  auto *m = static_cast<Module *>(module);
  if (!m)
    return kInvalidHandle;
  bool present = m->image.find(std::string(".entry ") + name + "(") != std::string::npos ||
                 m->image.find(std::string(1, '\0') + name + std::string(1, '\0')) !=
                     std::string::npos;
  Kernel *k = std::strcmp(name, gAxpy.name.c_str()) == 0   ? &gAxpy
              : std::strcmp(name, gBias.name.c_str()) == 0 ? &gBias
                                                           : &gUnemulated;
  if (!present)
    return abi::kErrorNotFound;
  *function = k;
  return abi::kSuccess;
}
int cuFuncSetAttribute(void *function, int attr, int value) {
  if (!function)
    return kInvalidHandle;
  if (attr == abi::kFuncAttrMaxDynamicSharedSizeBytes && (value < 0 || value > 232448))
    return kInvalidValue;
  return abi::kSuccess;
}
int cuLaunchKernel(void *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                   unsigned by, unsigned bz, unsigned shared, void *stream, void **params,
                   void **extra) {
  if (int rc = ready())
    return rc;
  auto *k = static_cast<const Kernel *>(function);
  if (k != &gAxpy && k != &gBias && k != &gUnemulated)
    return kInvalidHandle;
  if (!gx || !gy || !gz || !bx || !by || !bz || uint64_t(bx) * by * bz > 1024 ||
      shared > 232448 || extra || !params)
    return kInvalidValue;
  trace("launch " + k->name + " on " + name(static_cast<Stream *>(stream)));
  if (k == &gUnemulated) { // its parameters' layout is unknown here: nothing to copy
    enqueue(stream, [] {});
    return abi::kSuccess;
  }
  // Parameters are copied at launch, as cuLaunchKernel does (graphs keep them).
  std::vector<uint64_t> values(5);
  for (int i = 0; i < 5; ++i) {
    size_t size = i < 3 ? 8 : 4;
    std::memcpy(&values[size_t(i)], params[i], size);
  }
  Dim grid{gx, gy, gz}, block{bx, by, bz};
  enqueue(stream, [=] { runKernel(k, grid, block, values); });
  return abi::kSuccess;
}
int cuStreamBeginCapture_v2(void *stream, int mode) {
  if (int rc = ready())
    return rc;
  auto *s = static_cast<Stream *>(stream);
  if (!s || s->capture || mode < 0 || mode > 2)
    return kInvalidValue;
  s->capture = new std::vector<std::function<void()>>();
  s->origin = nullptr;
  return abi::kSuccess;
}
int cuStreamEndCapture(void *stream, void **graph) {
  auto *s = static_cast<Stream *>(stream);
  if (!s || !s->capture || s->origin)
    return kInvalidValue;
  // Streams that joined the capture leave it; one with work the capture
  // never waited for is unjoined.
  bool unjoined = false;
  {
    std::lock_guard<std::mutex> lock(gMutex);
    for (Stream *joined : gStreams)
      if (joined != s && joined->origin == s) {
        unjoined |= joined->work > joined->rejoined;
        joined->capture = nullptr;
        joined->origin = nullptr;
      }
  }
  bool invalidated = s->invalidated;
  *graph = invalidated || unjoined ? nullptr : new Graph{std::move(*s->capture)};
  delete s->capture;
  s->capture = nullptr;
  s->invalidated = false;
  if (unjoined && !invalidated)
    return kStreamCaptureUnjoined;
  return invalidated ? abi::kErrorStreamCaptureInvalidated : abi::kSuccess;
}
int cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
  if (!graph || flags)
    return kInvalidValue;
  *exec = new Graph(*static_cast<Graph *>(graph));
  return abi::kSuccess;
}
int cuGraphLaunch(void *exec, void *stream) {
  if (int rc = ready())
    return rc;
  auto *g = static_cast<Graph *>(exec);
  if (!g)
    return kInvalidHandle;
  for (const auto &work : g->work)
    enqueue(stream, work);
  return abi::kSuccess;
}
int cuGraphDestroy(void *graph) {
  delete static_cast<Graph *>(graph);
  return abi::kSuccess;
}
int cuGraphExecDestroy(void *exec) {
  delete static_cast<Graph *>(exec);
  return abi::kSuccess;
}

// Test hooks (not CUDA): the trace described at the top, one call a line
// (valid until the next call), and clearing it.
const char *trc_fake_cuda_trace() {
  std::lock_guard<std::mutex> lock(gMutex);
  gTraceText.clear();
  for (const std::string &line : gTrace)
    gTraceText += line + "\n";
  return gTraceText.c_str();
}
void trc_fake_cuda_trace_clear() {
  std::lock_guard<std::mutex> lock(gMutex);
  gTrace.clear();
}

} // extern "C"
