#include "util/fs.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <ostream>
#include <random>
#include <streambuf>

namespace dt {

std::string ErrnoMessage(int err) { return std::strerror(err); }

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.release();
  }
  return *this;
}

void UniqueFd::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::int64_t ModificationTimeNs(const struct stat& st) {
#if defined(__APPLE__)
  return static_cast<std::int64_t>(st.st_mtimespec.tv_sec) * 1000000000 + st.st_mtimespec.tv_nsec;
#else
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
#endif
}

std::string FileTypeName(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "a special file";
}

namespace {

Error IoError(const std::filesystem::path& path, const std::string& what, int err) {
  ErrorCode code =
      (err == ENOENT || err == ENOTDIR || err == EISDIR || err == ELOOP || err == ENAMETOOLONG)
          ? ErrorCode::kInput
          : ErrorCode::kIo;
  return MakeError(code, what + ": " + ErrnoMessage(err), path.string());
}

Error NotRegular(const std::filesystem::path& path, mode_t mode) {
  if (S_ISDIR(mode)) return MakeError(ErrorCode::kInput, "is a directory", path.string());
  return MakeError(ErrorCode::kInput, "not a regular file (it is " + FileTypeName(mode) + ")",
                   path.string());
}

}  // namespace

Result<UniqueFd> OpenRegularFile(const char* path, struct stat* st_out) {
  return OpenRegularFileAt(AT_FDCWD, path, path, st_out);
}

Result<UniqueFd> OpenRegularFileAt(int dir_fd, const char* name, const char* path,
                                   struct stat* st_out) {
  // O_NONBLOCK: opening a FIFO without a writer, or some devices, would otherwise wait forever.
  // The check is on the opened file (fstat), so a file swapped for a FIFO after a listing or a
  // stat is caught too. The flag stays: reads and maps of a regular file ignore it (POSIX), and
  // clearing it cost two system calls per file of a scan.
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0) return IoError(path, "cannot open", errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return IoError(path, "cannot stat", errno);
  if (!S_ISREG(st.st_mode)) return NotRegular(path, st.st_mode);
  if (st_out != nullptr) *st_out = st;
  return fd;
}

Result<UniqueFd> OpenRegularFile(const std::filesystem::path& path, struct stat* st_out) {
  return OpenRegularFile(path.c_str(), st_out);
}

Result<std::string> ReadFile(const std::filesystem::path& path, std::uint64_t max_bytes) {
  struct stat st {};
  auto opened = OpenRegularFile(path, &st);
  if (!opened) return opened.take_error();
  UniqueFd fd = std::move(*opened);
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    return MakeError(ErrorCode::kInput,
                     "file is too large (" + std::to_string(st.st_size) + " bytes, limit " +
                         std::to_string(max_bytes) + ")",
                     path.string());
  }
  return ReadWholeFd(fd.get(), path, max_bytes);
}

Result<std::string> ReadWholeFd(int fd, const std::filesystem::path& path,
                                std::uint64_t max_bytes) {
  std::string out;
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(out.size()));
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

int WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return 0;
}

std::string RealPath(const std::string& path) {
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr) return {};
  std::string out(resolved);
  std::free(resolved);  // NOLINT: realpath's buffer comes from malloc.
  return out;
}

bool PathWithin(std::string_view path, std::string_view dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);  // "proj/" is "proj".
  if (dir.empty()) return false;
  if (dir == "/") return true;
  return path.starts_with(dir) && (path.size() == dir.size() || path[dir.size()] == '/');
}

namespace {

// `path` made absolute with its folder resolved (the file itself may not exist), for comparing
// an output with an input folder.
std::filesystem::path ResolvedLocation(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(path, ec);
  if (ec) return path;
  std::filesystem::path parent = std::filesystem::weakly_canonical(abs.parent_path(), ec);
  if (ec) return abs.lexically_normal();
  return parent / abs.filename();
}

bool Inside(const std::filesystem::path& p, const std::filesystem::path& dir) {
  auto rel = p.lexically_relative(dir);
  return !rel.empty() && *rel.begin() != ".." && rel != ".";
}

// The first of `dirs` (as given) that holds `where`, an output's resolved location; null if none.
const std::filesystem::path* FolderHolding(const std::filesystem::path& where,
                                           const std::vector<std::filesystem::path>& dirs) {
  for (const auto& d : dirs) {
    std::error_code ec;
    auto dir = std::filesystem::weakly_canonical(std::filesystem::absolute(d, ec), ec);
    if (!ec && Inside(where, dir)) return &d;
  }
  return nullptr;
}

// The command's own inputs (`guard`, lifted by --force): an existing output (`existing`, its
// lstat) must not be one of its files nor a file of an input tree, and no output may land inside
// an input folder, which would change the input itself.
Status CheckNotAnInput(const std::filesystem::path& path, const struct stat* existing,
                       const OutputGuard& guard) {
  if (guard.force) return OkStatus();
  const std::filesystem::path where = ResolvedLocation(path);
  if (existing != nullptr) {
    for (const auto& in : guard.inputs) {
      struct stat ist {};
      if (::stat(in.c_str(), &ist) == 0 && ist.st_dev == existing->st_dev &&
          ist.st_ino == existing->st_ino) {
        return MakeError(ErrorCode::kUsage,
                         "the output path is one of this command's inputs (" + in.string() +
                             "); refusing to overwrite it (--force replaces it anyway)",
                         path.string());
      }
    }
    if (const auto* tree = FolderHolding(where, guard.input_trees)) {
      return MakeError(ErrorCode::kUsage,
                       "the output path is one of this command's inputs (a file of " +
                           tree->string() +
                           ", which it reads); refusing to overwrite it (--force "
                           "replaces it anyway)",
                       path.string());
    }
  }
  if (const auto* dir = FolderHolding(where, guard.input_dirs)) {
    return MakeError(ErrorCode::kUsage,
                     "refusing to write the output inside this command's input folder " +
                         dir->string() +
                         " (it would change the input itself; --force writes it "
                         "anyway)",
                     path.string());
  }
  return OkStatus();
}

}  // namespace

Status CheckOutputPath(const std::filesystem::path& path, const OutputGuard& guard) {
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) != 0) {
    if (errno == ENOENT) {
      // Not there yet; it may still land inside an input folder.
      return CheckNotAnInput(path, nullptr, guard);
    }
    return IoError(path, "cannot check the output path", errno);
  }
  if (S_ISLNK(lst.st_mode)) {
    std::error_code ec;
    auto target = std::filesystem::read_symlink(path, ec);
    return MakeError(ErrorCode::kUsage,
                     "the output path is a symbolic link" +
                         (ec ? std::string() : " (to " + target.string() + ")") +
                         "; dualtrack neither writes through nor replaces links: name the file "
                         "itself, or remove the link",
                     path.string());
  }
  if (!S_ISREG(lst.st_mode)) {
    return MakeError(ErrorCode::kUsage,
                     "the output path is " + FileTypeName(lst.st_mode) +
                         ", not a regular file; refusing to replace it (leave out -o to write to "
                         "standard output)",
                     path.string());
  }
  return CheckNotAnInput(path, &lst, guard);
}

Status CheckOutputPaths(const std::vector<std::filesystem::path>& paths, const OutputGuard& guard) {
  for (const auto& p : paths)
    if (auto s = CheckOutputPath(p, guard); !s) return s;
  return OkStatus();
}

namespace {

// A stream buffer over a descriptor (std::filebuf cannot adopt one portably). The first failed
// write's errno is kept and what follows is dropped.
class FdBuf : public std::streambuf {
 public:
  explicit FdBuf(int fd) : fd_(fd) { setp(buf_, buf_ + sizeof buf_); }
  int error() const { return err_; }

 protected:
  int sync() override { return Drain() ? 0 : -1; }
  int_type overflow(int_type c) override {
    if (!Drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }

 private:
  bool Drain() {
    if (err_ == 0) err_ = WriteAll(fd_, {pbase(), static_cast<std::size_t>(pptr() - pbase())});
    setp(buf_, buf_ + sizeof buf_);
    return err_ == 0;
  }

  int fd_;
  int err_ = 0;
  char buf_[1 << 16];
};

// ---- Temporary files removed on an interrupt ----

// The temporaries being written, for the signal handler to remove. Written by their owner, read by
// the handler: lock-free atomics and fixed buffers only (a handler may not take a lock or
// allocate). A path too long for a slot, or a write while every slot is taken, goes unguarded.
struct TempSlot {
  std::atomic<bool> used{false};
  std::atomic<bool> set{false};
  char path[4096];
};
constexpr int kTempSlots = 16;
TempSlot g_temps[kTempSlots];
constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_previous_cleanup[3];
std::mutex g_cleanup_mu;  // Guards installing and restoring the handlers.
int g_cleanup_users = 0;
bool g_cleanup_installed[3] = {};

extern "C" void RemoveTempsOnSignal(int sig) {
  const int saved_errno = errno;
  for (TempSlot& t : g_temps)
    if (t.set.load(std::memory_order_acquire)) ::unlink(t.path);
  // Then what the signal did before (the default: the process ends with this signal).
  for (int i = 0; i < 3; ++i)
    if (kCleanupSignals[i] == sig) ::sigaction(sig, &g_previous_cleanup[i], nullptr);
  ::raise(sig);
  errno = saved_errno;
}

// Registers one temporary with the handler while it lives; installs the handler for the first.
class TempGuard {
 public:
  explicit TempGuard(const std::filesystem::path& tmp) {
    {
      std::lock_guard lock(g_cleanup_mu);
      if (g_cleanup_users++ == 0) Install();
    }
    const std::string& p = tmp.native();
    if (p.size() >= sizeof(TempSlot::path)) return;
    for (TempSlot& t : g_temps) {
      bool expected = false;
      if (!t.used.compare_exchange_strong(expected, true)) continue;
      std::memcpy(t.path, p.c_str(), p.size() + 1);
      t.set.store(true, std::memory_order_release);
      slot_ = &t;
      break;
    }
  }
  TempGuard(const TempGuard&) = delete;
  TempGuard& operator=(const TempGuard&) = delete;
  ~TempGuard() {
    if (slot_ != nullptr) {
      slot_->set.store(false, std::memory_order_release);
      slot_->used.store(false, std::memory_order_release);
    }
    std::lock_guard lock(g_cleanup_mu);
    if (--g_cleanup_users == 0) Restore();
  }

 private:
  static void Install() {
    for (int i = 0; i < 3; ++i) {
      struct sigaction now {};
      now.sa_handler = RemoveTempsOnSignal;
      sigemptyset(&now.sa_mask);
      g_cleanup_installed[i] = false;
      if (::sigaction(kCleanupSignals[i], nullptr, &g_previous_cleanup[i]) != 0) continue;
      // An ignored signal stays ignored (it will not end the write).
      if (g_previous_cleanup[i].sa_handler == SIG_IGN) continue;
      g_cleanup_installed[i] = ::sigaction(kCleanupSignals[i], &now, nullptr) == 0;
    }
  }
  static void Restore() {
    for (int i = 0; i < 3; ++i)
      if (g_cleanup_installed[i]) ::sigaction(kCleanupSignals[i], &g_previous_cleanup[i], nullptr);
  }

  TempSlot* slot_ = nullptr;
};

// The temporary file, its mode, the flush and the rename; `fill` writes the contents to the
// descriptor and returns 0 or an errno.
Status WriteAtomic(const std::filesystem::path& path, const OutputGuard& guard,
                   const std::function<int(int)>& fill, const AtomicWriteHooks& hooks = {}) {
  if (auto s = CheckOutputPath(path, guard); !s) return s;
  struct stat old {};
  const bool replacing = ::lstat(path.c_str(), &old) == 0;
  std::filesystem::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  std::random_device rd;
  std::string tmp_name = "." + path.filename().string() + ".tmp" + std::to_string(rd());
  std::filesystem::path tmp = dir / tmp_name;
  TempGuard temp_guard(tmp);
  // 0666 less the umask, as any new file; a replaced file keeps its own mode (a 0600 file must
  // not become readable by others).
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666));
  if (fd.get() < 0) return IoError(tmp, "cannot create", errno);
  auto fail = [&](const std::filesystem::path& p, const char* what, int err) {
    fd.Close();
    ::unlink(tmp.c_str());
    return IoError(p, what, err);
  };
  if (replacing) {
    if (::fchmod(fd.get(), old.st_mode & 07777) != 0)
      return fail(tmp, "cannot set the mode", errno);
    [[maybe_unused]] int ignored = ::fchown(fd.get(), old.st_uid, old.st_gid);  // Best effort.
  }
  if (int err = fill(fd.get()); err != 0) return fail(tmp, "cannot write", err);
  if (::fsync(fd.get()) != 0) return fail(tmp, "cannot flush", errno);
  if (hooks.before_rename) {
    if (auto s = hooks.before_rename(fd.get()); !s) {
      fd.Close();
      ::unlink(tmp.c_str());
      return s;
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return IoError(path, "cannot replace", err);
  }
  Status after = hooks.after_rename ? hooks.after_rename(fd.get()) : OkStatus();
  // Closed after the rename, which then follows the last check as closely as it can; the data is
  // already flushed, so the close has nothing left to fail on but is still checked.
  if (::close(fd.release()) != 0 && after) return IoError(path, "cannot flush", errno);
  return after;
}

}  // namespace

Status WriteFileAtomic(const std::filesystem::path& path, std::string_view contents,
                       const OutputGuard& guard) {
  return WriteAtomic(path, guard, [&](int fd) { return WriteAll(fd, contents); });
}

Status WriteFileAtomic(const std::filesystem::path& path, std::string_view contents,
                       const OutputGuard& guard, const AtomicWriteHooks& hooks) {
  return WriteAtomic(
      path, guard, [&](int fd) { return WriteAll(fd, contents); }, hooks);
}

Status WriteFileAtomic(const std::filesystem::path& path,
                       const std::function<void(std::ostream&)>& write, const OutputGuard& guard) {
  return WriteAtomic(path, guard, [&](int fd) {
    FdBuf buf(fd);
    std::ostream os(&buf);
    write(os);
    os.flush();
    return buf.error() != 0 ? buf.error() : os ? 0 : EIO;
  });
}

// ---- The SIGBUS guard of memory maps ----

namespace {

// One slot per live mapping. Written by the owning thread, read by the signal handler: lock-free
// atomics only (a handler may not take a lock).
struct GuardSlot {
  std::atomic<std::uintptr_t> begin{0};
  std::atomic<std::uintptr_t> end{0};
  std::atomic<int> hit{0};
};
constexpr int kGuardSlots = 512;
GuardSlot g_slots[kGuardSlots];
std::uintptr_t g_page_size = 4096;
// What handled each signal before; a fault outside our mappings goes there.
struct sigaction g_previous_sigbus;
struct sigaction g_previous_sigsegv;

void OnSigbus(int sig, siginfo_t* info, void* context) {
  int saved_errno = errno;
  const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (auto& slot : g_slots) {
    std::uintptr_t begin = slot.begin.load(std::memory_order_acquire);
    std::uintptr_t end = slot.end.load(std::memory_order_acquire);
    if (begin == 0 || addr < begin || addr >= end) continue;
    // Zero pages from the faulting page to the end of the mapping: the read that faulted is
    // retried and sees zeros, and so do later ones. The owner learns it from `hit`.
    std::uintptr_t page = addr & ~(g_page_size - 1);
    // NOLINTNEXTLINE(performance-no-int-to-ptr): MAP_FIXED takes the page's address as a pointer.
    void* p = ::mmap(reinterpret_cast<void*>(page), end - page, PROT_READ,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (p != MAP_FAILED) {
      slot.hit.store(1, std::memory_order_release);
      errno = saved_errno;
      return;
    }
  }
  // Not one of ours: whatever handled the signal before, else the default (a crash with a core).
  const struct sigaction& previous = sig == SIGBUS ? g_previous_sigbus : g_previous_sigsegv;
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction != nullptr) {
      previous.sa_sigaction(sig, info, context);
      return;
    }
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
    return;
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void InstallSigbusGuard() {
  static std::once_flag once;
  std::call_once(once, [] {
    long page = ::sysconf(_SC_PAGESIZE);
    if (page > 0) g_page_size = static_cast<std::uintptr_t>(page);
    struct sigaction sa {};
    sa.sa_sigaction = OnSigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, &g_previous_sigbus);
#if defined(__APPLE__)
    // Some macOS releases report a read past the end of a mapped file as SIGSEGV.
    ::sigaction(SIGSEGV, &sa, &g_previous_sigsegv);
#endif
  });
}

int ClaimSlot(std::uintptr_t begin, std::uintptr_t end) {
  for (int i = 0; i < kGuardSlots; ++i) {
    std::uintptr_t expected = 0;
    // Claimed with `end` still 0, so the handler ignores the slot until it is complete.
    if (g_slots[i].begin.compare_exchange_strong(expected, begin, std::memory_order_acq_rel)) {
      g_slots[i].hit.store(0, std::memory_order_relaxed);
      g_slots[i].end.store(end, std::memory_order_release);
      return i;
    }
  }
  return -1;
}

void ReleaseSlot(int i) {
  g_slots[i].end.store(0, std::memory_order_release);
  g_slots[i].begin.store(0, std::memory_order_release);
}

}  // namespace

Result<MappedFile> MappedFile::Open(const std::filesystem::path& path) {
  struct stat st {};
  auto fd = OpenRegularFile(path, &st);
  if (!fd) return fd.take_error();
  return FromFd(std::move(*fd), st, path.string());
}

Result<MappedFile> MappedFile::FromFd(UniqueFd fd, const struct stat& st, std::string path) {
  MappedFile m;
  m.stat_ = st;
  m.fd_ = std::move(fd);
  m.path_ = std::move(path);
  m.size_ = static_cast<std::size_t>(m.stat_.st_size);
  if (m.size_ == 0) return m;
  InstallSigbusGuard();
  void* p = ::mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE, m.fd_.get(), 0);
  if (p == MAP_FAILED) return IoError(m.path_, "cannot map", errno);
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  m.slot_ = ClaimSlot(begin, begin + m.size_);
  if (m.slot_ >= 0) {
    m.data_ = static_cast<const unsigned char*>(p);
    return m;
  }
  // Every slot taken (hundreds of files mapped at once): read this one instead, unguarded maps
  // being the crash this class exists to prevent.
  ::munmap(p, m.size_);
  m.copy_ = std::make_unique<unsigned char[]>(m.size_);
  std::size_t got = 0;
  while (got < m.size_) {
    ssize_t n = ::pread(m.fd_.get(), m.copy_.get() + got, m.size_ - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return IoError(m.path_, "cannot read", errno);
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got != m.size_) {
    return MakeError(ErrorCode::kInput, "the file changed while it was read (it shrank)", m.path_);
  }
  m.data_ = m.copy_.get();
  return m;
}

bool MappedFile::Truncated() const {
  return slot_ >= 0 && g_slots[slot_].hit.load(std::memory_order_acquire) != 0;
}

Status MappedFile::CheckUnchanged() const {
  if (Truncated()) {
    return MakeError(ErrorCode::kInput,
                     "the file changed while it was read (it was truncated to less than its " +
                         std::to_string(size_) +
                         " bytes): read it again when nothing is writing to it",
                     path_);
  }
  if (fd_.get() < 0) return OkStatus();
  struct stat now {};
  if (::fstat(fd_.get(), &now) != 0) return IoError(path_, "cannot stat", errno);
  if (now.st_size != stat_.st_size || ModificationTimeNs(now) != ModificationTimeNs(stat_)) {
    return MakeError(ErrorCode::kInput,
                     "the file changed while it was read (size " + std::to_string(stat_.st_size) +
                         " -> " + std::to_string(now.st_size) +
                         "): read it again when nothing is writing to it",
                     path_);
  }
  return OkStatus();
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_),
      size_(other.size_),
      path_(std::move(other.path_)),
      fd_(std::move(other.fd_)),
      stat_(other.stat_),
      slot_(other.slot_),
      copy_(std::move(other.copy_)) {
  other.data_ = nullptr;
  other.size_ = 0;
  other.slot_ = -1;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    Reset();
    data_ = other.data_;
    size_ = other.size_;
    path_ = std::move(other.path_);
    fd_ = std::move(other.fd_);
    stat_ = other.stat_;
    slot_ = other.slot_;
    copy_ = std::move(other.copy_);
    other.data_ = nullptr;
    other.size_ = 0;
    other.slot_ = -1;
  }
  return *this;
}

MappedFile::~MappedFile() { Reset(); }

void MappedFile::Reset() {
  if (slot_ >= 0) {
    // Out of the table before the unmap, so the handler never patches an address reused since.
    ReleaseSlot(slot_);
    ::munmap(const_cast<unsigned char*>(data_), size_);
  }
  slot_ = -1;
  copy_.reset();
  fd_.Close();
  data_ = nullptr;
  size_ = 0;
}

}  // namespace dt
