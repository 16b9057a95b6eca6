// `dualtrack audit`: the one-step main job. Calls the other stages through their C++ APIs with
// typed options and results (scan::Scan, env::DiagnoseSystem, bundle::RunTrack,
// coverage::Predict) and decides once per designated experiment. A stage that fails leaves its
// piece of evidence missing with the reason; audit carries on.
#pragma once

#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "verdict/experiments.h"
#include "verdict/verdict.h"

namespace dt::verdict {

struct AuditOptions {
  std::filesystem::path project;
  std::vector<std::string> entries;  // --entry FILE (repeatable): one experiment each.
  std::string torch;                 // --torch X, for the coverage prediction.
  std::optional<std::string> run;    // --run "train.py --device cpu --steps 2"
  std::string python = "python3";
  bool remote_data_confirmed = false;
  std::vector<std::string> ignore;   // Codes or prefixes the scan drops.
  std::vector<std::string> exclude;  // Globs the scan leaves out.
  std::vector<std::string> select;   // Codes or prefixes the verdict keeps (all when empty).
  std::optional<double> timeout_s;   // --timeout for each run.
  std::filesystem::path keep_run;    // --keep-run DIR: the run bundles are kept there.
  // A run declared in the project's own pyproject.toml is the project's code: it runs only with
  // --trust-project-run (a run named by --run is the user's own choice).
  bool trust_project_run = false;
  bool force = false;  // --force: --keep-run may replace a folder that is not a bundle.
};

struct ExperimentVerdict {
  Experiment experiment;
  Report report;
};

// A designated run that produced no evidence about the task (could not start, interrupted, timed
// out), with what the user needs to see: the reason and the script's stderr tail.
struct RunProblem {
  std::string experiment;
  bundle::OutcomeKind outcome = bundle::OutcomeKind::kCouldNotStart;  // Not task evidence.
  std::string reason;
  std::string missing_package;
  std::string stderr_tail;
  std::string bundle;  // Where the bundle was kept (--keep-run), else empty.
};

struct AuditResult {
  std::vector<ExperimentVerdict> experiments;
  std::vector<RunProblem> run_problems;
  bool interrupted = false;         // Ctrl-C during a run: no verdict may be written.
  std::vector<std::string> inputs;  // Every file the scans read: no report may replace one.
  // The runs dualtrack started (experiment: command), and the declared ones it left alone.
  std::vector<std::string> ran, not_run;
};

// Codes "DT1,DT203" and repeated options, split and trimmed.
std::vector<std::string> SplitCodes(const std::vector<std::string>& values);

// Whether a finding's code is selected: no selection keeps all; else a code or prefix matches.
bool Selected(const std::string& code, const std::vector<std::string>& select);

// Runs the stages and decides per experiment. `log` gets one line per stage and experiment.
Result<AuditResult> RunAudit(const AuditOptions& options, std::ostream& log);

}  // namespace dt::verdict
