//===- CudaBackend.h - the CUDA device backend ------------------------------===//
//
// Runs `target cuda` artifacts (docs/ARTIFACT.md "Target cuda") on one GPU,
// with the driver (CudaDriver.h) and cuBLASLt (CublasLt.h) loaded at run
// time; nothing here needs MLIR, a CUDA header or a CUDA library to build.
//
// Device: TRC_CUDA_DEVICE (an ordinal), else the launch environment's local
// rank modulo the visible devices (LaunchEnvironment.h), so each rank on a
// node takes its own GPU; CUDA_VISIBLE_DEVICES applies. The backend uses the
// device's primary context and one non-blocking stream of its own.
//
// Memory: one cuMemAlloc per buffer (cuMemAlloc is 256-byte aligned, more
// than the 64 bytes Backend promises), zero-filled with cuMemsetD8Async on
// the backend's stream. Copies are enqueued on that stream and waited for,
// so a buffer is ready for any stream (an NCCL communicator's, the host)
// once a call returns.
//
// run(entry, slots, arena): makes this backend the current one for the
// entries the program calls, calls entry(slots, arena) on the host (it only
// enqueues work: kernel launches, cuBLASLt calls), then synchronizes the
// stream and returns the first error any entry recorded, or the stream's.
// The kernels are those of the program registered for `entry` by its
// Artifact (CudaProgram.h): the first run of a program loads its module,
// choosing the image by the device's compute capability (the cubin of the
// same major and the highest minor not above the device's, else PTX through
// the driver's JIT; TRC_CUDA_PREFER_PTX=1 takes the PTX whenever one fits).
//
// CUDA graphs: after a successful plain run, a run of the same program with
// the same slot pointers and arena is captured once (cuStreamBeginCapture,
// the entry, cuStreamEndCapture, cuGraphInstantiateWithFlags) and every
// later such run replays it with one cuGraphLaunch; different pointers
// start over. The host program's launches depend only on the slot and arena
// pointers (ARTIFACT.md: pointer arithmetic, launches, library calls), which
// is what makes a replay the same step. A capture the driver refuses turns
// graphs off for this backend (graphNote() says why) and the step runs
// plainly. TRC_CUDA_GRAPHS=0 turns graphs off, =1 (the default) on.
// Collectives: NCCL supports capturing its calls when they are enqueued on
// the capturing stream; today's NcclCommunicator enqueues on a stream of its
// own and waits on the host, which a capture would neither record nor
// order. So in a multi-process launch (LaunchEnvironment::multiProcess)
// graphs stay off, and every launch and matmul is waited for before the
// next entry call (a collective then reads finished buffers) until the
// communicators order their stream after this one with events
// (collectivesFollowStream: Collectives.cpp calls it once every group's
// communicator took computeStream(); NcclCommunicator.h). Then the host
// enqueues ahead, and started collectives overlap the kernels enqueued
// before their finish.
//
// Offloaded activations: the host arena is page-locked (cuMemHostAlloc) and
// the copies run on a copy stream of their own, ordered against this
// backend's stream with events (CudaCopyEngine.h), inside graph captures
// too (the capture forks into the copy stream and joins back at each wait).
//
// The program's entries trc_rt_cuda_launch and trc_rt_cublaslt_matmul_<t>
// are defined in CudaBackend.cpp and listed by cudaExports(); constructing
// a backend references that table so executables that link the static
// runtime keep (and, with ENABLE_EXPORTS, export) them. Called outside a
// run they record an error that the next run reports.
// Preconditions: one thread runs programs at a time; the backend outlives
// every DeviceBuffer it allocated and every run's Session.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_CUDABACKEND_H
#define TRC_RUNTIME_CUDABACKEND_H

#include "runtime/backends/Backend.h"
#include "runtime/backends/cuda/CublasLt.h"
#include "runtime/backends/cuda/CudaCopyEngine.h"
#include "runtime/backends/cuda/CudaDriver.h"
#include "runtime/backends/cuda/CudaProgram.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

extern "C" {
void trc_rt_cuda_launch(int32_t kernel, int64_t gridX, int64_t gridY, int64_t gridZ,
                        int64_t blockX, int64_t blockY, int64_t blockZ, int32_t sharedBytes,
                        void **params, int32_t numParams);
void trc_rt_cublaslt_matmul_f32(int64_t batch, int64_t m, int64_t n, int64_t k,
                                const float *a, int64_t lda, int64_t strideA, int32_t transA,
                                const float *b, int64_t ldb, int64_t strideB, int32_t transB,
                                float *c, int64_t ldc, int64_t strideC);
void trc_rt_cublaslt_matmul_f64(int64_t batch, int64_t m, int64_t n, int64_t k,
                                const double *a, int64_t lda, int64_t strideA,
                                int32_t transA, const double *b, int64_t ldb,
                                int64_t strideB, int32_t transB, double *c, int64_t ldc,
                                int64_t strideC);
void trc_rt_cublaslt_matmul_bf16(int64_t batch, int64_t m, int64_t n, int64_t k,
                                 const uint16_t *a, int64_t lda, int64_t strideA,
                                 int32_t transA, const uint16_t *b, int64_t ldb,
                                 int64_t strideB, int32_t transB, float *c, int64_t ldc,
                                 int64_t strideC);
void trc_rt_cublaslt_matmul_f16(int64_t batch, int64_t m, int64_t n, int64_t k,
                                const uint16_t *a, int64_t lda, int64_t strideA,
                                int32_t transA, const uint16_t *b, int64_t ldb,
                                int64_t strideB, int32_t transB, float *c, int64_t ldc,
                                int64_t strideC);
void trc_rt_cublaslt_matmul_bf16_bf16(int64_t batch, int64_t m, int64_t n, int64_t k,
                                      const uint16_t *a, int64_t lda, int64_t strideA,
                                      int32_t transA, const uint16_t *b, int64_t ldb,
                                      int64_t strideB, int32_t transB, uint16_t *c,
                                      int64_t ldc, int64_t strideC);
}

namespace trc::rt {

// The entries above, null-terminated (see runtimeExports in Blas.h).
const void *const *cudaExports();

// Whether the driver loads and sees at least one device; `why` says what is
// missing otherwise. Never fails otherwise.
bool cudaDevicePresent(std::string &why);

class CudaBackend final : public Backend {
public:
  /// A backend on device `ordinal` (< 0: TRC_CUDA_DEVICE, else the local
  /// rank modulo the devices).
  static StatusOr<std::unique_ptr<CudaBackend>> create(int ordinal = -1);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend &) = delete;
  CudaBackend &operator=(const CudaBackend &) = delete;

  const char *target() const override { return "cuda"; }
  int64_t memoryBytes() const override { return int64_t(totalMemory_); }
  StatusOr<void *> allocate(size_t bytes) override;
  void deallocate(void *ptr) override;
  Status copyToDevice(void *dst, const void *src, size_t bytes) override;
  Status copyToHost(void *dst, const void *src, size_t bytes) override;
  Status copyOnDevice(void *dst, const void *src, size_t bytes) override;
  Status run(EntryFn entry, void **slots, void *arena) override;
  StatusOr<void *> allocateHost(size_t bytes) override;
  void deallocateHost(void *ptr) override;
  StatusOr<CopyEngine *> copyEngine() override;
  void *computeStream() override { return stream_; }
  // Multi-process runs wait for each launch until this is called.
  void collectivesFollowStream() override { synchronous_ = false; }

  std::string pciBusId() const override { return pciBusId_; }
  int ordinal() const { return ordinal_; }
  int computeMajor() const { return major_; }
  int computeMinor() const { return minor_; }
  const std::string &deviceName() const { return name_; }
  // "NVIDIA H100 80GB HBM3 (device 0, sm_90, 132 SMs, 79.1 GiB), driver 12.8"
  std::string describe() const;
  // The backend's stream (a CUstream), on which every step is enqueued.
  void *stream() const { return stream_; }
  const CudaDriver &driver() const { return *driver_; }

  bool graphsEnabled() const { return graphs_; }
  void setGraphsEnabled(bool on);
  // Why graphs are off ("" while they are on).
  const std::string &graphNote() const { return graphNote_; }
  uint64_t graphCaptures() const { return captures_; }
  uint64_t graphReplays() const { return replays_; }
  // Whether each launch and matmul is waited for (multi-process runs).
  bool synchronousCalls() const { return synchronous_; }
  // The image the program's module was loaded from (null before its first
  // run); for messages and tests.
  const CudaImage *loadedImage(const CudaProgram &program) const;

  // --- used by the entries the program calls ---
  // The backend whose run is in progress (null outside runs).
  static CudaBackend *current();
  void recordError(const std::string &message);
  void launch(int32_t kernel, const int64_t grid[3], const int64_t block[3],
              int32_t sharedBytes, void **params, int32_t numParams);
  void matmul(const char *entry, MatmulType type, const MatmulArgs &args);

private:
  struct LoadedModule {
    uint64_t programId = 0;
    cudaabi::Module module = nullptr;
    const CudaImage *image = nullptr;
    std::shared_ptr<const CudaProgram> program; // keeps `image` alive
    std::vector<cudaabi::Function> functions;
    std::vector<int> sharedConfigured; // dynamic shared bytes opted in
  };
  struct RunKey {
    uint64_t programId = 0;
    EntryFn entry = nullptr;
    void *arena = nullptr;
    std::vector<void *> slots;
    bool operator==(const RunKey &o) const {
      return programId == o.programId && entry == o.entry && arena == o.arena &&
             slots == o.slots;
    }
  };

  CudaBackend() = default;
  Status makeCurrent() const;
  Status sync(const char *when);
  // The program's module, loaded on first use.
  StatusOr<LoadedModule *> ensureModule(const std::shared_ptr<const CudaProgram> &program);
  void dropUnregisteredModules();
  void dropGraph();
  Status runPlain(EntryFn entry, void **slots, void *arena);
  // False when the capture failed (graphs are then off); `ran` tells
  // whether the step ran (a replay of the captured graph).
  Status captureAndLaunch(EntryFn entry, void **slots, void *arena, bool &ran);
  Status takeError();

  const CudaDriver *driver_ = nullptr;
  int ordinal_ = 0;
  cudaabi::Device device_ = 0;
  cudaabi::Context ctx_ = nullptr;
  cudaabi::Stream stream_ = nullptr;
  int major_ = 0, minor_ = 0, sms_ = 0;
  size_t totalMemory_ = 0;
  int driverVersion_ = 0;
  std::string name_;
  std::string pciBusId_; // "00000000:3B:00.0" (empty when the driver does not say)
  bool preferPtx_ = false;

  std::map<uint64_t, LoadedModule> modules_;
  LoadedModule *running_ = nullptr; // the module of the run in progress
  std::unique_ptr<CublasLt> cublasLt_;
  std::unique_ptr<CudaCopyEngine> copyEngine_; // made on first use
  std::string error_; // the first error of the run in progress
  bool capturing_ = false;
  bool synchronous_ = false;

  bool graphs_ = true;
  std::string graphNote_;
  cudaabi::GraphExec exec_ = nullptr;
  RunKey graphKey_;     // what exec_ replays
  RunKey plainKey_;     // the last successful plain run
  bool havePlain_ = false;
  uint64_t captures_ = 0, replays_ = 0;
};

} // namespace trc::rt

#endif // TRC_RUNTIME_CUDABACKEND_H
