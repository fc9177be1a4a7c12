//===- Version.h - the trc version recorded in files it writes --------------===//
//
// One place for the version string that checkpoints (state.json's
// "trc_version") and tools report. Readers record it; they do not refuse a
// file for its trc version (each file format has its own format version).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_VERSION_H
#define TRC_RUNTIME_VERSION_H

namespace trc::rt {

constexpr const char *kTrcVersion = "0.1.0";

} // namespace trc::rt

#endif // TRC_RUNTIME_VERSION_H
