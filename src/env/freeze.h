// `dualtrack freeze`: the baseline record of steps 1 and 2 (code, environment, data slice,
// preprocessing, seeds) and `freeze --check`, which re-measures and lists what differs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "env/env.h"
#include "env/hash.h"
#include "env/host.h"

namespace dt::env {

struct CodeState {
  bool git = false;  // The project is inside a git work tree.
  std::optional<std::string> commit;
  std::optional<std::string> branch;
  std::vector<std::string> dirty;              // Paths git reports as modified or untracked.
  std::map<std::string, std::string> remotes;  // name -> URL, credentials stripped.
};

struct Package {
  std::string name;
  std::string version;
};

struct HashedPath {
  std::string path;
  std::string sha256;
  std::string git_blob;  // Only for preprocessing scripts.
  std::uint64_t size = 0;
};

struct Baseline {
  bool data_only = false;  // Made with --data-only: code, env and packages were not measured.
  std::string created;     // UTC, ISO 8601.
  std::string project;     // Absolute path of the project when frozen.
  CodeState code;
  EnvReport env;
  std::string packages_source;  // "pip", "importlib.metadata" or "none".
  std::vector<Package> packages;
  std::optional<std::map<std::string, std::string>> conda;  // name, prefix.
  std::vector<HashedPath> lock_files;
  bool in_container = false;
  std::vector<std::string> container_images;  // FROM lines of the project's Dockerfiles.
  std::map<std::string, std::optional<std::string>> compilers;  // cc, c++, nvcc.
  std::map<std::string, std::string> env_vars;                  // Allow-listed only.
  std::vector<std::string> data_roots;                          // As given to --data.
  std::vector<DataFile> data;
  std::vector<SkippedPath> data_skipped;
  std::string data_digest;
  std::vector<HashedPath> preprocess;
  std::vector<std::int64_t> seeds;
};

struct FreezeOptions {
  std::filesystem::path project = ".";
  EnvOptions env;
  std::vector<std::string> data;
  std::vector<std::string> preprocess;
  std::vector<std::int64_t> seeds;
  HashOptions hash;
  bool data_only =
      false;  // Skip the host, git and package probes (a data slice record in seconds).
};

// Measures everything. Errors (exit 2) only for the user's inputs: a data path or preprocessing
// script that is missing, dangling or unreadable, or a file that changes while it is hashed.
Result<Baseline> Freeze(CommandRunner& runner, HostFiles& files, const FreezeOptions& options);

// `dualtrack.baseline/1`.
nlohmann::json BaselineToJson(const Baseline& baseline);
Result<Baseline> BaselineFromJson(const nlohmann::json& j, const std::string& file);
Result<Baseline> LoadBaseline(const std::filesystem::path& path);

struct Difference {
  std::string what;  // "commit", "package torch", "driver", ...
  std::string before;
  std::string after;
};

struct BaselineDiff {
  std::vector<std::string> data_changed;  // Same path, other size or hash.
  std::vector<std::string> data_added;
  std::vector<std::string> data_missing;
  std::vector<Difference> preprocess;
  std::vector<Difference> code;
  std::vector<Difference> packages;
  std::vector<Difference>
      environment;  // Python, torch, driver, GPUs, compilers, env vars, lock files.
  bool DataDiffers() const {
    return !data_changed.empty() || !data_added.empty() || !data_missing.empty();
  }
  bool Empty() const;
};

BaselineDiff CompareBaselines(const Baseline& before, const Baseline& now);
std::string FormatDiffText(const BaselineDiff& diff);
nlohmann::json DiffToJson(const BaselineDiff& diff);

// "https://user:token@host/x" -> "https://host/x"; scp-like "git@host:x" is kept (no secret).
std::string StripCredentials(const std::string& url);

// Whether an environment variable may be recorded (CUDA_*, PYTORCH_*, NCCL_*, OMP_*, MKL_*,
// CUBLAS_*).
bool IsAllowListedEnvVar(const std::string& name);

}  // namespace dt::env
