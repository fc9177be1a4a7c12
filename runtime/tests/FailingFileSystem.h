//===- FailingFileSystem.h - a disk that fills up, for write tests ----------===//
//
// FileSystemHooks (runtime/formats/FileOps.h) that make the disk "fill up":
// writes stop after a byte budget (a short write, then ENOSPC), and the
// n-th fsync (EIO) or rename (ENOSPC) can fail. Counts what a run did, so a
// test first probes a successful write, then fails it at every point.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TESTS_FAILINGFILESYSTEM_H
#define TRC_RUNTIME_TESTS_FAILINGFILESYSTEM_H

#include "runtime/formats/FileOps.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <unistd.h>

namespace trc::rt::test {

class FailingFs : public FileSystemHooks {
public:
  int64_t budget = -1; // bytes still writable (-1: unlimited)
  int failFsyncAt = -1, failRenameAt = -1;
  int fsyncs = 0, renames = 0;
  uint64_t written = 0;

  ssize_t write(int fd, const void *data, size_t size) override {
    if (budget == 0) {
      errno = ENOSPC;
      return -1;
    }
    if (budget > 0)
      size = std::min<size_t>(size, size_t(budget));
    ssize_t n = ::write(fd, data, size);
    if (n > 0) {
      written += uint64_t(n);
      if (budget > 0)
        budget -= n;
    }
    return n;
  }
  int fsync(int fd) override {
    if (fsyncs++ == failFsyncAt) {
      errno = EIO;
      return -1;
    }
    return ::fsync(fd);
  }
  int rename(const char *from, const char *to) override {
    if (renames++ == failRenameAt) {
      errno = ENOSPC;
      return -1;
    }
    return ::rename(from, to);
  }
};

} // namespace trc::rt::test

#endif // TRC_RUNTIME_TESTS_FAILINGFILESYSTEM_H
