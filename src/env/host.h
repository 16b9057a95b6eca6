// The seam through which `env` and `freeze` read the host: commands (dt::CommandRunner), a few
// system files and environment variables. Tests replace it with recorded outputs from other
// machines (macOS on Apple Silicon, NVIDIA hosts) so the diagnosis is testable anywhere.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "util/subprocess.h"

namespace dt::env {

// System files (/etc/os-release, /proc/meminfo, ...) and the process environment.
class HostFiles {
 public:
  virtual ~HostFiles() = default;
  // The contents of a small system file, or nullopt when it does not exist or cannot be read.
  virtual std::optional<std::string> Read(const std::string& path) = 0;
  virtual std::optional<std::string> GetEnv(const std::string& name) = 0;
  // Every environment variable; callers filter through an allow-list (the environment holds
  // secrets).
  virtual std::map<std::string, std::string> Environment() = 0;
};

// The real host.
class SystemHostFiles : public HostFiles {
 public:
  std::optional<std::string> Read(const std::string& path) override;
  std::optional<std::string> GetEnv(const std::string& name) override;
  std::map<std::string, std::string> Environment() override;
};

}  // namespace dt::env
