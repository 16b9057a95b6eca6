// `dualtrack scan` and `dualtrack rule`: option parsing and output; the work is in scan.cc.
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "app/args.h"
#include "app/commands.h"
#include "app/paths.h"
#include "scan/baseline.h"
#include "scan/output.h"
#include "scan/registry.h"
#include "scan/scan.h"
#include "util/fs.h"
#include "util/parallel.h"
#include "util/strings.h"

namespace dt::scan {

namespace {

Result<std::uint64_t> ParseSize(const std::string& s) {
  if (s.empty()) return MakeError(ErrorCode::kUsage, "--max-file-size: empty");
  std::uint64_t mult = 1;
  std::string num = s;
  char last = static_cast<char>(num.back() | 0x20);
  if (last == 'k' || last == 'm' || last == 'g') {
    mult = std::uint64_t{1} << (last == 'k' ? 10 : last == 'm' ? 20 : 30);
    num.pop_back();
  }
  // strtoull would take "-1" as 2^64-1 and wrap a product: digits only, and no overflow.
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(num.c_str(), &end, 10);
  const bool digits = !num.empty() && num.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || end == nullptr || *end != '\0' || errno == ERANGE ||
      v > (std::uint64_t{1} << 40) / mult)
    return MakeError(
        ErrorCode::kUsage,
        "--max-file-size: expected a size up to 1T such as 16M (0: no limit), got '" + s + "'");
  return static_cast<std::uint64_t>(v) * mult;
}

Result<Registry> LoadRegistry() {
  auto dir = DataDir();
  if (!dir) return dir.take_error();
  return Registry::Load(*dir / "scan");
}

// `dualtrack scan`'s options as parsed, before they are checked.
struct ScanArgs {
  TreeSelection tree;
  std::string format = "text", output, fail_on = "fixable", color = "auto", max_size = "16M";
  std::string baseline, write_baseline;
  bool statistics = false, force = false;
  unsigned threads = 0;
};

void DeclareScanOptions(CLI::App& app, ScanArgs& a) {
  app.add_option("paths", a.tree.paths,
                 "Files or folders to scan (default: .); the first sets the root");
  app.add_option("--format,-f", a.format,
                 "text, json, sarif, markdown, github (workflow annotations) or junit (XML for "
                 "test-report viewers)")
      ->check(CLI::IsMember({"text", "json", "sarif", "markdown", "github", "junit"}));
  app.add_option("--output,-o", a.output, "Write the report to this file instead of stdout");
  app.add_option("--entry", a.tree.entries,
                 "Entry scripts for reachability, or folders whose Python files all are (a test "
                 "suite) (default: [tool.dualtrack] entry and [project.scripts]; else scripts "
                 "with if __name__ == \"__main__\")");
  app.add_option("--exclude", a.tree.exclude, "Glob of paths to leave out (relative to the root)");
  app.add_option(
      "--ignore", a.tree.ignore,
      "Rule codes or prefixes to drop, repeated or comma-separated (DT106,DT4); added to "
      "[tool.dualtrack] ignore");
  app.add_option(
      "--select", a.tree.select,
      "Report only these rule codes or prefixes, repeated or comma-separated (DT2,DT305); "
      "replaces [tool.dualtrack] select");
  app.add_option("--baseline", a.baseline,
                 "Leave out the findings recorded in this file by --write-baseline: report and "
                 "fail only on new ones");
  app.add_option("--write-baseline", a.write_baseline,
                 "Record today's findings in this file (after --select / --ignore) and exit 0");
  app.add_option("--fail-on", a.fail_on,
                 "Exit 1 when a finding has at least this severity: portable, fixable (default), "
                 "replace, blocker, or never")
      ->check(CLI::IsMember({"portable", "fixable", "replace", "blocker", "never"}));
  app.add_flag("--statistics", a.statistics, "Counts per code and per file with readiness");
  app.add_flag("--force", a.force,
               "Let -o / --write-baseline replace a file the scan reads (refused otherwise)");
  app.add_flag("--no-gitignore", a.tree.no_gitignore, "Also scan files that .gitignore excludes");
  app.add_flag("--no-config", a.tree.no_config, "Ignore [tool.dualtrack] in pyproject.toml");
  app.add_option("--max-file-size", a.max_size,
                 "Skip larger files with a note (default 16M; 0: no limit)");
  app.add_option("--threads", a.threads, "Worker threads (default: all cores)")
      ->check(ThreadCount());
  app.add_option("--color", a.color,
                 "auto (a terminal, unless NO_COLOR is set or FORCE_COLOR asks for it), always or "
                 "never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app.get_option("--baseline")->excludes(app.get_option("--write-baseline"));
  app.footer(
      "Examples:\n"
      "  dualtrack scan examples/cuda-research\n"
      "  dualtrack scan . --format sarif -o scan.sarif --fail-on blocker\n"
      "  dualtrack scan src --statistics --entry train.py\n"
      "  dualtrack scan . --write-baseline .dualtrack-findings.json   # adopt: accept today's\n"
      "  dualtrack scan . --baseline .dualtrack-findings.json         # CI: fail on new ones\n"
      "  dualtrack scan . --select DT2,DT3 --format junit -o dualtrack.xml\n"
      "Suppress one line with `# dualtrack: ignore[DT101]` or `# noqa: DT101`; a bare `# noqa` "
      "suppresses every code on its line, `# noqa: E501` none. Unknown and unused suppressions "
      "are reported. CI recipe: docs/ci.md.\n"
      "Exit codes: 0 nothing at or above --fail-on, 1 findings at or above it, 2 usage or input "
      "error (a missing path, an unknown rule code or config key, a bad baseline, nothing "
      "scanned).");
}

Result<ScanOptions> ToScanOptions(const ScanArgs& a) {
  ScanOptions opt = a.tree.Options();
  opt.threads = a.threads;
  opt.process_exits_after = true;  // run() returns to main(), which exits.
  opt.collect_inputs = !a.output.empty() || !a.write_baseline.empty();  // For ScanGuard.
  auto size = ParseSize(a.max_size);
  if (!size) return size.take_error();
  opt.max_file_size = *size;
  return opt;
}

// A terminal sees what is being scanned until the scan is done.
Result<ScanReport> ScanShowingProgress(const ScanOptions& opt, Io& io) {
  if (io.err_is_tty) io.err << "scanning " << opt.paths.front().string() << " ...\r" << std::flush;
  auto report = Scan(opt);
  if (io.err_is_tty) io.err << "\x1b[2K" << std::flush;
  return report;
}

// What -o and --write-baseline must not replace: every file the scan read, and the baseline.
OutputGuard ScanGuard(const ScanReport& report, const ScanArgs& a) {
  OutputGuard guard;
  guard.inputs.assign(report.inputs.begin(), report.inputs.end());
  for (const auto& p : a.tree.paths) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(p, ec)) guard.inputs.emplace_back(p);
  }
  if (!a.baseline.empty()) guard.inputs.emplace_back(a.baseline);
  guard.force = a.force;
  return guard;
}

// --write-baseline: today's findings, which --baseline leaves out later.
Status WriteBaseline(const ScanReport& report, const std::string& path, const OutputGuard& guard,
                     Io& io) {
  if (auto st = WriteFileAtomic(path, BaselineText(report), guard); !st) return st.take_error();
  io.err << "dualtrack: recorded " << report.findings.size() << " finding"
         << (report.findings.size() == 1 ? "" : "s") << " in " << path << "; scan with --baseline "
         << path << " to report only new ones\n";
  return OkStatus();
}

// https://no-color.org and https://force-color.org: NO_COLOR wins, FORCE_COLOR colours logs that
// are not terminals (CI), --color always / never overrides both.
bool UseColor(const ScanArgs& a, const Io& io) {
  auto set = [](const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0';
  };
  return a.color == "always" || (a.color == "auto" && a.output.empty() && !set("NO_COLOR") &&
                                 (io.out_is_tty || set("FORCE_COLOR")));
}

Result<std::string> FormatReport(const ScanReport& report, const ScanArgs& a,
                                 std::optional<Severity> threshold, const Io& io) {
  if (a.format == "json") return ScanReportJsonText(report, DefaultThreads(a.threads));
  if (a.format == "sarif") {
    auto reg = LoadRegistry();
    if (!reg) return reg.take_error();
    return FormatSarif(report, *reg);
  }
  if (a.format == "markdown") return FormatMarkdown(report, a.statistics);
  if (a.format == "github") return FormatGithub(report);
  if (a.format == "junit") return FormatJunit(report, threshold);
  return FormatText(report, UseColor(a, io), a.statistics);
}

}  // namespace

Result<ExitCode> RunScanCommand(const std::vector<std::string>& args, Io& io) {
  CLI::App app{
      "Inventory of a project's CUDA dependencies: device calls, CUDA-only libraries and "
      "operators, CUDA extensions and builds, environment pins and binaries. Python is "
      "lexed (comments, docstrings and prose never count), guards and reachability from "
      "the entry scripts are reported.",
      "dualtrack scan"};
  ScanArgs a;
  DeclareScanOptions(app, a);
  if (auto early = ParseArgs(app, args, io)) return *early;
  auto opt = ToScanOptions(a);
  if (!opt) return opt.take_error();

  auto report = ScanShowingProgress(*opt, io);
  if (!report) return report.take_error();
  if (!a.write_baseline.empty()) {
    if (auto st = WriteBaseline(*report, a.write_baseline, ScanGuard(*report, a), io); !st)
      return st.take_error();
    return ExitCode::kOk;
  }
  if (!a.baseline.empty()) {
    auto matched = ApplyBaseline(*report, a.baseline);
    if (!matched) return matched.take_error();
    report->baseline = a.baseline;
    report->baselined = *matched;
  }

  std::optional<Severity> threshold;
  if (a.fail_on != "never") threshold = *ParseSeverity(a.fail_on);
  auto text = FormatReport(*report, a, threshold, io);
  if (!text) return text.take_error();
  if (auto st = WriteOutput(a.output, *text, io, ScanGuard(*report, a)); !st)
    return st.take_error();
  if (!threshold) return ExitCode::kOk;
  for (const auto& f : report->findings)
    if (f.severity >= *threshold) return ExitCode::kFindings;
  return ExitCode::kOk;
}

namespace {

// `rule --markdown DIR` replaces only pages it wrote itself (they say so near their top): a
// folder's own README.md or notes are refused unless --force.
Status CheckRulePages(const std::filesystem::path& dir, const Registry& reg, bool force) {
  std::vector<std::filesystem::path> pages = {dir / "README.md"};
  for (const auto& r : reg.rules()) pages.push_back(dir / (r.code + ".md"));
  for (const auto& page : pages) {
    if (auto st = CheckOutputPath(page); !st) return st;
    std::error_code ec;
    if (force || !std::filesystem::exists(page, ec)) continue;
    auto text = ReadFile(page, std::uint64_t{1} << 20);
    if (text && text->substr(0, 4096).find("dualtrack rule --all --markdown") != std::string::npos)
      continue;
    return MakeError(ErrorCode::kUsage,
                     "refusing to replace " + page.string() +
                         ": it is not a rule page written by `dualtrack rule --all --markdown` "
                         "(choose an empty folder, or --force to replace it)",
                     page.string());
  }
  return OkStatus();
}

}  // namespace

Result<ExitCode> RunRuleCommand(const std::vector<std::string>& args, Io& io) {
  CLI::App app{"Explain a scan rule: its class, severity, why it matters and what to use instead.",
               "dualtrack rule"};
  std::string code, markdown_dir, format = "text";
  bool all = false, list = false, force = false;
  app.add_option("code", code, "Rule code, e.g. DT101");
  app.add_flag("--list", list, "One line per rule");
  app.add_flag("--all", all, "Every rule");
  app.add_option("--markdown", markdown_dir,
                 "With --all: write one page per rule and README.md into this folder");
  app.add_option("--format", format, "text or json")->check(CLI::IsMember({"text", "json"}));
  app.add_flag("--force", force, "With --markdown: replace files that are not rule pages");
  app.footer(
      "Examples:\n  dualtrack rule DT201\n  dualtrack rule --list\n"
      "  dualtrack rule --all --markdown docs/rules   # regenerate the rule pages");
  if (auto early = ParseArgs(app, args, io)) return *early;
  auto reg = LoadRegistry();
  if (!reg) return reg.take_error();

  if (!markdown_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(markdown_dir, ec);
    if (ec) return MakeError(ErrorCode::kIo, ec.message(), markdown_dir);
    if (auto st = CheckRulePages(markdown_dir, *reg, force); !st) return st.take_error();
    for (const auto& r : reg->rules()) {
      if (auto st = WriteFileAtomic(std::filesystem::path(markdown_dir) / (r.code + ".md"),
                                    RuleMarkdown(r, *reg));
          !st)
        return st.take_error();
    }
    if (auto st = WriteFileAtomic(std::filesystem::path(markdown_dir) / "README.md",
                                  RuleIndexMarkdown(*reg));
        !st)
      return st.take_error();
    io.out << "wrote " << reg->rules().size() << " rule pages to " << markdown_dir << "\n";
    return ExitCode::kOk;
  }
  auto to_json = [](const Rule& r) {
    return nlohmann::json{{"code", r.code},
                          {"class", FindingClassName(r.cls)},
                          {"severity", SeverityName(r.severity)},
                          {"title", r.title},
                          {"message", r.message},
                          {"replacement", r.replacement},
                          {"explanation", r.explanation}};
  };
  if (list || all) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& r : reg->rules()) {
      if (format == "json")
        arr.push_back(to_json(r));
      else if (all)
        io.out << RuleText(r, *reg) << "\n";
      else
        io.out << r.code << "  " << FindingClassName(r.cls) << "  " << SeverityName(r.severity)
               << "  " << r.title << "\n";
    }
    if (format == "json") io.out << arr.dump(2) << "\n";
    return ExitCode::kOk;
  }
  if (code.empty())
    return MakeError(ErrorCode::kUsage, "name a rule code (dualtrack rule DT101) or use --list");
  const std::string upper = Upper(code);
  const Rule* r = reg->FindRule(upper);
  if (r == nullptr) {
    const std::string hint = reg->ClosestCode(upper);
    return MakeError(ErrorCode::kUsage, "unknown rule '" + code + "'" +
                                            (hint.empty() ? "" : "; did you mean " + hint + "?") +
                                            " (dualtrack rule --list shows them all)");
  }
  if (format == "json")
    io.out << to_json(*r).dump(2) << "\n";
  else
    io.out << RuleText(*r, *reg);
  return ExitCode::kOk;
}

}  // namespace dt::scan
