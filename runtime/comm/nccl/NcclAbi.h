//===- NcclAbi.h - the parts of NCCL's and CUDA's C ABI the runtime uses ----===//
//
// NcclCommunicator loads libnccl.so.2 and the CUDA driver (libcuda.so.1) at
// run time and is built without nccl.h or cuda.h, so it spells out the
// values it needs. Enums are passed as int (their C ABI); handles are
// opaque pointers; ncclUniqueId is 128 bytes passed by value. When the CUDA
// toolkit's headers are found at build time, runtime/tests/
// NcclAbiCheckTest.cpp checks every value here against nccl.h and cuda.h.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_NCCLABI_H
#define TRC_RUNTIME_NCCLABI_H

#include <cstddef>

namespace trc::rt::ncclabi {

constexpr const char *kDefaultLibrary = "libnccl.so.2";
constexpr const char *kDriverLibrary = "libcuda.so.1";

constexpr std::size_t kUniqueIdBytes = 128; // NCCL_UNIQUE_ID_BYTES
struct UniqueId {
  char internal[kUniqueIdBytes];
};

// ncclResult_t
constexpr int kSuccess = 0;
constexpr int kInProgress = 7;
// ncclDataType_t
constexpr int kInt8 = 0, kUint8 = 1, kInt32 = 2, kUint32 = 3, kInt64 = 4,
              kUint64 = 5, kFloat16 = 6, kFloat32 = 7, kFloat64 = 8,
              kBfloat16 = 9;
// ncclRedOp_t
constexpr int kSum = 0, kProd = 1, kMax = 2, kMin = 3, kAvg = 4;
// NCCL_SPLIT_NOCOLOR
constexpr int kSplitNoColor = -1;
// Versions (NCCL_VERSION(X, Y, 0) = X * 10000 + Y * 100 from 2.9 on).
constexpr int kVersionSendRecv = 20700; // ncclSend / ncclRecv
constexpr int kVersionAvgBf16 = 21000;  // ncclAvg, ncclBfloat16

// CUresult
constexpr int kCudaSuccess = 0;
constexpr int kCudaErrorNoDevice = 100;
constexpr int kCudaErrorNotReady = 600;
// CU_STREAM_NON_BLOCKING
constexpr unsigned kStreamNonBlocking = 1;
// CU_EVENT_DISABLE_TIMING
constexpr unsigned kEventDisableTiming = 2;

} // namespace trc::rt::ncclabi

#endif // TRC_RUNTIME_NCCLABI_H
