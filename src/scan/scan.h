// In-process API of the scan stage: the inventory of a project's CUDA dependencies. The `audit`
// and `report` stages call Scan() directly instead of spawning `dualtrack scan`.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "util/result.h"

namespace dt::scan {

// Ordered from harmless to hard: `portable` runs anywhere already (guarded or a no-op), `fixable`
// is a mechanical edit, `replace` needs another library or operator, `blocker` needs a rewrite.
enum class Severity { kPortable = 0, kFixable = 1, kReplace = 2, kBlocker = 3 };

std::string_view SeverityName(Severity s);
std::optional<Severity> ParseSeverity(std::string_view name);

// What a finding is about: the device placement, a CUDA-only library, a CUDA extension, or the
// environment (launchers, containers, build files). Documents spell it by FindingClassName.
enum class FindingClass { kDevice, kLibrary, kExtension, kEnvironment };
inline constexpr FindingClass kFindingClasses[] = {FindingClass::kDevice, FindingClass::kLibrary,
                                                   FindingClass::kExtension,
                                                   FindingClass::kEnvironment};

std::string_view FindingClassName(FindingClass c);
std::optional<FindingClass> ParseFindingClass(std::string_view name);

struct Finding {
  std::string code;  // "DT101".
  FindingClass cls = FindingClass::kDevice;
  Severity severity = Severity::kFixable;
  std::string file;                  // Relative to the scanned root, '/'-separated.
  std::int64_t line = 0;             // 1-based; within the cell for notebooks.
  std::int64_t column = 0;           // 1-based, in bytes.
  std::optional<std::int64_t> cell;  // 1-based code-cell index of a notebook.
  // Notebooks: the line of the .ipynb file that holds the source line (what SARIF and GitHub
  // annotations, which know only file lines, point at).
  std::optional<std::int64_t> file_line;
  std::string message;
  std::string snippet;  // The trimmed source line.
  bool guarded = false;
  bool placement = false;  // The rule's `placement`: it puts work on a device.
  // It stands in the default of a setting the user overrides: a command-line option
  // (`add_argument("--device", default="cuda")`), a module setting a configurator overrides.
  bool option_default = false;
  // It lies in an import statement, which runs nothing but the import: importing the project's
  // code that reaches a kernel runs no kernel; importing a compiled extension fails without it.
  bool in_import = false;
  bool mps_only = false;  // Fails only on MPS: the rule's `mps_only` (runs on the CPU as written).
  std::optional<bool> reachable;  // Only for Python files and notebooks.
  // With several entries (a test suite, a folder of scripts): how many of them reach the file.
  std::optional<std::int64_t> reached_by;
  std::string replacement;
  // `dualtrack fix` rewrites it: "safe" (the behaviour on CUDA is kept), "unsafe" (only with
  // --unsafe-fixes: results may change), or empty (an edit by hand). The rule's, as the registry
  // says; the fixer may still leave a construct it cannot rewrite safely (`--show-left`).
  std::string fix;
};

// A Python module that only exists where a CUDA extension was built, as one file declares it.
struct CudaModule {
  std::string module;  // Dotted import name: "pointops._ext", "fps_cuda", "diff_raster".
  std::string file;    // Where it is declared, relative to the root.
  std::int64_t line = 0;
  std::string evidence;    // "CUDAExtension in setup.py", "git submodule", ...
  bool cpu_build = false;  // The module is also built without CUDA (see CudaContext::cpu_built).
  // `module` is named from the declaring file's package (a cffi build's `relative_to=__file__`);
  // the scan resolves it once the project's packages are known.
  bool beside_file = false;
};

// A suppression comment that names a code no rule has, or suppresses nothing on its line (like
// ruff's unused-noqa): reported so that stale ones can be removed, never as a finding.
struct SuppressionProblem {
  std::string file;
  std::int64_t line = 0;  // In the file (a notebook's JSON line).
  std::string code;       // As listed, upper-cased; empty for a bare `dualtrack: ignore`.
  std::string problem;    // "unknown code" | "unused".
  // Notebooks: the code cell and the line in it, which the text output names.
  std::optional<std::int64_t> cell;
  std::int64_t cell_line = 0;
};

struct Skipped {
  std::string file;
  std::string reason;
};

struct ScanOptions {
  std::vector<std::filesystem::path> paths;  // Files or directories; the first sets the root.
  std::vector<std::string> entries;          // --entry; relative to the root or absolute.
  std::vector<std::string> exclude;          // Extra globs, relative to the root.
  std::vector<std::string> ignore_codes;     // Codes or code prefixes ("DT4") to drop.
  std::vector<std::string> select_codes;     // Codes or prefixes to keep (none: every code).
  // Both lists also take comma-separated items ("DT1,DT4"); an item that names no rule is an error.
  bool honour_gitignore = true;
  bool read_pyproject = true;  // [tool.dualtrack] of <root>/pyproject.toml.
  std::uint64_t max_file_size = std::uint64_t{16} << 20;
  unsigned threads = 0;                           // 0: hardware concurrency.
  std::optional<std::filesystem::path> data_dir;  // Defaults to dt::DataDir()/scan.
  // The process ends once the report is written (the scan command): the per-file state is left
  // to the system at exit (KeepUntilExit) instead of freed in the background.
  bool process_exits_after = false;
  // Fill ScanReport::inputs: only a caller that writes a file needs them (not on the hot path).
  bool collect_inputs = false;
};

// What a command line that scans a tree (scan, fix) selects, as given: paths (none: "."),
// entries, excludes, rule codes, and whether .gitignore and [tool.dualtrack] count.
struct TreeSelection {
  std::vector<std::string> paths, entries, exclude, ignore, select;
  bool no_gitignore = false;
  bool no_config = false;
  ScanOptions Options() const;
};

// What the named entries' path says about the Mac's share of the work (only when calls were
// followed, ScanReport::path): where the project picks CUDA behind a check (so something else runs
// elsewhere), whether MPS is ever named or a framework places the model, the first convolution or
// attention layer, and whether the experiment trains (an entry calls `.backward(` or is a training
// script by name).
struct PathPlace {
  std::string file;
  std::int64_t line = 0;
};
struct PathTraits {
  std::optional<PathPlace> cuda_choice;  // A guarded .cuda() / "cuda" on the path.
  bool mentions_mps = false;
  bool framework_device = false;
  std::optional<PathPlace> model;
  std::string model_api;
  std::optional<PathPlace> training;  // The entry's .backward( (line 0: by the script's name).
};

struct ScanReport {
  std::string root;               // As the user gave it (relative stays relative).
  std::vector<Finding> findings;  // Sorted by file, cell, line, column, code.
  std::vector<Skipped> skipped;
  std::vector<SuppressionProblem> suppressions;  // Sorted by file, line.
  std::int64_t files_scanned = 0;
  std::vector<std::string> entries;  // Entry scripts used for reachability, relative.
  std::string baseline;              // The --baseline file the findings were checked against.
  std::size_t baselined = 0;         // Findings it held, left out of `findings`.
  std::optional<PathTraits> path;    // With named entries only.
  // Every file the scan read or could have read (the walked files, the configuration, ignore
  // files, the top-level documents entry discovery reads): what an output must never replace.
  // Filled only with ScanOptions::collect_inputs.
  std::vector<std::string> inputs;
};

// Walks the paths, scans every recognised file and returns the sorted inventory. Errors: a path
// that does not exist, an unreadable registry, a malformed [tool.dualtrack], or nothing scanned.
Result<ScanReport> Scan(const ScanOptions& options);

// The `dualtrack.scan/1` document (docs/scan.md).
nlohmann::json ScanReportToJson(const ScanReport& report);

// Share of findings that are portable or fixable; 1.0 when there are none.
double Readiness(const std::vector<Finding>& findings);

}  // namespace dt::scan
