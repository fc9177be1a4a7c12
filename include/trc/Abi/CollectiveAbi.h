//===- CollectiveAbi.h - the codes compiled programs pass to collectives ---===//
//
// Shared by the compiler (trc-collectives-to-runtime-call) and the runtime
// (Collectives.cpp), so both agree on the integers: process groups as
// trc::CollectiveGroup, reductions as trc::CollectiveReduction, element
// types as rt::DType. No dependencies; see docs/ARTIFACT.md "Collectives".
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_COLLECTIVEABI_H
#define TRC_RUNTIME_COLLECTIVEABI_H

#include <cstdint>

namespace trc::abi {
enum CollectiveGroupCode : int64_t { kGroupWorld = 0, kGroupShard = 1, kGroupReplica = 2 };
constexpr int64_t kNumGroups = 3;
enum CollectiveReductionCode : int64_t {
  kReduceSum = 0, kReduceAvg = 1, kReduceMax = 2, kReduceMin = 3
};
// rt::DType's numbering (runtime/support/DType.h), spelled out for the compiler.
enum DTypeCode : int64_t {
  kF32 = 0, kF64 = 1, kF16 = 2, kBF16 = 3, kI1 = 4, kI8 = 5, kI16 = 6, kI32 = 7, kI64 = 8
};
} // namespace trc::abi

#endif // TRC_RUNTIME_COLLECTIVEABI_H
