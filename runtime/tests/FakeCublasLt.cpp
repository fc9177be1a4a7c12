//===- FakeCublasLt.cpp - a CPU stand-in for libcublasLt (tests only) -------===//
//
// Built as fake-cuda/libcublasLt.so.13 next to the fake driver (FakeCuda.h).
// It checks what cuBLASLt would refuse (attribute sizes, layouts whose
// shapes do not chain, leading dimensions below the rows, unsupported type
// combinations, batch counts that differ, a plan's algorithm used with
// other descriptors) and computes D = alpha op(A) op(B) + beta C column-major,
// strided-batched, on the CPU (double accumulation), enqueued on the fake
// stream (so graph capture records it), with every matrix's span checked
// against the fake device allocations. It says nothing about the real
// library's speed or algorithms. TRC_FAKE_CUBLASLT_CHECK_ONLY=1 keeps the
// checks and skips the arithmetic (the GPU bundle's dry run trains whole
// models' steps, whose products would take minutes here).
//
//===----------------------------------------------------------------------===//
#include "FakeCuda.h"

#include "runtime/backends/cuda/CublasLtAbi.h"
#include "runtime/support/HalfFloat.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace abi = trc::rt::cublasltabi;

namespace {

constexpr int kNotInitialized = 1, kInvalidValue = 7, kExecutionFailed = 13;
constexpr uint64_t kAlgoTag = 0x656b61665f637274; // "trc_fake"

struct Handle {
  int magic = 0x1234;
};
struct Desc {
  int compute = 0, scale = 0;
  int32_t transA = 0, transB = 0;
};
struct Layout {
  int type = 0;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t batch = 1;
  int64_t stride = 0;
};
struct Pref {
  uint64_t workspace = 0;
};

size_t elementBytes(int type) {
  switch (type) {
  case abi::kR32F: return 4;
  case abi::kR64F: return 8;
  case abi::kR16F:
  case abi::kR16BF: return 2;
  }
  return 0;
}

double load(const char *p, int type) {
  switch (type) {
  case abi::kR32F: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  case abi::kR64F: {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  case abi::kR16BF:
  case abi::kR16F: {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return type == abi::kR16BF ? trc::rt::bf16ToFloat(h) : trc::rt::f16ToFloat(h);
  }
  }
  return NAN;
}

void store(char *p, int type, double v) {
  if (type == abi::kR64F) {
    std::memcpy(p, &v, 8);
  } else if (type == abi::kR16BF) { // the f32 value rounded to nearest even
    uint16_t h = trc::rt::floatToBf16(float(v));
    std::memcpy(p, &h, 2);
  } else {
    float f = float(v);
    std::memcpy(p, &f, 4);
  }
}

// Whether the combination is one cuBLASLt supports (the ones trc uses).
bool supported(const Desc &d, const Layout &a, const Layout &b, const Layout &c) {
  if (a.type != b.type)
    return false;
  if (d.compute == abi::kCompute64F)
    return d.scale == abi::kR64F && a.type == abi::kR64F && c.type == abi::kR64F;
  if (d.compute != abi::kCompute32F && d.compute != abi::kCompute32FFastTF32)
    return false;
  if (d.scale != abi::kR32F)
    return false;
  bool exact = d.compute == abi::kCompute32F; // 16-bit operands take no TF32
  if (c.type == abi::kR32F)
    return a.type == abi::kR32F || (exact && (a.type == abi::kR16BF || a.type == abi::kR16F));
  return c.type == abi::kR16BF && a.type == abi::kR16BF && exact;
}

// The layouts chain into an M x N result: 0, or why not.
const char *check(const Desc &d, const Layout &a, const Layout &b, const Layout &c) {
  uint64_t m = c.rows, n = c.cols;
  uint64_t am = d.transA ? a.cols : a.rows, ak = d.transA ? a.rows : a.cols;
  uint64_t bk = d.transB ? b.cols : b.rows, bn = d.transB ? b.rows : b.cols;
  if (am != m || bn != n || ak != bk)
    return "shapes";
  for (const Layout *l : {&a, &b, &c})
    if (l->ld < int64_t(l->rows ? l->rows : 1) || l->batch < 1)
      return "ld";
  if (a.batch != c.batch || b.batch != c.batch)
    return "batch";
  if (!supported(d, a, b, c))
    return "types";
  return nullptr;
}

bool spanInBounds(const void *base, const Layout &l, int32_t batch) {
  size_t es = elementBytes(l.type);
  if (!l.rows || !l.cols)
    return true;
  size_t span = size_t((l.rows - 1) + (l.cols - 1) * uint64_t(l.ld) + 1) * es;
  for (int32_t i = 0; i < batch; ++i)
    if (!trc::fakecuda::inBounds(static_cast<const char *>(base) + size_t(i * l.stride) * es,
                                 span))
      return false;
  return true;
}

} // namespace

extern "C" {

int cublasLtCreate(void **handle) {
  *handle = new Handle();
  return abi::kStatusSuccess;
}
int cublasLtDestroy(void *handle) {
  if (!handle || static_cast<Handle *>(handle)->magic != 0x1234)
    return kNotInitialized;
  delete static_cast<Handle *>(handle);
  return abi::kStatusSuccess;
}
size_t cublasLtGetVersion() { return 130000; }
const char *cublasLtGetStatusString(int status) {
  switch (status) {
  case 0: return "success";
  case 1: return "the library was not initialized";
  case 7: return "an invalid numeric value was used as an argument";
  case 13: return "the GPU program failed to execute";
  case 15: return "the functionality requested is not supported";
  }
  return "unknown status";
}
const char *cublasLtGetStatusName(int status) {
  switch (status) {
  case 0: return "CUBLAS_STATUS_SUCCESS";
  case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
  case 7: return "CUBLAS_STATUS_INVALID_VALUE";
  case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
  case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}
int cublasLtMatmulDescCreate(void **desc, int compute, int scale) {
  *desc = new Desc{compute, scale, 0, 0};
  return abi::kStatusSuccess;
}
int cublasLtMatmulDescDestroy(void *desc) {
  delete static_cast<Desc *>(desc);
  return abi::kStatusSuccess;
}
int cublasLtMatmulDescSetAttribute(void *desc, int attr, const void *buf, size_t size) {
  auto *d = static_cast<Desc *>(desc);
  if (size != 4 || (attr != abi::kDescTransA && attr != abi::kDescTransB))
    return kInvalidValue;
  int32_t v;
  std::memcpy(&v, buf, 4);
  if (v != abi::kOpN && v != abi::kOpT)
    return kInvalidValue;
  (attr == abi::kDescTransA ? d->transA : d->transB) = v;
  return abi::kStatusSuccess;
}
int cublasLtMatrixLayoutCreate(void **layout, int type, uint64_t rows, uint64_t cols,
                               int64_t ld) {
  if (!elementBytes(type))
    return kInvalidValue;
  *layout = new Layout{type, rows, cols, ld, 1, 0};
  return abi::kStatusSuccess;
}
int cublasLtMatrixLayoutDestroy(void *layout) {
  delete static_cast<Layout *>(layout);
  return abi::kStatusSuccess;
}
int cublasLtMatrixLayoutSetAttribute(void *layout, int attr, const void *buf, size_t size) {
  auto *l = static_cast<Layout *>(layout);
  if (attr == abi::kLayoutBatchCount && size == 4) {
    std::memcpy(&l->batch, buf, 4);
    return abi::kStatusSuccess;
  }
  if (attr == abi::kLayoutStridedBatchOffset && size == 8) {
    std::memcpy(&l->stride, buf, 8);
    return abi::kStatusSuccess;
  }
  return kInvalidValue;
}
int cublasLtMatmulPreferenceCreate(void **pref) {
  *pref = new Pref();
  return abi::kStatusSuccess;
}
int cublasLtMatmulPreferenceDestroy(void *pref) {
  delete static_cast<Pref *>(pref);
  return abi::kStatusSuccess;
}
int cublasLtMatmulPreferenceSetAttribute(void *pref, int attr, const void *buf, size_t size) {
  auto *p = static_cast<Pref *>(pref);
  if (attr == abi::kPrefMaxWorkspaceBytes && size == 8) {
    std::memcpy(&p->workspace, buf, 8);
    return abi::kStatusSuccess;
  }
  if ((attr == abi::kPrefMinAlignmentABytes || attr == abi::kPrefMinAlignmentBBytes ||
       attr == abi::kPrefMinAlignmentCBytes || attr == abi::kPrefMinAlignmentDBytes) &&
      size == 4) {
    uint32_t v;
    std::memcpy(&v, buf, 4);
    return v && (v & (v - 1)) == 0 ? abi::kStatusSuccess : kInvalidValue;
  }
  return kInvalidValue;
}
int cublasLtMatmulAlgoGetHeuristic(void *handle, void *desc, void *a, void *b, void *c,
                                   void *d, void *pref, int requested,
                                   abi::HeuristicResult *results, int *count) {
  if (!handle || !desc || !a || !b || !c || !d || !pref || requested < 1)
    return kInvalidValue;
  *count = 0;
  if (check(*static_cast<Desc *>(desc), *static_cast<Layout *>(a), *static_cast<Layout *>(b),
            *static_cast<Layout *>(c)))
    return abi::kStatusNotSupported;
  std::memset(&results[0], 0, sizeof results[0]);
  results[0].algo.data[0] = kAlgoTag;
  results[0].state = abi::kStatusSuccess;
  results[0].wavesCount = 1;
  *count = 1;
  return abi::kStatusSuccess;
}
int cublasLtMatmul(void *handle, void *desc, const void *alpha, const void *A, void *a,
                   const void *B, void *b, const void *beta, const void *C, void *c, void *D,
                   void *d, const abi::MatmulAlgo *algo, void *workspace, size_t workspaceBytes,
                   void *stream) {
  if (!handle || !desc || !a || !b || !c || !d || !algo || algo->data[0] != kAlgoTag ||
      (workspaceBytes && !workspace))
    return kInvalidValue;
  Desc dd = *static_cast<Desc *>(desc);
  Layout la = *static_cast<Layout *>(a), lb = *static_cast<Layout *>(b),
         lc = *static_cast<Layout *>(c), ld = *static_cast<Layout *>(d);
  if (check(dd, la, lb, lc) || lc.type != ld.type || lc.rows != ld.rows || lc.cols != ld.cols)
    return kInvalidValue;
  if (workspaceBytes && !trc::fakecuda::inBounds(workspace, workspaceBytes))
    return kInvalidValue;
  double al, be;
  if (dd.scale == abi::kR64F) {
    std::memcpy(&al, alpha, 8);
    std::memcpy(&be, beta, 8);
  } else {
    float f;
    std::memcpy(&f, alpha, 4);
    al = f;
    std::memcpy(&f, beta, 4);
    be = f;
  }
  if (!spanInBounds(A, la, la.batch) || !spanInBounds(B, lb, lb.batch) ||
      !spanInBounds(C, lc, lc.batch) || !spanInBounds(D, ld, ld.batch)) {
    trc::fakecuda::illegalAddress("cublasLtMatmul");
    return kExecutionFailed;
  }
  static const bool checkOnly = [] {
    const char *v = std::getenv("TRC_FAKE_CUBLASLT_CHECK_ONLY");
    return v && std::strcmp(v, "1") == 0;
  }();
  if (checkOnly) {
    trc::fakecuda::enqueue(stream, [] {});
    return abi::kStatusSuccess;
  }
  trc::fakecuda::enqueue(stream, [=] {
    uint64_t m = lc.rows, n = lc.cols, k = dd.transA ? la.rows : la.cols;
    size_t ea = elementBytes(la.type), eb = elementBytes(lb.type), ec = elementBytes(lc.type);
    for (int32_t bi = 0; bi < lc.batch; ++bi) {
      const char *pa = static_cast<const char *>(A) + size_t(bi * la.stride) * ea;
      const char *pb = static_cast<const char *>(B) + size_t(bi * lb.stride) * eb;
      const char *pc = static_cast<const char *>(C) + size_t(bi * lc.stride) * ec;
      char *pd = static_cast<char *>(D) + size_t(bi * ld.stride) * ec;
      std::vector<double> out(size_t(m * n));
      for (uint64_t j = 0; j < n; ++j)
        for (uint64_t i = 0; i < m; ++i) {
          double sum = 0;
          for (uint64_t p = 0; p < k; ++p) {
            uint64_t ia = dd.transA ? p + i * uint64_t(la.ld) : i + p * uint64_t(la.ld);
            uint64_t ib = dd.transB ? j + p * uint64_t(lb.ld) : p + j * uint64_t(lb.ld);
            sum += load(pa + ia * ea, la.type) * load(pb + ib * eb, lb.type);
          }
          double prior = be != 0 ? load(pc + (i + j * uint64_t(lc.ld)) * ec, lc.type) : 0;
          out[size_t(i + j * m)] = al * sum + be * prior;
        }
      for (uint64_t j = 0; j < n; ++j)
        for (uint64_t i = 0; i < m; ++i)
          store(pd + (i + j * uint64_t(ld.ld)) * ec, ld.type, out[size_t(i + j * m)]);
    }
  });
  return abi::kStatusSuccess;
}

} // extern "C"
