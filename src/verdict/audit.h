// `dualtrack audit`: the one-step main job. Runs the other stages in-process through dt::Dispatch
// (the same code path as the command line), collects their JSON, and decides. A stage that is not
// available, or fails, leaves its piece of evidence missing with the reason; audit carries on.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "app/cli.h"
#include "verdict/verdict.h"

namespace dt::verdict {

struct AuditOptions {
  std::filesystem::path project;
  std::string entry;                     // --entry FILE, passed to scan.
  std::string torch;                     // --torch X, passed to coverage.
  std::optional<std::string> run;        // --run "train.py --device cpu --steps 2"
  std::string python = "python3";
  bool remote_data_confirmed = false;
};

// What one in-process call of another stage answered.
struct StageCall {
  int exit_code = 0;
  std::string out;
  std::string err;
};

// Runs `dualtrack <args>` in-process with string streams.
StageCall CallStage(const std::vector<std::string>& args);

// The first line of a stage's error output, without the "dualtrack CMD: error: " prefix.
std::string StageMessage(const StageCall& call);

// Splits a command line the way a POSIX shell would for plain words, quotes and backslashes
// (no expansions); an unbalanced quote is an error.
Result<std::vector<std::string>> SplitCommandLine(const std::string& line);

// `[tool.dualtrack] run = "..."` of PATH/pyproject.toml; nullopt when absent.
Result<std::optional<std::string>> ReadDeclaredRun(const std::filesystem::path& project);

// Collects the evidence (scan, env, CPU run, coverage) for `options.project`. `log` gets one line
// per stage saying what it did.
Result<Evidence> CollectAuditEvidence(const AuditOptions& options, std::ostream& log);

}  // namespace dt::verdict
