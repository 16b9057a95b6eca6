// `dualtrack fix`: the scan's fixable findings, rewritten (fixer.cc) and shown as a diff or
// written.
#include <algorithm>
#include <filesystem>
#include <map>

#include "app/args.h"
#include "app/commands.h"
#include "fix/diff.h"
#include "fix/fixer.h"
#include "fix/plan.h"
#include "fix/verify.h"
#include "scan/scan.h"
#include "util/fs.h"
#include "util/strings.h"

namespace dt::fix {

namespace fs = std::filesystem;

namespace {

// --verify: runs the command in a copy of the original and of the fixed project and compares
// the bundles; true when they are equal.
Result<bool> VerifyChanges(const scan::ScanReport& report,
                           const std::map<std::string, Change>& changes, const VerifyOptions& base,
                           Io& io) {
  VerifyOptions v = base;
  std::error_code ec;
  v.root = fs::is_directory(report.root, ec) ? fs::path(report.root)
                                             : fs::path(report.root).parent_path();
  for (const auto& [file, c] : changes) v.fixed.emplace(file, c.after);
  if (const std::string pinned = PinnedDevice(v.command); !pinned.empty()) {
    io.err << "dualtrack fix: warning: the command pins the device (" << EscapeControl(pinned)
           << "): the device choice the fix rewrote never runs, so a \"verified\" speaks for "
              "the other edits only; leave the option out to verify the rewritten default\n";
  }
  auto result = Verify(v, io);
  if (!result) return result.take_error();
  io.err << "dualtrack fix: " << EscapeControl(result->summary) << '\n';
  return result->verified;
}

// `dualtrack fix`'s options as parsed, and the command after "--" that --verify runs.
struct FixArgs {
  scan::TreeSelection tree;
  bool apply = false, diff = false, unsafe = false, all = false;
  bool show_left = false, verify = false;
  int steps = 1;
  std::int64_t seed = 0;
  double timeout = 0;
  std::string verify_dir;
  std::vector<std::string> command;
};

void DeclareFixOptions(CLI::App& app, FixArgs& a) {
  app.add_option("paths", a.tree.paths,
                 "Files or folders to fix (default: .); the first sets the root");
  app.add_flag("--diff", a.diff,
               "Print the changes as a unified diff and write nothing (the default)");
  app.add_flag("--apply", a.apply,
               "Write the fixed files (atomically; a file that changed since it was read is left "
               "alone and named). With --verify, only when the rewrite is verified");
  app.add_flag("--unsafe-fixes", a.unsafe,
               "Also apply fixes that may change results on CUDA (torch.float64 -> torch.float32, "
               "xformers / flash-attn -> scaled_dot_product_attention, 8-bit and 4-bit loading -> "
               "float16)");
  app.add_flag("--all", a.all,
               "Also rewrite portable lines, which run unchanged without CUDA (torch.cuda."
               "manual_seed, cuDNN and TF32 flags, torch.cuda.amp; left as written by default)");
  app.add_option("--select", a.tree.select, "Fix only these rule codes or prefixes (DT101,DT2)");
  app.add_option("--ignore", a.tree.ignore, "Rule codes or prefixes to leave alone");
  app.add_option("--entry", a.tree.entries,
                 "Entry scripts, as for scan (findings off their path are fixed too)");
  app.add_option("--exclude", a.tree.exclude, "Glob of paths to leave out (relative to the root)");
  app.add_flag("--show-left", a.show_left, "List every finding left as it is, with the reason");
  app.add_flag("--verify", a.verify,
               "Prove the rewrite: run the command after -- in a copy of the original and of the "
               "fixed project on this CPU (same seed, CUDA redirected to the CPU) and compare the "
               "two bundles with no tolerance");
  app.add_option("--steps", a.steps,
                 "With --verify: optimizer steps whose tensors are compared (default 1)")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", a.seed, "With --verify: the seed of both runs (default 0)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--timeout", a.timeout, "With --verify: stop each run after SEC seconds")
      ->check(TimeoutSeconds());
  app.add_option("--verify-dir", a.verify_dir,
                 "With --verify: keep the two copies and their bundles in this folder (default: a "
                 "temporary folder, removed)");
  app.add_flag("--no-gitignore", a.tree.no_gitignore, "Also fix files that .gitignore excludes");
  app.add_flag("--no-config", a.tree.no_config, "Ignore [tool.dualtrack] in pyproject.toml");
  app.get_option("--diff")->excludes(app.get_option("--apply"));
  app.footer(
      "Examples:\n"
      "  dualtrack fix examples/cuda-research            # the diff, nothing written\n"
      "  dualtrack fix . --apply                        # write the safe fixes\n"
      "  dualtrack fix . --select DT101,DT102 --apply   # only .cuda() and \"cuda\" strings\n"
      "  dualtrack fix . --verify --apply -- python train.py --steps 2   # write only if proven\n"
      "What a fix writes: x.cuda() -> x.to(_dualtrack_device()); \"cuda\" -> _dualtrack_device(); "
      "torch.cuda.synchronize() -> _dualtrack_cuda(\"synchronize\", \"synchronize\")(); "
      "with --all --unsafe-fixes, torch.cuda.amp.autocast / GradScaler -> _dualtrack_autocast / "
      "_dualtrack_grad_scaler (mixed precision on MPS too); "
      "backend=\"nccl\" -> nccl with CUDA else gloo; choices gain \"mps\". The helpers are added "
      "once per module (or notebook), after its imports. Which rules have a fix: docs/rules/.\n"
      "Exit codes: 0 nothing to change, written with --apply, or verified; 1 a diff was printed, "
      "or --verify found a difference; 2 usage or input error, a run that could not start, or a "
      "file that could not be written.");
}

// A command after -- and --verify go together.
Status CheckVerifyCommand(const FixArgs& a) {
  if (a.verify && a.command.empty())
    return MakeError(ErrorCode::kUsage,
                     "--verify needs the command to run after --, e.g. "
                     "dualtrack fix --verify -- python train.py --steps 2");
  if (!a.verify && !a.command.empty())
    return MakeError(ErrorCode::kUsage, "a command after -- is only for --verify");
  return OkStatus();
}

// --verify with something to change: whether the fixed project's run equals the original's.
Result<bool> VerifyPlan(const scan::ScanReport& report, const FixPlan& plan, const FixArgs& a,
                        Io& io) {
  if (!a.verify || plan.changes.empty()) return false;
  VerifyOptions v;
  v.command = a.command;
  v.steps = a.steps;
  v.seed = a.seed;
  if (a.timeout > 0) v.timeout_s = a.timeout;
  if (!a.verify_dir.empty()) v.keep = a.verify_dir;
  return VerifyChanges(report, plan.changes, v, io);
}

// Prints the diff, or writes the files (with --verify, only when verified); returns how many
// files could not be written.
std::size_t ShowOrWrite(const FixPlan& plan, const FixArgs& a, bool verified, Io& io) {
  std::size_t failed = 0;
  for (const auto& [file, c] : plan.changes) {
    if (!a.apply) {
      if (!a.verify) io.out << UnifiedDiff(c.before, c.after, file, c.replaced);
      continue;
    }
    if (a.verify && !verified) break;
    // Checked again right before the write: a link swapped in since the plan was made.
    Status st = CheckInsideRoot(c.path, plan.root);
    if (st) st = WriteIfUnchanged(c.path, c.before, c.after);
    if (!st) {
      io.err << "dualtrack fix: error: " << EscapeControl(st.error().ToString()) << '\n';
      ++failed;
    }
  }
  return failed;
}

// What was (or would be) fixed, on stderr; with --show-left, each finding left and why first.
void PrintSummary(const FixPlan& plan, const FixArgs& a, bool verified, Io& io) {
  if (a.show_left)
    for (const auto& l : plan.left_lines) io.err << EscapeControl(l) << '\n';
  const bool wrote = a.apply && (!a.verify || verified);
  const std::size_t files = plan.changes.size();
  io.err << "dualtrack fix: " << (wrote ? "fixed " : "would fix ") << plan.fixed << " finding"
         << (plan.fixed == 1 ? "" : "s") << " in " << files << " file" << (files == 1 ? "" : "s");
  if (plan.left > 0) {
    io.err << "; " << plan.left << " left as they are"
           << (a.show_left ? "" : " (--show-left lists them)");
  }
  if (a.apply && a.verify && !verified && files > 0) io.err << "; nothing written";
  io.err << '\n';
}

// Python files and notebooks the scan could not read are named: fix leaves them as they are. A
// notebook whose JSON is malformed (or nested past the bound) counts as a file fix failed on, as
// a notebook the fixer itself cannot read does; one skipped for its size or type does not.
std::size_t ReportSkipped(const scan::ScanReport& report, Io& io) {
  std::size_t failed = 0;
  for (const auto& s : report.skipped) {
    const bool notebook = s.file.ends_with(".ipynb");
    if (!notebook && !s.file.ends_with(".py")) continue;
    io.err << "dualtrack fix: " << EscapeControl(s.file) << ": not read ("
           << EscapeControl(s.reason) << "); left alone\n";
    if (notebook && (s.reason.find("JSON") != std::string::npos ||
                     s.reason.find("not a notebook") != std::string::npos))
      ++failed;
  }
  return failed;
}

}  // namespace

Result<ExitCode> RunFixCommand(const std::vector<std::string>& args, Io& io) {
  FixArgs a;
  // Everything after the first "--" is the command --verify runs, untouched by option parsing.
  auto dashes = std::find(args.begin(), args.end(), "--");
  std::vector<std::string> own(args.begin(), dashes);
  if (dashes != args.end()) a.command.assign(dashes + 1, args.end());
  CLI::App app{
      "Rewrite CUDA-hardwired Python so that it picks CUDA, else MPS, else the CPU at run "
      "time. Safe fixes keep the behaviour on a CUDA machine: every rewritten call is the "
      "original one whenever CUDA is available. Edits are made on the scanner's tokens, so "
      "comments, quoting and layout stay as written; a second fix changes nothing.",
      "dualtrack fix"};
  DeclareFixOptions(app, a);
  if (auto early = ParseArgs(app, own, io)) return *early;
  if (auto st = CheckVerifyCommand(a); !st) return st.take_error();

  auto report = scan::Scan(a.tree.Options());
  if (!report) return report.take_error();
  FixOptions fix_options;
  fix_options.unsafe = a.unsafe;
  fix_options.all = a.all;
  auto plan = PlanFixes(*report, fix_options, io.err);
  if (!plan) return plan.take_error();
  auto verified = VerifyPlan(*report, *plan, a, io);
  if (!verified) return verified.take_error();

  const std::size_t failed =
      plan->failed + ReportSkipped(*report, io) + ShowOrWrite(*plan, a, *verified, io);
  PrintSummary(*plan, a, *verified, io);
  if (failed > 0) return ExitCode::kError;
  if (a.verify) return plan->changes.empty() || *verified ? ExitCode::kOk : ExitCode::kFindings;
  return !a.apply && plan->fixed > 0 ? ExitCode::kFindings : ExitCode::kOk;
}

}  // namespace dt::fix
