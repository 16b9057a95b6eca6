// Running external programs: the one spawner (posix_spawn + poll: Linux and macOS), used both to
// capture a short command's output (RunProcess) and to run the user's training under `dualtrack
// run` (Spawn: tee, signal forwarding, process group, resource usage).
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/result.h"

namespace dt {

struct ProcessOptions {
  std::chrono::milliseconds timeout{30000};
  std::filesystem::path cwd;  // Empty: inherit.
  std::vector<std::pair<std::string, std::string>>
      set_env;  // Added to / replacing the environment.
  std::vector<std::string> unset_env;
  std::size_t max_output_bytes = 16u << 20;  // Per stream; the rest is dropped.
};

struct ProcessResult {
  int exit_code = -1;   // Valid when exited normally.
  int term_signal = 0;  // Non-zero when killed by a signal.
  bool timed_out = false;
  std::string out;
  std::string err;

  bool Succeeded() const { return !timed_out && term_signal == 0 && exit_code == 0; }
};

// One child and what to do while it runs.
struct SpawnOptions {
  std::vector<std::string> argv;
  std::filesystem::path program;  // Empty: argv[0], looked up on PATH.
  std::filesystem::path cwd;      // Empty: inherit.
  // The child's environment is ours with these edits.
  std::vector<std::pair<std::string, std::string>> set_env;
  std::vector<std::string> unset_env;
  bool null_stdin = true;          // Else the child reads our stdin.
  bool own_process_group = false;  // A Ctrl-C at the terminal then reaches only us.
  // SIGINT / SIGTERM / SIGHUP sent to us go to the child while it runs; the third is a SIGKILL.
  bool forward_signals = false;
  std::optional<std::chrono::milliseconds> timeout;
  // At the timeout: SIGKILL when zero; else SIGTERM (a tracer flushes on it), SIGKILL this later.
  std::chrono::milliseconds kill_grace{0};
  // How long output is still read after the child exits: a grandchild may hold the pipes open.
  std::chrono::milliseconds linger{2000};
  // Each chunk of output as it comes: stream 1 is stdout, 2 stderr.
  std::function<void(int stream, std::string_view chunk)> on_output;
  std::function<void(pid_t)> on_started;  // Once the child exists.
  // The child is killed (SIGKILL) when we are, even by SIGKILL: on Linux by a parent-death signal
  // set in the child before it runs the program (the calling thread must outlive the child, as
  // Spawn's own wait ensures); elsewhere nothing here (dualtrack's Python bootstrap watches).
  bool die_with_parent = false;
};

struct SpawnResult {
  int wait_status = 0;  // As wait4 reports it.
  rusage usage{};       // The child's, from wait4 (ru_maxrss: KiB on Linux, bytes on macOS).
  bool timed_out = false;
  int forwarded_signal = 0;  // The last signal passed on to the child; 0 for none.
  double wall_s = 0;
};

// Starts the child, hands its output to on_output, enforces the timeout, forwards signals, and
// waits for it. An error only when it could not be started.
Result<SpawnResult> Spawn(const SpawnOptions& options);

// `handler` for SIGINT, SIGTERM and SIGHUP for the life of the object; the previous handlers come
// back on scope exit.
class ScopedSignalHandlers {
 public:
  explicit ScopedSignalHandlers(void (*handler)(int));
  ~ScopedSignalHandlers();
  ScopedSignalHandlers(const ScopedSignalHandlers&) = delete;
  ScopedSignalHandlers& operator=(const ScopedSignalHandlers&) = delete;

 private:
  struct sigaction old_[3]{};  // SIGINT, SIGTERM, SIGHUP.
};

// Runs argv[0] (looked up on PATH) with no stdin. An error only when it could not be started;
// a non-zero exit is a ProcessResult, for the caller to judge.
Result<ProcessResult> RunProcess(const std::vector<std::string>& argv,
                                 const ProcessOptions& options = {});

// The absolute path of an executable found on PATH, if any.
std::optional<std::filesystem::path> FindInPath(const std::string& name);

// The seam through which code that asks the host questions runs its commands, so tests can replay
// recorded outputs from other machines (macOS, NVIDIA hosts) without having them.
class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  virtual Result<ProcessResult> Run(const std::vector<std::string>& argv,
                                    const ProcessOptions& options) = 0;
  virtual std::optional<std::filesystem::path> Which(const std::string& name) = 0;
};

class SystemCommandRunner : public CommandRunner {
 public:
  Result<ProcessResult> Run(const std::vector<std::string>& argv,
                            const ProcessOptions& options) override {
    return RunProcess(argv, options);
  }
  std::optional<std::filesystem::path> Which(const std::string& name) override {
    return FindInPath(name);
  }
};

}  // namespace dt
