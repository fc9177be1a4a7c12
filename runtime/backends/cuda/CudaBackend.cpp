//===- CudaBackend.cpp - the CUDA device backend ----------------------------===//
//
// See CudaBackend.h. Also the extern "C" entries compiled programs call:
// trc_rt_cuda_launch and trc_rt_cublaslt_matmul_<t>, which forward to the
// current backend (the one whose run is in progress) and record errors
// there, since a C entry cannot return a Status.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/CudaBackend.h"

#include "runtime/backends/Offload.h"
#include "runtime/support/LaunchEnvironment.h"
#include "runtime/support/Parse.h"

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace trc::rt {

namespace {

std::atomic<CudaBackend *> gCurrent{nullptr};

// Errors of entries called while no run was in progress; the next run of
// any CUDA backend reports them.
std::mutex gStrayMutex;
std::string gStrayError;

void recordStray(const std::string &message) {
  std::lock_guard<std::mutex> lock(gStrayMutex);
  if (gStrayError.empty())
    gStrayError = message + " (called outside a run of the CUDA backend)";
}

std::string takeStray() {
  std::lock_guard<std::mutex> lock(gStrayMutex);
  std::string s;
  s.swap(gStrayError);
  return s;
}

cudaabi::DevicePtr devicePtr(const void *p) {
  return cudaabi::DevicePtr(reinterpret_cast<uintptr_t>(p));
}

// An environment switch: unset -> fallback; "0"/"1" -> false/true; else
// an error naming the variable.
StatusOr<bool> readSwitch(const char *name, bool fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  if (std::strcmp(v, "0") == 0 || std::strcmp(v, "1") == 0)
    return v[0] == '1';
  return Status::error(std::string(name) + " must be 0 or 1, got '" +
                       std::string(v).substr(0, 32) + "'");
}

} // namespace

bool cudaDevicePresent(std::string &why) {
  StatusOr<int> count = cudaDeviceCount();
  if (!count.ok()) {
    why = std::string(count.status().message());
    return false;
  }
  if (*count == 0) {
    why = "no CUDA device is visible (CUDA_VISIBLE_DEVICES?)";
    return false;
  }
  return true;
}

CudaBackend *CudaBackend::current() { return gCurrent.load(); }

StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::create(int ordinal) {
  // Keeps the program entries linked (see cudaExports).
  (void)cudaExports();
  (void)offloadExports();
  StatusOr<const CudaDriver *> loaded = loadCudaDriver();
  if (!loaded.ok())
    return loaded.status();
  const CudaDriver *api = *loaded;
  int count = 0;
  if (Status s = cudaCheck(*api, "cuDeviceGetCount", api->DeviceGetCount(&count)); !s)
    return s;
  if (count == 0)
    return Status::error("no CUDA device is visible (CUDA_VISIBLE_DEVICES?)");

  StatusOr<LaunchEnvironment> launch = readLaunchEnvironment();
  if (!launch.ok())
    return launch.status();
  const LaunchEnvironment &env = *launch;
  if (ordinal < 0) {
    const char *chosen = std::getenv("TRC_CUDA_DEVICE");
    if (chosen && *chosen) {
      std::optional<uint64_t> v = parseUint64(chosen, uint64_t(count - 1));
      if (!v)
        return Status::error("TRC_CUDA_DEVICE='" + std::string(chosen).substr(0, 32) +
                             "' is not a device ordinal (0.." + std::to_string(count - 1) +
                             " are visible)");
      ordinal = int(*v);
    } else {
      ordinal = env.localRank % count;
    }
  } else if (ordinal >= count) {
    return Status::error("CUDA device " + std::to_string(ordinal) + " does not exist (0.." +
                         std::to_string(count - 1) + " are visible)");
  }

  std::unique_ptr<CudaBackend> b(new CudaBackend());
  b->driver_ = api;
  b->ordinal_ = ordinal;
  std::string where = "CUDA device " + std::to_string(ordinal) + ": ";
  if (Status s = cudaCheck(*api, "cuDeviceGet", api->DeviceGet(&b->device_, ordinal)); !s)
    return s.withPrefix(where);
  if (Status s = cudaCheck(*api, "cuDevicePrimaryCtxRetain",
                           api->DevicePrimaryCtxRetain(&b->ctx_, b->device_));
      !s) {
    b->ctx_ = nullptr;
    return s.withPrefix(where);
  }
  if (Status s = b->makeCurrent(); !s)
    return s.withPrefix(where);
  if (Status s = cudaCheck(*api, "cuStreamCreate",
                           api->StreamCreate(&b->stream_, cudaabi::kStreamNonBlocking));
      !s) {
    b->stream_ = nullptr;
    return s.withPrefix(where);
  }
  char name[256] = {0};
  if (api->DeviceGetName(name, int(sizeof name) - 1, b->device_) == cudaabi::kSuccess)
    b->name_ = name;
  auto attribute = [&](int attr, int &value, const char *what) {
    return cudaCheck(*api, what, api->DeviceGetAttribute(&value, attr, b->device_));
  };
  if (Status s = attribute(cudaabi::kAttrComputeCapabilityMajor, b->major_,
                           "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MAJOR)");
      !s)
    return s.withPrefix(where);
  if (Status s = attribute(cudaabi::kAttrComputeCapabilityMinor, b->minor_,
                           "cuDeviceGetAttribute(COMPUTE_CAPABILITY_MINOR)");
      !s)
    return s.withPrefix(where);
  (void)attribute(cudaabi::kAttrMultiprocessorCount, b->sms_,
                  "cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)");
  int domain = 0, bus = 0, slot = 0;
  if (attribute(cudaabi::kAttrPciDomainId, domain, "").ok() &&
      attribute(cudaabi::kAttrPciBusId, bus, "").ok() &&
      attribute(cudaabi::kAttrPciDeviceId, slot, "").ok()) {
    char id[32];
    std::snprintf(id, sizeof id, "%08X:%02X:%02X.0", unsigned(domain), unsigned(bus),
                  unsigned(slot));
    b->pciBusId_ = id;
  }
  (void)api->DeviceTotalMem(&b->totalMemory_, b->device_);
  (void)api->DriverGetVersion(&b->driverVersion_);

  StatusOr<bool> preferPtx = readSwitch("TRC_CUDA_PREFER_PTX", false);
  if (!preferPtx.ok())
    return preferPtx.status();
  b->preferPtx_ = *preferPtx;
  StatusOr<bool> graphs = readSwitch("TRC_CUDA_GRAPHS", true);
  if (!graphs.ok())
    return graphs.status();
  if (!*graphs) {
    b->graphs_ = false;
    b->graphNote_ = "turned off by TRC_CUDA_GRAPHS=0";
  } else if (!api->hasGraphs()) {
    b->graphs_ = false;
    b->graphNote_ = "the CUDA driver has no graph API (CUDA 11.4 or newer needed)";
  } else if (env.multiProcess()) {
    b->graphs_ = false;
    b->graphNote_ = "off in multi-process runs: the NCCL communicator enqueues "
                    "collectives on its own stream";
  }
  // See CudaBackend.h: collectives must find their inputs finished (until
  // the communicators follow the stream).
  b->synchronous_ = env.multiProcess();
  return b;
}

CudaBackend::~CudaBackend() {
  if (gCurrent.load() == this)
    gCurrent.store(nullptr);
  if (!driver_ || !ctx_)
    return;
  const CudaDriver &api = *driver_;
  api.CtxSetCurrent(ctx_);
  if (stream_)
    api.StreamSynchronize(stream_);
  dropGraph();
  cublasLt_.reset();
  copyEngine_.reset();
  for (auto &entry : modules_)
    if (entry.second.module)
      api.ModuleUnload(entry.second.module);
  modules_.clear();
  if (stream_)
    api.StreamDestroy(stream_);
  api.DevicePrimaryCtxRelease(device_);
}

std::string CudaBackend::describe() const {
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB", double(totalMemory_) / double(1 << 30));
  return (name_.empty() ? std::string("CUDA device") : name_) + " (device " +
         std::to_string(ordinal_) + ", sm_" + std::to_string(major_) +
         std::to_string(minor_) + ", " + std::to_string(sms_) + " SMs, " + memory +
         "), driver " + std::to_string(driverVersion_ / 1000) + "." +
         std::to_string(driverVersion_ % 1000 / 10);
}

Status CudaBackend::makeCurrent() const {
  return cudaCheck(*driver_, "cuCtxSetCurrent", driver_->CtxSetCurrent(ctx_));
}

Status CudaBackend::sync(const char *when) {
  Status s = cudaCheck(*driver_, "cuStreamSynchronize", driver_->StreamSynchronize(stream_));
  return s.withPrefix(std::string(when));
}

// --- memory -----------------------------------------------------------------

StatusOr<void *> CudaBackend::allocate(size_t bytes) {
  if (bytes > SIZE_MAX - 64)
    return Status::error("cannot allocate " + std::to_string(bytes) +
                         " bytes of CUDA device memory: out of memory");
  size_t rounded = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
  if (Status s = makeCurrent(); !s)
    return s;
  cudaabi::DevicePtr p = 0;
  int rc = driver_->MemAlloc(&p, rounded);
  if (rc != cudaabi::kSuccess)
    return Status::error("cannot allocate " + std::to_string(bytes) + " bytes on " +
                         (name_.empty() ? "the CUDA device" : name_) + " (device " +
                         std::to_string(ordinal_) + "): cuMemAlloc: " +
                         cudaResultString(*driver_, rc));
  // Zero-filled on the backend's stream, then waited for, so every later
  // use (on any stream) sees zeros.
  Status s = cudaCheck(*driver_, "cuMemsetD8Async",
                       driver_->MemsetD8Async(p, 0, rounded, stream_));
  if (s)
    s = sync("zero-filling a new buffer: ");
  if (!s) {
    driver_->MemFree(p);
    return s;
  }
  return reinterpret_cast<void *>(uintptr_t(p));
}

void CudaBackend::deallocate(void *ptr) {
  if (!ptr || !driver_)
    return;
  // Nothing queued may still use it.
  driver_->CtxSetCurrent(ctx_);
  driver_->StreamSynchronize(stream_);
  driver_->MemFree(devicePtr(ptr));
}

Status CudaBackend::copyToDevice(void *dst, const void *src, size_t bytes) {
  if (!bytes)
    return Status::success();
  if (Status s = makeCurrent(); !s)
    return s;
  if (Status s = cudaCheck(*driver_, "cuMemcpyHtoDAsync",
                           driver_->MemcpyHtoDAsync(devicePtr(dst), src, bytes, stream_));
      !s)
    return s;
  return sync("copy to the device: ");
}

Status CudaBackend::copyToHost(void *dst, const void *src, size_t bytes) {
  if (!bytes)
    return Status::success();
  if (Status s = makeCurrent(); !s)
    return s;
  if (Status s = cudaCheck(*driver_, "cuMemcpyDtoHAsync",
                           driver_->MemcpyDtoHAsync(dst, devicePtr(src), bytes, stream_));
      !s)
    return s;
  return sync("copy to the host: ");
}

Status CudaBackend::copyOnDevice(void *dst, const void *src, size_t bytes) {
  if (!bytes)
    return Status::success();
  if (Status s = makeCurrent(); !s)
    return s;
  if (Status s = cudaCheck(*driver_, "cuMemcpyDtoDAsync",
                           driver_->MemcpyDtoDAsync(devicePtr(dst), devicePtr(src), bytes,
                                                    stream_));
      !s)
    return s;
  return sync("copy on the device: ");
}

StatusOr<void *> CudaBackend::allocateHost(size_t bytes) {
  if (bytes > SIZE_MAX - 64)
    return Status::error("cannot allocate " + std::to_string(bytes) +
                         " bytes of page-locked host memory: out of memory");
  size_t rounded = bytes == 0 ? 64 : (bytes + 63) / 64 * 64;
  if (Status s = makeCurrent(); !s)
    return s;
  void *p = nullptr;
  int rc = driver_->MemHostAlloc(&p, rounded, 0);
  if (rc != cudaabi::kSuccess || !p)
    return Status::error("cannot allocate " + std::to_string(bytes) +
                         " bytes of page-locked host memory (the host arena of offloaded "
                         "activations): cuMemHostAlloc: " +
                         cudaResultString(*driver_, rc));
  std::memset(p, 0, rounded); // page-aligned by the driver
  return p;
}

void CudaBackend::deallocateHost(void *ptr) {
  if (!ptr || !driver_)
    return;
  // No copy queued may still use it.
  driver_->CtxSetCurrent(ctx_);
  driver_->StreamSynchronize(stream_);
  if (copyEngine_)
    copyEngine_->drain();
  driver_->MemFreeHost(ptr);
}

StatusOr<CopyEngine *> CudaBackend::copyEngine() {
  if (!copyEngine_) {
    if (Status s = makeCurrent(); !s)
      return s;
    StatusOr<std::unique_ptr<CudaCopyEngine>> engine = CudaCopyEngine::create(*driver_, stream_);
    if (!engine.ok())
      return engine.status();
    copyEngine_ = *std::move(engine);
  }
  return copyEngine_.get();
}

// --- kernels ----------------------------------------------------------------

void CudaBackend::dropGraph() {
  if (exec_)
    driver_->GraphExecDestroy(exec_);
  exec_ = nullptr;
  graphKey_ = RunKey();
}

void CudaBackend::dropUnregisteredModules() {
  for (auto it = modules_.begin(); it != modules_.end();) {
    if (isCudaProgramRegistered(it->first)) {
      ++it;
      continue;
    }
    if (graphKey_.programId == it->first)
      dropGraph();
    if (havePlain_ && plainKey_.programId == it->first)
      havePlain_ = false;
    if (it->second.module)
      driver_->ModuleUnload(it->second.module);
    it = modules_.erase(it);
  }
}

const CudaImage *CudaBackend::loadedImage(const CudaProgram &program) const {
  auto it = modules_.find(program.id);
  return it == modules_.end() ? nullptr : it->second.image;
}

StatusOr<CudaBackend::LoadedModule *>
CudaBackend::ensureModule(const std::shared_ptr<const CudaProgram> &program) {
  auto it = modules_.find(program->id);
  if (it != modules_.end())
    return &it->second;
  dropUnregisteredModules();
  LoadedModule loaded;
  loaded.programId = program->id;
  loaded.program = program;
  if (!program->kernels.empty()) {
    StatusOr<const CudaImage *> selected =
        selectCudaImage(*program, major_, minor_, preferPtx_);
    if (!selected.ok())
      return Status(selected.status()).withPrefix(program->origin + ": ");
    const CudaImage *image = *selected;
    std::string what = program->origin + ": cannot load " + image->file + " (" +
                       (image->ptx ? "PTX for " + image->chip + ", compiled by the driver for sm_"
                                   : image->chip + " cubin, on sm_") +
                       std::to_string(major_) + std::to_string(minor_) + "): ";
    int rc = cudaabi::kSuccess;
    if (image->ptx) {
      // PTX is text that must end with a NUL; the JIT's log explains a failure.
      std::string text = image->bytes;
      text.push_back('\0');
      char log[8192] = {0};
      int options[2] = {cudaabi::kJitErrorLogBuffer, cudaabi::kJitErrorLogBufferSizeBytes};
      void *values[2] = {log, reinterpret_cast<void *>(uintptr_t(sizeof log - 1))};
      rc = driver_->ModuleLoadDataEx(&loaded.module, text.data(), 2, options, values);
      if (rc != cudaabi::kSuccess)
        return Status::error(what + "cuModuleLoadDataEx: " + cudaResultString(*driver_, rc) +
                             (log[0] ? std::string(": ") + log : std::string()));
    } else {
      rc = driver_->ModuleLoadData(&loaded.module, image->bytes.data());
      if (rc != cudaabi::kSuccess)
        return Status::error(what + "cuModuleLoadData: " + cudaResultString(*driver_, rc));
    }
    loaded.image = image;
    loaded.functions.resize(program->kernels.size());
    loaded.sharedConfigured.assign(program->kernels.size(), 0);
    for (size_t i = 0; i < program->kernels.size(); ++i) {
      rc = driver_->ModuleGetFunction(&loaded.functions[i], loaded.module,
                                      program->kernels[i].c_str());
      if (rc != cudaabi::kSuccess) {
        driver_->ModuleUnload(loaded.module);
        return Status::error(program->origin + ": kernel " + std::to_string(i) + " '" +
                             program->kernels[i] + "' of the manifest is not in " +
                             image->file + " (cuModuleGetFunction: " +
                             cudaResultString(*driver_, rc) + ")");
      }
    }
  }
  auto [inserted, ok] = modules_.emplace(program->id, std::move(loaded));
  (void)ok;
  return &inserted->second;
}

void CudaBackend::recordError(const std::string &message) {
  if (error_.empty())
    error_ = message;
}

Status CudaBackend::takeError() {
  if (error_.empty())
    return Status::success();
  Status s = Status::error(error_);
  error_.clear();
  return s;
}

void CudaBackend::launch(int32_t kernel, const int64_t grid[3], const int64_t block[3],
                         int32_t sharedBytes, void **params, int32_t numParams) {
  if (!error_.empty())
    return; // the step already failed; its later launches would only cascade
  std::string what = "trc_rt_cuda_launch: kernel " + std::to_string(kernel);
  if (!running_ || running_->functions.empty()) {
    recordError(what + ": the running program has no kernels (no cuda artifact with a "
                       "kernel table is loaded for this entry point)");
    return;
  }
  if (kernel < 0 || size_t(kernel) >= running_->functions.size()) {
    recordError(what + ": no such kernel (the artifact has " +
                std::to_string(running_->functions.size()) + ")");
    return;
  }
  const CudaProgram &program = *running_->program;
  what += " (" + program.kernels[size_t(kernel)] + ")";
  unsigned dims[6];
  for (int i = 0; i < 3; ++i) {
    if (grid[i] < 1 || grid[i] > int64_t(UINT_MAX) || block[i] < 1 ||
        block[i] > int64_t(UINT_MAX)) {
      recordError(what + ": bad launch shape, grid (" + std::to_string(grid[0]) + ", " +
                  std::to_string(grid[1]) + ", " + std::to_string(grid[2]) + "), block (" +
                  std::to_string(block[0]) + ", " + std::to_string(block[1]) + ", " +
                  std::to_string(block[2]) + ")");
      return;
    }
    dims[i] = unsigned(grid[i]);
    dims[3 + i] = unsigned(block[i]);
  }
  if (sharedBytes < 0 || numParams < 0 || (numParams > 0 && !params)) {
    recordError(what + ": bad arguments (shared bytes " + std::to_string(sharedBytes) +
                ", " + std::to_string(numParams) + " parameters" +
                (params ? "" : ", no parameter array") + ")");
    return;
  }
  cudaabi::Function f = running_->functions[size_t(kernel)];
  // More than 48 KiB of dynamic shared memory needs an opt-in per kernel.
  int &configured = running_->sharedConfigured[size_t(kernel)];
  if (sharedBytes > 48 * 1024 && sharedBytes > configured) {
    int rc = driver_->FuncSetAttribute(f, cudaabi::kFuncAttrMaxDynamicSharedSizeBytes,
                                       sharedBytes);
    if (rc != cudaabi::kSuccess) {
      recordError(what + ": " + std::to_string(sharedBytes) +
                  " bytes of shared memory: cuFuncSetAttribute: " +
                  cudaResultString(*driver_, rc));
      return;
    }
    configured = sharedBytes;
  }
  int rc = driver_->LaunchKernel(f, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5],
                                 unsigned(sharedBytes), stream_, numParams ? params : nullptr,
                                 nullptr);
  if (rc != cudaabi::kSuccess) {
    recordError(what + ", grid (" + std::to_string(grid[0]) + ", " + std::to_string(grid[1]) +
                ", " + std::to_string(grid[2]) + "), block (" + std::to_string(block[0]) +
                ", " + std::to_string(block[1]) + ", " + std::to_string(block[2]) +
                "): cuLaunchKernel: " + cudaResultString(*driver_, rc));
    return;
  }
  if (synchronous_ && !capturing_)
    if (Status s = sync("after the launch: "); !s)
      recordError(what + ": " + s.message());
}

void CudaBackend::matmul(const char *entry, MatmulType type, const MatmulArgs &args) {
  if (!error_.empty())
    return;
  if (!cublasLt_) {
    if (capturing_) {
      // Creating the handle and workspace allocates, which a capture forbids;
      // the plain run before a capture always makes it.
      recordError(std::string(entry) + ": cuBLASLt first used during a graph capture");
      return;
    }
    StatusOr<std::unique_ptr<CublasLt>> created = CublasLt::create(*driver_);
    if (!created.ok()) {
      recordError(std::string(entry) + ": " + std::string(created.status().message()));
      return;
    }
    cublasLt_ = *std::move(created);
  }
  if (Status s = cublasLt_->matmul(type, args, stream_); !s) {
    recordError(std::string(entry) + ": " + s.message());
    return;
  }
  if (synchronous_ && !capturing_)
    if (Status s = sync("after the matmul: "); !s)
      recordError(std::string(entry) + ": " + s.message());
}

// --- runs -------------------------------------------------------------------

void CudaBackend::setGraphsEnabled(bool on) {
  if (on && !driver_->hasGraphs())
    return;
  graphs_ = on;
  graphNote_ = on ? "" : "turned off";
  if (!on)
    dropGraph();
}

namespace {
// Makes a backend current for the duration of an entry call.
struct CurrentScope {
  explicit CurrentScope(CudaBackend *b) { gCurrent.store(b); }
  ~CurrentScope() { gCurrent.store(nullptr); }
};
} // namespace

Status CudaBackend::runPlain(EntryFn entry, void **slots, void *arena) {
  {
    CurrentScope scope(this);
    entry(slots, arena);
  }
  Status synced = sync("after the step: ");
  if (Status s = takeError(); !s)
    return s;
  return synced;
}

Status CudaBackend::captureAndLaunch(EntryFn entry, void **slots, void *arena, bool &ran) {
  ran = false;
  const CudaDriver &api = *driver_;
  int rc = api.StreamBeginCapture(stream_, cudaabi::kCaptureModeThreadLocal);
  if (rc != cudaabi::kSuccess) {
    graphs_ = false;
    graphNote_ = "cuStreamBeginCapture: " + cudaResultString(api, rc);
    return Status::success();
  }
  capturing_ = true;
  {
    CurrentScope scope(this);
    entry(slots, arena);
  }
  capturing_ = false;
  cudaabi::Graph graph = nullptr;
  rc = api.StreamEndCapture(stream_, &graph);
  std::string failure;
  if (!error_.empty())
    failure = "an entry failed while capturing: " + error_;
  else if (rc != cudaabi::kSuccess || !graph)
    failure = "cuStreamEndCapture: " + cudaResultString(api, rc);
  cudaabi::GraphExec exec = nullptr;
  if (failure.empty()) {
    rc = api.GraphInstantiate(&exec, graph, 0);
    if (rc != cudaabi::kSuccess) {
      exec = nullptr;
      failure = "cuGraphInstantiateWithFlags: " + cudaResultString(api, rc);
    }
  }
  if (graph)
    api.GraphDestroy(graph);
  if (!failure.empty()) {
    // Nothing of the step ran; the caller runs it plainly, which reports a
    // real error again.
    error_.clear();
    graphs_ = false;
    graphNote_ = "the step could not be captured (" + failure + ")";
    return Status::success();
  }
  exec_ = exec;
  ++captures_;
  rc = api.GraphLaunch(exec_, stream_);
  ran = true;
  if (rc != cudaabi::kSuccess)
    return Status::error("cuGraphLaunch: " + cudaResultString(api, rc));
  ++replays_;
  return sync("after the step (graph): ");
}

Status CudaBackend::run(EntryFn entry, void **slots, void *arena) {
  if (!entry)
    return Status::error("no entry point to run");
  if (Status s = makeCurrent(); !s)
    return s;
  error_.clear();
  if (std::string stray = takeStray(); !stray.empty())
    return Status::error(stray);

  std::shared_ptr<const CudaProgram> program = findCudaProgram(entry);
  running_ = nullptr;
  if (program) {
    StatusOr<LoadedModule *> module = ensureModule(program);
    if (!module.ok())
      return module.status();
    running_ = *module;
  }
  struct RunningScope {
    LoadedModule *&running;
    ~RunningScope() { running = nullptr; }
  } runningScope{running_};

  RunKey key;
  key.programId = program ? program->id : 0;
  key.entry = entry;
  key.arena = arena;
  if (program && slots)
    key.slots.assign(slots, slots + program->numSlots);
  bool graphable = graphs_ && program != nullptr;

  if (graphable && exec_ && key == graphKey_) {
    int rc = driver_->GraphLaunch(exec_, stream_);
    if (rc != cudaabi::kSuccess)
      return Status::error("cuGraphLaunch: " + cudaResultString(*driver_, rc));
    ++replays_;
    return sync("after the step (graph): ");
  }
  if (exec_ && !(key == graphKey_))
    dropGraph();
  if (graphable && havePlain_ && key == plainKey_) {
    bool ran = false;
    Status s = captureAndLaunch(entry, slots, arena, ran);
    if (ran || !s) {
      if (ran)
        graphKey_ = key;
      return s;
    }
  }
  havePlain_ = false;
  if (Status s = runPlain(entry, slots, arena); !s)
    return s;
  plainKey_ = std::move(key);
  havePlain_ = true;
  return Status::success();
}

} // namespace trc::rt

// --- the entries programs call ---------------------------------------------

using trc::rt::CudaBackend;
using trc::rt::MatmulArgs;
using trc::rt::MatmulType;

extern "C" void trc_rt_cuda_launch(int32_t kernel, int64_t gridX, int64_t gridY,
                                   int64_t gridZ, int64_t blockX, int64_t blockY,
                                   int64_t blockZ, int32_t sharedBytes, void **params,
                                   int32_t numParams) {
  CudaBackend *b = CudaBackend::current();
  if (!b)
    return trc::rt::recordStray("trc_rt_cuda_launch: kernel " + std::to_string(kernel));
  const int64_t grid[3] = {gridX, gridY, gridZ}, block[3] = {blockX, blockY, blockZ};
  b->launch(kernel, grid, block, sharedBytes, params, numParams);
}

namespace {
void cublasLtEntry(const char *name, MatmulType type, int64_t batch, int64_t m, int64_t n,
                   int64_t k, const void *a, int64_t lda, int64_t strideA, int32_t transA,
                   const void *b, int64_t ldb, int64_t strideB, int32_t transB, void *c,
                   int64_t ldc, int64_t strideC) {
  CudaBackend *backend = CudaBackend::current();
  if (!backend)
    return trc::rt::recordStray(name);
  MatmulArgs args;
  args.batch = batch;
  args.m = m;
  args.n = n;
  args.k = k;
  args.a = a;
  args.lda = lda;
  args.strideA = strideA;
  args.transA = transA;
  args.b = b;
  args.ldb = ldb;
  args.strideB = strideB;
  args.transB = transB;
  args.c = c;
  args.ldc = ldc;
  args.strideC = strideC;
  backend->matmul(name, type, args);
}
} // namespace

extern "C" void trc_rt_cublaslt_matmul_f32(int64_t batch, int64_t m, int64_t n, int64_t k,
                                           const float *a, int64_t lda, int64_t strideA,
                                           int32_t transA, const float *b, int64_t ldb,
                                           int64_t strideB, int32_t transB, float *c,
                                           int64_t ldc, int64_t strideC) {
  cublasLtEntry("trc_rt_cublaslt_matmul_f32", MatmulType::F32, batch, m, n, k, a, lda,
                strideA, transA, b, ldb, strideB, transB, c, ldc, strideC);
}

extern "C" void trc_rt_cublaslt_matmul_f64(int64_t batch, int64_t m, int64_t n, int64_t k,
                                           const double *a, int64_t lda, int64_t strideA,
                                           int32_t transA, const double *b, int64_t ldb,
                                           int64_t strideB, int32_t transB, double *c,
                                           int64_t ldc, int64_t strideC) {
  cublasLtEntry("trc_rt_cublaslt_matmul_f64", MatmulType::F64, batch, m, n, k, a, lda,
                strideA, transA, b, ldb, strideB, transB, c, ldc, strideC);
}

extern "C" void trc_rt_cublaslt_matmul_bf16(int64_t batch, int64_t m, int64_t n, int64_t k,
                                            const uint16_t *a, int64_t lda, int64_t strideA,
                                            int32_t transA, const uint16_t *b, int64_t ldb,
                                            int64_t strideB, int32_t transB, float *c,
                                            int64_t ldc, int64_t strideC) {
  cublasLtEntry("trc_rt_cublaslt_matmul_bf16", MatmulType::BF16, batch, m, n, k, a, lda,
                strideA, transA, b, ldb, strideB, transB, c, ldc, strideC);
}

extern "C" void trc_rt_cublaslt_matmul_f16(int64_t batch, int64_t m, int64_t n, int64_t k,
                                           const uint16_t *a, int64_t lda, int64_t strideA,
                                           int32_t transA, const uint16_t *b, int64_t ldb,
                                           int64_t strideB, int32_t transB, float *c,
                                           int64_t ldc, int64_t strideC) {
  cublasLtEntry("trc_rt_cublaslt_matmul_f16", MatmulType::F16, batch, m, n, k, a, lda,
                strideA, transA, b, ldb, strideB, transB, c, ldc, strideC);
}

extern "C" void trc_rt_cublaslt_matmul_bf16_bf16(int64_t batch, int64_t m, int64_t n,
                                                 int64_t k, const uint16_t *a, int64_t lda,
                                                 int64_t strideA, int32_t transA,
                                                 const uint16_t *b, int64_t ldb,
                                                 int64_t strideB, int32_t transB, uint16_t *c,
                                                 int64_t ldc, int64_t strideC) {
  cublasLtEntry("trc_rt_cublaslt_matmul_bf16_bf16", MatmulType::BF16ToBF16, batch, m, n, k, a,
                lda, strideA, transA, b, ldb, strideB, transB, c, ldc, strideC);
}

namespace trc::rt {

const void *const *cudaExports() {
  static const void *const table[] = {
      reinterpret_cast<const void *>(&trc_rt_cuda_launch),
      reinterpret_cast<const void *>(&trc_rt_cublaslt_matmul_f32),
      reinterpret_cast<const void *>(&trc_rt_cublaslt_matmul_f64),
      reinterpret_cast<const void *>(&trc_rt_cublaslt_matmul_bf16),
      reinterpret_cast<const void *>(&trc_rt_cublaslt_matmul_f16),
      reinterpret_cast<const void *>(&trc_rt_cublaslt_matmul_bf16_bf16),
      nullptr,
  };
  return table;
}

} // namespace trc::rt
