// File helpers: bounded reads, atomic writes and read-only memory maps. POSIX only (Linux and
// macOS).
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace dt {

// An owned file descriptor, closed once.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Close(); }
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void Close();

 private:
  int fd_;
};

// Opens a file for reading only when it is a regular file, without ever blocking: a FIFO, device
// or socket (named, or swapped in after a directory listing) is an error naming the file, never a
// hang. Opens with O_NONBLOCK (which reads of a regular file ignore) and checks fstat. Every reader
// goes through it. `st` (optional) receives the fstat of the opened file.
Result<UniqueFd> OpenRegularFile(const std::filesystem::path& path, struct stat* st = nullptr);
// The same for a path that is already a C string (no std::filesystem::path to build per file).
Result<UniqueFd> OpenRegularFile(const char* path, struct stat* st = nullptr);
// The same for `name` inside the directory open as `dir_fd` (openat: the kernel looks up one name,
// not every folder of a long path); `path` is the file's full path, for errors.
Result<UniqueFd> OpenRegularFileAt(int dir_fd, const char* name, const char* path,
                                   struct stat* st = nullptr);

// "a FIFO", "a directory", "a character device", ... for error messages.
std::string FileTypeName(mode_t mode);

// Reads a whole regular file; refuses files larger than `max_bytes` with an error naming the file.
Result<std::string> ReadFile(const std::filesystem::path& path,
                             std::uint64_t max_bytes = std::uint64_t{1} << 30);
// The whole file open as `fd`, from its first byte whatever the descriptor's offset (pread), so a
// caller can read the same file again to see what changed; `path` names it in errors.
Result<std::string> ReadWholeFd(int fd, const std::filesystem::path& path,
                                std::uint64_t max_bytes = std::uint64_t{1} << 30);
// Writes all of `data` to `fd`, retrying short and interrupted writes; 0 or the failing errno.
int WriteAll(int fd, std::string_view data);

// `path` with every symbolic link resolved (realpath); empty when it cannot be resolved.
std::string RealPath(const std::string& path);
// Whether `path` is `dir` or lies below it; both absolute and resolved (no "..", no links).
bool PathWithin(std::string_view path, std::string_view dir);

// What an output must never replace besides special files and links: the command's own inputs.
struct OutputGuard {
  std::vector<std::filesystem::path> inputs;      // Files the command reads.
  std::vector<std::filesystem::path> input_dirs;  // Folders whose every file the command reads.
  // Folders the command reads as a whole (a bundle, a checkpoint folder): none of their existing
  // files may be replaced, a new file beside them is fine.
  std::vector<std::filesystem::path> input_trees;
  // --force: the user means to replace an input. Links and special files are refused still.
  bool force = false;
};

// Whether `path` may be written as a command's output: refused (exit 2, naming it) when it is a
// symbolic link (never written through nor replaced: the user names the target), a directory, a
// device node, FIFO or socket, or one of `guard`'s inputs or a file inside its input folders.
// A path that does not exist yet is fine.
Status CheckOutputPath(const std::filesystem::path& path, const OutputGuard& guard = {});
// CheckOutputPath for every file a command is about to write, before it writes any of them (a
// report and its siblings are all written or none).
Status CheckOutputPaths(const std::vector<std::filesystem::path>& paths, const OutputGuard& guard);

// Writes `contents` to a temporary file beside `path`, flushes it and renames it over `path`, so a
// reader sees either the old file or the whole new one, never half of it. An interrupt or
// termination signal (SIGINT, SIGTERM, SIGHUP) while the temporary exists removes it before the
// signal takes its usual course: no temporary is left behind. Checks `path` with
// CheckOutputPath first; an existing file keeps its permission bits. A failed write or flush (a
// full disk) is an error and leaves the old file as it was.
Status WriteFileAtomic(const std::filesystem::path& path, std::string_view contents,
                       const OutputGuard& guard = {});

// The same, with the contents written by `write` into a stream over the temporary file, so that a
// large document never has to exist whole in memory. A failed write is reported as above.
Status WriteFileAtomic(const std::filesystem::path& path,
                       const std::function<void(std::ostream&)>& write,
                       const OutputGuard& guard = {});

// What a caller of an atomic replacement does around the rename, with the temporary's descriptor:
// `before_rename` once its contents are flushed (an error abandons the write and removes the
// temporary; what it writes to the descriptor becomes part of the new file), `after_rename` once
// the temporary is `path` (its error is reported, the new file stays).
struct AtomicWriteHooks {
  std::function<Status(int fd)> before_rename;
  std::function<Status(int fd)> after_rename;
};

// WriteFileAtomic with hooks around the rename.
Status WriteFileAtomic(const std::filesystem::path& path, std::string_view contents,
                       const OutputGuard& guard, const AtomicWriteHooks& hooks);

// A read-only memory map of a whole regular file. Empty files map to an empty view.
//
// A mapped file that another process truncates raises SIGBUS on the next read of a page past its
// new end. Every mapping is registered with one process-wide SIGBUS handler, which maps zero pages
// over the rest of the mapping (so the reader carries on over zeros instead of crashing) and marks
// it; CheckUnchanged() then reports the file as changed while read. Callers call it after their
// last read of the data and discard what they computed when it fails.
class MappedFile {
 public:
  static Result<MappedFile> Open(const std::filesystem::path& path);
  // Maps a regular file already opened (OpenRegularFile) and fstat'ed as `st`; `path` names it in
  // errors. Saves the second open (and path lookup) of a caller that decides by size.
  static Result<MappedFile> FromFd(UniqueFd fd, const struct stat& st, std::string path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const unsigned char* data() const { return data_; }
  std::size_t size() const { return size_; }
  std::string_view view() const { return {reinterpret_cast<const char*>(data_), size_}; }
  const std::string& path() const { return path_; }
  // The fstat of the file when it was opened.
  const struct stat& stat() const { return stat_; }

  // An error ("changed while it was read", naming the file) when the file shrank under the map or
  // its size or modification time differs from when it was opened.
  Status CheckUnchanged() const;
  // Whether the file shrank under the map (a read past its new end was turned into zeros).
  bool Truncated() const;

 private:
  void Reset();

  const unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
  std::string path_;
  UniqueFd fd_;
  struct stat stat_ {};
  int slot_ = -1;                          // Index in the SIGBUS guard's table; -1 when not mapped.
  std::unique_ptr<unsigned char[]> copy_;  // When the guard's table is full: the file read instead.
};

// Nanoseconds of a stat's modification time (Linux and macOS spell the field differently).
std::int64_t ModificationTimeNs(const struct stat& st);

// errno as a sentence ("No such file or directory").
std::string ErrnoMessage(int err);

}  // namespace dt
