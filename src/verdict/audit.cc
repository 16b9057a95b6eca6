#include "verdict/audit.h"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (fmt >= 11 keeps it here)

#include <cctype>
#include <map>
#include <sstream>
#include <system_error>
#include <tuple>

#include "bundle/bundle.h"
#include "cost/render.h"
#include "coverage/coverage.h"
#include "env/env.h"
#include "fix/plan.h"
#include "scan/scan.h"
#include "util/fs.h"
#include "util/scoped_dir.h"
#include "util/strings.h"

namespace dt::verdict {

namespace {

namespace fs = std::filesystem;

// What `dualtrack fix --apply` would do with each unguarded Python finding, by the fixer's own
// plan (nothing is written): a rule with a safe fix may still leave a construct it cannot rewrite
// safely (DDP's `device_ids`, `.cuda(i, True)`), which is then an edit by hand.
std::map<std::tuple<std::string, std::int64_t, std::int64_t, std::string>, FixKind> PlannedFixes(
    const scan::ScanReport& report) {
  std::map<std::tuple<std::string, std::int64_t, std::int64_t, std::string>, FixKind> out;
  std::ostringstream warnings;  // A file changed since the scan keeps the rule's own fix.
  auto plan = fix::PlanFixes(report, fix::FixOptions{}, warnings);
  if (!plan.ok()) return out;
  for (const fix::PlannedFinding& p : plan->findings) {
    const fix::Outcome& o = p.outcome;
    out[{p.file, o.cell.value_or(0), o.line, o.code}] = o.fixed            ? FixKind::kSafe
                                                        : o.no_edit_needed ? FixKind::kNotNeeded
                                                        : o.unsafe         ? FixKind::kUnsafe
                                                                           : FixKind::kNone;
  }
  return out;
}

ScanEvidence FromScan(const scan::ScanReport& report, const std::vector<std::string>& select) {
  const auto planned = PlannedFixes(report);
  ScanEvidence s;
  s.source = "scan of " + report.root;
  s.root = report.root;
  s.files_scanned = report.files_scanned;
  s.entries = report.entries;
  if (report.path) {
    auto place = [](const std::optional<scan::PathPlace>& at) -> std::optional<Location> {
      if (!at) return std::nullopt;
      return Location{at->file, at->line, std::nullopt};
    };
    ScanPath p;
    p.cuda_choice = place(report.path->cuda_choice);
    p.mentions_mps = report.path->mentions_mps;
    p.framework_device = report.path->framework_device;
    p.model = place(report.path->model);
    p.model_api = report.path->model_api;
    p.training = place(report.path->training);
    s.path = std::move(p);
  }
  for (const scan::Finding& f : report.findings) {
    if (!Selected(f.code, select)) continue;
    Finding x;
    x.code = f.code;
    x.cls = f.cls;
    x.severity = f.severity;
    x.file = f.file;
    x.line = f.line;
    x.cell = f.cell;
    x.message = f.message;
    x.snippet = f.snippet;
    x.guarded = f.guarded;
    x.reachable = f.reachable;
    x.replacement = f.replacement;
    x.mps_only = f.mps_only;
    x.placement = f.placement;
    x.option_default = f.option_default;
    x.in_import = f.in_import;
    x.reached_by = f.reached_by;
    if (f.fix == "safe") x.fix = FixKind::kSafe;
    if (f.fix == "unsafe") x.fix = FixKind::kUnsafe;
    if (auto it = planned.find({f.file, f.cell.value_or(0), f.line, f.code}); it != planned.end())
      x.fix = it->second;
    s.findings.push_back(std::move(x));
  }
  return s;
}

EnvEvidence FromEnv(const env::EnvReport& r) {
  EnvEvidence e;
  e.source = "this host (dualtrack env)";
  e.os = r.host.os;
  e.os_version = r.host.os_version;
  e.arch = r.host.arch;
  e.cpu = r.host.cpu;
  if (r.host.memory_bytes > 0) e.memory_bytes = static_cast<std::int64_t>(r.host.memory_bytes);
  for (const env::GpuInfo& g : r.gpus) {
    Gpu x{g.vendor, g.name, g.driver.value_or(""), std::nullopt};
    if (g.memory_bytes) x.memory_bytes = static_cast<std::int64_t>(*g.memory_bytes);
    e.gpus.push_back(std::move(x));
  }
  e.nvcc_version = r.cuda.nvcc_version.value_or("");
  e.python_version = r.python.version.value_or("");
  e.torch_installed = r.torch.installed;
  e.torch_version = r.torch.version.value_or("");
  e.torch_cuda_version = r.torch.cuda_version.value_or("");
  if (r.torch.installed) {
    e.cuda_available = r.torch.cuda_available;
    e.mps_built = r.torch.mps_built;
    e.mps_available = r.torch.mps_available;
  }
  if (auto it = r.mps_env.find("PYTORCH_ENABLE_MPS_FALLBACK"); it != r.mps_env.end()) {
    e.mps_fallback = it->second;
  }
  for (const env::Conclusion& c : r.conclusions) e.conclusions.push_back({c.id, c.level, c.text});
  return e;
}

CoverageEvidence FromCoverage(const coverage::CoverageReport& r) {
  CoverageEvidence c;
  c.source = "coverage of the traced run";
  c.torch = r.torch;
  c.evidence = r.evidence;
  for (const coverage::CoverageOp& op : r.ops) {
    CoverageOp x;
    x.op = op.op;
    x.overload = op.overload;
    x.cls = op.cls;
    x.dtypes = op.dtypes;
    x.dtype_issues = op.dtype_issues;
    x.count = op.count;
    if (op.location) x.location = {op.location->file, op.location->line, std::nullopt};
    x.native_since = op.native_since;
    x.mps_op = op.mps_op;
    c.ops.push_back(std::move(x));
  }
  c.upgrade_version = r.upgrade_version;
  c.upgrade_removes = r.upgrade_removes;
  return c;
}

// The experiment's traced CPU run and its coverage prediction, added to `ev`; a run that gives no
// evidence about the task is recorded in `problems`.
void RunExperiment(const AuditOptions& options, const fs::path& project, const Experiment& exp,
                   const fs::path& bundle_dir, Evidence& ev, AuditResult& result,
                   std::ostream& log) {
  auto words = SplitCommandLine(*exp.run);
  if (!words.ok() || words->empty()) {
    ev.missing["run"] = words.ok() ? "the run command is empty" : words.error().ToString();
    return;
  }
  ev.designated_run = *words;
  if (ev.env && ev.env->torch_installed == std::optional<bool>(false)) {
    ev.missing["run"] = "PyTorch is not installed for " + options.python + " on this host";
    ev.missing["coverage"] = "no traced run to predict from";
    return;
  }
  bundle::RunOptions ro;
  ro.track = "cpu";
  ro.redirect_cuda = "cpu";
  ro.quiet = true;
  ro.force = true;
  // Two captured steps: the cost prediction takes the second, past the first step's warm-up,
  // when the run makes one.
  ro.steps = 2;
  ro.out_dir = bundle_dir;
  ro.timeout_s = options.timeout_s;
  // `--run "python3 train.py …"` names its own interpreter; `--run "train.py …"` uses --python.
  if (!StartsWith(fs::path((*words)[0]).filename().string(), "python")) {
    ro.command.push_back(options.python);
  }
  ro.command.insert(ro.command.end(), words->begin(), words->end());
  std::ostringstream run_out, run_err;
  Io run_io{run_out, run_err};
  Result<bundle::RunOutcome> outcome = MakeError(ErrorCode::kInternal, "not run");
  // The run is the slow stage: say what runs before it starts (a terminal shows it at once).
  log << fmt::format("{}: run: started: {}\n", exp.name, fmt::join(ro.command, " ")) << std::flush;
  {
    // The task runs from the project root, as its author runs it, so that the file paths in the
    // trace are relative to the same root as the scan's.
    CurrentDirectory here(project);
    if (!here.ok()) {
      ev.missing["run"] = "cannot change into the project directory " + project.string();
      return;
    }
    outcome = bundle::RunTrack(ro, run_io);
  }
  if (!outcome.ok()) {
    ev.missing["run"] = outcome.error().ToString();
    ev.missing["coverage"] = "no traced run to predict from";
    log << fmt::format("{}: run: missing ({})\n", exp.name, ev.missing["run"]);
    return;
  }
  if (outcome->interrupted) {
    result.interrupted = true;
    return;
  }
  if (!bundle::IsTaskEvidence(outcome->outcome)) {
    RunProblem p{exp.name,
                 outcome->outcome,
                 outcome->reason,
                 outcome->missing_package,
                 outcome->stderr_tail,
                 options.keep_run.empty() ? std::string() : bundle_dir.string()};
    ev.missing["run"] = fmt::format("{}: {}", bundle::ToString(outcome->outcome), outcome->reason);
    ev.missing["coverage"] = "no traced run to predict from";
    log << fmt::format("{}: run: {} ({})\n", exp.name, bundle::ToString(outcome->outcome),
                       outcome->reason);
    result.run_problems.push_back(std::move(p));
    return;
  }
  auto track = LoadTrack("cpu", bundle_dir);
  if (!track.ok()) {
    ev.missing["run"] = track.error().ToString();
    ev.missing["coverage"] = "no traced run to predict from";
    return;
  }
  if (options.keep_run.empty()) track->dir = "(temporary) " + track->dir;
  ev.tracks.push_back(std::move(*track));
  log << fmt::format("{}: run: {}\n", exp.name, bundle::ToString(ev.tracks.back().status));

  coverage::CoverageOptions co;
  co.bundle = bundle_dir;
  co.torch = options.torch;
  auto cov = coverage::Predict(co);
  if (!cov.ok()) {
    ev.missing["coverage"] = cov.error().ToString();
    log << fmt::format("{}: coverage: missing ({})\n", exp.name, ev.missing["coverage"]);
    return;
  }
  ev.coverage = FromCoverage(*cov);
  log << exp.name << ": coverage: done\n";
}

}  // namespace

std::vector<std::string> SplitCodes(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const std::string& v : values) {
    for (std::string_view part : Split(v, ',')) {
      part = Trim(part);
      if (!part.empty()) out.emplace_back(part);
    }
  }
  return out;
}

bool Selected(const std::string& code, const std::vector<std::string>& select) {
  if (select.empty()) return true;
  for (const std::string& s : select) {
    if (StartsWith(code, s)) return true;
  }
  return false;
}

namespace {

// The host's diagnosis, once for every experiment; `problem` says why it is missing.
std::optional<EnvEvidence> DiagnoseHost(const AuditOptions& options, std::ostream& log,
                                        std::string& problem) {
  env::EnvOptions eo;
  eo.python = options.python;
  log << "env: started: diagnosing this host\n" << std::flush;
  auto report = env::DiagnoseSystem(eo);
  if (report.ok()) {
    log << "env: done\n";
    return FromEnv(*report);
  }
  problem = report.error().ToString();
  log << "env: missing (" << problem << ")\n";
  return std::nullopt;
}

// The scan of an experiment's own path: reachability from its entry only.
void ScanExperiment(const AuditOptions& options, const fs::path& project, const Experiment& exp,
                    Evidence& ev, AuditResult& result, std::ostream& log) {
  scan::ScanOptions so;
  so.paths = {project};
  if (!exp.entry.empty()) so.entries = {exp.entry};
  so.exclude = options.exclude;
  so.ignore_codes = options.ignore;
  so.collect_inputs = result.inputs.empty();  // What the reports must not replace; once.
  if (auto report = scan::Scan(so); report.ok()) {
    ev.scan = FromScan(*report, options.select);
    // Every experiment scans the same tree: its files are listed once.
    if (result.inputs.empty()) result.inputs = std::move(report->inputs);
    log << exp.name << ": scan: done\n";
  } else {
    ev.missing["scan"] = report.error().ToString();
    log << exp.name << ": scan: missing (" << ev.missing["scan"] << ")\n";
  }
}

// Where an experiment's bundle goes: under --keep-run, else in a temporary folder made on first
// use; one folder per experiment, named safely whatever the experiment is called.
Result<fs::path> BundleDir(const Experiment& exp, const fs::path& runs_root,
                           std::optional<TempDir>& tmp) {
  std::string folder = exp.name;
  for (char& c : folder) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      c = '_';
    }
  }
  if (folder.empty() || folder[0] == '.') folder = "run" + folder;
  if (!runs_root.empty()) return runs_root / folder;
  if (!tmp) {
    auto made = TempDir::Make("dualtrack-audit-");
    if (!made.ok()) return made.take_error();
    tmp.emplace(std::move(*made));
  }
  return tmp->path() / folder;
}

// --keep-run puts each experiment's bundle in a folder of its name, and a run replaces what is
// there: only an empty folder or an earlier bundle, never a folder of the project's own (a
// `train/` beside train.py), unless --force.
Status CheckKeepRunFolder(const fs::path& dir, const fs::path& project,
                          const AuditOptions& options) {
  if (options.keep_run.empty() || options.force) return OkStatus();
  std::error_code ec;
  if (!fs::exists(dir, ec)) return OkStatus();
  auto manifest = ReadFile(dir / "manifest.json", 1u << 20);
  const bool bundle = manifest.ok() && manifest->find("\"dualtrack.bundle/") != std::string::npos;
  if (bundle || (fs::is_directory(dir, ec) && fs::is_empty(dir, ec))) return OkStatus();
  const bool in_project = PathWithin(fs::weakly_canonical(dir, ec).native(),
                                     fs::weakly_canonical(project, ec).native());
  return MakeError(ErrorCode::kUsage,
                   fmt::format("--keep-run would replace {}, which is not a dualtrack bundle{}; "
                               "choose another --keep-run folder, or --force",
                               dir.string(), in_project ? " (it is part of the project)" : ""),
                   dir.string());
}

}  // namespace

Result<AuditResult> RunAudit(const AuditOptions& options, std::ostream& log) {
  std::error_code ec;
  if (!fs::is_directory(options.project, ec)) {
    return MakeError(ErrorCode::kInput, "not a directory", options.project.string());
  }
  const fs::path project = fs::absolute(options.project, ec).lexically_normal();
  AuditResult result;

  // A malformed [tool.dualtrack] leaves the declared experiments and run unknown; the run is then
  // missing with the reason, and the scan still runs.
  std::string config_problem;
  auto config = ReadProjectConfig(project);
  ProjectConfig cfg;
  if (config.ok()) {
    cfg = std::move(*config);
  } else {
    config_problem = config.error().ToString();
  }
  auto experiments = ResolveExperiments(project, cfg, options.entries, options.run);
  if (!experiments.ok()) return experiments.take_error();
  // The Macs the lab names: a name no profile knows is the config's error, said before any run.
  auto macs = cost::ResolveMacs(cfg.macs);
  if (!macs.ok()) {
    Error e = macs.take_error();
    e.message = "[tool.dualtrack] macs: " + e.message;
    e.file = (project / "pyproject.toml").string();
    return e;
  }
  const std::optional<cost::Calibration> calibration = cost::ShippedCalibration();

  std::string env_problem;
  const std::optional<EnvEvidence> host = DiagnoseHost(options, log, env_problem);
  std::optional<TempDir> tmp;
  fs::path runs_root;
  if (!options.keep_run.empty()) runs_root = fs::absolute(options.keep_run, ec);

  for (const Experiment& exp : *experiments) {
    Evidence ev;
    ev.project = project.string();
    ev.remote_data_confirmed = options.remote_data_confirmed;
    ev.experiment = exp.name;
    ev.entry = exp.entry;
    ev.mac_command = MacCommand(exp);
    ev.env = host;
    ev.macs = *macs;
    ev.run_plan.steps = exp.steps ? exp.steps : cfg.steps;
    ev.run_plan.max_hours = cfg.max_hours.value_or(cost::kDefaultMaxHours);
    ev.run_plan.memory_fraction = cfg.mac_memory_fraction.value_or(cost::kDefaultMemoryFraction);
    ev.calibration = calibration;
    if (!env_problem.empty()) ev.missing["env"] = env_problem;
    ScanExperiment(options, project, exp, ev, result, log);
    if (!config_problem.empty()) {
      ev.missing["run"] = config_problem;
      ev.missing["coverage"] = "no traced run to predict from";
    } else if (!exp.run) {
      ev.missing["run"] =
          "no run declared for this experiment ([[tool.dualtrack.experiments]] "
          "run in pyproject.toml, or --run)";
      ev.missing["coverage"] = "no traced run to predict from";
    } else if (!options.trust_project_run && exp.run != options.run) {
      ev.missing["run"] = fmt::format(
          "the project declares its run ({}) in pyproject.toml; dualtrack runs a project's own "
          "code only when asked: audit with --trust-project-run, or name the command with --run",
          *exp.run);
      ev.missing["coverage"] = "no traced run to predict from";
      result.not_run.push_back(exp.name + ": " + *exp.run);
      log << exp.name << ": run: not started (declared by the project; --trust-project-run)\n";
    } else {
      auto bundle_dir = BundleDir(exp, runs_root, tmp);
      if (!bundle_dir.ok()) return bundle_dir.take_error();
      if (auto st = CheckKeepRunFolder(*bundle_dir, project, options); !st.ok())
        return st.take_error();
      result.ran.push_back(exp.name + ": " + *exp.run);
      RunExperiment(options, project, exp, *bundle_dir, ev, result, log);
      if (result.interrupted) return result;
    }
    result.experiments.push_back({exp, Decide(std::move(ev))});
  }
  return result;
}

}  // namespace dt::verdict
