//===- Bundle.cpp - an artifact folder packed into one file ----------------===//
#include "runtime/Bundle.h"

#include "runtime/FileOps.h"

#include <cstdlib>
#include <sstream>

namespace trc::rt {

namespace {
const char *const kMembers[] = {"manifest.trc", "program.so", "weights.bin"};
constexpr size_t kMaxHeaderBytes = 4096;
constexpr size_t kMaxMemberBytes = size_t(1) << 40;
} // namespace

bool isBundlePath(const std::string &path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".trc") == 0;
}

Status packBundle(const std::string &dir, const std::string &bundle) {
  std::string header = "trc-bundle 1\n", body;
  for (const char *member : kMembers) {
    MappedFile file;
    if (Status s = file.open(dir + "/" + member); !s)
      return s;
    header += std::string(member) + " " + std::to_string(file.size()) + "\n";
    body.append(file.bytes());
  }
  header += "end\n";
  return writeFileAtomic(bundle, header + body, systemFileSystem());
}

Status unpackBundle(const std::string &bundle, const std::string &dir) {
  MappedFile file;
  if (Status s = file.open(bundle); !s)
    return s;
  std::string_view bytes = file.bytes();
  auto bad = [&](const std::string &why) {
    return Status::error(bundle + ": not a trc artifact bundle: " + why);
  };
  size_t headerEnd = bytes.substr(0, kMaxHeaderBytes).find("\nend\n");
  if (bytes.substr(0, 13) != "trc-bundle 1\n" || headerEnd == std::string_view::npos)
    return bad("no 'trc-bundle 1' header ending in 'end'");
  std::istringstream header(std::string(bytes.substr(13, headerEnd + 1 - 13)));
  size_t offset = headerEnd + 5;
  for (const char *member : kMembers) {
    std::string name, sizeText;
    if (!(header >> name >> sizeText) || name != member)
      return bad(std::string("expected member ") + member);
    char *end = nullptr;
    unsigned long long size = std::strtoull(sizeText.c_str(), &end, 10);
    if (*end != '\0' || sizeText.empty() || size > kMaxMemberBytes ||
        size > bytes.size() - offset)
      return bad(std::string("member ") + member + " has a bad size '" + sizeText + "'");
    if (Status s = writeFileAtomic(dir + "/" + member, bytes.substr(offset, size),
                                   systemFileSystem());
        !s)
      return s;
    offset += size;
  }
  if (offset != bytes.size())
    return bad("trailing bytes after the last member");
  return Status::success();
}

} // namespace trc::rt
