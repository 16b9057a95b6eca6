// Directories held for a scope: a temporary one removed with its contents, and a working directory
// changed back. For the commands that run a user's script in a prepared folder (audit, fix
// --verify).
#pragma once

#include <filesystem>
#include <string_view>

#include "util/result.h"

namespace dt {

// A temporary directory that is removed with everything in it when it goes out of scope; only
// directories this object made are ever removed.
class TempDir {
 public:
  // "<system temp>/<prefix>XXXXXX".
  static Result<TempDir> Make(std::string_view prefix);
  TempDir(TempDir&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }

 private:
  explicit TempDir(std::filesystem::path p) : path_(std::move(p)) {}
  std::filesystem::path path_;
};

// Changes the working directory for its lifetime and changes it back; for single-threaded
// commands only (the working directory is the process's).
class CurrentDirectory {
 public:
  explicit CurrentDirectory(const std::filesystem::path& dir);
  ~CurrentDirectory();
  CurrentDirectory(const CurrentDirectory&) = delete;
  CurrentDirectory& operator=(const CurrentDirectory&) = delete;
  bool ok() const { return ok_; }

 private:
  std::filesystem::path previous_;
  bool ok_ = false;
};

}  // namespace dt
