// The evidence the verdict is built from: what the other stages wrote (docs/json-contracts.md),
// loaded into plain structs. Every piece is optional; a missing piece is reported as missing, never
// guessed. Unknown extra fields are ignored so the other stages can grow their documents freely.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bundle/bundle.h"
#include "compare/compare.h"
#include "cost/cost.h"
#include "coverage/coverage.h"
#include "scan/scan.h"
#include "util/result.h"

namespace dt::verdict {

// Predicted (from the scan, the tables) or measured (on the device): coverage's pair of words.
using coverage::EvidenceLevel;

struct Location {
  Location() = default;
  // NOLINTNEXTLINE(google-explicit-constructor): `{file, line}` is how callers spell one.
  Location(std::string f, std::int64_t l = 0, std::optional<std::int64_t> c = std::nullopt)
      : file(std::move(f)), line(l), cell(c) {}
  std::string file;
  std::int64_t line = 0;             // 0 when unknown; within the cell for notebooks.
  std::optional<std::int64_t> cell;  // Notebooks: the cell the line is in.
};

// "train.py:42", "demo.ipynb:cell 3:2", "setup.py"; empty without a file.
std::string Where(const Location& l);

// What `dualtrack fix --apply` does with a finding: rewrites it (safe), rewrites it only with
// --unsafe-fixes (results may change), leaves it to an edit by hand (none), or leaves it because
// nothing needs changing (an import of names whose uses it rewrites).
enum class FixKind { kNone, kSafe, kUnsafe, kNotNeeded };

// One `dualtrack.scan/1` finding.
struct Finding {
  std::string code;
  std::optional<scan::FindingClass> cls;   // None when the document does not say.
  std::optional<scan::Severity> severity;  // None when the document does not say.
  std::string file;
  std::int64_t line = 0;
  std::optional<std::int64_t> cell;  // Notebooks: the code cell; `line` is within it.
  std::string message;
  std::string snippet;
  std::optional<bool> guarded;
  std::optional<bool> reachable;  // nullopt for files that are not Python.
  std::string replacement;
  bool mps_only = false;        // Runs on the CPU, fails only on MPS (float64, no MPS kernel).
  bool placement = false;       // Puts work on a device (`.cuda()`, `device="cuda"`).
  bool option_default = false;  // The default of a setting the user overrides (`--device`).
  bool in_import = false;       // In an import statement (scan::Finding::in_import).
  std::optional<std::int64_t> reached_by;  // Of several entries, how many reach the file.
  // The scan's `fix` (the rule's); audit refines it with the fixer's own plan, so a construct the
  // fixer leaves (`.cuda(i, True)`) is an edit by hand.
  FixKind fix = FixKind::kNone;
};

// The scan's `path` record (named entries only): what the experiment's path says about the Mac's
// share of the work.
struct ScanPath {
  std::optional<Location> cuda_choice;  // A CUDA placement behind a check.
  bool mentions_mps = false;
  bool framework_device =
      false;  // accelerate, Lightning, the transformers Trainer place the model.
  std::optional<Location> model;  // The first convolution or attention layer.
  std::string model_api;
  std::optional<Location> training;  // The entry's .backward( (line 0: a training script by name).
};

struct ScanEvidence {
  std::string source;  // Where it was read from, for messages.
  std::string root;
  std::vector<Finding> findings;
  std::int64_t files_scanned = 0;
  std::vector<std::string> entries;  // The entry scripts reachability was computed from.
  std::optional<ScanPath> path;
};

struct Gpu {
  std::string vendor;
  std::string name;
  std::string driver;
  std::optional<std::int64_t> memory_bytes;
};

// The parts of `dualtrack.env/1` the report shows and the rules read.
struct EnvEvidence {
  std::string source;
  std::string os;
  std::string os_version;
  std::string arch;
  std::string cpu;
  std::optional<std::int64_t> memory_bytes;
  std::vector<Gpu> gpus;
  std::string nvcc_version;
  std::string python_version;
  std::optional<bool> torch_installed;
  std::string torch_version;
  std::string torch_cuda_version;
  std::optional<bool> cuda_available;
  std::optional<bool> mps_built;
  std::optional<bool> mps_available;
  std::optional<std::string> mps_fallback;  // PYTORCH_ENABLE_MPS_FALLBACK; nullopt when unset.
  struct Conclusion {
    std::string id, level, text;
  };
  std::vector<Conclusion> conclusions;

  bool IsMac() const { return os == "macOS" || os == "Darwin"; }
};

struct Baseline {
  std::string source;
  std::string created;
  std::string commit;
  std::vector<std::string> dirty;
  std::string data_digest;
  std::vector<std::int64_t> seeds;
  std::size_t packages = 0;
  std::size_t data_files = 0;
  std::optional<EnvEvidence> env;
};

// One row of a bundle's ops.jsonl.
struct OpRow {
  std::string op;
  std::string overload;
  std::string device;
  std::vector<std::string> dtypes;
  std::int64_t count = 0;
  Location location;
  bundle::OpStatus status = bundle::OpStatus::kOk;
  std::string error;
};

struct Metric {
  std::int64_t step = 0;
  std::string name;
  double value = 0;
};

// A run bundle of one track: manifest.json, ops.jsonl and metrics.jsonl.
struct Track {
  std::string name;  // The user's NAME in --track NAME=BUNDLE.
  std::string dir;
  std::string label;  // manifest "track": what the user called it (cpu, cuda, mps, ...).
  // The device it really ran on, from its traced operators and its environment, never from the
  // label: an `mps`-labelled run on a host without MPS ran on the CPU (DeviceOf()).
  std::string device;
  std::string device_note;            // Why the device differs from the label, when it does.
  std::optional<bool> mps_available;  // The tracer's torch.backends.mps.is_available().
  // What the run is evidence of (bundle/outcome.cc); none for bundles written before it was
  // recorded.
  std::optional<bundle::OutcomeKind> outcome;
  std::string outcome_reason;
  std::string missing_package;
  std::string stderr_tail;
  std::string data_source;  // "hashed" (run --data) or "baseline" (run --baseline).
  std::vector<std::string> command;
  std::optional<std::string> git_commit;
  std::optional<std::string> data_digest;  // manifest "data_digest" or "data.digest" if written.
  std::optional<std::int64_t> seed;
  bundle::RunStatus status = bundle::RunStatus::kIncomplete;
  std::optional<std::int64_t> exit_code;
  struct Exception {
    std::string type, message;
    Location location;
  };
  std::optional<Exception> exception;
  std::vector<double> step_wall_s;
  std::optional<std::int64_t> peak_rss_bytes;
  std::optional<std::int64_t> peak_device_bytes;
  std::optional<std::string> mps_fallback;  // env_vars.PYTORCH_ENABLE_MPS_FALLBACK
  struct Redirect {
    std::string what, to;
    Location location;
    std::int64_t count = 0;
  };
  std::vector<Redirect> redirects;
  std::vector<Location> float64;
  std::optional<EnvEvidence> env;
  bool has_ops = false;  // ops.jsonl was present.
  std::vector<OpRow> ops;
  std::vector<Metric> metrics;
  // The traced step's cost (cost.jsonl) and the device's measured peaks, when recorded.
  std::optional<cost::StepCost> cost;
  std::optional<cost::DeviceProfile> measured_profile;

  bool Finished() const { return status == bundle::RunStatus::kOk; }
  // A run that could not start, or was stopped from outside, says nothing about the task: its
  // evidence is missing (the verdict never reads it as a CUDA dependency).
  bool IsEvidence() const { return !outcome || bundle::IsTaskEvidence(*outcome); }
  // The user-code files whose operators the run executed (ops.jsonl locations).
  bool Executed(const std::string& file) const;
  // Whether this track ran on the Mac's GPU backend.
  bool IsMps() const { return device == "mps"; }
  bool IsCuda() const { return device == "cuda"; }
};

struct CoverageOp {
  std::string op;
  std::string overload;
  coverage::OpClass cls = coverage::OpClass::kAbsent;  // kAbsent: "unknown".
  std::vector<std::string> dtypes;
  std::vector<std::string> dtype_issues;
  std::int64_t count = 0;
  Location location;
  std::optional<std::string> native_since;
  std::string mps_op;  // The kernel MPS runs instead of a traced backend variant; empty if none.
};

struct CoverageEvidence {
  std::string source;
  std::string torch;
  EvidenceLevel evidence = EvidenceLevel::kPredicted;
  std::vector<CoverageOp> ops;
  std::optional<std::string> upgrade_version;
  std::int64_t upgrade_removes = 0;
};

struct TensorComparison {
  std::string name;
  std::optional<compare::Outcome> status;  // None when the document does not say.
  std::string dtype_a, dtype_b;
  std::vector<std::int64_t> shape;
  std::optional<double> atol, rtol, max_abs, mean_abs, max_rel, frac_outside, cosine;
  std::vector<double> hist_log10_edges;
  std::vector<std::int64_t> hist_counts;
};

struct MetricComparison {
  std::string name;
  std::optional<compare::Outcome> status;
  struct Step {
    std::int64_t step = 0;
    std::optional<double> a, b, diff;
  };
  std::vector<Step> steps;
};

struct Comparison {
  std::string source;
  std::string a, b;
  std::string rule, check;
  std::vector<TensorComparison> tensors;
  std::vector<MetricComparison> metrics;
  std::optional<compare::Outcome> verdict;  // pass | fail
  std::int64_t n_pass = 0, n_fail = 0;
};

// Everything the verdict may use. `missing` explains pieces that could not be produced (e.g. a
// stage answered "not available in this version yet"), so the report can say why they are missing.
struct Evidence {
  std::optional<ScanEvidence> scan;
  std::optional<EnvEvidence> env;  // The host the report or audit ran on.
  std::optional<Baseline> baseline;
  std::vector<Track> tracks;
  std::vector<Comparison> comparisons;
  std::optional<CoverageEvidence> coverage;
  bool remote_data_confirmed = false;
  std::string project;      // The audited directory, when known.
  std::string experiment;   // The designated experiment judged (audit).
  std::string entry;        // Its entry script, relative to the project.
  std::string mac_command;  // How to run it on the Mac (python train.py --device mps).
  std::vector<std::string> designated_run;     // The run arguments audit used (script and args).
  std::map<std::string, std::string> missing;  // piece -> why it is missing.
  // The Macs the lab names ([tool.dualtrack] macs, report --mac; else cost::DefaultMacs()), the
  // designated run's steps and limits, and the method's error band, for the cost prediction.
  std::vector<cost::NamedDevice> macs;
  cost::RunPlan run_plan;
  std::optional<cost::Calibration> calibration;
};

// How the reports spell a state read from a document: its one name, or "" when the document did
// not say.
std::string_view SeverityText(const std::optional<scan::Severity>& s);
std::string_view ClassText(const std::optional<scan::FindingClass>& c);
std::string_view OutcomeText(const std::optional<compare::Outcome>& o);

// Parsers from an already-decoded JSON document; `source` names the file in errors.
Result<ScanEvidence> ParseScan(const nlohmann::json& doc, const std::string& source);
Result<EnvEvidence> ParseEnv(const nlohmann::json& doc, const std::string& source);
Result<Baseline> ParseBaseline(const nlohmann::json& doc, const std::string& source);
Result<CoverageEvidence> ParseCoverage(const nlohmann::json& doc, const std::string& source);
Result<Comparison> ParseComparison(const nlohmann::json& doc, const std::string& source);

// The same from JSON text, streamed: findings are converted as they are parsed, never held as a
// DOM.
Result<ScanEvidence> ParseScanText(const std::string& text, const std::string& source);

// The device a track ran on: "mps" when an operator ran on MPS, else "cuda" when one ran on CUDA,
// else "cpu" when operators ran on the CPU; without a trace, the label unless the environment says
// that device was not available. `note` says why it differs from the label.
std::string DeviceOf(const Track& t, std::string* note);

// Loaders from files (JSON documents of the contract).
Result<ScanEvidence> LoadScan(const std::filesystem::path& path);
Result<EnvEvidence> LoadEnv(const std::filesystem::path& path);
Result<Baseline> LoadBaseline(const std::filesystem::path& path);
Result<CoverageEvidence> LoadCoverage(const std::filesystem::path& path);
Result<Comparison> LoadComparison(const std::filesystem::path& path);
// A bundle directory: manifest.json is required, ops.jsonl and metrics.jsonl are optional.
Result<Track> LoadTrack(const std::string& name, const std::filesystem::path& dir);

}  // namespace dt::verdict
