#include "util/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

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

std::vector<std::string> BuildEnvironment(const ProcessOptions& options) {
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

}  // namespace

Result<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                 const ProcessOptions& options) {
  DT_CHECK(!argv.empty());
  std::optional<std::filesystem::path> exe = FindInPath(argv[0]);
  if (!exe) return MakeError(ErrorCode::kExternal, "program not found on PATH: " + argv[0]);

  int out_pipe[2];
  int err_pipe[2];
  if (::pipe(out_pipe) != 0) return MakeError(ErrorCode::kIo, "pipe: " + ErrnoMessage(errno));
  if (::pipe(err_pipe) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return MakeError(ErrorCode::kIo, "pipe: " + ErrnoMessage(errno));
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawn_file_actions_addclose(&actions, out_pipe[0]);
  posix_spawn_file_actions_addclose(&actions, err_pipe[0]);

  // A child that must change directory goes through /bin/sh: posix_spawn_file_actions_addchdir_np
  // is not available everywhere we build.
  std::vector<std::string> args = argv;
  std::string exe_path = exe->string();
  if (!options.cwd.empty()) {
    args = {"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", options.cwd.string(), exe_path};
    args.insert(args.end(), argv.begin() + 1, argv.end());
    exe_path = "/bin/sh";
  }
  std::vector<char*> c_args;
  for (auto& a : args) c_args.push_back(a.data());
  c_args.push_back(nullptr);
  std::vector<std::string> env = BuildEnvironment(options);
  std::vector<char*> c_env;
  for (auto& e : env) c_env.push_back(e.data());
  c_env.push_back(nullptr);

  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, exe_path.c_str(), &actions, nullptr, c_args.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return MakeError(ErrorCode::kExternal, "cannot start " + argv[0] + ": " + ErrnoMessage(rc));
  }

  ProcessResult result;
  auto deadline = std::chrono::steady_clock::now() + options.timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_count = 2;
  char buf[1 << 15];
  while (open_count > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    int n = ::poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_count;
      } else if (sinks[i]->size() < options.max_output_bytes) {
        sinks[i]->append(buf, std::min<std::size_t>(static_cast<std::size_t>(got),
                                                    options.max_output_bytes - sinks[i]->size()));
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  return result;
}

}  // namespace dt
