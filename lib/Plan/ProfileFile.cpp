//===- ProfileFile.cpp - device profile files (ProfileFile.h) ---------------===//
//
// One reader walks the document with a key path ("measured[1].matmul.gflops")
// for its messages; every object's keys are checked against the keys it
// may hold. Numbers are written with appendJsonDouble (they read back
// exactly). The spec sheet of the file's "device" is the starting point, so
// a profile only overrides what it measured.
//
//===----------------------------------------------------------------------===//
#include "trc/Plan/ProfileFile.h"

#include "JsonText.h"

#include "runtime/formats/FileOps.h"
#include "runtime/formats/Json.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

namespace trc::plan {
namespace {

using rt::JsonValue;
using rt::Status;

constexpr double GB = 1e9, us = 1e-6;

const char *const kCollectiveOps[] = {"all_reduce", "all_gather", "reduce_scatter", "p2p"};

Status checkKeys(const JsonValue &object, const std::string &where,
                 std::initializer_list<const char *> known) {
  for (const auto &member : object.members()) {
    bool ok = false;
    for (const char *k : known)
      ok |= member.first == k;
    if (!ok) {
      std::string list;
      for (const char *k : known)
        list += (list.empty() ? "" : ", ") + std::string(k);
      return Status::error("unknown key '" + where + member.first + "' (known: " + list + ")");
    }
  }
  return Status::success();
}

Status object(const JsonValue *v, const std::string &key) {
  if (!v)
    return Status::error("missing key '" + key + "'");
  if (!v->isObject())
    return Status::error("key '" + key + "': expected an object, got " +
                         JsonValue::kindName(v->kind()));
  return Status::success();
}

// A number >= min (> 0 when `positive`); `required` or left as is.
Status number(const JsonValue &parent, const std::string &where, const char *key, double &out,
              bool required, double min = 0, bool positive = false) {
  const JsonValue *v = parent.find(key);
  std::string name = where + key;
  if (!v)
    return required ? Status::error("missing key '" + name + "'") : Status::success();
  double d;
  if (!v->isNumber() || !v->asDouble(d))
    return Status::error("key '" + name + "': expected a number, got " +
                         (v->isNumber() ? v->text() : JsonValue::kindName(v->kind())));
  if (!std::isfinite(d) || d < min || (positive && d <= 0))
    return Status::error("key '" + name + "': expected a number " +
                         (positive ? "> 0" : ">= " + std::to_string(int(min))) + ", got " +
                         v->text());
  out = d;
  return Status::success();
}

Status integer(const JsonValue &parent, const std::string &where, const char *key, int &out,
               int min, int max) {
  const JsonValue *v = parent.find(key);
  std::string name = where + key;
  if (!v)
    return Status::error("missing key '" + name + "'");
  int64_t i;
  if (!v->isNumber() || !v->asInt64(i) || i < min || i > max)
    return Status::error("key '" + name + "': expected an integer from " + std::to_string(min) +
                         " to " + std::to_string(max) + ", got " +
                         (v->isNumber() ? v->text() : JsonValue::kindName(v->kind())));
  out = int(i);
  return Status::success();
}

Status readLinks(const JsonValue &list, const std::string &where, std::map<int, LinkFit> &out) {
  if (!list.isArray())
    return Status::error("key '" + where + "': expected an array, got " +
                         JsonValue::kindName(list.kind()));
  for (size_t i = 0; i < list.elements().size(); ++i) {
    const JsonValue &e = list.elements()[i];
    std::string at = where + "[" + std::to_string(i) + "].";
    if (Status s = object(&e, where + "[" + std::to_string(i) + "]"); !s)
      return s;
    if (Status s = checkKeys(e, at, {"ranks", "latency_us", "gbs"}); !s)
      return s;
    int ranks = 0;
    LinkFit f;
    double lat = 0, gbs = 0;
    if (Status s = integer(e, at, "ranks", ranks, 2, 1 << 20); !s)
      return s;
    if (Status s = number(e, at, "latency_us", lat, true); !s)
      return s;
    if (Status s = number(e, at, "gbs", gbs, true); !s)
      return s;
    f.latency = lat * us;
    f.bandwidth = gbs * GB;
    if (!out.emplace(ranks, f).second)
      return Status::error("key '" + at + "ranks': " + std::to_string(ranks) + " given twice");
  }
  return Status::success();
}

Status readEntry(const JsonValue &e, const std::string &where, MeasuredConstants &m) {
  std::string at = where + ".";
  if (Status s = checkKeys(e, at, {"ranks", "threads", "matmul", "kernels", "collectives",
                                   "samples"});
      !s)
    return s;
  if (Status s = integer(e, at, "ranks", m.ranks, 1, 1 << 20); !s)
    return s;
  if (Status s = integer(e, at, "threads", m.threads, 1, 1 << 16); !s)
    return s;
  const JsonValue *mm = e.find("matmul");
  if (Status s = object(mm, at + "matmul"); !s)
    return s;
  std::string mat = at + "matmul.";
  if (Status s = checkKeys(*mm, mat, {"gflops", "gbs", "call_us"}); !s)
    return s;
  double gflops = 0, gbs = 0, callUs = 0;
  for (auto [key, field] : {std::pair{"gflops", &gflops}, std::pair{"gbs", &gbs},
                            std::pair{"call_us", &callUs}})
    if (Status s = number(*mm, mat, key, *field, true); !s)
      return s;
  if (gflops <= 0)
    return Status::error("key '" + mat + "gflops': expected a number > 0, got 0");
  m.matmul = {gflops * GB, gbs * GB, callUs * us};
  const JsonValue *k = e.find("kernels");
  if (Status s = object(k, at + "kernels"); !s)
    return s;
  std::string kat = at + "kernels.";
  if (Status s = checkKeys(*k, kat, {"probe", "gbs", "op_us", "stream_gbs"}); !s)
    return s;
  const JsonValue *probe = k->find("probe");
  if (!probe || !probe->isString() || (probe->text() != "compiled" && probe->text() != "stream"))
    return Status::error("key '" + kat + "probe': expected \"compiled\" or \"stream\"");
  m.kernelProbe = probe->text();
  double kgbs = 0, opUs = 0, streamGbs = 0;
  if (Status s = number(*k, kat, "gbs", kgbs, true, 0, true); !s)
    return s;
  if (Status s = number(*k, kat, "op_us", opUs, true); !s)
    return s;
  if (Status s = number(*k, kat, "stream_gbs", streamGbs, true, 0, true); !s)
    return s;
  m.streamBytesPerSecond = streamGbs * GB;
  m.kernelBytesPerSecond = kgbs * GB;
  m.kernelOpSeconds = opUs * us;
  if (const JsonValue *c = e.find("collectives")) {
    if (Status s = object(c, at + "collectives"); !s)
      return s;
    std::string cat = at + "collectives.";
    if (Status s = checkKeys(*c, cat, {"all_reduce", "all_gather", "reduce_scatter", "p2p"}); !s)
      return s;
    for (const char *op : kCollectiveOps)
      if (const JsonValue *list = c->find(op))
        if (Status s = readLinks(*list, cat + op, m.collectives[op]); !s)
          return s;
  }
  if (const JsonValue *samples = e.find("samples")) {
    if (Status s = object(samples, at + "samples"); !s)
      return s;
    m.samplesJson = jsonText(*samples);
  }
  return Status::success();
}

void appendNumber(std::string &j, const char *key, double v, bool comma = true) {
  j += std::string(comma ? ", " : "") + "\"" + key + "\": ";
  rt::appendJsonDouble(j, v);
}

} // namespace

Status parseDeviceProfile(const std::string &text, DeviceProfile &out) {
  rt::StatusOr<JsonValue> parsed = rt::parseJson(text);
  if (!parsed.ok())
    return parsed.status();
  const JsonValue &root = *parsed;
  if (!root.isObject())
    return Status::error(std::string("expected a JSON object at the top level, got ") +
                         JsonValue::kindName(root.kind()));
  if (Status s = checkKeys(root, "", {"trc_device_profile", "device", "source", "memory_gb",
                                      "cores", "element_bytes", "measured"});
      !s)
    return s;
  int version = 0;
  if (Status s = integer(root, "", "trc_device_profile", version, 1, 1 << 20); !s)
    return s;
  if (version != kProfileFormatVersion)
    return Status::error("key 'trc_device_profile': version " + std::to_string(version) +
                         " is not one this trc reads (" +
                         std::to_string(kProfileFormatVersion) + ")");
  const JsonValue *device = root.find("device");
  if (!device || !device->isString())
    return Status::error("key 'device': expected a device kind (a string)");
  DeviceProfile p;
  if (!deviceProfile(device->text(), p)) {
    std::string kinds;
    for (const std::string &k : deviceKinds())
      kinds += (kinds.empty() ? "" : ", ") + k;
    return Status::error("key 'device': unknown device kind '" + device->text() + "' (known: " +
                         kinds + ")");
  }
  if (const JsonValue *source = root.find("source")) {
    if (!source->isString())
      return Status::error("key 'source': expected a string");
    p.source = source->text();
  }
  double memGb = 0;
  if (Status s = number(root, "", "memory_gb", memGb, false, 0, true); !s)
    return s;
  if (root.find("memory_gb")) {
    if (p.nodeMemoryBytes > 0)
      p.nodeMemoryBytes = memGb * GB;
    else
      p.memoryBytes = memGb * GB;
  }
  if (root.find("cores"))
    if (Status s = integer(root, "", "cores", p.nodeCores, 1, 1 << 20); !s)
      return s;
  if (root.find("element_bytes")) {
    if (Status s = integer(root, "", "element_bytes", p.elementBytes, 2, 4); !s)
      return s;
    if (p.elementBytes == 3)
      return Status::error("key 'element_bytes': expected 2 or 4, got 3");
  }
  const JsonValue *measured = root.find("measured");
  if (!measured)
    return Status::error("missing key 'measured'");
  if (!measured->isArray() || measured->elements().empty())
    return Status::error("key 'measured': expected a non-empty array");
  p.measured.clear();
  for (size_t i = 0; i < measured->elements().size(); ++i) {
    std::string where = "measured[" + std::to_string(i) + "]";
    const JsonValue &e = measured->elements()[i];
    if (Status s = object(&e, where); !s)
      return s;
    MeasuredConstants m;
    if (Status s = readEntry(e, where, m); !s)
      return s;
    for (const MeasuredConstants &seen : p.measured)
      if (seen.ranks == m.ranks)
        return Status::error("key '" + where + ".ranks': " + std::to_string(m.ranks) +
                             " ranks measured twice");
    p.measured.push_back(m);
  }
  std::sort(p.measured.begin(), p.measured.end(),
            [](const MeasuredConstants &a, const MeasuredConstants &b) { return a.ranks < b.ranks; });
  out = p;
  return Status::success();
}

Status readDeviceProfile(const std::string &path, DeviceProfile &out) {
  rt::StatusOr<std::string> text = rt::readSmallFile(path, 16 << 20);
  if (!text.ok()) // it names the file
    return text.status();
  return parseDeviceProfile(*text, out).withPrefix(path + ": ");
}

std::string deviceProfileJson(const DeviceProfile &p) {
  std::string j = "{\"trc_device_profile\": ";
  rt::appendJsonInt(j, kProfileFormatVersion);
  j += ", \"device\": ";
  rt::appendJsonString(j, p.kind);
  j += ", \"source\": ";
  rt::appendJsonString(j, p.source);
  appendNumber(j, "memory_gb", (p.nodeMemoryBytes > 0 ? p.nodeMemoryBytes : p.memoryBytes) / GB);
  if (p.nodeCores > 0) {
    j += ", \"cores\": ";
    rt::appendJsonInt(j, p.nodeCores);
  }
  j += ", \"element_bytes\": ";
  rt::appendJsonInt(j, p.elementBytes);
  j += ",\n \"measured\": [";
  for (size_t i = 0; i < p.measured.size(); ++i) {
    const MeasuredConstants &m = p.measured[i];
    j += i ? ",\n  {" : "\n  {";
    j += "\"ranks\": ";
    rt::appendJsonInt(j, m.ranks);
    j += ", \"threads\": ";
    rt::appendJsonInt(j, m.threads);
    j += ",\n   \"matmul\": {";
    appendNumber(j, "gflops", m.matmul.flopsPerSecond / GB, false);
    appendNumber(j, "gbs", m.matmul.bytesPerSecond / GB);
    appendNumber(j, "call_us", m.matmul.callSeconds / us);
    j += "},\n   \"kernels\": {\"probe\": ";
    rt::appendJsonString(j, m.kernelProbe.empty() ? "stream" : m.kernelProbe);
    appendNumber(j, "gbs", m.kernelBytesPerSecond / GB);
    appendNumber(j, "op_us", m.kernelOpSeconds / us);
    appendNumber(j, "stream_gbs", m.streamBytesPerSecond / GB);
    j += "},\n   \"collectives\": {";
    bool firstOp = true;
    for (const char *op : kCollectiveOps) {
      auto it = m.collectives.find(op);
      if (it == m.collectives.end())
        continue;
      j += std::string(firstOp ? "" : ",\n                   ") + "\"" + op + "\": [";
      firstOp = false;
      bool first = true;
      for (const auto &[ranks, f] : it->second) {
        j += first ? "{\"ranks\": " : ", {\"ranks\": ";
        first = false;
        rt::appendJsonInt(j, ranks);
        appendNumber(j, "latency_us", f.latency / us);
        appendNumber(j, "gbs", f.bandwidth / GB);
        j += "}";
      }
      j += "]";
    }
    j += "}";
    if (!m.samplesJson.empty())
      j += ",\n   \"samples\": " + m.samplesJson;
    j += "}";
  }
  return j + "]}\n";
}

void mergeMeasured(DeviceProfile &profile, const MeasuredConstants &entry) {
  auto it = std::find_if(profile.measured.begin(), profile.measured.end(),
                         [&](const MeasuredConstants &m) { return m.ranks == entry.ranks; });
  if (it != profile.measured.end())
    *it = entry;
  else
    profile.measured.push_back(entry);
  std::sort(profile.measured.begin(), profile.measured.end(),
            [](const MeasuredConstants &a, const MeasuredConstants &b) { return a.ranks < b.ranks; });
}

} // namespace trc::plan
