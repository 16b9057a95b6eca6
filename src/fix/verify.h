// `dualtrack fix --verify -- CMD`: the proof that a rewrite changed nothing. The original and the
// fixed project run the same command on this machine's CPU with the same seed (the original with
// CUDA redirected to the CPU, as `dualtrack run --redirect-cuda cpu` does), and their bundles are
// compared tensor by tensor and metric by metric with no tolerance at all.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "app/cli.h"
#include "compare/compare.h"
#include "util/result.h"

namespace dt::fix {

struct VerifyOptions {
  std::filesystem::path root;                // The project folder.
  std::map<std::string, std::string> fixed;  // Relative path -> fixed text.
  std::vector<std::string> command;          // Run in each copy, e.g. {"python", "train.py"}.
  int steps = 1;
  std::int64_t seed = 0;
  std::optional<double> timeout_s;
  std::optional<std::filesystem::path> keep;  // Leave the copies and bundles here.
};

struct VerifyResult {
  bool verified = false;  // Both runs finished and every tensor and metric is bitwise equal.
  std::string summary;    // One line, for the terminal.
  compare::CompareReport comparison;
};

// Errors: the copies or bundles could not be made, or a run could not start. A run that fails is
// a result (not verified), with the failing side's stderr tail in the summary.
Result<VerifyResult> Verify(const VerifyOptions& options, Io& io);

// The argument of a verify command that pins the device, as written (`--device cpu`,
// `--device=cuda:0`, `device=cpu` of a configurator, `--cpu`, `--no-cuda`); empty when none does.
// A pinned device never runs the device choice the fix rewrote, so `verified` then speaks only
// for the other edits.
std::string PinnedDevice(const std::vector<std::string>& command);

// The project at `root` under `dest`: folders holding a fixed file are made and the fixed files
// written; every other file and folder is a symbolic link to the original (data stays where it
// is). `.git` is left out.
Status MirrorProject(const std::filesystem::path& root, const std::filesystem::path& dest,
                     const std::map<std::string, std::string>& fixed);

}  // namespace dt::fix
