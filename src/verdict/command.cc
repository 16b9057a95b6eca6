// Entry points of `dualtrack report` and `dualtrack audit`.
#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (fmt >= 11 keeps it here)

#include <array>
#include <cctype>
#include <functional>
#include <sstream>
#include <system_error>

#include "app/args.h"
#include "app/commands.h"
#include "app/version.h"
#include "cost/render.h"
#include "util/fs.h"
#include "util/strings.h"
#include "verdict/audit.h"
#include "verdict/evidence.h"
#include "verdict/project_page.h"
#include "verdict/render.h"
#include "verdict/verdict.h"

namespace dt::verdict {

namespace {

namespace fs = std::filesystem;

Result<std::string> FormatFor(const std::string& output, const std::string& format) {
  if (!format.empty()) return format == "markdown" ? std::string("md") : format;
  if (EndsWith(output, ".html") || EndsWith(output, ".htm")) return std::string("html");
  if (EndsWith(output, ".md") || EndsWith(output, ".markdown")) return std::string("md");
  if (EndsWith(output, ".json")) return std::string("json");
  return MakeError(ErrorCode::kUsage, "cannot tell the format from '" + output +
                                          "': name it .html, .md or .json, or pass --format");
}

// Writes the report in `format` to `out` (JSON as it is made: a large scan's report is never whole
// in memory).
void Render(const Report& report, const std::string& format, std::ostream& out) {
  if (format == "json") {
    RenderJson(report, out);
  } else {
    out << (format == "html" ? RenderHtml(report) : RenderMarkdown(report));
  }
}

// Exit 1 when the verdict is at or below the user's --fail-on level (cuda-only, dev-only; the
// option's check admits only those and "never").
ExitCode ExitFor(const Report& report, const std::string& fail_on) {
  if (fail_on == "never") return ExitCode::kOk;
  const Verdict threshold =
      fail_on == ToString(Verdict::kCudaOnly) ? Verdict::kCudaOnly : Verdict::kDevOnly;
  // Worst first: cuda-only, dev-only, mac-ready.
  auto rank = [](Verdict v) {
    return v == Verdict::kCudaOnly ? 0 : v == Verdict::kDevOnly ? 1 : 2;
  };
  return rank(report.verdict) <= rank(threshold) ? ExitCode::kFindings : ExitCode::kOk;
}

// One experiment: its report is report.html (and .md, .json beside it). Several: report.html is
// the project's page (the worst verdict and the table of experiments), and each experiment's full
// report is report.<experiment>.html, linked from it by a relative name, so a copied or shared
// folder keeps working.
Result<std::vector<std::string>> WriteAuditReports(AuditResult& result, const fs::path& html,
                                                   const fs::path& project,
                                                   const OutputGuard& guard) {
  const bool paged = result.experiments.size() > 1;
  std::vector<fs::path> htmls;
  std::vector<ExperimentRow> rows;
  for (const ExperimentVerdict& e : result.experiments) {
    fs::path h = html;
    if (paged) {
      std::string safe = e.experiment.name;
      for (char& c : safe) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_')) c = '_';
      }
      h.replace_filename(html.stem().string() + "." + safe + html.extension().string());
    }
    htmls.push_back(h);
    rows.push_back({e.experiment.name, e.experiment.entry, e.experiment.run.value_or(""),
                    e.experiment.source, e.report.verdict, e.report.level,
                    e.report.reasons.empty() ? "" : e.report.reasons.front(),
                    h.filename().string()});
  }
  std::error_code ec;
  if (html.has_parent_path()) {
    fs::create_directories(html.parent_path(), ec);
    if (ec) {
      return MakeError(ErrorCode::kIo, "cannot create the directory: " + ec.message(),
                       html.parent_path().string());
    }
  }
  // A page and its Markdown and JSON siblings, in the formats they are rendered in.
  auto three = [](const fs::path& h) {
    return std::array{std::pair{h, "html"}, std::pair{fs::path(h).replace_extension(".md"), "md"},
                      std::pair{fs::path(h).replace_extension(".json"), "json"}};
  };
  // Every page and its siblings are checked before the first is written: all or none.
  std::vector<fs::path> all;
  if (paged)
    for (const auto& page : three(html)) all.push_back(page.first);
  for (const fs::path& h : htmls)
    for (const auto& page : three(h)) all.push_back(page.first);
  if (auto st = CheckOutputPaths(all, guard); !st.ok()) return st.take_error();
  std::vector<std::string> files;
  auto write_three = [&](const fs::path& h,
                         const std::function<void(const std::string&, std::ostream&)>& render) {
    for (const auto& [path, format] : three(h)) {
      const std::string f = format;  // Clang 14 lambdas cannot capture a structured binding.
      auto write = [&](std::ostream& out) { render(f, out); };
      if (auto s = WriteFileAtomic(path, write, guard); !s.ok()) return s;
      files.push_back(path.string());
    }
    return OkStatus();
  };
  if (paged) {
    const ProjectPage page{FolderName(project.string()), rows};
    auto st = write_three(html, [&](const std::string& f, std::ostream& out) {
      if (f == "html") out << RenderProjectHtml(page);
      if (f == "md") out << RenderProjectMarkdown(page);
      if (f == "json") out << ProjectJson(page).dump(2) << "\n";
    });
    if (!st.ok()) return st.take_error();
  }
  for (std::size_t i = 0; i < result.experiments.size(); ++i) {
    Report& report = result.experiments[i].report;
    report.experiments = rows;
    if (paged) report.project_page = html.filename().string();
    report.report_dir = html.has_parent_path() ? html.parent_path().string() : ".";
    auto st = write_three(htmls[i],
                          [&](const std::string& f, std::ostream& out) { Render(report, f, out); });
    if (!st.ok()) return st.take_error();
  }
  return files;
}

std::string RenderAuditText(const AuditResult& result) {
  std::string out;
  if (result.experiments.size() > 1) {
    out += "experiments:\n";
    for (const ExperimentVerdict& e : result.experiments) {
      out += fmt::format("  {:<16} {:<24} {} ({})\n", e.experiment.name,
                         e.experiment.entry.empty() ? "(whole project)" : e.experiment.entry,
                         ToString(e.report.verdict), ToString(e.report.level));
    }
  }
  for (const ExperimentVerdict& e : result.experiments) {
    out += fmt::format("\n== experiment {}{} ==\n", e.experiment.name,
                       e.experiment.entry.empty() ? "" : " (" + e.experiment.entry + ")");
    out += RenderText(e.report);
  }
  return out;
}

nlohmann::json AuditJson(const AuditResult& result) {
  nlohmann::json exps = nlohmann::json::array();
  for (const ExperimentVerdict& e : result.experiments) {
    exps.push_back({{"name", e.experiment.name},
                    {"entry", e.experiment.entry},
                    {"run", e.experiment.run ? nlohmann::json(*e.experiment.run) : nullptr},
                    {"source", e.experiment.source},
                    {"verdict", ToString(e.report.verdict)},
                    {"evidence_level", ToString(e.report.level)},
                    {"report", ToJson(e.report)}});
  }
  nlohmann::json problems = nlohmann::json::array();
  for (const RunProblem& p : result.run_problems) {
    problems.push_back({{"experiment", p.experiment},
                        {"outcome", bundle::ToString(p.outcome)},
                        {"reason", p.reason},
                        {"missing_package",
                         p.missing_package.empty() ? nullptr : nlohmann::json(p.missing_package)},
                        {"stderr_tail", p.stderr_tail},
                        {"bundle", p.bundle.empty() ? nullptr : nlohmann::json(p.bundle)}});
  }
  return {{"schema", "dualtrack.audit/1"},
          {"generator", std::string("dualtrack ") + kVersion},
          {"experiments", exps},
          {"run_problems", problems}};
}

// `dualtrack report`'s options as parsed: the evidence files and where the report goes.
struct ReportArgs {
  std::string scan, env, baseline, coverage, output, format, fail_on = "never";
  std::vector<std::string> tracks, compares, macs;
  std::optional<std::int64_t> steps;
  double max_hours = cost::kDefaultMaxHours;
  bool remote = false, force = false;
};

void DeclareReportOptions(CLI::App& app, ReportArgs& a) {
  app.add_option("--scan", a.scan, "dualtrack.scan/1 JSON (dualtrack scan --format json)");
  app.add_option("--env", a.env, "dualtrack.env/1 JSON of the host the report is about");
  app.add_option("--baseline", a.baseline, "dualtrack.baseline/1 JSON (dualtrack freeze)");
  app.add_option("--track", a.tracks, "NAME=BUNDLE_DIR of a run bundle (repeatable)");
  app.add_option("--compare", a.compares, "dualtrack.compare/1 JSON (repeatable)");
  app.add_option("--coverage", a.coverage, "dualtrack.coverage/1 JSON");
  app.add_option("--mac", a.macs,
                 "A Mac to predict the traced step for, as the lab names it ('M3 Max 36GB'; "
                 "repeatable; default: M2 16GB, M3 Pro 36GB, M4 Max 128GB; docs/devices.md)");
  app.add_option("--steps", a.steps,
                 "Optimizer steps of the designated (formal) run: its predicted time per Mac "
                 "is checked against --max-hours")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-hours", a.max_hours,
                 "The longest designated run the lab accepts on a Mac (default: 72)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--remote-data-confirmed", a.remote,
               "State that the data handling of the remote machine was checked (shown as your "
               "statement)");
  app.add_option("-o,--output", a.output,
                 "report.html, report.md or report.json (default: "
                 "Markdown on stdout)");
  app.add_flag("--force", a.force,
               "Let -o replace one of the report's inputs, or write inside a track's bundle "
               "(both refused otherwise)");
  app.add_option("--format", a.format, "html, md or json (default: from the -o extension)")
      ->check(CLI::IsMember({"html", "md", "markdown", "json"}));
  app.add_option("--fail-on", a.fail_on, "exit 1 when the verdict is this or worse")
      ->check(CLI::IsMember({"never", "cuda-only", "dev-only"}));
  app.footer(
      "Examples:\n"
      "  dualtrack report --scan scan.json --baseline baseline.json \\\n"
      "      --track cuda=runs/cuda --track mps=runs/mps --compare compare.json -o report.html\n"
      "  dualtrack report --scan scan.json --coverage coverage.json -o report.md");
}

// Loads each --track NAME=BUNDLE_DIR into `ev`; names must be unique.
Status LoadTracks(const std::vector<std::string>& specs, Evidence& ev) {
  for (const std::string& spec : specs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      return MakeError(
          ErrorCode::kUsage,
          "--track takes NAME=BUNDLE_DIR (e.g. --track mps=runs/mps), got '" + spec + "'");
    }
    const std::string name = spec.substr(0, eq);
    for (const Track& t : ev.tracks) {
      if (t.name == name) {
        return MakeError(ErrorCode::kUsage, "two tracks are named '" + name + "'");
      }
    }
    auto t = LoadTrack(name, spec.substr(eq + 1));
    if (!t.ok()) return t.take_error();
    ev.tracks.push_back(std::move(*t));
  }
  return OkStatus();
}

// Every piece of evidence given, in the order of the options; what is not given stays missing.
Result<Evidence> LoadEvidence(const ReportArgs& a) {
  Evidence ev;
  ev.remote_data_confirmed = a.remote;
  if (!a.scan.empty()) {
    auto s = LoadScan(a.scan);
    if (!s.ok()) return s.take_error();
    ev.scan = std::move(*s);
  }
  if (!a.env.empty()) {
    auto e = LoadEnv(a.env);
    if (!e.ok()) return e.take_error();
    ev.env = std::move(*e);
  }
  if (!a.baseline.empty()) {
    auto b = LoadBaseline(a.baseline);
    if (!b.ok()) return b.take_error();
    ev.baseline = std::move(*b);
  }
  if (auto st = LoadTracks(a.tracks, ev); !st.ok()) return st.take_error();
  for (const std::string& c : a.compares) {
    auto cmp = LoadComparison(c);
    if (!cmp.ok()) return cmp.take_error();
    ev.comparisons.push_back(std::move(*cmp));
  }
  if (!a.coverage.empty()) {
    auto c = LoadCoverage(a.coverage);
    if (!c.ok()) return c.take_error();
    ev.coverage = std::move(*c);
  }
  auto macs = cost::ResolveMacs(a.macs);
  if (!macs.ok()) return macs.take_error();
  ev.macs = std::move(*macs);
  ev.run_plan.steps = a.steps;
  ev.run_plan.max_hours = a.max_hours;
  ev.calibration = cost::ShippedCalibration();
  return ev;
}

// The report must never replace the evidence it was made from.
OutputGuard EvidenceGuard(const ReportArgs& a) {
  OutputGuard guard;
  for (const std::string* in : {&a.scan, &a.env, &a.baseline, &a.coverage}) {
    if (!in->empty()) guard.inputs.emplace_back(*in);
  }
  for (const std::string& c : a.compares) guard.inputs.emplace_back(c);
  // A track's bundle is read whole (its logs too): none of its files is replaced.
  for (const std::string& t : a.tracks) guard.input_trees.emplace_back(t.substr(t.find('=') + 1));
  guard.force = a.force;
  return guard;
}

// Markdown on stdout by default; else the -o file in the format --format or its extension names.
Result<ExitCode> WriteReport(Report report, const ReportArgs& a, Io& io) {
  if (a.output.empty() || a.output == "-") {
    auto f = a.format.empty() ? Result<std::string>(std::string("md")) : FormatFor("", a.format);
    if (!f.ok()) return f.take_error();
    if (*f == "json") {
      Render(report, *f, io.out);  // Streamed (a large scan's report); JSON escapes names itself.
    } else {
      std::ostringstream text;  // Names from the project reach the terminal: escaped.
      Render(report, *f, text);
      io.out << EscapeControl(text.str());
    }
    return ExitFor(report, a.fail_on);
  }
  auto f = FormatFor(a.output, a.format);
  if (!f.ok()) return f.take_error();
  const fs::path out_path(a.output);
  if (out_path.has_parent_path()) {  // As audit does: `-o newdir/report.html` makes newdir.
    std::error_code ec;
    fs::create_directories(out_path.parent_path(), ec);
    if (ec) {
      return MakeError(ErrorCode::kIo, "cannot create the directory: " + ec.message(),
                       out_path.parent_path().string());
    }
  }
  report.report_dir = out_path.has_parent_path() ? out_path.parent_path().string() : ".";
  auto write = [&](std::ostream& out) { Render(report, *f, out); };
  if (auto s = WriteFileAtomic(a.output, write, EvidenceGuard(a)); !s.ok()) {
    return s.take_error();
  }
  io.out << fmt::format("{}: {} ({} evidence)\n", a.output, ToString(report.verdict),
                        ToString(report.level));
  return ExitFor(report, a.fail_on);
}

// `dualtrack audit`'s options as parsed, before they are checked.
struct AuditArgs {
  AuditOptions opts;
  std::string project, output, run, fail_on = "never", format = "text", keep_run;
  std::vector<std::string> ignore, exclude, select;
  double timeout = 0;
  CLI::Option* timeout_opt = nullptr;  // Given or not: there is no default timeout.
};

void DeclareAuditOptions(CLI::App& app, AuditArgs& a) {
  app.add_option("PATH", a.project, "the project to audit")->required();
  app.add_option("--entry", a.opts.entries,
                 "entry script of an experiment, or a folder for a test suite (repeatable; "
                 "default: [tool.dualtrack] experiments, else the scripts a user would run)");
  app.add_option("--torch", a.opts.torch, "PyTorch version to predict MPS coverage for");
  app.add_option("--run", a.run,
                 "the minimal task: script and arguments; it belongs to the experiment whose "
                 "entry it runs (default: the experiments' run in pyproject.toml)");
  app.add_option("--python", a.opts.python, "Python interpreter with torch installed");
  a.timeout_opt = app.add_option("--timeout", a.timeout, "Stop each run after SEC seconds");
  a.timeout_opt->check(TimeoutSeconds());
  app.add_option("--keep-run", a.keep_run,
                 "Keep the run bundles in DIR/<experiment> (default: a temporary folder)");
  app.add_flag("--trust-project-run", a.opts.trust_project_run,
               "Run the command the project declares in pyproject.toml ([tool.dualtrack] run): "
               "that is the project's code, so it runs only when asked (--run names one itself)");
  app.add_flag("--force", a.opts.force,
               "Let -o replace a file the audit reads, and --keep-run a folder that is not a "
               "bundle (both refused otherwise)");
  app.add_option("--exclude", a.exclude, "Glob of paths to leave out (relative to the root)");
  app.add_option("--ignore", a.ignore, "Rule code or prefix to drop (DT106, DT4; commas allowed)");
  app.add_option("--select", a.select,
                 "Keep only these rule codes or prefixes (DT1, DT203; commas allowed)");
  app.add_option("--format,-f", a.format, "stdout: text (summary) or json (the whole audit)")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_flag("--remote-data-confirmed", a.opts.remote_data_confirmed,
               "State that the data handling of the remote machine was checked");
  app.add_option("-o,--output", a.output,
                 "report.html (report.md and report.json are written beside it, and "
                 "report.<experiment>.* for the other experiments; default: "
                 "./dualtrack-report/report.html)");
  app.add_option("--fail-on", a.fail_on, "exit 1 when a verdict is this or worse")
      ->check(CLI::IsMember({"never", "cuda-only", "dev-only"}));
  app.footer(
      "Exit status: 0, or 1 with --fail-on; 2 on a usage error or when a run could not start\n"
      "(a missing Python package is named); 130 when interrupted by Ctrl-C (no report written).\n\n"
      "Examples:\n"
      "  dualtrack audit examples/cuda-research --trust-project-run\n"
      "  dualtrack audit examples/cuda-research --run \"train.py --device cpu --steps 2 "
      "--portable\" -o portable/report.html\n"
      "  dualtrack audit . --entry infer.py --entry train.py --ignore DT4 --format json");
}

AuditOptions ToAuditOptions(const AuditArgs& a) {
  AuditOptions opts = a.opts;
  opts.project = a.project;
  if (!a.run.empty()) opts.run = a.run;
  if (a.timeout_opt->count() > 0) opts.timeout_s = a.timeout;
  opts.keep_run = a.keep_run;
  opts.ignore = SplitCodes(a.ignore);
  opts.select = SplitCodes(a.select);
  opts.exclude = a.exclude;
  return opts;
}

// -o names the HTML report (default: ./dualtrack-report/report.html); a .md or .json name is taken
// for the HTML beside it.
Result<fs::path> HtmlReportPath(const std::string& output) {
  fs::path html = output.empty() ? fs::path("dualtrack-report") / "report.html" : fs::path(output);
  if (html.extension() != ".html" && html.extension() != ".htm") {
    if (html.extension() == ".md" || html.extension() == ".json") {
      html.replace_extension(".html");
    } else {
      return MakeError(ErrorCode::kUsage, "-o names the HTML report: use a .html file name");
    }
  }
  return html;
}

// What went wrong with the runs, after the audit's log, on stderr.
void PrintRunProblems(const AuditResult& result, Io& io) {
  for (const RunProblem& p : result.run_problems) {
    io.err << fmt::format("dualtrack audit: experiment {}: the run {}: {}\n", p.experiment,
                          p.outcome == bundle::OutcomeKind::kCouldNotStart
                              ? std::string("could not start")
                              : std::string("ended ") + bundle::ToString(p.outcome),
                          p.reason);
    if (!p.stderr_tail.empty()) {
      io.err << "--- last lines of the script's stderr ---\n" << p.stderr_tail << "\n---\n";
    }
    if (!p.bundle.empty()) io.err << "the run's bundle is kept in " << p.bundle << "\n";
  }
}

// A run that could not start is an error; else exit 1 when a verdict is at --fail-on or worse.
Result<ExitCode> AuditExit(const AuditResult& result, const std::string& fail_on) {
  for (const RunProblem& p : result.run_problems) {
    if (p.outcome == bundle::OutcomeKind::kCouldNotStart) {
      return MakeError(
          ErrorCode::kInput,
          fmt::format("the run of experiment {} could not start: {}", p.experiment, p.reason));
    }
  }
  ExitCode code = ExitCode::kOk;
  for (const ExperimentVerdict& e : result.experiments) {
    if (ExitFor(e.report, fail_on) == ExitCode::kFindings) code = ExitCode::kFindings;
  }
  return code;
}

}  // namespace

Result<ExitCode> RunReportCommand(const std::vector<std::string>& args, Io& io) {
  CLI::App app{
      "Join the evidence of the other stages (scan, env, baseline, run bundles, coverage, "
      "compare) into the verdict (mac-ready, dev-only or cuda-only), the checklist of the "
      "method, the dual-track plan and the next steps. Every piece is optional; what is "
      "not given is reported as missing, never guessed.",
      "dualtrack report"};
  ReportArgs a;
  DeclareReportOptions(app, a);
  if (auto early = ParseArgs(app, args, io)) return *early;
  auto ev = LoadEvidence(a);
  if (!ev.ok()) return ev.take_error();
  return WriteReport(Decide(std::move(*ev)), a, io);
}

Result<ExitCode> RunAuditCommand(const std::vector<std::string>& args, Io& io) {
  CLI::App app{
      "The one-step main job, per designated experiment: scan the project (reachability "
      "from the experiment's entry), diagnose this host, run the experiment's minimal "
      "task on the CPU under the operator tracer (CUDA calls redirected to the CPU), "
      "predict its MPS operator coverage, then decide and write the HTML, Markdown and "
      "JSON reports. No GPU and no Mac needed; the verdict says its evidence level.",
      "dualtrack audit"};
  AuditArgs a;
  DeclareAuditOptions(app, a);
  if (auto early = ParseArgs(app, args, io)) return *early;
  const AuditOptions opts = ToAuditOptions(a);
  auto html = HtmlReportPath(a.output);
  if (!html.ok()) return html.take_error();

  // On a terminal each stage shows as it starts and ends (a run takes a while); piped, the stages
  // are quiet (what went wrong with a run is still printed below, with the script's stderr).
  std::ostringstream quiet;
  std::ostream& log = io.err_is_tty ? io.err : quiet;
  auto result = RunAudit(opts, log);
  if (!result.ok()) return result.take_error();
  if (result->interrupted) {
    io.err << "dualtrack audit: interrupted; no report written\n";
    return ExitCode::kInterrupted;
  }
  OutputGuard guard{{}, {}, {}, opts.force};
  guard.inputs.assign(result->inputs.begin(), result->inputs.end());
  auto written = WriteAuditReports(*result, *html, opts.project, guard);
  if (!written.ok()) return written.take_error();

  PrintRunProblems(*result, io);
  if (a.format == "json") {
    io.out << AuditJson(*result).dump(2) << "\n";
  } else {
    // File and experiment names come from the project: escaped before they reach a terminal.
    std::string text = RenderAuditText(*result);
    for (const std::string& r : result->ran) text += "ran: " + r + "\n";
    for (const std::string& r : result->not_run)
      text += "not run (declared by the project; --trust-project-run runs it): " + r + "\n";
    text += fmt::format("reports: {}\n", fmt::join(*written, ", "));
    io.out << EscapeControl(text);
  }
  return AuditExit(*result, a.fail_on);
}

}  // namespace dt::verdict
