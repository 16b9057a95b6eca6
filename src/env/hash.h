// The data slice: every file under the given paths, with its size and SHA-256, hashed streaming on
// all cores (SHA-256 is sequential within a file, so the parallelism is across files).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace dt::env {

struct DataFile {
  std::string path;              // As recorded: relative to the project when inside it.
  std::filesystem::path source;  // Where it is read from.
  std::uint64_t size = 0;
  std::string sha256;  // Lower-case hex; empty until hashed.
};

struct SkippedPath {
  std::string path;
  std::string reason;
};

struct CollectedFiles {
  std::vector<DataFile> files;  // Sorted by path, no duplicates.
  std::vector<SkippedPath> skipped;
};

// Expands files and directories (relative ones against `base`). Errors (exit 2): a path that does
// not exist, a dangling symbolic link, a directory that cannot be listed. Links to files are hashed
// as their target; links to directories and special files (FIFOs, sockets) are skipped and listed.
Result<CollectedFiles> CollectDataFiles(const std::vector<std::string>& roots,
                                        const std::filesystem::path& base);

struct HashOptions {
  unsigned threads = 0;                   // 0: one per core.
  std::size_t buffer_bytes = 256u << 10;  // Stays in L2 between read() and the hash.
  // Called from a helper thread about five times a second with bytes hashed and bytes in all.
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;
  // Test hook: called after the first block of a file is read (to change the file meanwhile).
  std::function<void(const std::filesystem::path&)> after_first_block;
};

// Fills `sha256` and `size` of every file. A file whose size or modification time changes while
// it is hashed, or that cannot be read, is an error naming it.
Status HashDataFiles(std::vector<DataFile>& files, const HashOptions& options = {});

// SHA-256 of one file, streamed (hex).
Result<std::string> Sha256File(const std::filesystem::path& path);

// SHA-256 and git's blob id (SHA-1 of "blob <size>\0" + content, as `git hash-object`) of one file.
struct FileDigests {
  std::uint64_t size = 0;
  std::string sha256;
  std::string git_blob;
};
Result<FileDigests> DigestFileWithGitBlob(const std::filesystem::path& path);

// SHA-256 of a string (hex).
std::string Sha256Hex(std::string_view data);

// The slice's digest: SHA-256 over "path\tsize\tsha256\n" lines of the files sorted by path.
std::string DataDigest(const std::vector<DataFile>& files);

}  // namespace dt::env
