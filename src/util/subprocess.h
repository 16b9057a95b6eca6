// Running external programs with captured output and a timeout (posix_spawn + poll: Linux and
// macOS).
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
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
