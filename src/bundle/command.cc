// `dualtrack run` and `dualtrack show`.
#include <algorithm>

#include "app/args.h"
#include "app/commands.h"
#include "bundle/bundle.h"
#include "cost/render.h"
#include "util/numeric.h"
#include "util/strings.h"

namespace dt::bundle {

ExitCode RunExitCode(const RunOutcome& outcome) {
  if (outcome.interrupted) return ExitCode::kInterrupted;
  if (outcome.outcome == OutcomeKind::kCouldNotStart) return ExitCode::kError;
  return outcome.status == RunStatus::kOk ? ExitCode::kOk : ExitCode::kFindings;
}

Result<ExitCode> RunRunCommand(const std::vector<std::string>& args, Io& io) {
  // Everything after the first "--" is the user's command, untouched by option parsing.
  auto dashes = std::find(args.begin(), args.end(), "--");
  std::vector<std::string> own(args.begin(), dashes);
  RunOptions o;
  if (dashes != args.end()) o.command.assign(dashes + 1, args.end());

  CLI::App app{
      "Run the minimal training task under dualtrack's operator tracer and write an "
      "evidence bundle (manifest.json, ops.jsonl, tensors.safetensors, metrics.jsonl, "
      "stdout.log, stderr.log). The script is not edited: the tracer is injected at "
      "interpreter start-up.",
      "dualtrack run"};
  std::string out;
  std::string seed;
  std::string redirect;
  app.add_option("--track", o.track, "Name of this track: cuda, mps, cpu, ...")->required();
  app.add_option("-o,--output", out, "Bundle directory (default: runs/<track>)");
  app.add_option("--steps", o.steps, "Optimizer steps whose tensors are captured (default: 1)")
      ->check(CLI::NonNegativeNumber);
  auto* seed_opt = app.add_option(
      "--seed", seed, "Seed Python, NumPy and torch before the script (0 to 4294967295)");
  app.add_flag("--deterministic", o.deterministic, "torch.use_deterministic_algorithms(True)");
  app.add_option("--redirect-cuda", redirect,
                 "Run an unmodified CUDA script on this device (cpu or mps), recording every "
                 "redirect with its location")
      ->check(CLI::IsMember({"cpu", "mps"}));
  bool no_env = false;
  app.add_flag("--no-env", no_env, "Do not record the host facts of `dualtrack env`");
  bool no_peak = false;
  app.add_flag("--no-peak", no_peak,
               "Do not measure the device's peak matmul rate and bandwidth after the last "
               "captured step (about half a second; the cost prediction calibrates on it)");
  app.add_flag("--force", o.force, "Replace the bundle in a non-empty output directory");
  double timeout = 0;
  auto* timeout_opt = app.add_option(
      "--timeout", timeout,
      "Stop the script after SEC seconds (SIGTERM, then SIGKILL); the bundle says timed-out");
  timeout_opt->check(TimeoutSeconds());
  app.add_option("--data", o.data,
                 "Data-slice files or folders, hashed as `dualtrack freeze --data` does; the "
                 "digest is recorded in the manifest (repeatable)");
  std::string baseline;
  app.add_option("--baseline", baseline,
                 "baseline.json (dualtrack freeze) whose data-slice digest this run used");
  app.add_flag("-q,--quiet", o.quiet,
               "Do not echo the script's output (it still goes to the logs)");
  app.footer(
      "The command comes last, after '--':  dualtrack run --track NAME [OPTIONS] -- COMMAND...\n\n"
      "Exit status: 0 when the script succeeded, 1 when it failed or was killed (the bundle says\n"
      "how far it got), 2 on a usage error or when the script could not start (a missing Python\n"
      "package, a missing script), 130 when interrupted by Ctrl-C.\n\n"
      "Examples:\n"
      "  dualtrack run --track cuda -o runs/cuda -- python train.py --steps 2\n"
      "  dualtrack run --track mps --redirect-cuda mps --seed 0 -o runs/mps -- python train.py\n");
  if (auto early = ParseArgs(app, own, io)) return *early;
  if (o.command.empty()) {
    return MakeError(ErrorCode::kUsage,
                     "no command: put it after '--', e.g. dualtrack run --track cpu -- python "
                     "train.py");
  }
  o.out_dir = out.empty() ? std::filesystem::path("runs") / o.track : std::filesystem::path(out);
  if (seed_opt->count() > 0) {
    // Out of NumPy's range the tracer could not seed, while the manifest would say it did.
    o.seed = ParseSeed(seed);
    if (!o.seed) {
      return MakeError(ErrorCode::kUsage,
                       "--seed must be a whole number from 0 to 4294967295 (got '" + seed + "')");
    }
  }
  if (!redirect.empty()) o.redirect_cuda = redirect;
  o.collect_env = !no_env;
  o.measure_peak = !no_peak;
  if (timeout_opt->count() > 0) o.timeout_s = timeout;
  if (!baseline.empty()) o.baseline = baseline;
  auto outcome = RunTrack(o, io);
  if (!outcome) return outcome.take_error();
  io.err << "dualtrack run: bundle " << outcome->dir.string() << ": " << ToString(outcome->status);
  if (outcome->signal != 0) io.err << " (" << SignalName(outcome->signal) << ")";
  // What the tracer could not record is said here too, not only in the bundle.
  if (outcome->problems != 0) {
    io.err << ", with " << outcome->problems << (outcome->problems == 1 ? " problem" : " problems");
  }
  if (!outcome->reason.empty())
    io.err << "; " << ToString(outcome->outcome) << ": " << outcome->reason;
  io.err << "; see `dualtrack show " << outcome->dir.string() << "`\n";
  return RunExitCode(*outcome);
}

Result<ExitCode> RunShowCommand(const std::vector<std::string>& args, Io& io) {
  CLI::App app{
      "Print an evidence bundle written by `dualtrack run`: status, command, time and "
      "memory, top operators, CPU fallbacks, float64 use, CUDA redirects, captured "
      "tensors and metrics.",
      "dualtrack show"};
  std::string dir;
  std::string format = "text";
  std::size_t top = 15;
  app.add_option("bundle", dir, "Bundle directory")->required();
  app.add_option("--format", format, "text or json")->check(CLI::IsMember({"text", "json"}));
  app.add_option("--top", top, "How many operators to list (default: 15)");
  std::vector<std::string> macs;
  app.add_option("--mac", macs,
                 "A Mac to predict the step for, as a lab names it ('M3 Max 36GB'; repeatable; "
                 "default: M2 16GB, M3 Pro 36GB, M4 Max 128GB; docs/devices.md)");
  app.footer(
      "Examples:\n  dualtrack show runs/cpu\n  dualtrack show runs/mps --format json\n"
      "  dualtrack show runs/cpu --mac 'M3 Max 36GB' --mac 'M2 Pro 16GB'\n");
  if (auto early = ParseArgs(app, args, io)) return *early;
  auto bundle = LoadBundle(dir);
  if (!bundle) return bundle.take_error();
  auto cost = cost::CostViewOf(*bundle, macs);
  if (!cost) return cost.take_error();
  if (format == "json") {
    nlohmann::json j = ShowJson(*bundle, top);
    j["cost"] = *cost ? cost::CostJson(**cost) : nlohmann::json(nullptr);
    io.out << j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    io.out << EscapeControl(ShowText(*bundle, top));  // Names may hold terminal escapes.
    if (*cost) io.out << "\n" << EscapeControl(cost::CostText(**cost, 8));
  }
  return ExitCode::kOk;
}

}  // namespace dt::bundle
