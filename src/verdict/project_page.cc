#include "verdict/project_page.h"

#include <fmt/format.h>

#include <filesystem>
#include <sstream>
#include <string_view>

#include "app/version.h"
#include "util/strings.h"
#include "verdict/render.h"

namespace dt::verdict {

namespace {

int Rank(Verdict v) { return v == Verdict::kCudaOnly ? 0 : v == Verdict::kDevOnly ? 1 : 2; }

// "report.train.html" -> "report.train.md": the Markdown page links to the Markdown pages.
std::string WithExtension(const std::string& name, const char* ext) {
  return std::filesystem::path(name).replace_extension(ext).string();
}

// "2 experiments: 1 mac-ready, 1 dev-only".
std::string Tally(const std::vector<ExperimentRow>& rows) {
  std::string out = fmt::format("{} experiment{}:", rows.size(), rows.size() == 1 ? "" : "s");
  const char* sep = " ";
  for (Verdict v : {Verdict::kMacReady, Verdict::kDevOnly, Verdict::kCudaOnly}) {
    std::size_t n = 0;
    for (const ExperimentRow& r : rows) n += r.verdict == v ? 1 : 0;
    if (n == 0) continue;
    out += fmt::format("{}{} {}", sep, n, ToString(v));
    sep = ", ";
  }
  return out;
}

std::string Headline(const ProjectPage& page) {
  const ExperimentRow* worst = WorstExperiment(page.experiments);
  if (worst == nullptr) return "no experiments";
  return fmt::format("{} (the worst of {}; {} evidence)", ToString(worst->verdict),
                     Tally(page.experiments), ToString(worst->level));
}

}  // namespace

const ExperimentRow* WorstExperiment(const std::vector<ExperimentRow>& rows) {
  const ExperimentRow* worst = nullptr;
  for (const ExperimentRow& r : rows)
    if (worst == nullptr || Rank(r.verdict) < Rank(worst->verdict)) worst = &r;
  return worst;
}

nlohmann::json ProjectJson(const ProjectPage& page) {
  using nlohmann::json;
  const ExperimentRow* worst = WorstExperiment(page.experiments);
  json rows = json::array();
  for (const ExperimentRow& e : page.experiments) {
    json row = ExperimentRowJson(e);
    row["report_json"] = WithExtension(e.report, ".json");
    rows.push_back(std::move(row));
  }
  return {{"schema", "dualtrack.project-report/1"},
          {"generator", std::string("dualtrack ") + kVersion},
          {"project", page.project},
          {"verdict", worst ? json(ToString(worst->verdict)) : json(nullptr)},
          {"evidence_level", worst ? json(ToString(worst->level)) : json(nullptr)},
          {"worst_experiment", worst ? json(worst->name) : json(nullptr)},
          {"summary", Tally(page.experiments)},
          {"experiments", rows}};
}

std::string RenderProjectMarkdown(const ProjectPage& page) {
  std::ostringstream os;
  os << "# dualtrack audit of " << EscapeMarkdown(page.project) << ": **" << Headline(page)
     << "**\n\n"
     << "| experiment | entry | verdict | evidence | why | report |\n|---|---|---|---|---|---|\n";
  for (const ExperimentRow& e : page.experiments) {
    const std::string md = WithExtension(e.report, ".md");
    os << "| " << EscapeMarkdown(e.name) << " | "
       << EscapeMarkdown(e.entry.empty() ? "(whole project)" : e.entry) << " | **"
       << ToString(e.verdict) << "** | " << ToString(e.level) << " | " << EscapeMarkdown(e.reason)
       << " | [" << EscapeMarkdown(md) << "](" << md << ") |\n";
  }
  os << "\nThe project is as ready as its worst experiment; each experiment's report has its "
        "checklist, next steps and evidence.\n\n<sub>dualtrack "
     << kVersion << " · dualtrack.project-report/1</sub>\n";
  return os.str();
}

std::string RenderProjectHtml(const ProjectPage& page) {
  std::ostringstream os;
  const ExperimentRow* worst = WorstExperiment(page.experiments);
  const std::string verdict = worst ? ToString(worst->verdict) : "dev-only";
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<title>dualtrack: "
     << HtmlEscape(page.project) << ": " << HtmlEscape(verdict) << "</title><style>" << ReportCss()
     << ".chip { color:#fff; border-radius: 4px; padding: 1px 6px; font-weight: 600; "
        "white-space: nowrap; }</style></head><body>\n"
     << "<h1>dualtrack audit of " << HtmlEscape(page.project) << "</h1>\n"
     << "<section class=\"banner " << HtmlEscape(verdict) << "\" id=\"verdict\"><span class=\"v\">"
     << HtmlEscape(verdict) << "</span><span class=\"lvl\">"
     << HtmlEscape(Headline(page).substr(verdict.size() + 1)) << "</span><ul><li>";
  if (worst != nullptr) {
    os << "The project is as ready as its worst experiment, <strong>" << HtmlEscape(worst->name)
       << "</strong>: " << HtmlEscape(worst->reason);
  }
  os << "</li></ul></section>\n"
     << "<h2 id=\"experiments\">Experiments</h2><div class=\"scroll\"><table><tr>"
        "<th>experiment</th><th>entry</th><th>verdict</th><th>evidence</th><th>why</th>"
        "<th>report</th></tr>";
  for (const ExperimentRow& e : page.experiments) {
    const std::string v = ToString(e.verdict);
    os << "<tr><td><a href=\"" << HtmlEscape(e.report) << "\">" << HtmlEscape(e.name)
       << "</a></td><td><code>" << HtmlEscape(e.entry.empty() ? "(whole project)" : e.entry)
       << "</code></td><td><span class=\"chip " << HtmlEscape(v) << "\">" << HtmlEscape(v)
       << "</span></td><td>" << ToString(e.level) << "</td><td>" << HtmlEscape(e.reason)
       << "</td><td><a href=\"" << HtmlEscape(e.report) << "\">full report</a></td></tr>";
  }
  os << "</table></div>\n<footer>dualtrack " << kVersion
     << " · schema dualtrack.project-report/1 · predicted = from scan and coverage tables; "
        "measured = from runs of the tracks</footer>\n</body></html>\n";
  return os.str();
}

}  // namespace dt::verdict
