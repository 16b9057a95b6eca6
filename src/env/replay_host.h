// Test code: a recorded host (tests/env/hosts/*) that answers the diagnosis' questions instead of
// this machine. Linked into the test binary only (replay_host_test.cc), not into the product.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "env/host.h"

namespace dt::env {

// Replays recorded command outputs and files. Commands are matched on their argv joined by spaces;
// a key ending in '*' matches any argv that starts with the rest (for the Python probe, whose
// script is long). An unknown command behaves like a program that is not installed.
class ReplayHost : public CommandRunner, public HostFiles {
 public:
  void AddCommand(const std::string& key, ProcessResult result) {
    commands_[key] = std::move(result);
  }
  void AddCommand(const std::string& key, std::string out, int exit_code = 0, std::string err = {});
  void AddProgram(const std::string& name, std::filesystem::path path) {
    programs_[name] = std::move(path);
  }
  void AddFile(const std::string& path, std::string contents) {
    files_[path] = std::move(contents);
  }
  void SetEnv(const std::string& name, std::string value) { env_[name] = std::move(value); }

  Result<ProcessResult> Run(const std::vector<std::string>& argv,
                            const ProcessOptions& options) override;
  std::optional<std::filesystem::path> Which(const std::string& name) override;
  std::optional<std::string> Read(const std::string& path) override;
  std::optional<std::string> GetEnv(const std::string& name) override;
  std::map<std::string, std::string> Environment() override { return env_; }

  // Every argv that Run was asked for, joined by spaces (tests check what was asked).
  const std::vector<std::string>& calls() const { return calls_; }

 private:
  std::map<std::string, ProcessResult> commands_;
  std::map<std::string, std::filesystem::path> programs_;
  std::map<std::string, std::string> files_;
  std::map<std::string, std::string> env_;
  std::vector<std::string> calls_;
};

// Loads a recorded host: `dir`/host.json lists programs on PATH, commands with their output (inline
// or in a file beside it), system files and environment variables; see tests/env/hosts/README.md.
Result<std::unique_ptr<ReplayHost>> LoadReplayHost(const std::filesystem::path& dir);

}  // namespace dt::env
