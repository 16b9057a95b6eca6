#include "env/hash.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>

#include "util/fs.h"
#include "util/parallel.h"
#include "util/strings.h"

namespace dt::env {
namespace fs = std::filesystem;
namespace {

std::string Hex(const unsigned char* p, std::size_t n) {
  static const char* kDigits = "0123456789abcdef";
  std::string s(n * 2, '0');
  for (std::size_t i = 0; i < n; ++i) {
    s[2 * i] = kDigits[p[i] >> 4];
    s[2 * i + 1] = kDigits[p[i] & 15];
  }
  return s;
}

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxDeleter>;

Error IoErr(const fs::path& path, const std::string& what, int err) {
  return MakeError(ErrorCode::kInput, what + ": " + ErrnoMessage(err), path.string());
}

// Files at least this large are hashed from a memory map: reading them with read() spent as much
// CPU in the kernel's copy as SHA-NI spent hashing.
constexpr std::uint64_t kMapThreshold = std::uint64_t{1} << 20;
constexpr std::size_t kMapChunk = std::size_t{4} << 20;

// Feeds a mapped file to the digests in chunks, dropping each hashed chunk from this process.
void DigestMapped(const unsigned char* data, std::uint64_t size, EVP_MD_CTX* sha256,
                  EVP_MD_CTX* sha1, const std::function<void(std::uint64_t)>& on_bytes,
                  const std::function<void()>& after_first_block) {
  for (std::uint64_t off = 0; off < size; off += kMapChunk) {
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kMapChunk, size - off));
    EVP_DigestUpdate(sha256, data + off, n);
    if (sha1 != nullptr) EVP_DigestUpdate(sha1, data + off, n);
    // Drop the hashed pages from this process (the page cache keeps them), so RSS stays flat.
    ::madvise(const_cast<unsigned char*>(data + off), n, MADV_DONTNEED);
    if (on_bytes) on_bytes(n);
    if (off == 0 && after_first_block) after_first_block();
  }
}

struct StreamResult {
  std::uint64_t size = 0;
  std::string sha256;
  std::string sha1_blob;
};

// Streams a file through SHA-256 (and optionally git's blob SHA-1), checking that it did not
// change.
Result<StreamResult> StreamFile(const fs::path& path, std::vector<unsigned char>& buffer,
                                bool git_blob, const std::function<void(std::uint64_t)>& on_bytes,
                                const std::function<void(const fs::path&)>& after_first_block) {
  // Never blocks on a FIFO or device swapped in after the listing: that is an error naming it.
  struct stat before {};
  auto opened = OpenRegularFile(path, &before);
  if (!opened) return opened.take_error();
  const UniqueFd fd = std::move(*opened);
#if defined(POSIX_FADV_SEQUENTIAL)
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
#elif defined(F_RDAHEAD)
  ::fcntl(fd.get(), F_RDAHEAD, 1);
#endif
  MdCtx sha256(EVP_MD_CTX_new());
  MdCtx sha1(git_blob ? EVP_MD_CTX_new() : nullptr);
  if (!sha256 || EVP_DigestInit_ex(sha256.get(), EVP_sha256(), nullptr) != 1) {
    return MakeError(ErrorCode::kInternal, "OpenSSL could not start SHA-256");
  }
  if (git_blob) {
    if (!sha1 || EVP_DigestInit_ex(sha1.get(), EVP_sha1(), nullptr) != 1) {
      return MakeError(ErrorCode::kInternal, "OpenSSL could not start SHA-1");
    }
    std::string header = "blob " + std::to_string(before.st_size);
    EVP_DigestUpdate(sha1.get(), header.data(), header.size() + 1);  // With its NUL.
  }
  std::uint64_t total = 0;
  bool first = true;
  const auto size = static_cast<std::uint64_t>(before.st_size);
  if (size >= kMapThreshold) {
    // util's guarded map: a truncation under it reads as zeros and is reported, never a SIGBUS.
    auto map = MappedFile::Open(path);
    if (!map) return map.take_error();
    if (map->stat().st_ino != before.st_ino || map->stat().st_dev != before.st_dev ||
        map->size() != size) {
      return MakeError(ErrorCode::kInput,
                       "the file changed while it was hashed (replaced): freeze a slice that "
                       "nothing is writing to",
                       path.string());
    }
    ::madvise(const_cast<unsigned char*>(map->data()), size, MADV_SEQUENTIAL);
    std::function<void()> hook;
    if (after_first_block) hook = [&] { after_first_block(path); };
    DigestMapped(map->data(), size, sha256.get(), sha1.get(), on_bytes, hook);
    if (map->Truncated()) {
      return MakeError(
          ErrorCode::kInput,
          "the file was truncated while it was hashed: freeze a slice that nothing is writing to",
          path.string());
    }
    total = size;
    first = false;
  }
  while (size < kMapThreshold) {
    ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoErr(path, "cannot read", errno);
    }
    if (n == 0) break;
    EVP_DigestUpdate(sha256.get(), buffer.data(), static_cast<std::size_t>(n));
    if (git_blob) EVP_DigestUpdate(sha1.get(), buffer.data(), static_cast<std::size_t>(n));
    total += static_cast<std::uint64_t>(n);
    if (on_bytes) on_bytes(static_cast<std::uint64_t>(n));
    if (first && after_first_block) after_first_block(path);
    first = false;
  }
  if (first && after_first_block) after_first_block(path);
  struct stat after {};
  if (::fstat(fd.get(), &after) != 0) return IoErr(path, "cannot stat", errno);
  struct stat now {};
  bool replaced =
      ::stat(path.c_str(), &now) != 0 || now.st_ino != before.st_ino || now.st_dev != before.st_dev;
  if (replaced || after.st_size != before.st_size ||
      ModificationTimeNs(after) != ModificationTimeNs(before) ||
      total != static_cast<std::uint64_t>(before.st_size)) {
    return MakeError(ErrorCode::kInput,
                     "the file changed while it was hashed (size " +
                         std::to_string(before.st_size) + " -> " +
                         std::to_string(replaced ? now.st_size : after.st_size) +
                         (replaced                                                  ? ", replaced"
                          : ModificationTimeNs(after) != ModificationTimeNs(before) ? ", modified"
                                                                                    : "") +
                         "): freeze a slice that nothing is writing to",
                     path.string());
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(sha256.get(), md, &len);
  StreamResult r;
  r.size = total;
  r.sha256 = Hex(md, len);
  if (git_blob) {
    EVP_DigestFinal_ex(sha1.get(), md, &len);
    r.sha1_blob = Hex(md, len);
  }
  return r;
}

// The recorded name: relative to `base` when inside it, else absolute; always with '/'. A name
// that is not UTF-8 (or holds control characters) is recorded with its bytes escaped (\xff): JSON
// cannot hold the raw bytes, and `freeze --check` names the file the same way, so it matches.
std::string DisplayPath(const fs::path& p, const fs::path& base) {
  std::error_code ec;
  fs::path abs = fs::absolute(p, ec).lexically_normal();
  fs::path b = fs::absolute(base, ec).lexically_normal();
  fs::path rel = abs.lexically_relative(b);
  if (!rel.empty() && *rel.begin() != "..") return EscapeControl(rel.generic_string());
  return EscapeControl(abs.generic_string());
}

}  // namespace

Result<CollectedFiles> CollectDataFiles(const std::vector<std::string>& roots,
                                        const fs::path& base) {
  CollectedFiles out;
  std::set<std::string> seen;
  auto add_file = [&](const fs::path& p, std::uint64_t size) {
    std::string name = DisplayPath(p, base);
    if (seen.insert(name).second) out.files.push_back({name, p, size, {}});
  };
  // One entry found in a directory walk or named directly.
  auto visit = [&](const fs::path& p, bool named) -> Status {
    std::error_code ec;
    auto lst = fs::symlink_status(p, ec);
    if (ec || lst.type() == fs::file_type::not_found) {
      return MakeError(ErrorCode::kInput,
                       named ? "data path does not exist" : "cannot stat: " + ec.message(),
                       p.string());
    }
    auto st = fs::status(p, ec);
    if (lst.type() == fs::file_type::symlink && (ec || st.type() == fs::file_type::not_found)) {
      return MakeError(ErrorCode::kInput, "dangling symbolic link (its target does not exist)",
                       p.string());
    }
    if (ec) return MakeError(ErrorCode::kInput, "cannot stat: " + ec.message(), p.string());
    if (st.type() == fs::file_type::regular) {
      auto size = fs::file_size(p, ec);
      if (ec) return MakeError(ErrorCode::kInput, "cannot stat: " + ec.message(), p.string());
      if (::access(p.c_str(), R_OK) != 0) return IoErr(p, "cannot read", errno);
      add_file(p, size);
    } else if (st.type() != fs::file_type::directory && named) {
      // A slice of nothing would be recorded as hashed: a named FIFO or device is an error.
      struct stat raw {};
      const bool known = ::stat(p.c_str(), &raw) == 0;
      return MakeError(ErrorCode::kInput,
                       "a data path must be a regular file or a folder; this is " +
                           (known ? FileTypeName(raw.st_mode) : std::string("a special file")),
                       p.string());
    } else if (st.type() != fs::file_type::directory) {
      out.skipped.push_back({DisplayPath(p, base), "not a regular file"});
    } else if (lst.type() == fs::file_type::symlink && !named) {
      out.skipped.push_back({DisplayPath(p, base), "symbolic link to a directory (not followed)"});
    }
    return OkStatus();
  };
  for (const auto& root : roots) {
    fs::path p = fs::path(root).is_absolute() ? fs::path(root) : base / root;
    if (auto s = visit(p, true); !s.ok()) return s.take_error();
    std::error_code ec;
    if (!fs::is_directory(p, ec)) continue;
    fs::recursive_directory_iterator it(p, fs::directory_options::none, ec);
    if (ec)
      return MakeError(ErrorCode::kInput, "cannot list directory: " + ec.message(), p.string());
    for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) break;
      const fs::path& entry = it->path();
      std::error_code e2;
      if (it->is_directory(e2) && !it->is_symlink(e2)) continue;
      if (auto s = visit(entry, false); !s.ok()) return s.take_error();
    }
    if (ec)
      return MakeError(ErrorCode::kInput, "cannot list directory: " + ec.message(), p.string());
  }
  std::sort(out.files.begin(), out.files.end(),
            [](const DataFile& a, const DataFile& b) { return a.path < b.path; });
  return out;
}

Status HashDataFiles(std::vector<DataFile>& files, const HashOptions& options) {
  const unsigned threads = DefaultThreads(options.threads);
  // Largest first, so one big file does not start last and leave the other cores idle.
  std::vector<std::size_t> order(files.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return files[a].size > files[b].size; });
  std::uint64_t total = 0;
  for (const auto& f : files) total += f.size;

  std::atomic<std::uint64_t> done{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  std::optional<Error> first_error;
  std::size_t first_error_index = files.size();
  std::vector<std::string> digests(files.size());
  std::vector<std::uint64_t> sizes(files.size());
  std::vector<std::vector<unsigned char>> buffers(threads);

  std::mutex progress_mu;
  std::condition_variable progress_cv;
  bool finished = false;
  ScopedThreads progress(
      options.progress ? 1 : 0,
      [&](unsigned) {
        std::unique_lock<std::mutex> lock(progress_mu);
        while (!finished) {
          options.progress(done.load(), total);
          progress_cv.wait_for(lock, std::chrono::milliseconds(200));
        }
        options.progress(done.load(), total);
      },
      [&] {
        {
          std::lock_guard<std::mutex> lock(progress_mu);
          finished = true;
        }
        progress_cv.notify_all();
      });
  ParallelFor(order.size(), threads, [&](std::size_t k, unsigned worker) {
    if (failed.load(std::memory_order_relaxed)) return;
    std::vector<unsigned char>& buffer = buffers[worker];
    if (buffer.empty()) buffer.resize(options.buffer_bytes);
    const std::size_t i = order[k];
    auto r = StreamFile(
        files[i].source, buffer, false,
        [&](std::uint64_t n) { done.fetch_add(n, std::memory_order_relaxed); },
        options.after_first_block);
    if (!r.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      if (i < first_error_index) {
        first_error = r.error();
        first_error_index = i;
      }
      failed = true;
      return;
    }
    digests[i] = std::move(r->sha256);
    sizes[i] = r->size;
  });
  progress.Join();
  if (first_error) return *first_error;
  for (std::size_t i = 0; i < files.size(); ++i) {
    files[i].sha256 = std::move(digests[i]);
    files[i].size = sizes[i];
  }
  return OkStatus();
}

Result<std::string> Sha256File(const fs::path& path) {
  std::vector<unsigned char> buffer(1u << 20);
  auto r = StreamFile(path, buffer, false, nullptr, nullptr);
  if (!r.ok()) return r.take_error();
  return r->sha256;
}

Result<FileDigests> DigestFileWithGitBlob(const fs::path& path) {
  std::vector<unsigned char> buffer(1u << 20);
  auto r = StreamFile(path, buffer, true, nullptr, nullptr);
  if (!r.ok()) return r.take_error();
  return FileDigests{r->size, r->sha256, r->sha1_blob};
}

std::string Sha256Hex(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha256(), nullptr);
  return Hex(md, len);
}

std::string DataDigest(const std::vector<DataFile>& files) {
  std::vector<const DataFile*> sorted;
  sorted.reserve(files.size());
  for (const auto& f : files) sorted.push_back(&f);
  std::sort(sorted.begin(), sorted.end(),
            [](const DataFile* a, const DataFile* b) { return a->path < b->path; });
  std::string lines;
  for (const auto* f : sorted)
    lines += f->path + "\t" + std::to_string(f->size) + "\t" + f->sha256 + "\n";
  return Sha256Hex(lines);
}

}  // namespace dt::env
