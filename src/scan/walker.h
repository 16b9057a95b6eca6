// Walks the scanned paths: classifies files by name, honours .gitignore (and .git/info/exclude)
// and excludes, and notes (instead of failing on) symlink loops, broken links, links that leave the
// project, special files and unreadable directories.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "scan/scan.h"

namespace dt::scan {

enum class FileKind : std::uint8_t {
  kPython,
  kSetupPy,
  kNotebook,
  kCpp,
  kCMake,
  kRequirements,
  kConda,
  kPyproject,
  kSetupCfg,
  kDocker,
  kShell,
  kCompose,     // docker-compose.yml, compose.yaml.
  kConfigYaml,  // Any other YAML that configures a run (not CI, lint or docs configuration).
  kGitmodules,  // .gitmodules.
};

// The kind of a file from its name, or nullopt when scan has no rules for it.
std::optional<FileKind> ClassifyFile(std::string_view rel_path);

struct WalkItem {
  std::string abs;  // Path to open.
  std::string rel;  // Relative to the root, '/'-separated.
  FileKind kind = FileKind::kPython;
  std::uint64_t size = 0;  // kUnknownSize when the walk did not stat the file.
};

// readdir's d_type already tells a plain file, so the walk (single-threaded) skips its lstat and
// the reader, on the worker threads, takes the size from fstat and applies --max-file-size.
inline constexpr std::uint64_t kUnknownSize = ~std::uint64_t{0};

struct WalkOptions {
  std::vector<std::string> exclude;  // Globs on relative paths.
  bool honour_gitignore = true;
  // Files named on the command line (the entries), relative to the root: read even where a
  // .gitignore matches them, as git reads a tracked file (`*.ipynb` ignored, the demo notebook
  // committed all the same).
  std::vector<std::string> named;
  std::uint64_t max_file_size = 0;
  // The project's folder, symlinks resolved: a symlink found in the walk whose target resolves
  // outside it (and outside the walked path) is listed as skipped and never opened, so a hostile
  // repository cannot make the scan echo /etc/passwd or ~/.ssh in its snippets. Empty: only the
  // walked path counts as inside.
  std::string root_real;
};

// Hands each file under `path` (a directory or a file) to `on_item` as soon as it is found, so
// the caller can scan while the walk goes on; `rel_prefix` is the path of `path` relative to the
// root ("" for the root itself). Within a directory, files come in name order.
void Walk(const std::filesystem::path& path, const std::string& rel_prefix,
          const WalkOptions& options, const std::function<void(WalkItem&&)>& on_item,
          std::vector<Skipped>& skipped);

}  // namespace dt::scan
