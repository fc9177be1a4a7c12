//===- ProfileSpans.h - per-op profiling hooks of compiled programs -*- C++ -*-===//
//
// What trc-profile-calls (the compiler) and the runtime agree on for
// `trc-run --profile`'s per-op spans: the hooks a CPU program calls around
// each loop nest and matrix product, and the module attribute the artifact
// writer turns into the manifest's `span` records (docs/ARTIFACT.md:
// `span <id> <name> <node> <function>`, percent-encoded). No dependencies
// beyond AttrNames.h.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_ABI_PROFILESPANS_H
#define TRC_ABI_PROFILESPANS_H

#include "trc/Abi/AttrNames.h"

namespace trc::abi {

// extern "C" void trc_rt_profile_begin(int64_t id) / trc_rt_profile_end(id).
inline constexpr const char kProfileBegin[] = "trc_rt_profile_begin";
inline constexpr const char kProfileEnd[] = "trc_rt_profile_end";
// The module attribute, [[name, node, function], ...] with index = id, is
// kProfileSpansAttr (AttrNames.h).

} // namespace trc::abi

#endif // TRC_ABI_PROFILESPANS_H
