// The evidence bundle of `dualtrack run` (docs/bundle.md): the runner that records one track and
// the reader that the `show`, `coverage`, `compare` and `report` stages load bundles with.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/cli.h"
#include "util/result.h"

namespace dt::bundle {

inline constexpr const char* kManifestSchema = "dualtrack.bundle/1";

struct Location {
  std::string file;
  std::int64_t line = 0;
  std::string function;
};

// How an operator ran, as ops.jsonl spells it (ToString, ParseOpStatus): on the track's device,
// through the CPU fallback of MPS, or not at all (it raised).
enum class OpStatus { kOk, kFallback, kFailed };
const char* ToString(OpStatus s);
std::optional<OpStatus> ParseOpStatus(std::string_view s);

// One row of ops.jsonl: an (operator overload, device, dtypes) seen during the run.
struct OpRow {
  std::string op;        // "aten::convolution"
  std::string overload;  // "default"
  std::string device;    // "cpu", "mps", "cuda"; empty when the op had no tensor.
  std::vector<std::string> dtypes;
  std::int64_t count = 0;
  std::optional<Location> location;
  OpStatus status = OpStatus::kOk;
  std::optional<std::string> error;
  std::int64_t max_ndim = 0;  // The most dimensions an input had, where the trace says.
};

// One row of metrics.jsonl.
struct MetricRow {
  std::int64_t step = 0;
  std::string name;
  double value = 0;
};

// A tensor of tensors.safetensors, described by its header (the data is not read).
struct TensorInfo {
  std::string name;
  std::string dtype;  // safetensors spelling: F32, F64, BF16, I64, BOOL, ...
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  // Absolute byte offsets in the file.
  std::uint64_t end = 0;
};

// How a run ended, as manifest.json spells it (ToString, ParseRunStatus): the script exited 0,
// exited otherwise, died by a signal, or the bundle was never finished.
enum class RunStatus { kOk, kFailed, kKilled, kIncomplete };
const char* ToString(RunStatus s);
std::optional<RunStatus> ParseRunStatus(std::string_view s);

// What a run is evidence of (docs/bundle.md; spelled by ToString): only finished, failed
// and crashed say anything about the task; a run that could not start, was interrupted or timed
// out says nothing.
// A tracer error: dualtrack's own code raised the exception that stopped the run, evidence about
// dualtrack, never about the task.
enum class OutcomeKind {
  kFinished,
  kFailed,
  kCrashed,
  kCouldNotStart,
  kInterrupted,
  kTimedOut,
  kTracerError
};
const char* ToString(OutcomeKind k);
std::optional<OutcomeKind> ParseOutcomeKind(std::string_view s);
bool IsTaskEvidence(OutcomeKind k);

struct Bundle {
  std::filesystem::path dir;
  nlohmann::json manifest;  // The whole manifest.json, schema-checked.
  RunStatus status = RunStatus::kIncomplete;
  std::string track;
  std::optional<OutcomeKind> outcome;  // None in bundles written before it was recorded.
  std::vector<OpRow> ops;
  std::vector<MetricRow> metrics;
  std::vector<TensorInfo> tensors;
};

// Reads manifest.json, ops.jsonl, metrics.jsonl and the safetensors header of a bundle directory.
// Missing ops/metrics/tensors files are empty (an incomplete run); malformed ones are kInput errors
// naming the file and line.
Result<Bundle> LoadBundle(const std::filesystem::path& dir);

// Reads an ops.jsonl (a bundle's, or one written by hand for `coverage`): one JSON object per
// line, "op" required; "overload" defaults to "default" and "count" to 1. A missing file is an
// empty trace; a malformed line is a kInput error naming the file and line.
Result<std::vector<OpRow>> ReadOpsJsonl(const std::filesystem::path& path);
// The same, one row at a time as the file is read (in chunks: memory holds the longest line, not
// the file), for a reader that aggregates; stops at the first error, `each`'s included.
Status ForEachOpRow(const std::filesystem::path& path, const std::function<Status(OpRow&&)>& each);
// A `location` object of the bundle's files ({file, line, function}); none without a file.
std::optional<Location> ParseLocation(const nlohmann::json& j);
// Any of the bundle's JSON-lines files (cost.jsonl), streamed the same way: `each` gets every
// non-empty line's object and its line number; a missing file has no lines.
Status ForEachJsonObjectLine(
    const std::filesystem::path& path,
    const std::function<Status(const nlohmann::json&, std::int64_t)>& each);

// The tensors of a .safetensors file held whole in `bytes`, from its header: read by compare's
// reader (the one that is fuzzed), which checks every dtype, shape and offset against the file and
// that no two tensors overlap.
Result<std::vector<TensorInfo>> ParseSafetensorsHeader(std::string_view bytes,
                                                       const std::string& file_name);

struct RunOptions {
  std::string track;
  std::filesystem::path out_dir;
  std::vector<std::string>
      command;    // The user's command, e.g. {"python", "train.py", "--steps", "2"}.
  int steps = 1;  // Steps whose tensors are captured.
  std::optional<std::int64_t> seed;
  bool deterministic = false;
  std::optional<std::string> redirect_cuda;  // "cpu" or "mps".
  bool collect_env = true;                   // Run `dualtrack env --format json` for the manifest.
  bool measure_peak = true;         // Measure the device's peak rates after the last captured step.
  bool force = false;               // Reuse a non-empty output directory.
  bool quiet = false;               // Do not echo the child's output.
  std::optional<double> timeout_s;  // Stop the child (SIGTERM, then SIGKILL) after this.
  std::vector<std::string> data;    // --data: the slice's files, hashed as freeze does.
  std::optional<std::filesystem::path> baseline;  // --baseline: its data digest is recorded.
};

struct RunOutcome {
  std::filesystem::path dir;
  RunStatus status = RunStatus::kIncomplete;  // ok, failed or killed.
  int exit_code = -1;                         // The child's exit code; -1 when it died by a signal.
  int signal = 0;
  double wall_s = 0;
  std::int64_t peak_rss_bytes = 0;
  OutcomeKind outcome = OutcomeKind::kFailed;
  std::string reason;           // For could-not-start, interrupted and timed-out: why, in words.
  std::string missing_package;  // The module a could-not-start run could not import.
  std::string stderr_tail;      // The last lines the script wrote to stderr.
  bool interrupted = false;     // The user pressed Ctrl-C (SIGINT was forwarded).
  bool timed_out = false;
  std::size_t problems = 0;  // The manifest's problems: evidence the run could not record.
};

// Classifies a run from its exit facts, the tracer's exception record (null when none), the steps
// the tracer completed and the script's stderr tail: a script that died at import for a missing
// module, or that could not be opened, could not start; a forwarded signal is an interruption.
struct OutcomeFacts {
  RunStatus status = RunStatus::kIncomplete;
  int exit_code = -1;
  int signal = 0;
  int forwarded_signal = 0;
  bool timed_out = false;
  std::int64_t steps_completed = 0;
  nlohmann::json exception;  // exception.json, or null.
  std::string stderr_tail;
};
void ClassifyOutcome(const OutcomeFacts& facts, RunOutcome& outcome);

// The last `max_lines` lines (at most `max_bytes`) of a log file; empty when it cannot be read.
std::string ReadLogTail(const std::filesystem::path& path, std::size_t max_lines = 25,
                        std::size_t max_bytes = 8192);

// The module named by "No module named 'x.y'" in `text`; empty when there is none.
std::string MissingModule(std::string_view text);

// Runs `options.command` under the tracer, teeing its output, and writes the bundle. Errors are
// only for what prevented the run (bad options, unwritable directory, program not found); a failing
// script is a RunOutcome with status "failed".
Result<RunOutcome> RunTrack(const RunOptions& options, Io& io);

// The manifest's `data` record ({digest, files, source}) from --data (hashed as freeze does,
// relative to `base`) and --baseline (its digest, which the --data files must match); null when
// neither is given.
Result<nlohmann::json> DataSliceRecord(const RunOptions& options,
                                       const std::filesystem::path& base);

// The exit status of `dualtrack run` for an outcome: 0 ok, 1 failed or killed, 2 could not start,
// 130 interrupted by Ctrl-C.
ExitCode RunExitCode(const RunOutcome& outcome);

// The bundle as the JSON `dualtrack show --format json` prints (schema dualtrack.show/1).
nlohmann::json ShowJson(const Bundle& bundle, std::size_t top_ops);

// The readable summary `dualtrack show` prints.
std::string ShowText(const Bundle& bundle, std::size_t top_ops);

// Human names for signals ("SIGKILL"), portable across Linux and macOS.
std::string SignalName(int sig);

}  // namespace dt::bundle
