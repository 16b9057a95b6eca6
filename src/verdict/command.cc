// Entry points of `dualtrack report` and `dualtrack audit`.
#include <fmt/format.h>

#include <system_error>

#include "app/args.h"
#include "app/commands.h"
#include "util/fs.h"
#include "util/strings.h"
#include "verdict/audit.h"
#include "verdict/evidence.h"
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
  return MakeError(ErrorCode::kUsage,
                   "cannot tell the format from '" + output +
                       "': name it .html, .md or .json, or pass --format");
}

std::string Render(const Report& report, const std::string& format) {
  if (format == "html") return RenderHtml(report);
  if (format == "json") return RenderJson(report);
  return RenderMarkdown(report);
}

// Exit 1 when the verdict is at or below the user's --fail-on level.
ExitCode ExitFor(const Report& report, const std::string& fail_on) {
  auto rank = [](const std::string& v) { return v == "cuda-only" ? 0 : (v == "dev-only" ? 1 : 2); };
  if (fail_on == "never") return ExitCode::kOk;
  return rank(report.verdict) <= rank(fail_on) ? ExitCode::kFindings : ExitCode::kOk;
}

}  // namespace

Result<ExitCode> RunReportCommand(const std::vector<std::string>& args, Io& io) {
  CLI::App app{"Join the evidence of the other stages (scan, env, baseline, run bundles, coverage, "
               "compare) into the verdict (mac-ready, dev-only or cuda-only), the checklist of the "
               "method, the dual-track plan and the next steps. Every piece is optional; what is "
               "not given is reported as missing, never guessed.",
               "dualtrack report"};
  std::string scan, env, baseline, coverage, output, format, fail_on = "never";
  std::vector<std::string> tracks, compares;
  bool remote = false;
  app.add_option("--scan", scan, "dualtrack.scan/1 JSON (dualtrack scan --format json)");
  app.add_option("--env", env, "dualtrack.env/1 JSON of the host the report is about");
  app.add_option("--baseline", baseline, "dualtrack.baseline/1 JSON (dualtrack freeze)");
  app.add_option("--track", tracks, "NAME=BUNDLE_DIR of a run bundle (repeatable)");
  app.add_option("--compare", compares, "dualtrack.compare/1 JSON (repeatable)");
  app.add_option("--coverage", coverage, "dualtrack.coverage/1 JSON");
  app.add_flag("--remote-data-confirmed", remote,
               "State that the data handling of the remote machine was checked (shown as your "
               "statement)");
  app.add_option("-o,--output", output, "report.html, report.md or report.json (default: "
                                        "Markdown on stdout)");
  app.add_option("--format", format, "html, md or json (default: from the -o extension)")
      ->check(CLI::IsMember({"html", "md", "markdown", "json"}));
  app.add_option("--fail-on", fail_on, "exit 1 when the verdict is this or worse")
      ->check(CLI::IsMember({"never", "cuda-only", "dev-only"}));
  app.footer(
      "Examples:\n"
      "  dualtrack report --scan scan.json --baseline baseline.json \\\n"
      "      --track cuda=runs/cuda --track mps=runs/mps --compare compare.json -o report.html\n"
      "  dualtrack report --scan scan.json --coverage coverage.json -o report.md");
  if (auto early = ParseArgs(app, args, io)) return *early;

  Evidence ev;
  ev.remote_data_confirmed = remote;
  if (!scan.empty()) {
    auto s = LoadScan(scan);
    if (!s.ok()) return s.take_error();
    ev.scan = std::move(*s);
  }
  if (!env.empty()) {
    auto e = LoadEnv(env);
    if (!e.ok()) return e.take_error();
    ev.env = std::move(*e);
  }
  if (!baseline.empty()) {
    auto b = LoadBaseline(baseline);
    if (!b.ok()) return b.take_error();
    ev.baseline = std::move(*b);
  }
  for (const std::string& spec : tracks) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      return MakeError(ErrorCode::kUsage,
                       "--track takes NAME=BUNDLE_DIR (e.g. --track mps=runs/mps), got '" + spec +
                           "'");
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
  for (const std::string& c : compares) {
    auto cmp = LoadComparison(c);
    if (!cmp.ok()) return cmp.take_error();
    ev.comparisons.push_back(std::move(*cmp));
  }
  if (!coverage.empty()) {
    auto c = LoadCoverage(coverage);
    if (!c.ok()) return c.take_error();
    ev.coverage = std::move(*c);
  }

  const Report report = Decide(std::move(ev));
  if (output.empty() || output == "-") {
    auto f = format.empty() ? Result<std::string>(std::string("md")) : FormatFor("", format);
    if (!f.ok()) return f.take_error();
    io.out << Render(report, *f);
    return ExitFor(report, fail_on);
  }
  auto f = FormatFor(output, format);
  if (!f.ok()) return f.take_error();
  // The report must never replace the evidence it was made from.
  OutputGuard guard;
  for (const std::string* in : {&scan, &env, &baseline, &coverage}) {
    if (!in->empty()) guard.inputs.emplace_back(*in);
  }
  for (const std::string& c : compares) guard.inputs.emplace_back(c);
  for (const std::string& t : tracks) {
    const std::filesystem::path dir = t.substr(t.find('=') + 1);
    for (const char* name : {"manifest.json", "ops.jsonl", "metrics.jsonl", "tensors.safetensors"}) {
      guard.inputs.push_back(dir / name);
    }
  }
  if (auto s = WriteFileAtomic(output, Render(report, *f), guard); !s.ok()) return s.take_error();
  io.out << fmt::format("{}: {} ({} evidence)\n", output, report.verdict, ToString(report.level));
  return ExitFor(report, fail_on);
}

Result<ExitCode> RunAuditCommand(const std::vector<std::string>& args, Io& io) {
  CLI::App app{"The one-step main job: scan the project, diagnose this host, run the declared "
               "minimal task on the CPU under the operator tracer (CUDA calls redirected to the "
               "CPU), predict its MPS operator coverage, then decide and write the HTML and "
               "Markdown reports. No GPU and no Mac needed; the verdict says its evidence is "
               "predicted. A stage that is not available leaves its evidence missing.",
               "dualtrack audit"};
  AuditOptions opts;
  std::string project, output, run, fail_on = "never";
  app.add_option("PATH", project, "the project to audit")->required();
  app.add_option("--entry", opts.entry, "entry script for reachability (passed to scan)");
  app.add_option("--torch", opts.torch, "PyTorch version to predict MPS coverage for");
  app.add_option("--run", run,
                 "the minimal task: script and arguments (default: [tool.dualtrack] run in "
                 "pyproject.toml)");
  app.add_option("--python", opts.python, "Python interpreter with torch installed");
  app.add_flag("--remote-data-confirmed", opts.remote_data_confirmed,
               "State that the data handling of the remote machine was checked");
  app.add_option("-o,--output", output,
                 "report.html (report.md and report.json are written beside it; default: "
                 "./dualtrack-report/report.html)");
  app.add_option("--fail-on", fail_on, "exit 1 when the verdict is this or worse")
      ->check(CLI::IsMember({"never", "cuda-only", "dev-only"}));
  app.footer(
      "Examples:\n"
      "  dualtrack audit examples/cuda-research\n"
      "  dualtrack audit examples/cuda-research --run \"train.py --device cpu --steps 2 "
      "--portable\" -o portable/report.html");
  if (auto early = ParseArgs(app, args, io)) return *early;
  opts.project = project;
  if (!run.empty()) opts.run = run;

  fs::path html = output.empty() ? fs::path("dualtrack-report") / "report.html" : fs::path(output);
  if (html.extension() != ".html" && html.extension() != ".htm") {
    if (html.extension() == ".md" || html.extension() == ".json") {
      html.replace_extension(".html");
    } else {
      return MakeError(ErrorCode::kUsage, "-o names the HTML report: use a .html file name");
    }
  }

  std::ostringstream log;
  auto ev = CollectAuditEvidence(opts, log);
  if (!ev.ok()) return ev.take_error();
  const Report report = Decide(std::move(*ev));

  std::error_code ec;
  if (html.has_parent_path()) {
    fs::create_directories(html.parent_path(), ec);
    if (ec) {
      return MakeError(ErrorCode::kIo, "cannot create the directory: " + ec.message(),
                       html.parent_path().string());
    }
  }
  fs::path md = html, json = html;
  md.replace_extension(".md");
  json.replace_extension(".json");
  for (const auto& [path, text] :
       {std::pair{html, RenderHtml(report)}, std::pair{md, RenderMarkdown(report)},
        std::pair{json, RenderJson(report)}}) {
    if (auto s = WriteFileAtomic(path, text); !s.ok()) return s.take_error();
  }
  io.err << log.str();
  io.out << RenderText(report);
  io.out << fmt::format("reports: {}, {}, {}\n", html.string(), md.string(), json.string());
  return ExitFor(report, fail_on);
}

}  // namespace dt::verdict
