//===- DeviceTimes.h - seconds of kernels and collectives on a device -*- C++ -*-===//
//
// Internal to lib/Plan: the one place where a DeviceProfile becomes
// seconds, for CostModel.cpp and StepWork.cpp. Two sources:
// - a spec sheet (no measured constants): matrix products as a roofline
//   max(FLOPs / (peak x kMatmulEfficiency), bytes / (HBM x
//   kMemoryEfficiency)), streaming kernels by bytes / (HBM x
//   kMemoryEfficiency), collectives as ring algorithms over the link;
// - a measured profile (trc-run --calibrate), the entry for the ranks per
//   node (DeviceProfile::measuredFor): matrix products by the fitted
//   FLOP, byte and call terms, trc's compiled kernels by unfused bytes and
//   ops, fused streaming kernels by the measured stream bandwidth, collectives by the fitted latency + bytes / bandwidth of that
//   operation and group size (ring formulas on the profile's links for
//   groups it did not measure or that span nodes).
// A CPU without a measured profile prices trc's kernels from its spec
// sheet (matmul at kMatmulEfficiency of peak, kernels at
// kMemoryEfficiency of its bandwidth, 2 us per op).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_PLAN_DEVICETIMES_H
#define TRC_LIB_PLAN_DEVICETIMES_H

#include "trc/Plan/Cluster.h"

#include <optional>

namespace trc::plan {

enum class Collective { AllReduce, AllGather, ReduceScatter, P2P };

class DeviceTimes {
public:
  // Kernels priced as when `busyRanks` ranks of a node compute at once (0:
  // all of them); collectives always as measured with all of them.
  explicit DeviceTimes(const Cluster &cluster, int busyRanks = 0);

  // `batch` products of (m x k) by (k x n), one library call each.
  double matmul(double m, double n, double k, double batch = 1) const;
  // Fused kernels: `bytes` streamed through memory.
  double stream(double bytes) const;
  // trc's compiled kernels: `elements` of unfused op traffic, `ops` ops.
  double kernels(double elements, double ops) const;
  // One collective of a `bytes` tensor (the whole: all-reduce's buffer,
  // all-gather's result, reduce-scatter's input; a p2p message) over `n`
  // ranks spanning `span` consecutive devices (a group within a node when
  // span <= devices per node).
  double collective(Collective op, int n, double bytes, long long span) const;

  int elementBytes() const { return elementBytes_; }
  // Whether the device runs trc's unfused CPU kernels (the CPU) rather
  // than fused CUDA kernels (Megatron's accounting).
  bool trcKernels() const { return trcKernels_; }

private:
  const DeviceProfile &device_;
  std::optional<MeasuredConstants> measured_, comm_;
  int elementBytes_;
  bool trcKernels_;
};

} // namespace trc::plan

#endif // TRC_LIB_PLAN_DEVICETIMES_H
