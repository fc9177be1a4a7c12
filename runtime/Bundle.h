//===- Bundle.h - an artifact folder packed into one file ------------------===//
//
// `trc-opt ... --trc-compile -o OUT.trc` writes the artifact as one file:
//
//   trc-bundle 1\n
//   manifest.trc <bytes>\n
//   program.so <bytes>\n
//   weights.bin <bytes>\n
//   end\n
//   <the three files' bytes, in that order>
//
// (docs/ARTIFACT.md). The runtime unpacks it into a private temporary
// folder, loads that folder as usual (sizes and checksums checked against
// the manifest) and removes the folder: the loaded program and the mapped
// weights stay valid after their files are unlinked.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_BUNDLE_H
#define TRC_RUNTIME_BUNDLE_H

#include "runtime/Status.h"

#include <string>

namespace trc::rt {

/// Whether `path` names a bundle rather than a folder (ends with ".trc").
bool isBundlePath(const std::string &path);

/// Packs folder `dir`'s three files into `bundle`, atomically.
Status packBundle(const std::string &dir, const std::string &bundle);

/// Unpacks `bundle` into the existing empty folder `dir`; every malformed
/// bundle (header, names, sizes) is an error naming the file.
Status unpackBundle(const std::string &bundle, const std::string &dir);

} // namespace trc::rt

#endif
