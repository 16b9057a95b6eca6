// The designated experiments of a project: what `audit` judges one by one (the method decides per
// experiment: inference may be Mac-ready while fine-tuning is not). Declared in pyproject.toml,
// named with --entry, or picked the way a user would pick them (never test files).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "scan/entries.h"
#include "util/result.h"

namespace dt::verdict {

struct Experiment {
  std::string name;                // "training", or the entry's stem.
  std::string entry;               // Relative to the project; empty: the whole project.
  std::optional<std::string> run;  // The minimal task: "train.py --device cpu --steps 2".
  std::string device;              // How to pick the device: "--device" or "--device mps".
  std::string source;              // declared | --entry | [tool.dualtrack] entry | picked | --run
  std::optional<std::int64_t> steps;  // The designated (formal) run's optimizer steps.
};

// `[tool.dualtrack]` of PATH/pyproject.toml as audit reads it.
struct ProjectConfig {
  std::vector<Experiment> experiments;  // [[tool.dualtrack.experiments]]
  std::vector<std::string> entry;       // entry = [...]
  std::optional<std::string> run;       // run = "..."
  // The cost prediction's inputs (docs/cost.md): the Macs the lab names, the designated run's
  // steps (an experiment's own `steps` wins), the longest run the lab accepts, and the share of a
  // Mac's memory a step may use.
  std::vector<std::string> macs;
  std::optional<std::int64_t> steps;
  std::optional<double> max_hours;
  std::optional<double> mac_memory_fraction;
};

// Reads PATH/pyproject.toml; an absent file is an empty config, a malformed one an error naming
// the file and line.
Result<ProjectConfig> ReadProjectConfig(const std::filesystem::path& project);

// Entry discovery lives in the scan (scan/entries.h), shared with its guessed entries.
using scan::IsTestFile;
using scan::PickEntries;

// The script a run line starts ("train.py" for "python3 train.py --steps 2"); empty when none.
std::string RunScript(const std::vector<std::string>& words);

// The experiments to judge: declared ones; else one per --entry; else [tool.dualtrack] entry; else
// the picked entries. The run (`--run`, else `[tool.dualtrack] run`) goes to the experiment whose
// entry it starts, or becomes an experiment of its own. Never empty: with nothing found, one
// experiment covers the whole project.
Result<std::vector<Experiment>> ResolveExperiments(const std::filesystem::path& project,
                                                   const ProjectConfig& config,
                                                   const std::vector<std::string>& entries,
                                                   const std::optional<std::string>& run);

// The command that runs the experiment on the Mac: its run (or `python ENTRY`) with the device set
// to mps ("--device cpu" becomes "--device mps"; a declared device option is added).
std::string MacCommand(const Experiment& e);

// Splits a command line the way a POSIX shell would for plain words, quotes and backslashes
// (no expansions); an unbalanced quote is an error.
Result<std::vector<std::string>> SplitCommandLine(const std::string& line);

}  // namespace dt::verdict
