// `dualtrack compare`: matches the tensors of two inputs by name, computes their statistics
// under tolerances fixed before the run, and compares the metric series of two bundles. The
// report/audit stage calls Compare() in-process and serialises with CompareReportToJson().
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compare/stats.h"
#include "compare/tensor.h"
#include "util/result.h"

namespace dt::compare {

// A per-tensor override from the tolerance TOML file ([[tensor]] tables, matched by glob).
struct ToleranceOverride {
  std::string glob;
  std::optional<double> atol, rtol;
  std::optional<Rule> rule;
  std::optional<Check> check;
};

struct CompareOptions {
  std::string a, b;                  // Bundle directories or tensor files; b is the reference.
  std::optional<double> atol, rtol;  // Override the per-dtype defaults for every tensor.
  Rule rule = Rule::kAllclose;
  Check check = Check::kElementwise;
  bool equal_nan = false;
  bool inf_equal = false;
  bool strict_dtype = false;      // Differing dtypes are a failure instead of compared numerically.
  std::vector<std::string> only;  // Globs; a tensor is compared when any matches.
  std::vector<std::pair<std::string, std::string>> map;  // A's name → B's name ("x*" = prefix).
  std::string tolerance_file;                            // TOML; empty for none.
  int threads = 2;
};

// What became of one tensor or metric pair; OutcomeName is its one spelling (JSON, text).
enum class Outcome { kPass, kFail, kMissingA, kMissingB, kShapeMismatch, kDtypeMismatch };
std::string_view OutcomeName(Outcome o);
std::optional<Outcome> ParseOutcomeName(std::string_view name);
inline bool IsMissing(Outcome o) { return o == Outcome::kMissingA || o == Outcome::kMissingB; }

struct TensorComparison {
  std::string name;    // The name in B (after --map).
  std::string name_a;  // The name in A.
  Outcome status = Outcome::kFail;
  std::optional<DType> dtype_a, dtype_b;
  std::vector<std::uint64_t> shape_a, shape_b;
  double atol = 0, rtol = 0;
  Rule rule = Rule::kAllclose;
  Check check = Check::kElementwise;
  std::optional<TensorStats> stats;
  std::string note;     // Why a pair was not compared (a complex tensor against a real one).
  double severity = 0;  // Sort key: how far outside (or inside) tolerance it is.
};

struct MetricStep {
  std::int64_t step = 0;
  std::optional<double> a, b;
  std::optional<double> diff;
};

struct MetricComparison {
  std::string name;
  std::vector<MetricStep> steps;
  Outcome status = Outcome::kFail;  // pass, fail or missing on one side.
  double atol = 0, rtol = 0;
  double max_abs_diff = 0;
  std::optional<double> final_a, final_b, final_diff;
  int non_finite_a = 0, non_finite_b = 0;  // Steps whose value is NaN or infinite (a fails).
};

struct CompareReport {
  std::string a, b, kind_a, kind_b;
  Rule rule = Rule::kAllclose;
  Check check = Check::kElementwise;
  bool equal_nan = false, inf_equal = false;
  std::vector<TensorComparison> tensors;  // Worst first.
  std::vector<MetricComparison> metrics;
  Outcome verdict = Outcome::kFail;  // kPass or kFail, for the whole comparison.
  int n_pass = 0, n_fail = 0, n_missing_a = 0, n_missing_b = 0;
  int metrics_fail = 0;
  std::string summary;                   // The one-line verdict.
  std::vector<std::string> input_files;  // Every file read, which -o must never replace.
};

// torch.testing.assert_close's defaults for a dtype: {rtol, atol}.
std::pair<double, double> DefaultTolerance(DType t);

// The dtype a pair's ULP distances are counted in: the coarser float dtype of the two (of the
// components for two complex dtypes); none for integers, bool, a complex-real pair and floats of
// 8 bits or fewer, whose ULP is most of a value's magnitude and so says nothing max_rel does not.
std::optional<DType> UlpDType(DType a, DType b);

Result<CompareReport> Compare(const CompareOptions& options);
nlohmann::json CompareReportToJson(const CompareReport& report);
// `summary` > 0 with more tensors than that: counts by status, then only the `summary` worst rows.
std::string CompareReportToText(const CompareReport& report, std::size_t summary = 0);
std::string CompareReportToMarkdown(const CompareReport& report);

std::string_view RuleName(Rule r);
std::string_view CheckName(Check c);
std::optional<Rule> ParseRule(std::string_view s);
std::optional<Check> ParseCheck(std::string_view s);

// The tolerance TOML file: [default] atol/rtol (used where no --atol/--rtol is given),
// [[tensor]] overrides (name glob, atol, rtol, rule, check; the last match wins), [metrics].
struct ToleranceFile {
  std::optional<double> atol, rtol;
  std::vector<ToleranceOverride> overrides;
  std::optional<double> metrics_atol, metrics_rtol;
};

// Parses the tolerance file's text; `file` names it in errors.
Result<ToleranceFile> ParseToleranceFile(const std::string& text, const std::string& file);

}  // namespace dt::compare
