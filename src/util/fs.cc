#include "util/fs.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

namespace dt {

std::string ErrnoMessage(int err) { return std::strerror(err); }

namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

Error IoError(const std::filesystem::path& path, const std::string& what, int err) {
  ErrorCode code = (err == ENOENT || err == ENOTDIR || err == EISDIR || err == ELOOP)
                       ? ErrorCode::kInput
                       : ErrorCode::kIo;
  return MakeError(code, what + ": " + ErrnoMessage(err), path.string());
}

}  // namespace

Result<std::string> ReadFile(const std::filesystem::path& path, std::uint64_t max_bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return IoError(path, "cannot open", errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return IoError(path, "cannot stat", errno);
  if (S_ISDIR(st.st_mode)) return MakeError(ErrorCode::kInput, "is a directory", path.string());
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    return MakeError(ErrorCode::kInput,
                     "file is too large (" + std::to_string(st.st_size) + " bytes, limit " +
                         std::to_string(max_bytes) + ")",
                     path.string());
  }
  std::string out;
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError(path, "cannot read", errno);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > max_bytes) {
      return MakeError(ErrorCode::kInput, "file grew past the size limit while being read",
                       path.string());
    }
  }
  return out;
}

Status WriteFileAtomic(const std::filesystem::path& path, std::string_view contents) {
  std::filesystem::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  std::random_device rd;
  std::string tmp_name = "." + path.filename().string() + ".tmp" + std::to_string(rd());
  std::filesystem::path tmp = dir / tmp_name;
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) return IoError(tmp, "cannot create", errno);
  const char* p = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(fd.get(), p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::unlink(tmp.c_str());
      return IoError(tmp, "cannot write", err);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd.get()) != 0 || ::close(fd.release()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return IoError(tmp, "cannot flush", err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return IoError(path, "cannot replace", err);
  }
  return OkStatus();
}

Result<MappedFile> MappedFile::Open(const std::filesystem::path& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return IoError(path, "cannot open", errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return IoError(path, "cannot stat", errno);
  if (!S_ISREG(st.st_mode)) return MakeError(ErrorCode::kInput, "not a regular file", path.string());
  MappedFile m;
  m.path_ = path.string();
  m.size_ = static_cast<std::size_t>(st.st_size);
  if (m.size_ == 0) return m;
  void* p = ::mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (p == MAP_FAILED) return IoError(path, "cannot map", errno);
  m.data_ = static_cast<const unsigned char*>(p);
  return m;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_), size_(other.size_), path_(std::move(other.path_)) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    Reset();
    data_ = other.data_;
    size_ = other.size_;
    path_ = std::move(other.path_);
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() { Reset(); }

void MappedFile::Reset() {
  if (data_ != nullptr) ::munmap(const_cast<unsigned char*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace dt
