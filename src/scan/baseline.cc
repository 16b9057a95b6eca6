#include "scan/baseline.h"

#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "util/fs.h"
#include "util/json_fields.h"
#include "util/strings.h"

namespace dt::scan {

namespace {

constexpr std::string_view kSchema = "dualtrack.findings-baseline/1";

// The source line with its runs of whitespace made one space: re-indenting a block keeps it.
std::string Normalized(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : Trim(text)) {
    if (c == ' ' || c == '\t') {
      space = true;
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

using Key = std::tuple<std::string, std::string, std::string>;  // code, file, source line.

Key KeyOf(const Finding& f) {
  // Findings without a source line (build and environment files have one; a few do not) are
  // matched by their message, which names the construct.
  return {f.code, f.file, Normalized(f.snippet.empty() ? f.message : f.snippet)};
}

}  // namespace

std::string BaselineText(const ScanReport& report) {
  std::map<Key, std::int64_t> counts;
  for (const auto& f : report.findings) ++counts[KeyOf(f)];
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& [key, n] : counts) {
    const auto& [code, file, source] = key;
    findings.push_back({{"code", code}, {"file", file}, {"source", source}, {"count", n}});
  }
  nlohmann::json doc = {{"schema", kSchema},
                        {"about",
                         "Findings accepted when this file was written; `dualtrack scan "
                         "--baseline` reports only the others."},
                        {"findings", std::move(findings)}};
  return doc.dump(2) + "\n";
}

Result<std::size_t> ApplyBaseline(ScanReport& report, const std::filesystem::path& path) {
  auto text = ReadFile(path, std::uint64_t{256} << 20);
  if (!text) return text.take_error();
  auto bad = [&](const std::string& what) {
    return MakeError(ErrorCode::kInput, "not a dualtrack baseline: " + what, path.string());
  };
  auto parsed = ParseJson(*text, path.string());
  if (!parsed.ok()) return bad(parsed.error().message);
  const nlohmann::json& doc = *parsed;
  if (doc.is_object() && doc.contains("schema") && doc["schema"] == "dualtrack.baseline/1")
    return bad(
        "this is a `dualtrack freeze` baseline (the CUDA environment), not the findings "
        "a scan accepted (write those with `dualtrack scan --write-baseline FILE`)");
  if (!doc.is_object() || !doc.contains("schema") || doc["schema"] != kSchema)
    return bad(std::string("\"schema\" must be \"") + std::string(kSchema) + "\"");
  if (!doc.contains("findings") || !doc["findings"].is_array()) return bad("no \"findings\" array");
  std::map<Key, std::int64_t> left;
  std::size_t index = 0;
  for (const auto& e : doc["findings"]) {
    ++index;
    auto str = [&](const char* k) -> const std::string* {
      if (!e.is_object() || !e.contains(k) || !e[k].is_string()) return nullptr;
      return e[k].get_ptr<const std::string*>();
    };
    const std::string* code = str("code");
    const std::string* file = str("file");
    const std::string* source = str("source");
    if (code == nullptr || file == nullptr || source == nullptr || !e.contains("count") ||
        !e["count"].is_number_integer() || e["count"].get<std::int64_t>() < 1)
      return bad(
          "entry " + std::to_string(index) +
          " needs \"code\", \"file\", \"source\" (strings) and \"count\" (a positive integer)");
    left[{*code, *file, *source}] += e["count"].get<std::int64_t>();
  }
  std::size_t removed = 0;
  std::vector<Finding> kept;
  kept.reserve(report.findings.size());
  for (auto& f : report.findings) {
    auto it = left.find(KeyOf(f));
    if (it != left.end() && it->second > 0) {
      --it->second;
      ++removed;
      continue;
    }
    kept.push_back(std::move(f));
  }
  report.findings = std::move(kept);
  return removed;
}

}  // namespace dt::scan
