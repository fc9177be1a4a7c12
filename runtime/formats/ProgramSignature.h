//===- ProgramSignature.h - what a program was compiled for ------*- C++ -*-===//
//
// A trc program (program.so) exports `trc_signature`, a NUL-terminated text
// naming everything its code assumes about the manifest beside it: target,
// entry symbol, arena sizes, every slot (kind, name, dtype, shape), the
// `bound`, `labels`, `split` and `shard` records and the CUDA kernel table
// (docs/ARTIFACT.md, "The program's signature"). The loader compares it
// with the manifest before the program runs, so a manifest edited or paired
// with another model's program (checksums recomputed) is refused with the
// first record that differs instead of reading outside its buffers.
//
// programSignature() spells the text from a parsed manifest; the compiler
// embeds programSignature() of the manifest it writes, so both sides use
// this one function. Records that do not change what the program reads or
// writes (program and weights files, parameter offsets, trainable/frozen,
// `init`, profile spans, anomaly sites, kernel files) are not part of it.
// Preconditions: none.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_PROGRAMSIGNATURE_H
#define TRC_RUNTIME_PROGRAMSIGNATURE_H

#include "runtime/formats/Manifest.h"
#include "runtime/support/Status.h"

#include <string>

namespace trc::rt {

// The signature's first line.
inline constexpr const char kSignatureHeader[] = "trc-signature 1";
// The longest signature the loader reads from a program (bytes).
constexpr size_t kMaxSignatureBytes = size_t(64) << 20;

/// The signature of a program compiled for `manifest`: kSignatureHeader,
/// then one line per record, each ending in '\n'.
std::string programSignature(const Manifest &manifest);

/// Ok when `programText` (the program's trc_signature, null when it has
/// none) is programSignature(manifest); otherwise an error naming
/// `programPath` and the first line that differs.
Status checkProgramSignature(const Manifest &manifest, const char *programText,
                             const std::string &programPath);

} // namespace trc::rt

#endif // TRC_RUNTIME_PROGRAMSIGNATURE_H
