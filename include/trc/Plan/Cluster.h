//===- Cluster.h - device profiles (spec sheets or measured) and clusters ----===//
//
// A DeviceProfile is what the cost model knows of one accelerator: dense
// peak, memory bandwidth and capacity, the links between devices. A Cluster
// is N such devices, grouped into nodes, with two links: within a node
// (NVLink; shared memory for CPU ranks) and between nodes (the network, per
// device). Profiles are published spec sheets (A100 40/80 GB, H100 SXM 80 GB,
// H200; a modest CPU) or measured: `trc-run --calibrate` writes a device
// profile file (ProfileFile.h) whose `measured` entries hold this machine's
// constants, one entry per number of ranks sharing the node (their cores,
// caches and memory bandwidth), and the cost model prices with them instead
// of the spec-sheet roofline (CostModel.h).
//
// parseCluster reads "KIND:N" (KIND one of deviceKinds()) or the path of a
// cluster JSON file:
//   {"device": "a100-80gb", "nodes": 4, "gpus_per_node": 8,
//    "intra_node_bandwidth_gbs": 300, "inter_node_bandwidth_gbs": 25,
//    "intra_node_latency_us": 5, "inter_node_latency_us": 10, "memory_gb": 80,
//    "device_profile": "cpu-profile.json"}
// ("device" and "nodes" required, the rest override the profile;
// "device_profile" is a measured profile file, relative to the cluster
// file's folder, whose "device" must equal "device"). `profilePath`, when
// not empty (trc-plan --device-profile), replaces the spec sheet of a
// "KIND:N" cluster the same way. Errors name the flag, the file and the
// key; on error `out` is untouched.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PLAN_CLUSTER_H
#define TRC_PLAN_CLUSTER_H

#include "runtime/support/Status.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace trc::plan {

// seconds = flops / flopsPerSecond + bytes / bytesPerSecond + calls x callSeconds
// (the runtime's BLAS, fitted over shapes by trc-run --calibrate). A rate of
// 0 means the fit dropped that term.
struct MatmulFit {
  double flopsPerSecond = 0, bytesPerSecond = 0, callSeconds = 0;
  double seconds(double flops, double bytes, double calls) const {
    return (flopsPerSecond > 0 ? flops / flopsPerSecond : 0) +
           (bytesPerSecond > 0 ? bytes / bytesPerSecond : 0) + calls * callSeconds;
  }
};

// seconds = latency + bytes / bandwidth (a collective of `bytes`, the whole
// tensor, or one point-to-point message); bandwidth 0: no bytes term.
struct LinkFit {
  double latency = 0, bandwidth = 0;
  double seconds(double bytes) const { return latency + (bandwidth > 0 ? bytes / bandwidth : 0); }
};

// What trc-run --calibrate measured with `ranks` ranks running at once on
// one node (each with `threads` threads).
struct MeasuredConstants {
  int ranks = 1, threads = 1;
  MatmulFit matmul;
  // Memory-bound kernels (the compiled programs' loops): per byte of
  // unfused op traffic (each op reading its operands and writing its
  // result, trc-print-fusion-summary's "before") and per unfused op.
  double kernelBytesPerSecond = 0, kernelOpSeconds = 0;
  std::string kernelProbe;  // "compiled" (trc programs) or "stream" (a C++ loop)
  // Streaming arrays larger than the caches (a fused elementwise kernel
  // such as the optimizer's update): bytes read and written per second.
  double streamBytesPerSecond = 0;
  // "all_reduce", "all_gather", "reduce_scatter", "p2p" -> group size -> fit.
  std::map<std::string, std::map<int, LinkFit>> collectives;
  std::string samplesJson; // the raw timings (a JSON object), kept in the file
};

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
  // Bytes per element of weights, activations and gradients as the device
  // trains: 2 (bf16 with fp32 master weights and moments, the GPUs) or 4
  // (fp32 throughout, trc's CPU backend).
  int elementBytes = 2;
  // CPU ranks share the node's memory: when > 0, a rank has
  // nodeMemoryBytes / (ranks on the node) instead of memoryBytes.
  double nodeMemoryBytes = 0;
  // Cores of a node (measured profiles): more ranks than cores share them.
  // 0: unknown (every rank is taken to have its share measured).
  int nodeCores = 0;
  std::string source = "spec sheet"; // or what measured it, when and where
  std::vector<MeasuredConstants> measured; // empty: the spec-sheet roofline

  // The entry measured with `ranks` ranks per node; else the one with the
  // most ranks below (its rates scaled by its ranks / `ranks`: the node's
  // cores shared by more ranks), else the fewest above; null when none.
  std::optional<MeasuredConstants> measuredFor(int ranks) const;
  // Memory one of `ranks` ranks of a node may use.
  double memoryPerDevice(int ranks) const;
};

struct Cluster {
  DeviceProfile device;
  int nodes = 1;
  int devices() const { return nodes * device.devicesPerNode; }
  // Memory one device (rank) may use.
  double deviceMemory() const { return device.memoryPerDevice(device.devicesPerNode); }
};

std::vector<std::string> deviceKinds();
// false when `kind` is unknown.
bool deviceProfile(const std::string &kind, DeviceProfile &out);
rt::Status parseCluster(const std::string &spec, Cluster &out,
                        const std::string &profilePath = "");

} // namespace trc::plan

#endif // TRC_PLAN_CLUSTER_H
