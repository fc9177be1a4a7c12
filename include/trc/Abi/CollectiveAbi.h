//===- CollectiveAbi.h - the codes compiled programs pass to collectives ---===//
//
// Shared by the compiler (trc-collectives-to-runtime-call) and the runtime
// (Collectives.cpp), so both agree on the integers: process groups as
// trc::CollectiveGroup (the dialect's enum has the same values), reductions as trc::CollectiveReduction, element
// types as rt::DType. No dependencies; see docs/ARTIFACT.md "Collectives".
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_COLLECTIVEABI_H
#define TRC_RUNTIME_COLLECTIVEABI_H

#include <cstdint>

namespace trc::abi {
// The ranks are a grid data x tensor, tensor inner: world rank r has tensor
// index r % T and data index r / T. World is the data axis (the ranks with
// my tensor index and, under context parallelism, my context index; the
// whole world when T = C = 1). Shard and replica split the data x context
// group below (the data axis without context parallelism) as ZeRO does.
// Tensor is the T ranks with my data index. Pipeline is the ranks holding
// the stages of one model replica (pipeline parallelism: the gradient norm
// sums over it). Context is the ranks that share my rows and hold other
// parts of their sequence (context parallelism: world = pp x dp x cp x tp,
// tensor innermost, then context). DataContext is the data axis and the
// context axis together (the ranks with my tensor index): parameters are
// replicated over both, so one reduction over it sums a gradient's context
// parts and its data copies at once; the data axis itself without context
// parallelism.
enum CollectiveGroupCode : int64_t {
  kGroupWorld = 0, kGroupShard = 1, kGroupReplica = 2, kGroupTensor = 3, kGroupPipeline = 4,
  kGroupContext = 5, kGroupDataContext = 6
};
constexpr int64_t kNumGroups = 7;
enum CollectiveReductionCode : int64_t {
  kReduceSum = 0, kReduceAvg = 1, kReduceMax = 2, kReduceMin = 3
};
// rt::DType's numbering (runtime/support/DType.h), spelled out for the compiler.
enum DTypeCode : int64_t {
  kF32 = 0, kF64 = 1, kF16 = 2, kBF16 = 3, kI1 = 4, kI8 = 5, kI16 = 6, kI32 = 7, kI64 = 8
};
} // namespace trc::abi

#endif // TRC_RUNTIME_COLLECTIVEABI_H
