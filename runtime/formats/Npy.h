//===- Npy.h - NumPy .npy files ---------------------------------------------===//
//
// Reads .npy format versions 1.0, 2.0 and 3.0 and writes 1.0, for the dtypes
// of DType.h that NumPy has: '<f4' '<f8' '<f2', '|i1'/'<i1' '<i2' '<i4' '<i8',
// '|u1'/'<u1' '<u2' '<u4' '<u8' and '|b1' (i1; every byte must be 0 or 1).
// C order only: fortran_order True, big-endian or any other descr is an error.
// The header is parsed as a bounded Python dict literal with exactly the keys
// descr, fortran_order and shape; the data must be exactly the size the shape
// implies. bf16 has no NumPy dtype and is neither read nor written.
// Every error message starts with the file name: "x.npy: ...".
// writeNpyFile writes to a temporary name in the same folder, fsyncs and
// renames (FileOps.h's writeFileAtomicWith), so no partial file is ever left
// under the final name, and a failed write (a full disk, a failed fsync or
// rename, injected through FileSystemHooks in tests) leaves no file at all.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_NPY_H
#define TRC_RUNTIME_NPY_H

#include "runtime/formats/FileOps.h"
#include "runtime/support/Status.h"
#include "runtime/support/Tensor.h"

#include <string>
#include <string_view>

namespace trc::rt {

// Largest header (the dict) accepted when reading.
constexpr size_t kMaxNpyHeader = 65536;

/// The tensor of a whole .npy image held in memory; `name` starts every
/// message.
StatusOr<HostTensor> parseNpy(std::string_view bytes, const std::string &name);
/// The tensor of a .npy file; `path` starts every message.
StatusOr<HostTensor> readNpyFile(const std::string &path);

/// The .npy (version 1.0) preamble and header of a tensor (data follows
/// it); fails for a dtype NumPy lacks (bf16).
StatusOr<std::string> encodeNpyHeader(const HostTensor &tensor);
/// The .npy (version 1.0) image of a tensor.
StatusOr<std::string> encodeNpy(const HostTensor &tensor);
// Writes `path` atomically: `path`.tmp-<pid> is written, fsynced and
// renamed, and the folder fsynced. On failure nothing is left behind and
// an existing `path` is untouched.
Status writeNpyFile(const std::string &path, const HostTensor &tensor,
                    FileSystemHooks &fs = systemFileSystem());
// The first half of writeNpyFile, for writing several files all-or-nothing:
// writeNpyTemp writes and fsyncs `tempPath` (removed again on failure);
// the caller renames or removes it. Messages start with `finalName`.
Status writeNpyTemp(const std::string &tempPath, const std::string &finalName,
                    const HostTensor &tensor,
                    FileSystemHooks &fs = systemFileSystem());

} // namespace trc::rt

#endif // TRC_RUNTIME_NPY_H
