//===- Cluster.h - device profiles (spec sheets) and clusters ----------------===//
//
// A DeviceProfile is what the cost model knows of one accelerator: dense
// bf16 peak, HBM bandwidth and capacity. A Cluster is N such devices, grouped
// into nodes, with two links: within a node (NVLink) and between nodes (the
// network, per GPU). Profiles are published spec sheets (A100 40/80 GB, H100
// SXM 80 GB, H200) and a modest CPU default; measured profiles
// (`trc-run --calibrate`) are future work.
//
// parseCluster reads "KIND:N" (KIND one of deviceKinds()) or the path of a
// cluster JSON file:
//   {"device": "a100-80gb", "nodes": 4, "gpus_per_node": 8,
//    "intra_node_bandwidth_gbs": 300, "inter_node_bandwidth_gbs": 25,
//    "intra_node_latency_us": 5, "inter_node_latency_us": 10, "memory_gb": 80}
// ("device" and "nodes" required, the rest override the profile). Errors
// name the flag, the file and the key; on error `out` is untouched.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PLAN_CLUSTER_H
#define TRC_PLAN_CLUSTER_H

#include "runtime/support/Status.h"

#include <string>
#include <vector>

namespace trc::plan {

struct DeviceProfile {
  std::string kind;
  double peakFlops = 0;       // dense bf16 FLOP/s
  double memBandwidth = 0;    // HBM bytes/s
  double memoryBytes = 0;     // capacity
  double reservedBytes = 0;   // context, library workspaces, fragmentation
  double intraBandwidth = 0;  // bytes/s per device, one direction (NVLink)
  double interBandwidth = 0;  // bytes/s per device between nodes
  double intraLatency = 0;    // seconds per collective step
  double interLatency = 0;
  int devicesPerNode = 8;
};

struct Cluster {
  DeviceProfile device;
  int nodes = 1;
  int devices() const { return nodes * device.devicesPerNode; }
};

std::vector<std::string> deviceKinds();
// false when `kind` is unknown.
bool deviceProfile(const std::string &kind, DeviceProfile &out);
rt::Status parseCluster(const std::string &spec, Cluster &out);

} // namespace trc::plan

#endif // TRC_PLAN_CLUSTER_H
