//===- FileOps.h - durable file writing, read-only mappings -----------------===//
//
// The file primitives of data loading and checkpointing:
//   * FileSystemHooks: the system calls through which every durable write
//     goes (write, fsync, rename). The default forwards to the kernel; tests
//     subclass it to make a write fail with ENOSPC after N bytes, an fsync or
//     a rename fail, exactly as a full disk would.
//   * FileWriter: creates a file, appends bytes (hashing them with XXH3 on
//     the way, Checksum.h), and finish() fsyncs and closes it; a writer
//     destroyed before finish() removes its file.
//   * writeFileAtomic: the temp-file + fsync + rename + fsync(folder) idiom
//     for small files (the checkpoint `latest` pointer).
//   * MappedFile: a whole file mapped read-only (an empty file maps to an
//     empty view, no mmap); readSmallFile reads a bounded file into memory.
// Every error message starts with the path of the file it is about.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_FILEOPS_H
#define TRC_RUNTIME_FILEOPS_H

#include "runtime/formats/Checksum.h"
#include "runtime/support/Status.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

struct stat;

namespace trc::rt {

class FileSystemHooks {
public:
  virtual ~FileSystemHooks() = default;
  // Same contracts as the POSIX calls (return -1 and set errno on failure).
  virtual ssize_t write(int fd, const void *data, size_t size);
  virtual int fsync(int fd);
  virtual int rename(const char *from, const char *to);
};

// The hooks that call the kernel.
FileSystemHooks &systemFileSystem();

class FileWriter {
public:
  FileWriter() = default;
  ~FileWriter();
  FileWriter(const FileWriter &) = delete;
  FileWriter &operator=(const FileWriter &) = delete;

  // Creates (or truncates) `path` with mode 0644.
  Status open(const std::string &path, FileSystemHooks &fs);
  // Writes all `size` bytes (retrying short writes and EINTR).
  Status append(const void *data, size_t size);
  Status append(std::string_view bytes) {
    return append(bytes.data(), bytes.size());
  }
  // fsync + close. After an error the file is removed.
  Status finish();
  // Closes and removes the file (no-op when not open).
  void abort();

  uint64_t bytesWritten() const { return bytes_; }
  // The XXH3 checksum of the bytes appended so far.
  Checksum checksum() const { return hash_.checksum(); }
  const std::string &path() const { return path_; }

private:
  FileSystemHooks *fs_ = nullptr;
  std::string path_;
  int fd_ = -1;
  uint64_t bytes_ = 0;
  Hasher hash_;
};

// The folder part of a path ("." when there is none).
std::string parentDirectory(const std::string &path);

// fsyncs a folder so that renames and creations inside it are durable.
Status fsyncDirectory(const std::string &dir);

// Writes `path` atomically with what `fill` appends: `path`.tmp-<pid> is
// written and fsynced, renamed over `path`, and the folder is fsynced. On
// failure the temp file is removed and `path` is untouched.
Status writeFileAtomicWith(const std::string &path, FileSystemHooks &fs,
                           const std::function<Status(FileWriter &)> &fill);

// Writes `path` atomically: `path`.tmp-<pid> is written and fsynced, renamed
// over `path`, and the containing folder is fsynced. On failure the temp
// file is removed and `path` is untouched.
Status writeFileAtomic(const std::string &path, std::string_view bytes,
                       FileSystemHooks &fs);

/// A folder an output flag fills and replaces as a whole (--save-model,
/// --predictions): `dir` may be absent, or a folder holding `record` (the
/// file the flag writes last); anything else is "FLAG DIR: exists and is
/// not a folder FLAG wrote (no RECORD); nothing is overwritten".
Status checkOwnedFolder(const std::string &flag, const std::string &dir,
                        const std::string &record);
/// Creates the staging folder for `dir` (`dir`.tmp-<pid>, emptied first).
StatusOr<std::string> stageFolder(const std::string &dir);
/// Puts the complete `staged` folder in place of `dir`: the old folder is
/// moved aside, `staged` renamed to `dir`, the old one removed and the
/// parent fsynced; on failure `dir` is as it was and `staged` is removed.
Status replaceFolder(const std::string &staged, const std::string &dir);

/// Opens `path` read-only, refusing anything but a regular file without
/// blocking on it (a FIFO, a device, a folder): the descriptor (the
/// caller closes it), or "PATH: cannot open: ..." / "PATH: not a regular
/// file". Every reader of the runtime opens its files through it. `st`,
/// when given, receives the file's stat.
StatusOr<int> openRegularFile(const std::string &path, struct stat *st);

/// For a flag naming a file to read: "FLAG PATH: not a regular file" (or
/// "... not a regular file or folder" when `folderToo` allows a folder)
/// when PATH exists and is something else (a FIFO, a device, a socket); a
/// missing PATH passes (its reader names it).
Status checkRegularFile(const std::string &flag, const std::string &path,
                        bool folderToo = false);

/// A path a flag names: `flag` ("--metrics") and, for inputs, what it is in
/// messages ("the --data file", "the model").
struct NamedPath {
  std::string flag;
  std::string path;
  std::string what;
};

/// Refuses, before anything is written, an output that is one of the
/// inputs (the same file by device and inode, also through symlinks or
/// "./"), a file inside an input folder, or another output: "--metrics
/// m.jsonl is also the --data file". Empty paths are skipped.
Status checkOutputsAreNotInputs(const std::vector<NamedPath> &outputs,
                                const std::vector<NamedPath> &inputs);

/// Reads a whole regular file of at most `maxBytes` bytes: its bytes, or an
/// error naming it ("PATH: cannot open: ...", "PATH: not a regular
/// file", "PATH: is N bytes, more than the limit of M").
/// Writes all of `bytes` to `fd` (retrying short writes and EINTR); the
/// error is strerror's text (a full disk: "No space left on device").
Status writeAllFd(int fd, std::string_view bytes);

StatusOr<std::string> readSmallFile(const std::string &path, size_t maxBytes);

class MappedFile {
public:
  MappedFile() = default;
  ~MappedFile() { reset(); }
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;

  // Maps a regular file read-only ("PATH: cannot open: ...",
  // "PATH: not a regular file").
  Status open(const std::string &path);
  void reset();

  const unsigned char *data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view bytes() const {
    return {reinterpret_cast<const char *>(data_), size_};
  }

private:
  unsigned char *data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
};

} // namespace trc::rt

#endif // TRC_RUNTIME_FILEOPS_H
