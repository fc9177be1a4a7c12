//===- Names.h - percent-encoding of tensor names ---------------------------===//
//
// Manifest names are percent-encoded: every byte outside [A-Za-z0-9._:/-]
// becomes %XX, so a field never holds a space. percentDecode() is strict: a
// raw byte outside that set, a malformed escape, an empty name or a NUL byte
// is an error. outputFileName() maps a decoded name to a file name in one
// folder ('%' and '/' escaped, reversibly) for trc-run's D/<name>.npy.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_NAMES_H
#define TRC_RUNTIME_NAMES_H

#include <string>
#include <string_view>

namespace trc::rt {

// True for the bytes a manifest name may hold unescaped.
bool isNameSafeChar(unsigned char c);
// Decodes a manifest name field. On failure returns false and sets `problem`.
bool percentDecode(std::string_view field, std::string &name,
                   std::string &problem);
// Encodes every byte outside the safe set as %XX (upper-case hex). Also used
// to print names in messages, so control bytes never reach the terminal.
std::string percentEncode(std::string_view name);
// Name of the .npy file for an output: '%' -> %25 and '/' -> %2F, + ".npy".
std::string outputFileName(std::string_view name);

} // namespace trc::rt

#endif // TRC_RUNTIME_NAMES_H
