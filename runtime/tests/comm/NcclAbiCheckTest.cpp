//===- NcclAbiCheckTest.cpp - NcclAbi.h against nccl.h and cuda.h -----------===//
//
// Built only where CMake finds the CUDA toolkit's cuda.h and nccl.h (the
// runtime itself never includes them): every value NcclAbi.h spells out is
// compared with the headers at compile time.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/nccl/NcclAbi.h"

#include <cuda.h>
#include <nccl.h>

#include <gtest/gtest.h>

namespace nabi = trc::rt::ncclabi;

static_assert(nabi::kUniqueIdBytes == NCCL_UNIQUE_ID_BYTES);
static_assert(sizeof(nabi::UniqueId) == sizeof(ncclUniqueId));
static_assert(sizeof(ncclResult_t) == sizeof(int));
static_assert(sizeof(ncclDataType_t) == sizeof(int));
static_assert(sizeof(ncclRedOp_t) == sizeof(int));
static_assert(sizeof(CUresult) == sizeof(int));
static_assert(sizeof(CUdevice) == sizeof(int));
static_assert(sizeof(CUdeviceptr) == sizeof(unsigned long long));
static_assert(nabi::kSuccess == ncclSuccess);
static_assert(nabi::kInProgress == ncclInProgress);
static_assert(nabi::kInt8 == ncclInt8 && nabi::kUint8 == ncclUint8);
static_assert(nabi::kInt32 == ncclInt32 && nabi::kUint32 == ncclUint32);
static_assert(nabi::kInt64 == ncclInt64 && nabi::kUint64 == ncclUint64);
static_assert(nabi::kFloat16 == ncclFloat16 && nabi::kFloat32 == ncclFloat32);
static_assert(nabi::kFloat64 == ncclFloat64 && nabi::kBfloat16 == ncclBfloat16);
static_assert(nabi::kSum == ncclSum && nabi::kProd == ncclProd);
static_assert(nabi::kMax == ncclMax && nabi::kMin == ncclMin);
static_assert(nabi::kAvg == ncclAvg);
static_assert(nabi::kSplitNoColor == NCCL_SPLIT_NOCOLOR);
// NCCL_VERSION(2, 7, 0) is 2700 (the old X * 1000 scheme); NcclAbi.h
// normalizes every version to X * 10000 + Y * 100 + Z.
static_assert(NCCL_VERSION(2, 7, 0) == 2700 && nabi::kVersionSendRecv == 20700);
static_assert(nabi::kVersionAvgBf16 == NCCL_VERSION(2, 10, 0));
static_assert(nabi::kCudaSuccess == CUDA_SUCCESS);
static_assert(nabi::kCudaErrorNoDevice == CUDA_ERROR_NO_DEVICE);
static_assert(nabi::kCudaErrorNotReady == CUDA_ERROR_NOT_READY);
static_assert(nabi::kStreamNonBlocking == CU_STREAM_NON_BLOCKING);
static_assert(nabi::kEventDisableTiming == CU_EVENT_DISABLE_TIMING);

TEST(NcclAbi, MatchesHeaders) { SUCCEED() << "checked at compile time"; }
