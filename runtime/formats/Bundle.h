//===- Bundle.h - an artifact folder packed into one file ------------------===//
//
// `trc-opt ... --trc-compile -o OUT.trc` writes the artifact as one file:
//
//   trc-bundle 1\n            (2 when kernel files follow)
//   manifest.trc <bytes>\n
//   program.so <bytes>\n
//   weights.bin <bytes>\n
//   [kernels.sm_NN.cubin|ptx <bytes>\n ...]   (version 2, target cuda)
//   end\n
//   <the members' bytes, in that order>
//
// (docs/ARTIFACT.md). The runtime unpacks it into a private temporary
// folder, loads that folder as usual (sizes and checksums checked against
// the manifest) and removes the folder: the loaded program and the mapped
// weights stay valid after their files are unlinked.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_BUNDLE_H
#define TRC_RUNTIME_BUNDLE_H

#include "runtime/formats/FileOps.h"
#include "runtime/support/Status.h"

#include <string>
#include <vector>

namespace trc::rt {

/// Whether `path` names a bundle rather than a folder (ends with ".trc").
bool isBundlePath(const std::string &path);

/// Packs folder `dir`'s three files, and its kernel files if any, into
/// `bundle`, atomically (FileOps.h's writeFileAtomicWith through `fs`): on
/// failure no bundle and no temp file is left, an existing `bundle` intact.
Status packBundle(const std::string &dir, const std::string &bundle,
                  FileSystemHooks &fs = systemFileSystem());

/// Unpacks `bundle` into the existing empty folder `dir` (the names of the
/// files written are appended to `written`); every malformed bundle
/// (header, names, sizes) is an error naming the file. Each member is
/// written atomically through `fs`; after a failure the members written
/// before it (listed in `written`) remain for the caller to remove.
Status unpackBundle(const std::string &bundle, const std::string &dir,
                    std::vector<std::string> *written = nullptr,
                    FileSystemHooks &fs = systemFileSystem());

/// The manifest member of `bundle` (its bytes), without unpacking the rest.
StatusOr<std::string> readBundleManifest(const std::string &bundle);

} // namespace trc::rt

#endif
