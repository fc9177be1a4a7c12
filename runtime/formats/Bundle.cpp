//===- Bundle.cpp - an artifact folder packed into one file ----------------===//
#include "runtime/formats/Bundle.h"
#include "trc/Abi/ArtifactNames.h"

#include "runtime/formats/FileOps.h"
#include "runtime/support/Parse.h"

#include <algorithm>
#include <dirent.h>
#include <sstream>

namespace trc::rt {

namespace {
const char *const kMembers[] = {abi::kManifestFile, abi::kProgramFile, abi::kWeightsFile};
constexpr size_t kMaxHeaderBytes = 4096;
constexpr size_t kMaxMemberBytes = size_t(1) << 40;

/// "kernels.sm_<digits>.cubin" or ".ptx": the only extra members (target
/// cuda), so a bundle never names a path outside its folder.
bool isKernelFileName(const std::string &name) {
  const std::string prefix = "kernels.sm_";
  if (name.compare(0, prefix.size(), prefix) != 0)
    return false;
  size_t dot = name.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size())
    return false;
  for (size_t i = prefix.size(); i < dot; ++i)
    if (name[i] < '0' || name[i] > '9')
      return false;
  std::string suffix = name.substr(dot);
  return suffix == ".cubin" || suffix == ".ptx";
}

/// The kernel files of folder `dir`, sorted.
std::vector<std::string> kernelFiles(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = ::opendir(dir.c_str())) {
    while (dirent *entry = ::readdir(d))
      if (isKernelFileName(entry->d_name))
        names.push_back(entry->d_name);
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

struct Member {
  std::string name;
  size_t offset = 0, size = 0;
};

/// The members of `bytes` (a bundle's contents), from its header.
StatusOr<std::vector<Member>> parseBundle(const std::string &bundle, std::string_view bytes) {
  auto bad = [&](const std::string &why) {
    return Status::error(bundle + ": not a trc artifact bundle: " + why);
  };
  size_t headerEnd = bytes.substr(0, kMaxHeaderBytes).find("\nend\n");
  std::string_view first = bytes.substr(0, 13);
  bool v1 = first == "trc-bundle 1\n", v2 = first == "trc-bundle 2\n";
  if (!(v1 || v2) || headerEnd == std::string_view::npos)
    return bad("no 'trc-bundle 1' or 'trc-bundle 2' header ending in 'end'");
  std::istringstream header(std::string(bytes.substr(13, headerEnd + 1 - 13)));
  size_t offset = headerEnd + 5;
  std::vector<Member> members;
  std::string name, sizeText;
  for (size_t index = 0; header >> name; ++index) {
    if (index < 3 ? name != kMembers[index] : !(v2 && isKernelFileName(name)))
      return bad(index < 3 ? std::string("expected member ") + kMembers[index]
                           : "unexpected member '" + name + "'" +
                                 (v2 ? "" : " (a version 1 bundle has three members)"));
    for (const Member &seen : members)
      if (seen.name == name)
        return bad("member " + name + " twice");
    if (!(header >> sizeText))
      return bad("member " + name + " has no size");
    std::optional<uint64_t> size = parseUint64(sizeText, kMaxMemberBytes);
    if (!size || *size > bytes.size() - offset)
      return bad("member " + name + " has a bad size '" + sizeText + "'");
    members.push_back({name, offset, size_t(*size)});
    offset += *size;
  }
  if (members.size() < 3)
    return bad(std::string("expected member ") + kMembers[members.size()]);
  if (offset != bytes.size())
    return bad("trailing bytes after the last member");
  return members;
}

/// Maps `bundle` into `file` and returns the members its header lists.
StatusOr<std::vector<Member>> openBundle(const std::string &bundle, MappedFile &file) {
  if (Status s = file.open(bundle); !s)
    return s;
  return parseBundle(bundle, file.bytes());
}
} // namespace

bool isBundlePath(const std::string &path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".trc") == 0;
}

Status packBundle(const std::string &dir, const std::string &bundle,
                  FileSystemHooks &fs) {
  std::vector<std::string> members(std::begin(kMembers), std::end(kMembers));
  std::vector<std::string> kernels = kernelFiles(dir);
  members.insert(members.end(), kernels.begin(), kernels.end());
  std::string header = kernels.empty() ? "trc-bundle 1\n" : "trc-bundle 2\n";
  // Members stay mapped and are streamed into the bundle (the weights may
  // be gigabytes: no copy in memory).
  std::vector<MappedFile> files(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    if (Status s = files[i].open(dir + "/" + members[i]); !s)
      return s;
    header += members[i] + " " + std::to_string(files[i].size()) + "\n";
  }
  header += "end\n";
  if (header.size() > kMaxHeaderBytes)
    return Status::error(bundle + ": too many members for one bundle header");
  return writeFileAtomicWith(bundle, fs, [&](FileWriter &w) {
    if (Status s = w.append(header); !s)
      return s;
    for (const MappedFile &file : files)
      if (Status s = w.append(file.bytes()); !s)
        return s;
    return Status::success();
  });
}

Status unpackBundle(const std::string &bundle, const std::string &dir,
                    std::vector<std::string> *written, FileSystemHooks &fs) {
  MappedFile file;
  StatusOr<std::vector<Member>> members = openBundle(bundle, file);
  if (!members.ok())
    return members.status();
  for (const Member &member : *members) {
    if (Status s = writeFileAtomic(dir + "/" + member.name,
                                   file.bytes().substr(member.offset, member.size),
                                   fs);
        !s)
      return s;
    if (written)
      written->push_back(member.name);
  }
  return Status::success();
}

StatusOr<std::string> readBundleManifest(const std::string &bundle) {
  MappedFile file;
  StatusOr<std::vector<Member>> members = openBundle(bundle, file);
  if (!members.ok())
    return members.status();
  const Member &manifest = (*members)[0];
  return std::string(file.bytes().substr(manifest.offset, manifest.size));
}

} // namespace trc::rt
