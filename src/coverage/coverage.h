// `dualtrack coverage`: which operators of a traced training step would run natively, decompose,
// fall back to the CPU or fail on MPS, for a given PyTorch release and macOS version. The
// in-process API below is what `report`/`audit` call.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bundle/bundle.h"
#include "coverage/native_functions.h"
#include "coverage/table.h"
#include "util/result.h"

namespace dt::coverage {

struct CoverageOptions {
  std::filesystem::path bundle;  // A bundle directory (ops.jsonl + manifest.json) or an ops.jsonl.
  std::string torch;             // "2.13", "2.4.1"; empty: the newest release in the table.
  int macos = 14;
  std::filesystem::path table;                      // Empty: the shipped data/coverage/ops.tsv.
  std::filesystem::path data_dir;                   // Empty: dt::DataDir() / "coverage".
  const CapabilityTable* table_override = nullptr;  // Used instead of `table` when set.
};

// What a claim rests on: PyTorch's tables and sources (predicted) or a run on the device
// (measured). The verdict's evidence level is the same pair of words.
enum class EvidenceLevel { kPredicted, kMeasured };
const char* ToString(EvidenceLevel l);
std::optional<EvidenceLevel> ParseEvidenceLevel(std::string_view s);

struct CodeLocation {
  std::string file;
  std::int64_t line = 0;
  std::string function;
};

struct CoverageOp {
  std::string op;        // "aten::multi_margin_loss", as traced.
  std::string overload;  // "default" or the overload name.
  std::string mps_op;  // What MPS runs instead when the traced op is a backend variant; else empty.
  std::string mapping_note;
  OpClass cls = OpClass::kAbsent;
  std::vector<std::string> dtypes;
  std::vector<std::string> dtype_issues;  // Exact PyTorch error texts where known.
  bool fails = false;                     // A dtype or rank issue makes it error on MPS.
  std::int64_t count = 0;
  std::optional<CodeLocation> location;
  std::optional<std::string>
      native_since;  // Lowest release from which it runs on MPS in every later one.
  // ops.jsonl's status when the bundle ran on MPS and the operator did not simply run there.
  std::optional<bundle::OpStatus> measured_status;
};

struct CoverageSummary {
  int native = 0, composite = 0, fallback = 0, unknown = 0, fail = 0;
};

struct CoverageReport {
  std::string torch;  // The release of the table used ("2.13.0").
  int macos = 14;
  EvidenceLevel evidence = EvidenceLevel::kPredicted;
  std::string bundle;
  std::string track;
  std::vector<CoverageOp> ops;  // Most severe first.
  CoverageSummary summary;
  std::optional<std::string> upgrade_version;  // Lowest newer release with the fewest fallbacks.
  int upgrade_removes = 0;
  int upgrade_remaining = 0;  // Fallbacks left at upgrade_version (or now, when there is none).
  std::vector<std::string> known_versions;
  nlohmann::json cost;  // The step's cost and predictions (cost/render.h), or null.
};

Result<CoverageReport> Predict(const CoverageOptions& options);
nlohmann::json CoverageReportToJson(const CoverageReport& report);
// The same document, dumped (indent 2, invalid UTF-8 replaced) operator by operator to `out`,
// never whole in memory: what `dualtrack coverage --format json` prints.
void WriteCoverageJson(const CoverageReport& report, std::ostream& out);
std::string CoverageReportToText(const CoverageReport& report, bool markdown);
// The same text, escaped for a terminal (EscapeControl) and written an operator at a time.
void WriteCoverageText(const CoverageReport& report, bool markdown, std::ostream& out);

}  // namespace dt::coverage
