// The output formats of `dualtrack scan` and `dualtrack rule`.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "scan/registry.h"
#include "scan/scan.h"

namespace dt::scan {

// Grouped by class and severity, then a summary table; ANSI colour only when `color`.
std::string FormatText(const ScanReport& report, bool color, bool statistics);
// SARIF 2.1.0 with one reportingDescriptor per rule of the registry that fired.
std::string FormatSarif(const ScanReport& report, const Registry& reg);
std::string FormatMarkdown(const ScanReport& report, bool statistics);
// GitHub Actions workflow commands (::error / ::warning / ::notice).
std::string FormatGithub(const ScanReport& report);
// JUnit XML for test-report viewers (GitLab, Jenkins, Azure): one test case per finding, a
// failure when its severity reaches `fail_on` (nullopt: never), one passing case when none.
std::string FormatJunit(const ScanReport& report, std::optional<Severity> fail_on);
// Byte-for-byte ScanReportToJson(report).dump(2) + "\n", but the findings (most of the document)
// are written directly instead of through one nlohmann object per finding, in chunks on up to
// `threads` threads.
std::string ScanReportJsonText(const ScanReport& report, unsigned threads = 1);
// Per code, class and file counts with the readiness of each file.
nlohmann::json Statistics(const ScanReport& report);

// `dualtrack rule CODE` in text, and the docs/rules/CODE.md page.
std::string RuleText(const Rule& rule, const Registry& reg);
std::string RuleMarkdown(const Rule& rule, const Registry& reg);
// docs/rules/README.md: the index of all rules.
std::string RuleIndexMarkdown(const Registry& reg);

}  // namespace dt::scan
