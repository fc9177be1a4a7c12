//===- FileOps.cpp - durable file writing, read-only mappings ---------------===//
//
// See FileOps.h. Temp names carry the process id so that two processes
// writing next to each other never share one.
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/FileOps.h"
#include "runtime/support/InterruptCleanup.h"

#include <filesystem>
#include <functional>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace trc::rt {

ssize_t FileSystemHooks::write(int fd, const void *data, size_t size) {
  return ::write(fd, data, size);
}
int FileSystemHooks::fsync(int fd) { return ::fsync(fd); }
int FileSystemHooks::rename(const char *from, const char *to) {
  return ::rename(from, to);
}

FileSystemHooks &systemFileSystem() {
  static FileSystemHooks hooks;
  return hooks;
}

//===----------------------------------------------------------------------===//
// FileWriter
//===----------------------------------------------------------------------===//

FileWriter::~FileWriter() { abort(); }

Status FileWriter::open(const std::string &path, FileSystemHooks &fs) {
  abort();
  fs_ = &fs;
  path_ = path;
  bytes_ = 0;
  hash_.reset();
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0)
    return Status::error(path + ": cannot create: " + std::strerror(errno));
  return Status::success();
}

Status FileWriter::append(const void *data, size_t size) {
  if (fd_ < 0)
    return Status::error(path_ + ": write to a closed file");
  const char *p = static_cast<const char *>(data);
  hash_.update(p, size);
  while (size > 0) {
    // Chunks of at most 1 GiB: Linux writes at most ~2 GiB per call anyway.
    size_t chunk = size < (size_t(1) << 30) ? size : (size_t(1) << 30);
    ssize_t n = fs_->write(fd_, p, chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int e = n < 0 ? errno : ENOSPC;
      abort();
      return Status::error(path_ + ": write failed: " + std::strerror(e));
    }
    p += n;
    size -= size_t(n);
    bytes_ += uint64_t(n);
  }
  return Status::success();
}

Status FileWriter::finish() {
  if (fd_ < 0)
    return Status::error(path_ + ": finish of a closed file");
  if (fs_->fsync(fd_) != 0) {
    int e = errno;
    abort();
    return Status::error(path_ + ": fsync failed: " + std::strerror(e));
  }
  int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) {
    int e = errno;
    ::unlink(path_.c_str());
    return Status::error(path_ + ": close failed: " + std::strerror(e));
  }
  return Status::success();
}

void FileWriter::abort() {
  if (fd_ < 0)
    return;
  ::close(fd_);
  fd_ = -1;
  ::unlink(path_.c_str());
}

//===----------------------------------------------------------------------===//
// Folders and small files
//===----------------------------------------------------------------------===//

Status fsyncDirectory(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return Status::error(dir + ": cannot open the folder: " +
                         std::strerror(errno));
  int rc = ::fsync(fd);
  int e = errno;
  ::close(fd);
  if (rc != 0)
    return Status::error(dir + ": fsync of the folder failed: " +
                         std::strerror(e));
  return Status::success();
}

std::string parentDirectory(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

Status writeFileAtomicWith(const std::string &path, FileSystemHooks &fs,
                           const std::function<Status(FileWriter &)> &fill) {
  std::string temp = path + ".tmp-" + std::to_string(::getpid());
  // A killed writer's temporary file (SIGKILL cannot be caught) goes now;
  // an interrupted one removes its own.
  removeStaleStaging(path, ".tmp-");
  InterruptCleanupGuard guard(temp);
  FileWriter w;
  if (Status s = w.open(temp, fs); !s)
    return s;
  if (Status s = fill(w); !s)
    return s;
  if (Status s = w.finish(); !s)
    return s;
  if (fs.rename(temp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(temp.c_str());
    return Status::error(path + ": cannot rename " + temp + ": " + std::strerror(e));
  }
  return fsyncDirectory(parentDirectory(path));
}

Status checkOwnedFolder(const std::string &flag, const std::string &dir,
                        const std::string &record) {
  if (dir.empty())
    return Status::error("option '" + flag + "' needs a folder");
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0)
    return Status::success();
  if (!S_ISDIR(st.st_mode) || ::access((dir + "/" + record).c_str(), F_OK) != 0)
    return Status::error(flag + " " + dir + ": exists and is not a folder " + flag +
                         " wrote (no " + record + "); nothing is overwritten");
  return Status::success();
}

StatusOr<std::string> stageFolder(const std::string &dir) {
  namespace fs = std::filesystem;
  const std::string staged = dir + ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(staged, ec);
  if (!fs::create_directories(staged, ec) || ec)
    return Status::error("cannot create " + staged + ": " + ec.message());
  return staged;
}

Status replaceFolder(const std::string &staged, const std::string &dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  auto fail = [&](const std::string &why) {
    fs::remove_all(staged, ec);
    return Status::error(why);
  };
  const std::string old = dir + ".old-" + std::to_string(::getpid());
  bool replacing = fs::exists(dir, ec);
  if (replacing && (fs::rename(dir, old, ec), ec))
    return fail("cannot move the previous folder aside: " + ec.message());
  fs::rename(staged, dir, ec);
  if (ec) {
    std::string why = "cannot rename " + staged + " into place: " + ec.message();
    if (replacing)
      fs::rename(old, dir, ec);
    return fail(why);
  }
  if (replacing)
    fs::remove_all(old, ec);
  return fsyncDirectory(parentDirectory(dir));
}

Status writeFileAtomic(const std::string &path, std::string_view bytes,
                       FileSystemHooks &fs) {
  return writeFileAtomicWith(path, fs,
                             [&](FileWriter &w) { return w.append(bytes); });
}

StatusOr<int> openRegularFile(const std::string &path, struct stat *st) {
  // O_NONBLOCK: opening a FIFO without a writer would block forever (a
  // device could do anything); it is cleared once the file is known to be
  // a regular one, where it means nothing.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return Status::error(path + ": cannot open: " + std::strerror(errno));
  struct stat local;
  struct stat &info = st ? *st : local;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    return Status::error(path + ": not a regular file");
  }
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0)
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

Status checkRegularFile(const std::string &flag, const std::string &path, bool folderToo) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return Status::success(); // missing: the reader's error names it
  if (S_ISREG(st.st_mode) || (folderToo && S_ISDIR(st.st_mode)))
    return Status::success();
  std::string space = !flag.empty() && flag.back() == '=' ? "" : " ";
  return Status::error(flag + space + path + ": not a regular file" +
                       (folderToo ? " or folder" : ""));
}

namespace {

// What identifies a path: its device and inode when it exists (symlinks
// and "./" resolve to the same), else the canonical folder + its name.
struct PathIdentity {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  std::string name;
  bool operator==(const PathIdentity &o) const {
    return exists == o.exists && (exists ? dev == o.dev && ino == o.ino : name == o.name);
  }
};

PathIdentity identify(const std::string &path) {
  PathIdentity id;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    id.exists = true;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
    return id;
  }
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/')
    trimmed.pop_back();
  size_t slash = trimmed.rfind('/');
  std::string folder = slash == std::string::npos ? "." : trimmed.substr(0, slash + 1);
  std::string base = slash == std::string::npos ? trimmed : trimmed.substr(slash + 1);
  char *real = ::realpath(folder.c_str(), nullptr);
  id.name = (real ? std::string(real) : folder) + "/" + base;
  std::free(real);
  return id;
}

} // namespace

Status checkOutputsAreNotInputs(const std::vector<NamedPath> &outputs,
                                const std::vector<NamedPath> &inputs) {
  struct Known {
    const NamedPath *path;
    PathIdentity id;
    std::string member; // a file inside an input folder
  };
  std::vector<Known> known;
  for (const NamedPath &in : inputs) {
    if (in.path.empty())
      continue;
    Known k{&in, identify(in.path), ""};
    if (!k.id.exists)
      continue;
    known.push_back(k);
    // The files of an input folder (an artifact, a folder of .npy) are
    // inputs too.
    struct stat st;
    if (::stat(in.path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      if (DIR *d = ::opendir(in.path.c_str())) {
        while (struct dirent *e = ::readdir(d)) {
          std::string name = e->d_name;
          if (name == "." || name == "..")
            continue;
          std::string member = in.path + "/" + name;
          struct stat ms;
          if (::stat(member.c_str(), &ms) == 0 && S_ISREG(ms.st_mode))
            known.push_back(Known{&in, identify(member), name});
        }
        ::closedir(d);
      }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const NamedPath &out = outputs[i];
    if (out.path.empty())
      continue;
    PathIdentity id = identify(out.path);
    for (const Known &k : known)
      if (k.id == id)
        return Status::error(out.flag + " " + out.path + " is " +
                             (k.member.empty() ? "also " + k.path->what
                                               : "the file '" + k.member + "' of " + k.path->what));
    for (size_t j = 0; j < i; ++j)
      if (!outputs[j].path.empty() && identify(outputs[j].path) == id)
        return Status::error(out.flag + " " + out.path + " is also the " + outputs[j].flag +
                             " output");
  }
  return Status::success();
}

StatusOr<std::string> readSmallFile(const std::string &path, size_t maxBytes) {
  struct stat st;
  StatusOr<int> opened = openRegularFile(path, &st);
  if (!opened.ok())
    return opened.status();
  int fd = *opened;
  if (uint64_t(st.st_size) > maxBytes) {
    ::close(fd);
    return Status::error(path + ": is " + std::to_string(st.st_size) +
                         " bytes, more than the limit of " +
                         std::to_string(maxBytes));
  }
  std::string out(size_t(st.st_size), '\0');
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::read(fd, &out[done], out.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      int e = errno;
      ::close(fd);
      return Status::error(path + ": read error: " + std::strerror(e));
    }
    if (n == 0)
      break;
    done += size_t(n);
  }
  ::close(fd);
  out.resize(done);
  return out;
}

//===----------------------------------------------------------------------===//
// MappedFile
//===----------------------------------------------------------------------===//

Status MappedFile::open(const std::string &path) {
  reset();
  struct stat st;
  StatusOr<int> opened = openRegularFile(path, &st);
  if (!opened.ok())
    return opened.status();
  int fd = *opened;
  if (st.st_size == 0) {
    ::close(fd);
    static unsigned char empty = 0;
    data_ = &empty;
    size_ = 0;
    return Status::success();
  }
  void *p = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  ::close(fd);
  if (p == MAP_FAILED)
    return Status::error(path + ": cannot map: " + std::strerror(e));
  data_ = static_cast<unsigned char *>(p);
  size_ = size_t(st.st_size);
  mapped_ = true;
  return Status::success();
}

void MappedFile::reset() {
  if (mapped_)
    ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
  mapped_ = false;
}

Status writeAllFd(int fd, std::string_view bytes) {
  const char *p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return Status::error(std::strerror(n < 0 ? errno : ENOSPC));
    p += n;
    left -= size_t(n);
  }
  return Status::success();
}

} // namespace trc::rt
