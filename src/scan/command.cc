// `dualtrack scan` and `dualtrack rule`: option parsing and output; the work is in scan.cc.
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
  char* end = nullptr;
  unsigned long long v = std::strtoull(num.c_str(), &end, 10);
  if (num.empty() || end == nullptr || *end != '\0')
    return MakeError(ErrorCode::kUsage,
                     "--max-file-size: expected a size such as 16M, got '" + s + "'");
  return static_cast<std::uint64_t>(v) * mult;
}

Result<Registry> LoadRegistry() {
  auto dir = DataDir();
  if (!dir) return dir.take_error();
  return Registry::Load(*dir / "scan");
}

}  // namespace

Result<ExitCode> RunScanCommand(const std::vector<std::string>& args, Io& io) {
  CLI::App app{
      "Inventory of a project's CUDA dependencies: device calls, CUDA-only libraries and "
      "operators, CUDA extensions and builds, environment pins and binaries. Python is "
      "lexed (comments, docstrings and prose never count), guards and reachability from "
      "the entry scripts are reported.",
      "dualtrack scan"};
  TreeSelection tree;
  std::string format = "text", output, fail_on = "fixable", color = "auto", max_size = "16M";
  std::string baseline, write_baseline;
  bool statistics = false;
  unsigned threads = 0;
  app.add_option("paths", tree.paths,
                 "Files or folders to scan (default: .); the first sets the root");
  app.add_option("--format,-f", format,
                 "text, json, sarif, markdown, github (workflow annotations) or junit (XML for "
                 "test-report viewers)")
      ->check(CLI::IsMember({"text", "json", "sarif", "markdown", "github", "junit"}));
  app.add_option("--output,-o", output, "Write the report to this file instead of stdout");
  app.add_option("--entry", tree.entries,
                 "Entry scripts for reachability, or folders whose Python files all are (a test "
                 "suite) (default: [tool.dualtrack] entry and [project.scripts]; else scripts "
                 "with if __name__ == \"__main__\")");
  app.add_option("--exclude", tree.exclude, "Glob of paths to leave out (relative to the root)");
  app.add_option(
      "--ignore", tree.ignore,
      "Rule codes or prefixes to drop, repeated or comma-separated (DT106,DT4); added to "
      "[tool.dualtrack] ignore");
  app.add_option(
      "--select", tree.select,
      "Report only these rule codes or prefixes, repeated or comma-separated (DT2,DT305); "
      "replaces [tool.dualtrack] select");
  app.add_option("--baseline", baseline,
                 "Leave out the findings recorded in this file by --write-baseline: report and "
                 "fail only on new ones");
  app.add_option("--write-baseline", write_baseline,
                 "Record today's findings in this file (after --select / --ignore) and exit 0");
  app.add_option("--fail-on", fail_on,
                 "Exit 1 when a finding has at least this severity: portable, fixable (default), "
                 "replace, blocker, or never")
      ->check(CLI::IsMember({"portable", "fixable", "replace", "blocker", "never"}));
  app.add_flag("--statistics", statistics, "Counts per code and per file with readiness");
  app.add_flag("--no-gitignore", tree.no_gitignore, "Also scan files that .gitignore excludes");
  app.add_flag("--no-config", tree.no_config, "Ignore [tool.dualtrack] in pyproject.toml");
  app.add_option("--max-file-size", max_size, "Skip larger files with a note (default 16M)");
  app.add_option("--threads", threads, "Worker threads (default: all cores)");
  app.add_option("--color", color,
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
      "Suppress one line with `# dualtrack: ignore[DT101]` or `# noqa: DT101`; unknown and unused "
      "suppressions are reported. CI recipe: docs/ci.md.\n"
      "Exit codes: 0 nothing at or above --fail-on, 1 findings at or above it, 2 usage or input "
      "error (a missing path, an unknown rule code or config key, a bad baseline, nothing "
      "scanned).");
  if (auto early = ParseArgs(app, args, io)) return *early;

  ScanOptions opt = tree.Options();
  opt.threads = threads;
  auto size = ParseSize(max_size);
  if (!size) return size.take_error();
  opt.max_file_size = *size;
  if (io.err_is_tty) io.err << "scanning " << opt.paths.front().string() << " ...\r" << std::flush;
  auto report = Scan(opt);
  if (io.err_is_tty) io.err << "\x1b[2K" << std::flush;
  if (!report) return report.take_error();
  if (!write_baseline.empty()) {
    if (auto st = WriteFileAtomic(write_baseline, BaselineText(*report)); !st)
      return st.take_error();
    io.err << "dualtrack: recorded " << report->findings.size() << " finding"
           << (report->findings.size() == 1 ? "" : "s") << " in " << write_baseline
           << "; scan with --baseline " << write_baseline << " to report only new ones\n";
    return ExitCode::kOk;
  }
  if (!baseline.empty()) {
    auto matched = ApplyBaseline(*report, baseline);
    if (!matched) return matched.take_error();
    report->baseline = baseline;
    report->baselined = *matched;
  }

  std::optional<Severity> threshold;
  if (fail_on != "never") threshold = *ParseSeverity(fail_on);
  std::string text;
  if (format == "json") {
    text = ScanReportJsonText(*report);
  } else if (format == "sarif") {
    auto reg = LoadRegistry();
    if (!reg) return reg.take_error();
    text = FormatSarif(*report, *reg);
  } else if (format == "markdown") {
    text = FormatMarkdown(*report, statistics);
  } else if (format == "github") {
    text = FormatGithub(*report);
  } else if (format == "junit") {
    text = FormatJunit(*report, threshold);
  } else {
    // https://no-color.org and https://force-color.org: NO_COLOR wins, FORCE_COLOR colours logs
    // that are not terminals (CI), --color always / never overrides both.
    auto set = [](const char* name) {
      const char* v = std::getenv(name);
      return v != nullptr && *v != '\0';
    };
    bool use_color = color == "always" || (color == "auto" && output.empty() && !set("NO_COLOR") &&
                                           (io.out_is_tty || set("FORCE_COLOR")));
    text = FormatText(*report, use_color, statistics);
  }
  if (output.empty()) {
    io.out << text;
  } else if (auto st = WriteFileAtomic(output, text); !st) {
    return st.take_error();
  }
  if (!threshold) return ExitCode::kOk;
  for (const auto& f : report->findings)
    if (f.severity >= *threshold) return ExitCode::kFindings;
  return ExitCode::kOk;
}

Result<ExitCode> RunRuleCommand(const std::vector<std::string>& args, Io& io) {
  CLI::App app{"Explain a scan rule: its class, severity, why it matters and what to use instead.",
               "dualtrack rule"};
  std::string code, markdown_dir, format = "text";
  bool all = false, list = false;
  app.add_option("code", code, "Rule code, e.g. DT101");
  app.add_flag("--list", list, "One line per rule");
  app.add_flag("--all", all, "Every rule");
  app.add_option("--markdown", markdown_dir,
                 "With --all: write one page per rule and README.md into this folder");
  app.add_option("--format", format, "text or json")->check(CLI::IsMember({"text", "json"}));
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
                          {"class", r.cls},
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
        io.out << r.code << "  " << r.cls << "  " << SeverityName(r.severity) << "  " << r.title
               << "\n";
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
