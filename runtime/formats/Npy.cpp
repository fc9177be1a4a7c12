//===- Npy.cpp - NumPy .npy files -------------------------------------------===//
//
// The .npy reader and writer (see Npy.h). The header is parsed by a small
// recursive-descent parser of the Python dict literal NumPy writes, bounded
// in length, that accepts only strings, True/False and tuples of integers.
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/Npy.h"

#include "runtime/formats/FileOps.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace trc::rt {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the .npy code assumes a little-endian host");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

struct DescrInfo {
  const char *descr;
  DType dtype;
};
// The first spelling of each dtype is the one written.
constexpr DescrInfo kDescrs[] = {
    {"<f4", DType::F32}, {"<f8", DType::F64}, {"<f2", DType::F16},
    {"|i1", DType::I8},  {"<i1", DType::I8},  {"<i2", DType::I16},
    {"<i4", DType::I32}, {"<i8", DType::I64}, {"|u1", DType::U8},
    {"<u1", DType::U8},  {"<u2", DType::U16}, {"<u4", DType::U32},
    {"<u8", DType::U64}, {"|b1", DType::I1},  {"<b1", DType::I1},
};

std::string shownString(std::string_view s) {
  std::string out;
  for (char ch : s.substr(0, 32)) {
    unsigned char c = static_cast<unsigned char>(ch);
    out += (c < 0x20 || c >= 0x7f) ? '?' : ch;
  }
  return s.size() > 32 ? out + "..." : out;
}

// Parser of {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }.
class HeaderParser {
public:
  explicit HeaderParser(std::string_view text) : s(text) {}

  bool parse(std::string &descr, bool &fortran, std::vector<int64_t> &shape,
             std::string &problem) {
    bool haveDescr = false, haveFortran = false, haveShape = false;
    skipSpace();
    if (!eat('{'))
      return fail(problem, "expected '{'");
    while (true) {
      skipSpace();
      if (eat('}'))
        break;
      std::string key;
      if (!parseString(key))
        return fail(problem, "expected a quoted key");
      skipSpace();
      if (!eat(':'))
        return fail(problem, "expected ':' after key '" + shownString(key) + "'");
      skipSpace();
      if (key == "descr") {
        if (haveDescr)
          return fail(problem, "duplicate key 'descr'");
        haveDescr = true;
        if (!parseString(descr))
          return fail(problem, "'descr' is not a string (structured dtypes "
                               "are not supported)");
      } else if (key == "fortran_order") {
        if (haveFortran)
          return fail(problem, "duplicate key 'fortran_order'");
        haveFortran = true;
        if (consume("True"))
          fortran = true;
        else if (consume("False"))
          fortran = false;
        else
          return fail(problem, "'fortran_order' is not True or False");
      } else if (key == "shape") {
        if (haveShape)
          return fail(problem, "duplicate key 'shape'");
        haveShape = true;
        std::string why;
        if (!parseShape(shape, why))
          return fail(problem, "'shape' " + why);
      } else {
        return fail(problem, "unexpected key '" + shownString(key) + "'");
      }
      skipSpace();
      if (eat(','))
        continue;
      skipSpace();
      if (eat('}'))
        break;
      return fail(problem, "expected ',' or '}'");
    }
    skipSpace();
    if (pos != s.size())
      return fail(problem, "trailing characters after the dict");
    if (!haveDescr || !haveFortran || !haveShape)
      return fail(problem, "the dict must have the keys 'descr', "
                           "'fortran_order' and 'shape'");
    return true;
  }

private:
  bool fail(std::string &problem, const std::string &what) {
    problem = what + " at byte " + std::to_string(pos);
    return false;
  }
  void skipSpace() {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' ||
                              s[pos] == '\n' || s[pos] == '\r'))
      ++pos;
  }
  bool eat(char c) {
    if (pos < s.size() && s[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  bool consume(std::string_view word) {
    if (s.substr(pos, word.size()) == word) {
      pos += word.size();
      return true;
    }
    return false;
  }
  bool parseString(std::string &out) {
    if (pos >= s.size() || (s[pos] != '\'' && s[pos] != '"'))
      return false;
    char q = s[pos++];
    size_t start = pos;
    while (pos < s.size() && s[pos] != q) {
      if (s[pos] == '\\' || s[pos] == '\n')
        return false;
      ++pos;
    }
    if (pos >= s.size())
      return false;
    out = std::string(s.substr(start, pos - start));
    ++pos;
    return true;
  }
  bool parseShape(std::vector<int64_t> &shape, std::string &why) {
    shape.clear();
    if (!eat('(')) {
      why = "is not a tuple";
      return false;
    }
    bool sawComma = false;
    while (true) {
      skipSpace();
      if (eat(')'))
        break;
      if (pos >= s.size() || s[pos] < '0' || s[pos] > '9') {
        why = "holds something other than non-negative integers";
        return false;
      }
      int64_t v = 0;
      while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
        if (v > kMaxElements) {
          why = "has a dimension over 2^40";
          return false;
        }
        v = v * 10 + (s[pos++] - '0');
      }
      if (v > kMaxElements) {
        why = "has a dimension over 2^40";
        return false;
      }
      eat('L'); // Python 2 long literals
      if (int64_t(shape.size()) >= kMaxRank) {
        why = "has more than " + std::to_string(kMaxRank) + " dimensions";
        return false;
      }
      shape.push_back(v);
      skipSpace();
      if (eat(',')) {
        sawComma = true;
        continue;
      }
      sawComma = false;
      skipSpace();
      if (eat(')'))
        break;
      why = "is not a tuple of integers";
      return false;
    }
    if (shape.size() == 1 && !sawComma) {
      why = "is not a tuple (a 1-element tuple needs a trailing comma)";
      return false;
    }
    return true;
  }

  std::string_view s;
  size_t pos = 0;
};

uint32_t readLE(const unsigned char *p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

struct NpyHeader {
  DType dtype;
  std::vector<int64_t> shape;
  size_t dataOffset = 0; // where the data starts
  size_t dataBytes = 0;  // what the shape implies
};

// Parses the preamble and header dict from the first bytes of a file
// (`prefix`, at most 12 + kMaxNpyHeader bytes of it).
Status parseHeader(std::string_view prefix, const std::string &name,
                   NpyHeader &h) {
  auto err = [&](const std::string &what) {
    return Status::error(name + ": " + what);
  };
  if (prefix.empty())
    return err("the file is empty (not a .npy file)");
  if (prefix.size() < kMagicSize ||
      std::memcmp(prefix.data(), kMagic, kMagicSize) != 0)
    return err("not a .npy file (bad magic; expected \\x93NUMPY)");
  if (prefix.size() < 8)
    return err("truncated .npy preamble");
  const unsigned char *p = reinterpret_cast<const unsigned char *>(prefix.data());
  int major = p[6], minor = p[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return err("unsupported .npy format version " + std::to_string(major) + "." +
               std::to_string(minor) + " (reads 1.0, 2.0 and 3.0)");
  size_t lenBytes = major == 1 ? 2 : 4;
  if (prefix.size() < 8 + lenBytes)
    return err("truncated .npy preamble");
  size_t headerLen = readLE(p + 8, int(lenBytes));
  if (headerLen > kMaxNpyHeader)
    return err("header length " + std::to_string(headerLen) +
               " is larger than the limit of " + std::to_string(kMaxNpyHeader) +
               " bytes");
  size_t start = 8 + lenBytes;
  if (prefix.size() < start + headerLen)
    return err("truncated header (" + std::to_string(headerLen) +
               " bytes announced, " + std::to_string(prefix.size() - start) +
               " present)");
  std::string_view dict = prefix.substr(start, headerLen);
  if (dict.find('\0') != std::string_view::npos)
    return err("malformed header: it contains a NUL byte");

  std::string descr, problem;
  bool fortran = false;
  HeaderParser parser(dict);
  if (!parser.parse(descr, fortran, h.shape, problem))
    return err("malformed header: " + problem);
  if (fortran)
    return err("fortran_order True is not supported (only C order; write the "
               "array with numpy.ascontiguousarray)");
  bool known = false;
  for (const DescrInfo &info : kDescrs) {
    if (descr == info.descr) {
      h.dtype = info.dtype;
      known = true;
      break;
    }
  }
  if (!known) {
    if (!descr.empty() && descr[0] == '>')
      return err("big-endian dtype '" + shownString(descr) + "' is not supported");
    return err("unsupported dtype '" + shownString(descr) +
               "' (supported: <f4 <f8 <f2 |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8 |b1)");
  }
  int64_t count = 0;
  if (!elementCount(h.shape, count))
    return err("shape " + formatShape(h.shape) + " has more than 2^40 elements");
  h.dataOffset = start + headerLen;
  h.dataBytes = size_t(count) * dtypeSize(h.dtype);
  return Status::success();
}

Status checkData(const HostTensor &t, const std::string &name) {
  if (t.dtype != DType::I1)
    return Status::success();
  const unsigned char *p = static_cast<const unsigned char *>(t.data());
  for (size_t i = 0; i < t.byteSize(); ++i)
    if (p[i] > 1)
      return Status::error(name + ": bool element " + std::to_string(i) +
                           " is " + std::to_string(p[i]) + ", not 0 or 1");
  return Status::success();
}

std::string sizeMismatch(const NpyHeader &h, size_t have) {
  return "data is " + std::to_string(have) + " bytes, but " +
         formatType(h.dtype, h.shape) + " needs " + std::to_string(h.dataBytes) +
         (have < h.dataBytes ? " (truncated file)" : " (trailing bytes)");
}

} // namespace

StatusOr<HostTensor> parseNpy(std::string_view bytes, const std::string &name) {
  NpyHeader h;
  if (Status s = parseHeader(bytes.substr(0, 12 + kMaxNpyHeader), name, h); !s)
    return s;
  size_t have = bytes.size() - h.dataOffset;
  if (have != h.dataBytes)
    return Status::error(name + ": " + sizeMismatch(h, have));
  HostTensor out;
  if (Status s = out.allocate(h.dtype, h.shape); !s)
    return s.withPrefix(name + ": ");
  if (h.dataBytes)
    std::memcpy(out.data(), bytes.data() + h.dataOffset, h.dataBytes);
  if (Status s = checkData(out, name); !s)
    return s;
  return out;
}

StatusOr<HostTensor> readNpyFile(const std::string &path) {
  struct stat st;
  StatusOr<int> opened = openRegularFile(path, &st);
  if (!opened.ok())
    return opened.status();
  int fd = *opened;
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  size_t fileSize = size_t(st.st_size);

  // Read the preamble and header (bounded), then the data straight into the
  // tensor's aligned buffer.
  std::string prefix(std::min<size_t>(fileSize, 12 + kMaxNpyHeader), '\0');
  size_t got = 0;
  while (got < prefix.size()) {
    ssize_t n = ::pread(fd, &prefix[got], prefix.size() - got, off_t(got));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return Status::error(path + ": read error: " + std::strerror(errno));
    if (n == 0)
      break;
    got += size_t(n);
  }
  prefix.resize(got);
  NpyHeader h;
  if (Status s = parseHeader(prefix, path, h); !s)
    return s;
  size_t have = fileSize - h.dataOffset;
  if (have != h.dataBytes)
    return Status::error(path + ": " + sizeMismatch(h, have));
  HostTensor out;
  if (Status s = out.allocate(h.dtype, h.shape); !s)
    return s.withPrefix(path + ": ");
  char *dst = static_cast<char *>(out.data());
  size_t done = 0;
  while (done < h.dataBytes) {
    ssize_t n = ::pread(fd, dst + done, h.dataBytes - done,
                        off_t(h.dataOffset + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return Status::error(path + ": read error: " + std::strerror(errno));
    if (n == 0)
      return Status::error(path + ": the file shrank while being read");
    done += size_t(n);
  }
  if (Status s = checkData(out, path); !s)
    return s;
  return out;
}

StatusOr<std::string> encodeNpyHeader(const HostTensor &tensor) {
  const char *descr = nullptr;
  for (const DescrInfo &info : kDescrs) {
    if (info.dtype == tensor.dtype) {
      descr = info.descr;
      break;
    }
  }
  if (!descr)
    return Status::error(std::string("dtype ") + dtypeName(tensor.dtype) +
                         " has no NumPy equivalent");
  std::string shape = "(";
  for (size_t i = 0; i < tensor.shape.size(); ++i) {
    if (i)
      shape += ", ";
    shape += std::to_string(tensor.shape[i]);
  }
  if (tensor.shape.size() == 1)
    shape += ",";
  shape += ")";
  std::string dict = std::string("{'descr': '") + descr +
                     "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces so that magic + version + length + dict + '\n' is a
  // multiple of 64, as NumPy does.
  size_t total = 10 + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  dict.append(padded - total, ' ');
  dict += '\n';
  if (dict.size() > 65535)
    return Status::error("the .npy header is too long for format 1.0");
  std::string out(kMagic, kMagicSize);
  out += '\x01';
  out += '\x00';
  out += char(dict.size() & 0xff);
  out += char(dict.size() >> 8);
  out += dict;
  return out;
}

StatusOr<std::string> encodeNpy(const HostTensor &tensor) {
  StatusOr<std::string> out = encodeNpyHeader(tensor);
  if (!out.ok())
    return out.status();
  out->append(static_cast<const char *>(tensor.data()), tensor.byteSize());
  return out;
}

Status writeNpyTemp(const std::string &tempPath, const std::string &finalName,
                    const HostTensor &tensor, FileSystemHooks &fs) {
  StatusOr<std::string> header = encodeNpyHeader(tensor);
  if (!header.ok())
    return Status(header.status()).withPrefix(finalName + ": ");
  // A writer that fails (or is destroyed unfinished) removes its file.
  FileWriter w;
  Status s = w.open(tempPath, fs);
  if (s)
    s = w.append(*header);
  if (s)
    s = w.append(tensor.data(), tensor.byteSize());
  if (s)
    s = w.finish();
  return s ? s : s.withPrefix(finalName + ": ");
}

Status writeNpyFile(const std::string &path, const HostTensor &tensor,
                    FileSystemHooks &fs) {
  StatusOr<std::string> header = encodeNpyHeader(tensor);
  if (!header.ok())
    return Status(header.status()).withPrefix(path + ": ");
  return writeFileAtomicWith(path, fs, [&](FileWriter &w) {
    if (Status s = w.append(*header); !s)
      return s;
    return w.append(tensor.data(), tensor.byteSize());
  });
}

} // namespace trc::rt
