// File helpers: bounded reads, atomic writes and read-only memory maps. POSIX only (Linux and macOS).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "util/result.h"

namespace dt {

// Reads a whole file; refuses files larger than `max_bytes` with an error naming the file.
Result<std::string> ReadFile(const std::filesystem::path& path,
                             std::uint64_t max_bytes = std::uint64_t{1} << 30);

// Writes `contents` to a temporary file beside `path`, flushes it and renames it over `path`, so a
// reader sees either the old file or the whole new one, never half of it.
Status WriteFileAtomic(const std::filesystem::path& path, std::string_view contents);

// A read-only memory map of a whole file. Empty files map to an empty view.
class MappedFile {
 public:
  static Result<MappedFile> Open(const std::filesystem::path& path);

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

 private:
  void Reset();

  const unsigned char* data_ = nullptr;
  std::size_t size_ = 0;
  std::string path_;
};

// errno as a sentence ("No such file or directory").
std::string ErrnoMessage(int err);

}  // namespace dt
