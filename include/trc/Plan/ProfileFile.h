//===- ProfileFile.h - device profile files (trc-run --calibrate) -*- C++ -*-===//
//
// A device profile file holds what `trc-run --calibrate` measured, for
// `trc-plan --device-profile FILE`, a cluster file's "device_profile" and
// `trc-run --config auto --device-profile FILE`:
//
//   {"trc_device_profile": 1, "device": "cpu",
//    "source": "trc-run --calibrate on HOST, DATE",
//    "memory_gb": 23.4,           // the node's memory, shared by its ranks
//    "cores": 2,                  // the node's cores (optional)
//    "element_bytes": 4,          // what the device trains in (fp32)
//    "measured": [                // one entry per number of ranks on the node
//      {"ranks": 2, "threads": 1,
//       "matmul": {"gflops": 61.0, "gbs": 0, "call_us": 2.5},
//       "kernels": {"probe": "compiled", "gbs": 11.0, "op_us": 1.5, "stream_gbs": 9.0},
//       "collectives": {"all_reduce": [{"ranks": 2, "latency_us": 9.5, "gbs": 3.1}],
//                       "all_gather": [...], "reduce_scatter": [...], "p2p": [...]},
//       "samples": {...}}]}      // the raw timings the fits came from (not read)
//
// Rates are per rank while `ranks` ranks run at once; a rate of 0 means the
// fit dropped that term (Fit.h). readDeviceProfile is strict like every
// trc JSON reader: unknown keys, missing keys, wrong types, values out of
// range, an unknown "device" kind (deviceKinds()) and two entries for the
// same "ranks" are errors naming the file and the key. The spec sheet of
// "device" supplies what the file does not measure (peak, links between
// nodes). mergeMeasured adds or replaces one entry (by "ranks"), so
// calibrations at 1, 2 and 4 ranks build up one file.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PLAN_PROFILEFILE_H
#define TRC_PLAN_PROFILEFILE_H

#include "trc/Plan/Cluster.h"

#include <string>

namespace trc::plan {

constexpr int kProfileFormatVersion = 1;

// Reads `path` into `out` (untouched on error); errors start with `path`.
rt::Status readDeviceProfile(const std::string &path, DeviceProfile &out);
// Parses the text of a profile file (errors name keys, not the file).
rt::Status parseDeviceProfile(const std::string &text, DeviceProfile &out);

// The file's JSON text for `profile` (its measured entries, their samples).
std::string deviceProfileJson(const DeviceProfile &profile);

// `entry` replaces the entry with its `ranks` in `profile`, or is added
// (entries stay sorted by ranks).
void mergeMeasured(DeviceProfile &profile, const MeasuredConstants &entry);

} // namespace trc::plan

#endif // TRC_PLAN_PROFILEFILE_H
