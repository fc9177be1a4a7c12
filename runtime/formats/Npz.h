//===- Npz.h - NumPy .npz archives (a zip of .npy files) --------*- C++ -*-===//
//
// Reads the archives np.savez (members stored) and np.savez_compressed
// (members deflated) write: a zip file whose members are NAME.npy, each a
// whole .npy image (Npy.h). The reader walks the central directory (zip64
// records included, which NumPy writes for every member), then each
// member's local header, and decodes the member with parseNpy. Checked:
// signatures, every offset and size inside the file, the CRC-32 of each
// member's bytes, compression method 0 or 8 (8 needs zlib: a build without
// it reads stored members only and skips the CRC check), no encryption, no
// multi-disk archives, names ending in ".npy", no name twice. Every
// message starts with the archive's name, then the member's when one is at
// fault: "rows.npz: member 'labels.npy': ...".
//
// readNpyFolder is the same for a folder of NAME.npy files (other files are
// ignored; sub-folders are not read).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_NPZ_H
#define TRC_RUNTIME_NPZ_H

#include "runtime/support/Status.h"
#include "runtime/support/Tensor.h"

#include <string>
#include <string_view>
#include <vector>

namespace trc::rt {

/// Every array of an .npz image held in memory, named after its member
/// without ".npy", in the central directory's order; `name` starts every
/// message.
StatusOr<std::vector<NamedTensor>> parseNpz(std::string_view bytes, const std::string &name);
/// The arrays of an .npz file (memory-mapped while it is read).
StatusOr<std::vector<NamedTensor>> readNpzFile(const std::string &path);
/// The arrays of every NAME.npy in `dir`, sorted by name.
StatusOr<std::vector<NamedTensor>> readNpyFolder(const std::string &dir);
/// Whether this build decodes deflated members (zlib).
bool npzSupportsDeflate();

} // namespace trc::rt

#endif // TRC_RUNTIME_NPZ_H
