//===- Npz.cpp - NumPy .npz archives (a zip of .npy files) ----------------===//
//
// A zip reader of just what .npz files use (see Npz.h): the end of central
// directory record (and its zip64 form), central directory entries with
// their zip64 extra field, local headers, stored or deflated data. Formats:
// PKWARE's APPNOTE.TXT, sections 4.3 and 4.5.3. All integers little-endian.
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/Npz.h"

#include "runtime/formats/FileOps.h"
#include "runtime/formats/Npy.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <new>
#include <set>
#include <sys/stat.h>

#ifdef TRC_HAVE_ZLIB
#include <zlib.h>
#endif

namespace trc::rt {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the .npz reader assumes a little-endian host");

namespace {

constexpr uint32_t kEndOfCentralDirectory = 0x06054b50;
constexpr uint32_t kZip64EndLocator = 0x07064b50;
constexpr uint32_t kZip64End = 0x06064b50;
constexpr uint32_t kCentralEntry = 0x02014b50;
constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr size_t kEndSize = 22, kZip64LocatorSize = 20, kZip64EndSize = 56;
constexpr size_t kCentralEntrySize = 46, kLocalHeaderSize = 30;
constexpr uint16_t kZip64ExtraId = 0x0001;

template <typename T> T read(const char *p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// What the central directory says of one member.
struct Member {
  std::string name;
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t compressed = 0, size = 0, localOffset = 0;
};

/// A bounds-checked view of the archive; `where` names it in messages.
class Archive {
public:
  Archive(std::string_view bytes, const std::string &name) : b_(bytes), name_(name) {}

  Status error(const std::string &what) const { return Status::error(name_ + ": " + what); }
  bool has(uint64_t offset, uint64_t size) const {
    return offset <= b_.size() && size <= b_.size() - offset;
  }
  const char *at(uint64_t offset) const { return b_.data() + offset; }

  StatusOr<std::vector<Member>> centralDirectory() const;
  StatusOr<std::string_view> data(const Member &m) const;

private:
  std::string_view b_;
  const std::string &name_;
};

StatusOr<std::vector<Member>> Archive::centralDirectory() const {
  // The end record is the last 22 bytes unless a comment (<= 65535 bytes)
  // follows it: search backwards for its signature.
  if (b_.size() < kEndSize)
    return error("not a zip (.npz) file: " + std::to_string(b_.size()) + " bytes");
  size_t end = b_.size() - kEndSize, lowest = end > 65535 ? end - 65535 : 0;
  while (read<uint32_t>(at(end)) != kEndOfCentralDirectory) {
    if (end == lowest)
      return error("not a zip (.npz) file: no end of central directory record");
    --end;
  }
  const char *e = at(end);
  uint64_t entries = read<uint16_t>(e + 10), dirSize = read<uint32_t>(e + 12),
           dirOffset = read<uint32_t>(e + 16);
  if (read<uint16_t>(e + 4) != 0 || read<uint16_t>(e + 6) != 0)
    return error("multi-disk zip archives are not supported");
  if (entries == 0xFFFF || dirSize == 0xFFFFFFFF || dirOffset == 0xFFFFFFFF) {
    // Zip64: a locator right before the end record points at the zip64 end.
    if (end < kZip64LocatorSize || read<uint32_t>(at(end - kZip64LocatorSize)) != kZip64EndLocator)
      return error("the end record needs a zip64 record, which is missing");
    uint64_t at64 = read<uint64_t>(at(end - kZip64LocatorSize + 8));
    if (!has(at64, kZip64EndSize) || read<uint32_t>(at(at64)) != kZip64End)
      return error("bad zip64 end of central directory record");
    entries = read<uint64_t>(at(at64 + 32));
    dirSize = read<uint64_t>(at(at64 + 40));
    dirOffset = read<uint64_t>(at(at64 + 48));
  }
  if (!has(dirOffset, dirSize))
    return error("the central directory lies outside the file");
  std::vector<Member> members;
  uint64_t p = dirOffset, stop = dirOffset + dirSize;
  for (uint64_t i = 0; i < entries; ++i) {
    if (p + kCentralEntrySize > stop || read<uint32_t>(at(p)) != kCentralEntry)
      return error("bad central directory entry " + std::to_string(i));
    const char *c = at(p);
    Member m;
    m.flags = read<uint16_t>(c + 8);
    m.method = read<uint16_t>(c + 10);
    m.crc = read<uint32_t>(c + 16);
    m.compressed = read<uint32_t>(c + 20);
    m.size = read<uint32_t>(c + 24);
    uint64_t nameLen = read<uint16_t>(c + 28), extraLen = read<uint16_t>(c + 30),
             commentLen = read<uint16_t>(c + 32);
    m.localOffset = read<uint32_t>(c + 42);
    uint64_t next = p + kCentralEntrySize + nameLen + extraLen + commentLen;
    if (next > stop)
      return error("central directory entry " + std::to_string(i) + " overruns the directory");
    m.name.assign(c + kCentralEntrySize, nameLen);
    // Sizes and offset saturated at 0xFFFFFFFF are in the zip64 extra field,
    // in this order, only those that are saturated.
    const char *extra = c + kCentralEntrySize + nameLen;
    for (uint64_t q = 0; q + 4 <= extraLen;) {
      uint16_t id = read<uint16_t>(extra + q), len = read<uint16_t>(extra + q + 2);
      if (q + 4 + len > extraLen)
        return error("member '" + m.name + "': bad extra field");
      if (id == kZip64ExtraId) {
        const char *f = extra + q + 4;
        uint64_t used = 0;
        for (uint64_t *field : {&m.size, &m.compressed, &m.localOffset})
          if (*field == 0xFFFFFFFF) {
            if (used + 8 > len)
              return error("member '" + m.name + "': short zip64 extra field");
            *field = read<uint64_t>(f + used);
            used += 8;
          }
      }
      q += 4 + len;
    }
    members.push_back(std::move(m));
    p = next;
  }
  return members;
}

StatusOr<std::string_view> Archive::data(const Member &m) const {
  if (!has(m.localOffset, kLocalHeaderSize) || read<uint32_t>(at(m.localOffset)) != kLocalHeader)
    return error("member '" + m.name + "': bad local header");
  const char *h = at(m.localOffset);
  uint16_t nameLength = read<uint16_t>(h + 26);
  // The local header names the member too; a zip whose two names differ is
  // corrupt or crafted (numpy's zipfile refuses it).
  if (!has(m.localOffset + kLocalHeaderSize, nameLength) ||
      std::string_view(h + kLocalHeaderSize, nameLength) != m.name)
    return error("member '" + m.name + "': its local header names another file (the archive "
                 "is corrupt)");
  uint64_t start = m.localOffset + kLocalHeaderSize + nameLength + read<uint16_t>(h + 28);
  if (!has(start, m.compressed))
    return error("member '" + m.name + "': its " + std::to_string(m.compressed) +
                 " bytes lie outside the file");
  return std::string_view(at(start), m.compressed);
}

#ifdef TRC_HAVE_ZLIB
/// Inflates raw deflate data into exactly `size` bytes.
Status inflateExactly(std::string_view in, std::string &out, uint64_t size) {
  out.resize(size);
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) // negative: raw deflate, no zlib header
    return Status::error("cannot start zlib's inflate");
  int result = Z_OK;
  uint64_t inDone = 0, outDone = 0;
  // zlib counts in uInt: feed at most 1 GiB per call.
  constexpr uint64_t kChunk = uint64_t(1) << 30;
  while (result == Z_OK) {
    z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(in.data() + inDone));
    z.avail_in = uInt(std::min(kChunk, in.size() - inDone));
    z.next_out = reinterpret_cast<Bytef *>(out.data() + outDone);
    z.avail_out = uInt(std::min(kChunk, size - outDone));
    uInt inBefore = z.avail_in, outBefore = z.avail_out;
    result = inflate(&z, Z_NO_FLUSH);
    inDone += inBefore - z.avail_in;
    outDone += outBefore - z.avail_out;
    if (result == Z_BUF_ERROR && outDone == size)
      break; // more output than declared
    if (result == Z_OK && inBefore == z.avail_in && outBefore == z.avail_out)
      result = Z_DATA_ERROR; // no progress: truncated input
  }
  std::string why = z.msg ? z.msg : "error";
  inflateEnd(&z);
  if (result != Z_STREAM_END || outDone != size)
    return Status::error(result == Z_STREAM_END || result == Z_BUF_ERROR
                             ? "the deflated data does not hold the declared " +
                                   std::to_string(size) + " bytes"
                             : "corrupt deflated data (zlib: " + why + ")");
  return Status::success();
}

uint32_t crc32Of(std::string_view bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t done = 0; done < bytes.size();) {
    uInt n = uInt(std::min<size_t>(bytes.size() - done, size_t(1) << 30));
    crc = crc32(crc, reinterpret_cast<const Bytef *>(bytes.data() + done), n);
    done += n;
  }
  return uint32_t(crc);
}
#endif

/// The array name of member or file `file`: without ".npy"; "" if it does
/// not end so.
std::string arrayName(const std::string &file) {
  constexpr std::string_view suffix = ".npy";
  if (file.size() <= suffix.size() ||
      file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0)
    return "";
  return file.substr(0, file.size() - suffix.size());
}

} // namespace

bool npzSupportsDeflate() {
#ifdef TRC_HAVE_ZLIB
  return true;
#else
  return false;
#endif
}

StatusOr<std::vector<NamedTensor>> parseNpz(std::string_view bytes, const std::string &name) {
  Archive archive(bytes, name);
  StatusOr<std::vector<Member>> members = archive.centralDirectory();
  if (!members.ok())
    return members.status();
  if (members->empty())
    return archive.error("the archive holds no arrays");
  std::vector<NamedTensor> arrays;
  std::set<std::string> seen;
  for (const Member &m : *members) {
    std::string where = "member '" + m.name + "': ";
    std::string array = arrayName(m.name);
    if (array.empty())
      return archive.error(where + "not a .npy file (an .npz holds NAME.npy members)");
    if (!seen.insert(array).second)
      return archive.error(where + "the archive holds it twice");
    if (m.flags & 1)
      return archive.error(where + "encrypted members are not supported");
    StatusOr<std::string_view> raw = archive.data(m);
    if (!raw.ok())
      return raw.status();
    std::string inflated;
    std::string_view npy = *raw;
    if (m.method == 8) {
      // Deflate expands at most 1032-fold (a 258-byte match per 2 bits):
      // refuse a size the data cannot hold before allocating it.
      constexpr uint64_t kMaxDeflateRatio = 1032, kSlack = 1024;
      if (m.size > m.compressed * kMaxDeflateRatio + kSlack)
        return archive.error(where + "declares " + std::to_string(m.size) +
                             " bytes, more than its " + std::to_string(m.compressed) +
                             " deflated bytes can hold (at most 1032-fold): the archive is "
                             "corrupt");
#ifdef TRC_HAVE_ZLIB
      // A size deflate can hold may still be more than this machine has.
      try {
        if (Status s = inflateExactly(*raw, inflated, m.size); !s)
          return archive.error(where + s.message());
      } catch (const std::bad_alloc &) {
        return archive.error(where + "inflates to " + std::to_string(m.size) +
                             " bytes: out of memory");
      }
      npy = inflated;
#else
      return archive.error(where + "is deflated (np.savez_compressed), and this trc-run was "
                                   "built without zlib: save the arrays with np.savez");
#endif
    } else if (m.method != 0) {
      return archive.error(where + "compression method " + std::to_string(m.method) +
                           " is not supported (stored or deflated only)");
    } else if (m.compressed != m.size) {
      return archive.error(where + "a stored member of " + std::to_string(m.size) +
                           " bytes occupies " + std::to_string(m.compressed));
    }
#ifdef TRC_HAVE_ZLIB
    if (crc32Of(npy) != m.crc)
      return archive.error(where + "CRC-32 mismatch (the archive is corrupt)");
#endif
    try {
      StatusOr<HostTensor> tensor = parseNpy(npy, name + ": member '" + m.name + "'");
      if (!tensor.ok())
        return tensor.status();
      arrays.push_back({array, *std::move(tensor)});
    } catch (const std::bad_alloc &) {
      return archive.error(where + "its " + std::to_string(npy.size()) +
                           " bytes of array: out of memory");
    }
  }
  return arrays;
}

StatusOr<std::vector<NamedTensor>> readNpzFile(const std::string &path) {
  MappedFile file;
  if (Status s = file.open(path); !s)
    return s;
  return parseNpz(file.bytes(), path);
}

StatusOr<std::vector<NamedTensor>> readNpyFolder(const std::string &dir) {
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return Status::error(dir + ": cannot open the folder: " + std::strerror(errno));
  std::vector<std::string> files;
  while (struct dirent *entry = ::readdir(d))
    if (!arrayName(entry->d_name).empty())
      files.push_back(entry->d_name);
  ::closedir(d);
  std::sort(files.begin(), files.end());
  if (files.empty())
    return Status::error(dir + ": the folder holds no .npy files");
  std::vector<NamedTensor> arrays;
  for (const std::string &file : files) {
    StatusOr<HostTensor> tensor = readNpyFile(dir + "/" + file);
    if (!tensor.ok())
      return tensor.status();
    arrays.push_back({arrayName(file), *std::move(tensor)});
  }
  return arrays;
}

} // namespace trc::rt
