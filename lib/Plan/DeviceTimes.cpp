//===- DeviceTimes.cpp - kernel and collective seconds (DeviceTimes.h) ------===//
#include "DeviceTimes.h"

#include "trc/Plan/CostModel.h"

#include <algorithm>

namespace trc::plan {
namespace {

const char *collectiveKey(Collective op) {
  switch (op) {
  case Collective::AllReduce:
    return "all_reduce";
  case Collective::AllGather:
    return "all_gather";
  case Collective::ReduceScatter:
    return "reduce_scatter";
  case Collective::P2P:
    return "p2p";
  }
  return "";
}

} // namespace

DeviceTimes::DeviceTimes(const Cluster &cluster, int busyRanks)
    : device_(cluster.device),
      measured_(cluster.device.measuredFor(busyRanks > 0 ? busyRanks : cluster.device.devicesPerNode)),
      comm_(cluster.device.measuredFor(cluster.device.devicesPerNode)),
      elementBytes_(cluster.device.elementBytes), trcKernels_(cluster.device.kind == "cpu") {}

double DeviceTimes::matmul(double m, double n, double k, double batch) const {
  double flops = 2 * m * n * k * batch, bytes = elementBytes_ * (m * k + k * n + m * n) * batch;
  if (measured_)
    return measured_->matmul.seconds(flops, bytes, batch);
  return std::max(flops / (device_.peakFlops * kMatmulEfficiency),
                  bytes / (device_.memBandwidth * kMemoryEfficiency));
}

double DeviceTimes::stream(double bytes) const {
  if (measured_)
    return bytes / measured_->streamBytesPerSecond;
  return bytes / (device_.memBandwidth * kMemoryEfficiency);
}

double DeviceTimes::kernels(double elements, double ops) const {
  double bytes = elements * elementBytes_;
  if (measured_)
    return bytes / measured_->kernelBytesPerSecond + ops * measured_->kernelOpSeconds;
  return bytes / (device_.memBandwidth * kMemoryEfficiency) + ops * 2e-6;
}

double DeviceTimes::collective(Collective op, int n, double bytes, long long span) const {
  if (n <= 1)
    return 0;
  bool intra = span <= device_.devicesPerNode;
  if (comm_ && intra) {
    auto byOp = comm_->collectives.find(collectiveKey(op));
    if (byOp != comm_->collectives.end()) {
      auto fit = byOp->second.find(op == Collective::P2P ? 2 : n);
      if (fit != byOp->second.end())
        return fit->second.seconds(bytes);
    }
  }
  double bandwidth = intra ? device_.intraBandwidth : device_.interBandwidth;
  double latency = intra ? device_.intraLatency : device_.interLatency;
  switch (op) {
  case Collective::AllReduce:
    return 2.0 * (n - 1) * latency + 2.0 * (n - 1) / n * bytes / bandwidth;
  case Collective::AllGather:
  case Collective::ReduceScatter:
    return (n - 1) * latency + double(n - 1) / n * bytes / bandwidth;
  case Collective::P2P:
    return latency + bytes / bandwidth;
  }
  return 0;
}

} // namespace trc::plan
