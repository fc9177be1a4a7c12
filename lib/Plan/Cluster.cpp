//===- Cluster.cpp - spec-sheet device profiles and cluster files ------------===//
//
// Published figures: A100 SXM 312 TFLOP/s dense bf16, 1555 GB/s (40 GB) and
// 2039 GB/s (80 GB), NVLink 3 600 GB/s bidirectional (300 per direction),
// HDR InfiniBand 200 Gb/s per GPU (25 GB/s); H100 SXM 989 TFLOP/s dense
// bf16, 3.35 TB/s, NVLink 4 900 GB/s bidirectional, NDR 400 Gb/s per GPU;
// H200 the same compute with 141 GB at 4.8 TB/s. The CPU profile is a
// modest multi-core server: 1 TFLOP/s, 50 GB/s, 64 GiB shared by the ranks
// of a node, shared memory between ranks, 10 GbE between machines; it
// trains in fp32 and, until a measured profile replaces it
// (--device-profile), prices trc's CPU kernels with the built-in constants
// of kBuiltinCpu (CostModel.h).
//
//===----------------------------------------------------------------------===//
#include "trc/Plan/Cluster.h"
#include "trc/Plan/ProfileFile.h"

#include "runtime/formats/FileOps.h"
#include "runtime/formats/Json.h"
#include "runtime/support/Parse.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace trc::plan {
namespace {

constexpr double GB = 1e9, GiB = 1073741824.0, T = 1e12, us = 1e-6;

DeviceProfile gpu(const char *kind, double tflops, double hbmGBs, double memGB, double nvlinkGBs,
                  double netGBs) {
  DeviceProfile d;
  d.kind = kind;
  d.peakFlops = tflops * T;
  d.memBandwidth = hbmGBs * GB;
  d.memoryBytes = memGB * GB;
  d.reservedBytes = 2 * GiB;
  d.intraBandwidth = nvlinkGBs * GB;
  d.interBandwidth = netGBs * GB;
  d.intraLatency = 5 * us;
  d.interLatency = 10 * us;
  d.devicesPerNode = 8;
  return d;
}

std::vector<DeviceProfile> profiles() {
  DeviceProfile cpu;
  cpu.kind = "cpu";
  cpu.peakFlops = 1 * T;
  cpu.memBandwidth = 50 * GB;
  cpu.memoryBytes = 16 * GiB;
  cpu.nodeMemoryBytes = 64 * GiB;
  cpu.elementBytes = 4;
  cpu.reservedBytes = 0.5 * GiB;
  cpu.intraBandwidth = 10 * GB;
  cpu.interBandwidth = 1.25 * GB;
  cpu.intraLatency = 20 * us;
  cpu.interLatency = 50 * us;
  cpu.devicesPerNode = 1; // one rank per node; "cpu:N" puts N on one node
  return {gpu("a100-40gb", 312, 1555, 40, 300, 25), gpu("a100-80gb", 312, 2039, 80, 300, 25),
          gpu("h100-80gb", 989, 3350, 80, 450, 50), gpu("h200", 989, 4800, 141, 450, 50), cpu};
}

std::string kindList() {
  std::string s;
  for (const std::string &k : deviceKinds())
    s += (s.empty() ? "" : ", ") + k;
  return s;
}

rt::Status readNumber(const rt::JsonValue &root, const char *key, bool integer, double &out) {
  const rt::JsonValue *v = root.find(key);
  if (!v)
    return rt::Status::success();
  double d;
  int64_t i;
  if (!v->isNumber() || (integer ? !v->asInt64(i) : !v->asDouble(d)))
    return rt::Status::error(std::string("key '") + key + "': expected " +
                             (integer ? "an integer" : "a number") + ", got " +
                             (v->isNumber() ? v->text() : rt::JsonValue::kindName(v->kind())));
  if (integer)
    d = double(i);
  if (!(d > 0))
    return rt::Status::error(std::string("key '") + key + "': expected a value > 0, got " +
                             v->text());
  out = d;
  return rt::Status::success();
}

// The folder of `path` ("" for a bare file name), with its trailing '/'.
std::string folderOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

// Replaces `device` with the measured profile at `path` (its kind must be
// `device`'s); errors name `path`.
rt::Status adoptProfile(const std::string &path, DeviceProfile &device) {
  DeviceProfile measured;
  if (rt::Status s = readDeviceProfile(path, measured); !s)
    return s;
  if (measured.kind != device.kind)
    return rt::Status::error(path + ": key 'device': the profile is of '" + measured.kind +
                             "', the cluster's devices are '" + device.kind + "'");
  measured.devicesPerNode = device.devicesPerNode;
  device = measured;
  return rt::Status::success();
}

rt::Status parseClusterJson(const std::string &text, const std::string &folder, Cluster &out) {
  rt::StatusOr<rt::JsonValue> parsed = rt::parseJson(text);
  if (!parsed.ok())
    return parsed.status();
  const rt::JsonValue &root = *parsed;
  if (!root.isObject())
    return rt::Status::error(std::string("expected an object, got ") +
                             rt::JsonValue::kindName(root.kind()));
  static const char *known[] = {"device", "nodes", "gpus_per_node", "intra_node_bandwidth_gbs",
                                "inter_node_bandwidth_gbs", "intra_node_latency_us",
                                "inter_node_latency_us", "memory_gb", "device_profile"};
  for (const auto &m : root.members()) {
    bool ok = false;
    for (const char *k : known)
      ok |= m.first == k;
    if (!ok)
      return rt::Status::error("unknown key '" + m.first + "'");
  }
  const rt::JsonValue *dev = root.find("device");
  if (!dev)
    return rt::Status::error("missing key 'device'");
  if (!dev->isString())
    return rt::Status::error(std::string("key 'device': expected a string, got ") +
                             rt::JsonValue::kindName(dev->kind()));
  Cluster c;
  if (!deviceProfile(dev->text(), c.device))
    return rt::Status::error("key 'device': unknown device kind '" + dev->text() +
                             "' (known: " + kindList() + ")");
  if (const rt::JsonValue *profile = root.find("device_profile")) {
    if (!profile->isString() || profile->text().empty())
      return rt::Status::error("key 'device_profile': expected the path of a device profile "
                               "file (trc-run --calibrate)");
    std::string path = profile->text()[0] == '/' ? profile->text() : folder + profile->text();
    if (rt::Status s = adoptProfile(path, c.device); !s)
      return s.withPrefix("key 'device_profile': ");
  }
  if (!root.find("nodes"))
    return rt::Status::error("missing key 'nodes'");
  double nodes = 0, perNode = c.device.devicesPerNode,
         mem = (c.device.nodeMemoryBytes > 0 ? c.device.nodeMemoryBytes : c.device.memoryBytes) / GB;
  double intra = c.device.intraBandwidth / GB, inter = c.device.interBandwidth / GB;
  double intraLat = c.device.intraLatency / us, interLat = c.device.interLatency / us;
  for (auto [key, integer, field] :
       {std::tuple("nodes", true, &nodes), std::tuple("gpus_per_node", true, &perNode),
        std::tuple("memory_gb", false, &mem), std::tuple("intra_node_bandwidth_gbs", false, &intra),
        std::tuple("inter_node_bandwidth_gbs", false, &inter),
        std::tuple("intra_node_latency_us", false, &intraLat),
        std::tuple("inter_node_latency_us", false, &interLat)})
    if (rt::Status s = readNumber(root, key, integer, *field); !s)
      return s;
  if (nodes * perNode > 1e7) {
    // Printed from the doubles: a count past 2^63 has no int64_t.
    auto whole = [](double x) {
      char text[64];
      std::snprintf(text, sizeof text, "%.0f", x);
      return std::string(text);
    };
    return rt::Status::error("key 'nodes': " + whole(nodes) + " x " + whole(perNode) +
                             " devices is too many");
  }
  c.nodes = int(nodes);
  c.device.devicesPerNode = int(perNode);
  (c.device.nodeMemoryBytes > 0 ? c.device.nodeMemoryBytes : c.device.memoryBytes) = mem * GB;
  c.device.intraBandwidth = intra * GB;
  c.device.interBandwidth = inter * GB;
  c.device.intraLatency = intraLat * us;
  c.device.interLatency = interLat * us;
  out = c;
  return rt::Status::success();
}

} // namespace

std::vector<std::string> deviceKinds() {
  std::vector<std::string> kinds;
  for (const DeviceProfile &p : profiles())
    kinds.push_back(p.kind);
  return kinds;
}

bool deviceProfile(const std::string &kind, DeviceProfile &out) {
  // Forgiving: any case, and a kind's name without its memory size when that
  // names one kind ("H100" is h100-80gb; "a100" is 40 or 80 GB: not found).
  std::string wanted = kind;
  for (char &c : wanted)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  const std::vector<DeviceProfile> all = profiles();
  const DeviceProfile *prefixed = nullptr;
  int prefixMatches = 0;
  for (const DeviceProfile &p : all) {
    if (p.kind == wanted) {
      out = p;
      return true;
    }
    if (p.kind.compare(0, wanted.size() + 1, wanted + "-") == 0) {
      ++prefixMatches;
      prefixed = &p;
    }
  }
  if (prefixMatches != 1)
    return false;
  out = *prefixed;
  return true;
}

std::optional<MeasuredConstants> DeviceProfile::measuredFor(int ranks) const {
  const MeasuredConstants *below = nullptr, *above = nullptr;
  for (const MeasuredConstants &m : measured) {
    if (m.ranks == ranks)
      return m;
    if (m.ranks < ranks && (!below || m.ranks > below->ranks))
      below = &m;
    if (m.ranks > ranks && (!above || m.ranks < above->ranks))
      above = &m;
  }
  if (!below)
    return above ? std::optional<MeasuredConstants>(*above) : std::nullopt;
  // More ranks than measured share the node's cores: each gets its part.
  MeasuredConstants m = *below;
  double share = double(below->ranks) / ranks;
  m.matmul.flopsPerSecond *= share;
  m.matmul.bytesPerSecond *= share;
  m.kernelBytesPerSecond *= share;
  m.ranks = ranks;
  return m;
}

double DeviceProfile::memoryPerDevice(int ranks) const {
  return nodeMemoryBytes > 0 ? nodeMemoryBytes / std::max(1, ranks) : memoryBytes;
}

rt::Status parseCluster(const std::string &spec, Cluster &out, const std::string &profilePath) {
  size_t colon = spec.find(':');
  if (spec.size() > 5 && spec.compare(spec.size() - 5, 5, ".json") == 0) {
    rt::StatusOr<std::string> text = rt::readSmallFile(spec, 1 << 20);
    if (!text.ok())
      return rt::Status(text.status()).withPrefix("--cluster " + spec + ": ");
    Cluster c;
    if (rt::Status s = parseClusterJson(*text, folderOf(spec), c); !s)
      return s.withPrefix("--cluster " + spec + ": ");
    if (!profilePath.empty())
      if (rt::Status s = adoptProfile(profilePath, c.device); !s)
        return s.withPrefix("--device-profile ");
    out = c;
    return rt::Status::success();
  }
  if (colon == std::string::npos)
    return rt::Status::error("--cluster '" + spec +
                             "': expected KIND:N (KIND one of " + kindList() + ") or FILE.json");
  std::string kind = spec.substr(0, colon);
  Cluster c;
  if (!deviceProfile(kind, c.device))
    return rt::Status::error("--cluster '" + spec + "': unknown device kind '" + kind +
                             "' (known: " + kindList() + ")");
  std::optional<int64_t> n = rt::parseInt64(std::string_view(spec).substr(colon + 1), 1, 10000000);
  if (!n)
    return rt::Status::error("--cluster '" + spec + "': expected a device count >= 1 after ':'");
  if (kind == "cpu" || *n < c.device.devicesPerNode) {
    c.device.devicesPerNode = int(*n); // all on one node
    c.nodes = 1;
  } else if (*n % c.device.devicesPerNode != 0) {
    return rt::Status::error("--cluster '" + spec + "': " + std::to_string(*n) +
                             " devices do not fill whole nodes of " +
                             std::to_string(c.device.devicesPerNode));
  } else {
    c.nodes = int(*n / c.device.devicesPerNode);
  }
  if (!profilePath.empty())
    if (rt::Status s = adoptProfile(profilePath, c.device); !s)
      return s.withPrefix("--device-profile ");
  out = c;
  return rt::Status::success();
}

} // namespace trc::plan
