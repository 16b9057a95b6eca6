#include "util/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__linux__)
#include <pthread.h>
#include <sys/prctl.h>
#endif

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>

#include "util/fs.h"
#include "util/strings.h"

extern char** environ;

namespace dt {

std::optional<std::filesystem::path> FindInPath(const std::string& name) {
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) == 0) return std::filesystem::path(name);
    return std::nullopt;
  }
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  for (std::string_view dir : Split(path, ':')) {
    if (dir.empty()) dir = ".";
    std::filesystem::path candidate = std::filesystem::path(dir) / name;
    std::error_code ec;
    if (::access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate, ec)) {
      return candidate;
    }
  }
  return std::nullopt;
}

namespace {

std::vector<std::string> BuildEnvironment(const SpawnOptions& options) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view kv(*e);
    std::size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  for (const auto& name : options.unset_env) env.erase(name);
  for (const auto& [k, v] : options.set_env) env[k] = v;
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// A pipe whose ends close with it. Both ends are close-on-exec: a child gets its end only as the
// descriptor a file action duplicates it to (which clears the flag), so a child spawned by another
// thread at the same time never inherits it and holds the pipe open. Neither end is 0, 1 or 2
// (where the caller's own streams were closed), which a duplication onto itself would keep
// close-on-exec.
struct Pipe {
  UniqueFd read, write;
};
Result<Pipe> MakePipe() {
  int fds[2];
  if (::pipe(fds) != 0) return MakeError(ErrorCode::kIo, "pipe: " + ErrnoMessage(errno));
  Pipe p{UniqueFd(fds[0]), UniqueFd(fds[1])};
  for (UniqueFd* end : {&p.read, &p.write}) {
    if (end->get() <= 2) {
      int moved = ::fcntl(end->get(), F_DUPFD_CLOEXEC, 3);
      if (moved < 0) return MakeError(ErrorCode::kIo, "fcntl: " + ErrnoMessage(errno));
      *end = UniqueFd(moved);
    } else {
      ::fcntl(end->get(), F_SETFD, FD_CLOEXEC);
    }
  }
  return p;
}

// Self-pipe written by the signal handler, so the loop forwards signals outside the handler.
int g_signal_pipe_write = -1;

extern "C" void OnSignal(int sig) {
  int saved = errno;
  auto b = static_cast<unsigned char>(sig);
  if (g_signal_pipe_write >= 0) {
    [[maybe_unused]] ssize_t n = ::write(g_signal_pipe_write, &b, 1);
  }
  errno = saved;
}

// While the child runs: the signals go down the pipe, for the loop to forward them.
class SignalForwarding {
 public:
  explicit SignalForwarding(int write_fd) : handlers_((g_signal_pipe_write = write_fd, OnSignal)) {}
  ~SignalForwarding() { g_signal_pipe_write = -1; }
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;

 private:
  ScopedSignalHandlers handlers_;
};

// The timeout: the first signal when the time is up, SIGKILL after the grace if still there.
class TimeoutKiller {
 public:
  TimeoutKiller(const SpawnOptions& o, std::chrono::steady_clock::time_point start)
      : timeout_(o.timeout), grace_(o.kill_grace), start_(start) {}
  void Check(pid_t pid) {
    if (!timeout_) return;
    const auto elapsed = std::chrono::steady_clock::now() - start_;
    if (!fired_ && elapsed > *timeout_) {
      fired_ = true;
      killed_ = grace_.count() == 0;
      ::kill(pid, killed_ ? SIGKILL : SIGTERM);
    } else if (fired_ && !killed_ && elapsed > *timeout_ + grace_) {
      killed_ = true;
      ::kill(pid, SIGKILL);
    }
  }
  bool fired() const { return fired_; }

 private:
  std::optional<std::chrono::milliseconds> timeout_;
  std::chrono::milliseconds grace_;
  std::chrono::steady_clock::time_point start_;
  bool fired_ = false;
  bool killed_ = false;
};

// posix_spawn's file actions and attributes, released with the object.
class SpawnSetup {
 public:
  SpawnSetup(const SpawnOptions& o, const Pipe& out, const Pipe& err) {
    posix_spawn_file_actions_init(&actions_);
    if (o.null_stdin) posix_spawn_file_actions_addopen(&actions_, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions_, out.write.get(), 1);
    posix_spawn_file_actions_adddup2(&actions_, err.write.get(), 2);
    posix_spawnattr_init(&attr_);
    // The child starts with default dispositions even where ours are ignored or caught.
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaddset(&defaults, s);
    posix_spawnattr_setsigdefault(&attr_, &defaults);
    short flags = POSIX_SPAWN_SETSIGDEF;
    if (o.own_process_group) {
      posix_spawnattr_setpgroup(&attr_, 0);
      flags |= POSIX_SPAWN_SETPGROUP;
    }
    posix_spawnattr_setflags(&attr_, flags);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions_);
    posix_spawnattr_destroy(&attr_);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
  const posix_spawn_file_actions_t* actions() const { return &actions_; }
  const posix_spawnattr_t* attr() const { return &attr_; }

 private:
  posix_spawn_file_actions_t actions_;
  posix_spawnattr_t attr_;
};

#if defined(__linux__)
// posix_spawn cannot give the child a parent-death signal, so this child is forked and set up by
// hand as SpawnSetup sets one up (stdin, stdout and stderr, default dispositions, its own process
// group), then asks for SIGKILL at our death before it runs the program. Between fork and exec the
// child makes only async-signal-safe calls; an exec failure comes back through a close-on-exec
// pipe. Returns 0, or the errno of what failed, as posix_spawn does.
int ForkDyingWithParent(const SpawnOptions& o, const char* exe, char* const argv[],
                        char* const envp[], const Pipe& out, const Pipe& err, pid_t* pid_out) {
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return errno;
  // No signal handler of ours may run in the child before exec (it would write to our signal
  // pipe): all are blocked across the fork, and the child restores the mask once they are default.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::sigaction(s, &dfl, nullptr);
    int e = 0;
    if (o.own_process_group && ::setpgid(0, 0) != 0) e = errno;
    if (e == 0 && ::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) e = errno;
    // We died before the request took effect: the child was already handed to another parent.
    if (e == 0 && ::getppid() != parent) ::_exit(127);
    if (e == 0 && o.null_stdin) {
      int null_fd = ::open("/dev/null", O_RDONLY);
      if (null_fd < 0 || ::dup2(null_fd, 0) < 0) e = errno;
      if (null_fd > 0) ::close(null_fd);
    }
    if (e == 0 && (::dup2(out.write.get(), 1) < 0 || ::dup2(err.write.get(), 2) < 0)) e = errno;
    if (e == 0) {
      ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
      ::execve(exe, argv, envp);
      e = errno;
    }
    [[maybe_unused]] ssize_t n = ::write(report[1], &e, sizeof e);
    ::_exit(127);
  }
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ::close(report[1]);
  if (pid < 0) {
    ::close(report[0]);
    return fork_errno;
  }
  // Also here, so the group exists whichever of the two runs first (EACCES once it has exec'd).
  if (o.own_process_group) ::setpgid(pid, pid);
  int child_errno = 0;
  ssize_t got;
  while ((got = ::read(report[0], &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
  }
  ::close(report[0]);
  if (got == static_cast<ssize_t>(sizeof child_errno)) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return child_errno;
  }
  *pid_out = pid;
  return 0;
}
#endif

// Reads the child's output and signals until it has exited and its pipes are closed (or the
// linger is over); forwards signals and enforces the timeout on the way.
void Supervise(const SpawnOptions& o, pid_t pid, UniqueFd& out_r, UniqueFd& err_r,
               const UniqueFd& sig_r, std::chrono::steady_clock::time_point t0,
               SpawnResult& result) {
  bool exited = false;
  std::chrono::steady_clock::time_point exited_at;
  int signals_seen = 0;
  TimeoutKiller timeout(o, t0);
  pollfd fds[3] = {{out_r.get(), POLLIN, 0}, {err_r.get(), POLLIN, 0}, {sig_r.get(), POLLIN, 0}};
  const nfds_t nfds = sig_r.get() >= 0 ? 3 : 2;
  char buf[1 << 15];
  while (true) {
    if (!exited && ::wait4(pid, &result.wait_status, WNOHANG, &result.usage) == pid) {
      exited = true;
      exited_at = std::chrono::steady_clock::now();
    }
    if (exited && fds[0].fd < 0 && fds[1].fd < 0) break;
    if (exited && std::chrono::steady_clock::now() - exited_at > o.linger) break;
    if (!exited) timeout.Check(pid);
    int n = ::poll(fds, nfds, 100);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        fds[i].fd = -1;
        continue;
      }
      if (o.on_output) o.on_output(i + 1, std::string_view(buf, static_cast<std::size_t>(got)));
    }
    if (nfds == 3 && (fds[2].revents & POLLIN)) {
      unsigned char sigs[16];
      ssize_t got = ::read(sig_r.get(), sigs, sizeof sigs);
      for (ssize_t k = 0; k < got && !exited; ++k) {
        ++signals_seen;
        result.forwarded_signal = sigs[k];
        // The third signal means the user really wants out: the child gets SIGKILL.
        ::kill(pid, signals_seen >= 3 ? SIGKILL : sigs[k]);
      }
    }
  }
  out_r.Close();
  err_r.Close();
  if (!exited) {
    while (::wait4(pid, &result.wait_status, 0, &result.usage) < 0 && errno == EINTR) {
    }
  }
  result.timed_out = timeout.fired();
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

ScopedSignalHandlers::ScopedSignalHandlers(void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old_[0]);
  ::sigaction(SIGTERM, &sa, &old_[1]);
  ::sigaction(SIGHUP, &sa, &old_[2]);
}

ScopedSignalHandlers::~ScopedSignalHandlers() {
  ::sigaction(SIGINT, &old_[0], nullptr);
  ::sigaction(SIGTERM, &old_[1], nullptr);
  ::sigaction(SIGHUP, &old_[2], nullptr);
}

Result<SpawnResult> Spawn(const SpawnOptions& options) {
  DT_CHECK(!options.argv.empty());
  std::string exe = options.program.string();
  if (exe.empty()) {
    std::optional<std::filesystem::path> found = FindInPath(options.argv[0]);
    if (!found)
      return MakeError(ErrorCode::kExternal, "program not found on PATH: " + options.argv[0]);
    exe = found->string();
  }
  auto out = MakePipe();
  if (!out) return out.take_error();
  auto err = MakePipe();
  if (!err) return err.take_error();
  UniqueFd sig_r, sig_w;
  if (options.forward_signals) {
    auto sig = MakePipe();
    if (!sig) return sig.take_error();
    sig_r = std::move(sig->read);
    sig_w = std::move(sig->write);
    ::fcntl(sig_w.get(), F_SETFL, O_NONBLOCK);
  }
  // A child that must change directory goes through /bin/sh: posix_spawn_file_actions_addchdir_np
  // is not available everywhere we build.
  std::vector<std::string> args = options.argv;
  if (!options.cwd.empty()) {
    args = {"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", options.cwd.string(), exe};
    args.insert(args.end(), options.argv.begin() + 1, options.argv.end());
    exe = "/bin/sh";
  }
  std::vector<char*> c_args = CStrings(args);
  std::vector<std::string> env = BuildEnvironment(options);
  std::vector<char*> c_env = CStrings(env);

  std::optional<SignalForwarding> forwarding;
  if (options.forward_signals) forwarding.emplace(sig_w.get());
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = 0;
  int rc;
#if defined(__linux__)
  if (options.die_with_parent) {
    rc = ForkDyingWithParent(options, exe.c_str(), c_args.data(), c_env.data(), *out, *err, &pid);
  } else
#endif
  {
    SpawnSetup setup(options, *out, *err);
    rc = ::posix_spawn(&pid, exe.c_str(), setup.actions(), setup.attr(), c_args.data(),
                       c_env.data());
  }
  out->write.Close();
  err->write.Close();
  if (rc != 0)
    return MakeError(ErrorCode::kExternal,
                     "cannot start " + options.argv[0] + ": " + ErrnoMessage(rc));
  if (options.on_started) options.on_started(pid);
  SpawnResult result;
  Supervise(options, pid, out->read, err->read, sig_r, t0, result);
  return result;
}

Result<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                 const ProcessOptions& options) {
  SpawnOptions spawn;
  spawn.argv = argv;
  spawn.cwd = options.cwd;
  spawn.set_env = options.set_env;
  spawn.unset_env = options.unset_env;
  spawn.timeout = options.timeout;
  ProcessResult result;
  std::string* sinks[2] = {&result.out, &result.err};
  spawn.on_output = [&](int stream, std::string_view chunk) {
    std::string& sink = *sinks[stream - 1];
    if (sink.size() < options.max_output_bytes)
      sink.append(chunk.substr(0, options.max_output_bytes - sink.size()));
  };
  auto spawned = Spawn(spawn);
  if (!spawned) return spawned.take_error();
  result.timed_out = spawned->timed_out;
  if (WIFEXITED(spawned->wait_status)) result.exit_code = WEXITSTATUS(spawned->wait_status);
  if (WIFSIGNALED(spawned->wait_status)) result.term_signal = WTERMSIG(spawned->wait_status);
  return result;
}

}  // namespace dt
