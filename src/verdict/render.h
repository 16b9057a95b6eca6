// The report in three formats with the same content: JSON (`dualtrack.report/1`, for machines),
// Markdown (for a pull request or an issue) and one self-contained HTML page (for a supervisor).
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>

#include "verdict/verdict.h"

namespace dt::verdict {

nlohmann::json ToJson(const Report& report);
// One row of the experiments' table, as every report and the project's page write it.
nlohmann::json ExperimentRowJson(const ExperimentRow& row);
std::string RenderJson(const Report& report);
// The same text, written to `out` as it is made: a report of a large scan is never whole in memory.
void RenderJson(const Report& report, std::ostream& out);
std::string RenderMarkdown(const Report& report);
// No network, no external fonts or scripts: inline CSS and inline SVG only.
std::string RenderHtml(const Report& report);
// The short summary `audit` prints: verdict, reasons, checklist.
std::string RenderText(const Report& report);

// Escapes text for HTML element content and attribute values.
std::string HtmlEscape(std::string_view s);
// "." or "runs/../proj/" -> the folder's own name, which is what a reader knows the project by.
std::string FolderName(const std::string& path);
// The style sheet every HTML page of a report shares (inline: no network).
const char* ReportCss();

}  // namespace dt::verdict
