//===- ArtifactNames.h - the names an artifact folder is made of -*- C++ -*-===//
//
// What the compiler's artifact writer (lib/Pipelines) creates and the
// runtime's loader (runtime/artifact, runtime/formats) looks for, spelled
// once: the member files of an artifact folder, the program's entry symbol,
// and the manifest's first record (docs/ARTIFACT.md). The manifest's other
// keywords are its grammar, specified in docs/ARTIFACT.md and parsed in one
// place (runtime/formats/Manifest.cpp). No dependencies: plain constants.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_ABI_ARTIFACTNAMES_H
#define TRC_ABI_ARTIFACTNAMES_H

namespace trc::abi {

// The files of an artifact folder (and the members of a .trc bundle).
inline constexpr const char kManifestFile[] = "manifest.trc";
inline constexpr const char kProgramFile[] = "program.so";
inline constexpr const char kWeightsFile[] = "weights.bin";

// The program's one exported function: trc_entry(void **slots, void *arena).
inline constexpr const char kEntrySymbol[] = "trc_entry";
// The program's signature: a NUL-terminated text of what it was compiled
// for (runtime/formats/ProgramSignature.h), checked against the manifest.
inline constexpr const char kSignatureSymbol[] = "trc_signature";

// The manifest's first record: "trc-artifact <version>".
inline constexpr const char kManifestMagic[] = "trc-artifact";
inline constexpr int kManifestVersion = 1;

} // namespace trc::abi

#endif // TRC_ABI_ARTIFACTNAMES_H
