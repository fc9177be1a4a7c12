//===- CublasLt.cpp - matrix products on the GPU with cuBLASLt --------------===//
//
// See CublasLt.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/CublasLt.h"

#include "runtime/support/DynamicLibrary.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <type_traits>
#include <vector>

namespace trc::rt {

namespace abi = cublasltabi;

namespace {

#define TRC_CUBLASLT_SYMBOLS(X)                                                \
  X(Create, "cublasLtCreate", false)                                           \
  X(Destroy, "cublasLtDestroy", false)                                         \
  X(GetVersion, "cublasLtGetVersion", false)                                   \
  X(GetStatusString, "cublasLtGetStatusString", true)                          \
  X(GetStatusName, "cublasLtGetStatusName", true)                              \
  X(MatmulDescCreate, "cublasLtMatmulDescCreate", false)                       \
  X(MatmulDescDestroy, "cublasLtMatmulDescDestroy", false)                     \
  X(MatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute", false)           \
  X(MatrixLayoutCreate, "cublasLtMatrixLayoutCreate", false)                   \
  X(MatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy", false)                 \
  X(MatrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute", false)       \
  X(MatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate", false)           \
  X(MatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy", false)         \
  X(MatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute", false) \
  X(MatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic", false)           \
  X(Matmul, "cublasLtMatmul", false)

std::mutex gMutex;
CublasLtApi gApi;
bool gLoaded = false;
std::string gLoadError;

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

// The largest power of two (at most 256) dividing the address and, when
// the operand is batched, the batch stride in bytes.
unsigned alignmentOf(const void *p, int64_t batch, int64_t stride, size_t elementBytes) {
  uint64_t bits = uint64_t(reinterpret_cast<uintptr_t>(p)) | 256;
  if (batch > 1 && stride != 0)
    bits |= uint64_t(stride) * elementBytes;
  return unsigned(bits & (~bits + 1));
}

} // namespace

StatusOr<CublasLtApi> bindCublasLt(const std::string &library) {
  std::string why;
  void *lib = openLibrary(library, why);
  if (!lib) {
    return Status::error("cuBLASLt: " + library + " not found or not loadable (" +
                         why + ")");
  }
  CublasLtApi api;
  api.library = lib;
  api.libraryName = library;
  SymbolBinder bind{lib, {}};
#define TRC_BIND(member, name, optional) bind(api.member, name, optional);
  TRC_CUBLASLT_SYMBOLS(TRC_BIND)
#undef TRC_BIND
  if (!bind.missing.empty()) {
    ::dlclose(lib);
    return Status::error("cuBLASLt: " + library + " has no symbol " + bind.missing);
  }
  return api;
}

StatusOr<const CublasLtApi *> loadCublasLt() {
  std::lock_guard<std::mutex> lock(gMutex);
  if (gLoaded)
    return &gApi;
  if (!gLoadError.empty())
    return Status::error(gLoadError);
  std::vector<std::string> names;
  const char *override = std::getenv("TRC_CUBLASLT_LIBRARY");
  if (override && *override)
    names.push_back(override);
  else
    for (const char *name : abi::kLibraries)
      names.push_back(name);
  std::string errors;
  for (const std::string &name : names) {
    StatusOr<CublasLtApi> api = bindCublasLt(name);
    if (api.ok()) {
      gApi = *std::move(api);
      gLoaded = true;
      return &gApi;
    }
    errors += (errors.empty() ? "" : "; ") + std::string(api.status().message());
  }
  gLoadError = errors + (override && *override
                             ? " (named by TRC_CUBLASLT_LIBRARY)"
                             : " (install the CUDA toolkit's cuBLAS, or set "
                               "TRC_CUBLASLT_LIBRARY)");
  return Status::error(gLoadError);
}

std::string cublasLtStatusString(const CublasLtApi &api, int status) {
  const char *text = api.GetStatusString ? api.GetStatusString(status) : nullptr;
  const char *name = api.GetStatusName ? api.GetStatusName(status) : nullptr;
  if (text && name && std::strcmp(text, name) != 0)
    return std::string(text) + " (" + name + ")";
  if (text || name)
    return text ? text : name;
  return "cuBLASLt status " + std::to_string(status);
}

const char *matmulTypeName(MatmulType type) {
  switch (type) {
  case MatmulType::F32: return "f32";
  case MatmulType::F64: return "f64";
  case MatmulType::BF16: return "bf16";
  case MatmulType::F16: return "f16";
  case MatmulType::BF16ToBF16: return "bf16 -> bf16";
  }
  return "?";
}

struct CublasLt::Plan {
  abi::MatmulDesc desc = nullptr;
  abi::MatrixLayout a = nullptr, b = nullptr, c = nullptr; // cuBLASLt's A, B, C(=D)
  abi::MatmulAlgo algo{};
  bool perBatch = false; // one call per batch entry
  bool scale64 = false;  // alpha/beta are doubles
};

CublasLt::CublasLt(const CudaDriver &driver, const CublasLtApi &api)
    : driver_(driver), api_(api) {}

Status CublasLt::check(const char *call, int status) const {
  if (status == abi::kStatusSuccess)
    return Status::success();
  return Status::error(std::string(call) + ": " + cublasLtStatusString(api_, status));
}

StatusOr<std::unique_ptr<CublasLt>> CublasLt::create(const CudaDriver &driver) {
  StatusOr<const CublasLtApi *> loaded = loadCublasLt();
  if (!loaded.ok())
    return loaded.status();
  const CublasLtApi *api = *loaded;
  std::unique_ptr<CublasLt> lt(new CublasLt(driver, *api));
  if (Status s = lt->check("cublasLtCreate", api->Create(&lt->handle_)); !s)
    return s.withPrefix("cuBLASLt: ");
  if (Status s = cudaCheck(driver, "cuMemAlloc (cuBLASLt workspace)",
                           driver.MemAlloc(&lt->workspace_, kWorkspaceBytes));
      !s)
    return s;
  lt->workspaceBytes_ = kWorkspaceBytes;
  const char *tf32 = std::getenv("TRC_ALLOW_TF32");
  lt->tf32_ = tf32 && std::strcmp(tf32, "1") == 0;
  return lt;
}

void CublasLt::destroyPlan(Plan &plan) {
  if (plan.a)
    api_.MatrixLayoutDestroy(plan.a);
  if (plan.b)
    api_.MatrixLayoutDestroy(plan.b);
  if (plan.c)
    api_.MatrixLayoutDestroy(plan.c);
  if (plan.desc)
    api_.MatmulDescDestroy(plan.desc);
  plan = Plan();
}

CublasLt::~CublasLt() {
  for (auto &entry : plans_)
    destroyPlan(*entry.second);
  if (handle_)
    api_.Destroy(handle_);
  if (workspace_)
    driver_.MemFree(workspace_);
}

std::string CublasLt::describe() const {
  return "cuBLASLt " + std::to_string(api_.GetVersion()) + " (" + api_.libraryName + ")";
}

StatusOr<std::unique_ptr<CublasLt::Plan>> CublasLt::makePlan(MatmulType type,
                                                             const MatmulArgs &x,
                                                             unsigned alignA, unsigned alignB,
                                                             unsigned alignC) {
  int abType = abi::kR32F, cType = abi::kR32F, compute = abi::kCompute32F,
      scaleType = abi::kR32F;
  switch (type) {
  case MatmulType::F32:
    compute = tf32_ ? abi::kCompute32FFastTF32 : abi::kCompute32F;
    break;
  case MatmulType::F64:
    abType = cType = scaleType = abi::kR64F;
    compute = abi::kCompute64F;
    break;
  case MatmulType::BF16:
    abType = abi::kR16BF;
    break;
  case MatmulType::F16:
    abType = abi::kR16F;
    break;
  case MatmulType::BF16ToBF16:
    abType = cType = abi::kR16BF;
    break;
  }
  auto plan = std::make_unique<Plan>();
  plan->scale64 = type == MatmulType::F64;
  // Any failure below frees what was made so far.
  struct Cleanup {
    CublasLt *self;
    Plan *plan;
    ~Cleanup() {
      if (plan)
        self->destroyPlan(*plan);
    }
  } cleanup{this, plan.get()};

  // Row-major storage seen column-major: a matrix of `rows` x `cols` with
  // leading dimension ld is the column-major cols x rows matrix with the
  // same ld. cuBLASLt's A is our B, its B our A (C^T = op(B)^T op(A)^T).
  int64_t aRows = x.transA ? x.k : x.m, aCols = x.transA ? x.m : x.k;
  int64_t bRows = x.transB ? x.n : x.k, bCols = x.transB ? x.k : x.n;
  auto leading = [](const char *what, int64_t rows, int64_t cols, int64_t ld,
                    int64_t &out) -> Status {
    // A single stored row never steps by ld; anything else needs rows that
    // do not overlap.
    out = rows <= 1 && ld < cols ? std::max<int64_t>(cols, 1) : ld;
    if (out < std::max<int64_t>(cols, 1))
      return Status::error(std::string("leading dimension of ") + what + " (" +
                           std::to_string(ld) + ") is smaller than its rows (" +
                           std::to_string(cols) + " elements): overlapping rows are not "
                           "supported by cuBLASLt");
    return Status::success();
  };
  int64_t lda = 0, ldb = 0, ldc = 0;
  if (Status s = leading("A", aRows, aCols, x.lda, lda); !s)
    return s;
  if (Status s = leading("B", bRows, bCols, x.ldb, ldb); !s)
    return s;
  if (Status s = leading("C", x.m, x.n, x.ldc, ldc); !s)
    return s;

  if (Status s = check("cublasLtMatmulDescCreate",
                       api_.MatmulDescCreate(&plan->desc, compute, scaleType));
      !s)
    return s;
  int32_t opA = x.transB ? abi::kOpT : abi::kOpN, opB = x.transA ? abi::kOpT : abi::kOpN;
  if (Status s = check("cublasLtMatmulDescSetAttribute(TRANSA)",
                       api_.MatmulDescSetAttribute(plan->desc, abi::kDescTransA, &opA,
                                                   sizeof opA));
      !s)
    return s;
  if (Status s = check("cublasLtMatmulDescSetAttribute(TRANSB)",
                       api_.MatmulDescSetAttribute(plan->desc, abi::kDescTransB, &opB,
                                                   sizeof opB));
      !s)
    return s;

  auto layout = [&](abi::MatrixLayout &l, int dtype, int64_t rows, int64_t cols,
                    int64_t ld, int64_t stride, bool batched) -> Status {
    if (Status s = check("cublasLtMatrixLayoutCreate",
                         api_.MatrixLayoutCreate(&l, dtype, uint64_t(rows), uint64_t(cols),
                                                 ld));
        !s)
      return s;
    if (!batched)
      return Status::success();
    int32_t count = int32_t(x.batch);
    int64_t offset = stride;
    if (Status s = check("cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)",
                         api_.MatrixLayoutSetAttribute(l, abi::kLayoutBatchCount, &count,
                                                       sizeof count));
        !s)
      return s;
    return check("cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)",
                 api_.MatrixLayoutSetAttribute(l, abi::kLayoutStridedBatchOffset, &offset,
                                               sizeof offset));
  };

  abi::MatmulPreference pref = nullptr;
  if (Status s = check("cublasLtMatmulPreferenceCreate", api_.MatmulPreferenceCreate(&pref));
      !s)
    return s;
  struct PrefGuard {
    const CublasLtApi &api;
    abi::MatmulPreference pref;
    ~PrefGuard() { api.MatmulPreferenceDestroy(pref); }
  } prefGuard{api_, pref};
  uint64_t workspace = workspaceBytes_;
  uint32_t alignments[4] = {alignB, alignA, alignC, alignC}; // cuBLASLt's A, B, C, D
  const int alignAttrs[4] = {abi::kPrefMinAlignmentABytes, abi::kPrefMinAlignmentBBytes,
                             abi::kPrefMinAlignmentCBytes, abi::kPrefMinAlignmentDBytes};
  if (Status s = check("cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)",
                       api_.MatmulPreferenceSetAttribute(pref, abi::kPrefMaxWorkspaceBytes,
                                                         &workspace, sizeof workspace));
      !s)
    return s;
  for (int i = 0; i < 4; ++i)
    if (Status s = check("cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)",
                         api_.MatmulPreferenceSetAttribute(pref, alignAttrs[i], &alignments[i],
                                                           sizeof alignments[i]));
        !s)
      return s;

  // Strided-batched first; where cuBLASLt has no algorithm for that (e.g.
  // a broadcast operand it refuses), one call per batch entry.
  Status last;
  for (bool perBatch : {false, true}) {
    if (perBatch && x.batch <= 1)
      break;
    bool batched = x.batch > 1 && !perBatch;
    for (abi::MatrixLayout *l : {&plan->a, &plan->b, &plan->c})
      if (*l) {
        api_.MatrixLayoutDestroy(*l);
        *l = nullptr;
      }
    if (Status s = layout(plan->a, abType, bCols, bRows, ldb, x.strideB, batched); !s)
      return s;
    if (Status s = layout(plan->b, abType, aCols, aRows, lda, x.strideA, batched); !s)
      return s;
    if (Status s = layout(plan->c, cType, x.n, x.m, ldc, x.strideC, batched); !s)
      return s;
    abi::HeuristicResult result{};
    int found = 0;
    int rc = api_.MatmulAlgoGetHeuristic(handle_, plan->desc, plan->a, plan->b, plan->c,
                                         plan->c, pref, 1, &result, &found);
    if (rc == abi::kStatusSuccess && found > 0) {
      plan->algo = result.algo;
      plan->perBatch = perBatch;
      cleanup.plan = nullptr;
      return plan;
    }
    last = rc == abi::kStatusSuccess
               ? Status::error("cublasLtMatmulAlgoGetHeuristic: no algorithm")
               : check("cublasLtMatmulAlgoGetHeuristic", rc);
  }
  return last;
}

Status CublasLt::matmul(MatmulType type, const MatmulArgs &x, void *stream) {
  auto describeCall = [&]() {
    return std::string(matmulTypeName(type)) + " matmul (batch " + std::to_string(x.batch) +
           ", m " + std::to_string(x.m) + ", n " + std::to_string(x.n) + ", k " +
           std::to_string(x.k) + ", lda " + std::to_string(x.lda) + ", ldb " +
           std::to_string(x.ldb) + ", ldc " + std::to_string(x.ldc) +
           (x.transA ? ", A transposed" : "") + (x.transB ? ", B transposed" : "") + "): ";
  };
  if (x.batch <= 0 || x.m <= 0 || x.n <= 0 || x.k < 0)
    return Status::success();
  size_t abBytes = type == MatmulType::F64 ? 8 : type == MatmulType::F32 ? 4 : 2;
  size_t cBytes = type == MatmulType::F64 ? 8 : type == MatmulType::BF16ToBF16 ? 2 : 4;
  if (x.k == 0) {
    // C = 0: rows of n elements every ldc, as bytes (a bf16 C of a batch
    // with an odd stride is only 2-byte aligned: the driver's 32-bit fill
    // refuses it).
    for (int64_t i = 0; i < x.batch; ++i) {
      auto c = cudaabi::DevicePtr(reinterpret_cast<uintptr_t>(x.c)) +
               cudaabi::DevicePtr(i * x.strideC) * cBytes;
      if (Status s = cudaCheck(driver_, "cuMemsetD2D8Async",
                               driver_.MemsetD2D8Async(c, size_t(x.ldc) * cBytes, 0,
                                                       size_t(x.n) * cBytes, size_t(x.m),
                                                       stream));
          !s)
        return s.withPrefix(describeCall());
    }
    return Status::success();
  }
  unsigned alignA = alignmentOf(x.a, x.batch, x.strideA, abBytes);
  unsigned alignB = alignmentOf(x.b, x.batch, x.strideB, abBytes);
  unsigned alignC = alignmentOf(x.c, x.batch, x.strideC, cBytes);
  Key key{int(type), x.batch,  x.m,      x.n,      x.k,    x.lda,  x.strideA, x.transA != 0,
          x.ldb,     x.strideB, x.transB != 0, x.ldc, x.strideC, int(alignA), int(alignB),
          int(alignC)};
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    StatusOr<std::unique_ptr<Plan>> plan = makePlan(type, x, alignA, alignB, alignC);
    if (!plan.ok())
      return Status(plan.status()).withPrefix(describeCall());
    it = plans_.emplace(key, *std::move(plan)).first;
  }
  const Plan &plan = *it->second;
  float alpha32 = 1, beta32 = 0;
  double alpha64 = 1, beta64 = 0;
  const void *alpha = plan.scale64 ? static_cast<const void *>(&alpha64) : &alpha32;
  const void *beta = plan.scale64 ? static_cast<const void *>(&beta64) : &beta32;
  int64_t calls = plan.perBatch ? x.batch : 1;
  for (int64_t i = 0; i < calls; ++i) {
    const char *a = static_cast<const char *>(x.a) + size_t(i * x.strideA) * abBytes;
    const char *b = static_cast<const char *>(x.b) + size_t(i * x.strideB) * abBytes;
    char *c = static_cast<char *>(x.c) + size_t(i * x.strideC) * cBytes;
    int rc = api_.Matmul(handle_, plan.desc, alpha, b, plan.a, a, plan.b, beta, c, plan.c, c,
                         plan.c, &plan.algo, reinterpret_cast<void *>(uintptr_t(workspace_)),
                         workspaceBytes_, stream);
    if (Status s = check("cublasLtMatmul", rc); !s)
      return s.withPrefix(describeCall());
  }
  return Status::success();
}

} // namespace trc::rt
