// Entry points of `dualtrack env` and `dualtrack freeze`.
#include <fmt/format.h>

#include <mutex>

#include "app/args.h"
#include "app/commands.h"
#include "env/env.h"
#include "env/freeze.h"
#include "util/fs.h"
#include "util/numeric.h"
#include "util/strings.h"

namespace dt::env {
namespace fs = std::filesystem;

Result<ExitCode> RunEnvCommand(const std::vector<std::string>& args, Io& io) {
  CLI::App app{
      "Diagnose this host for both tracks: OS, architecture, NVIDIA and Apple GPUs, the CUDA "
      "toolchain, the chosen Python and its torch (CUDA and MPS), with conclusions in words.",
      "dualtrack env"};
  EnvOptions options;
  std::string format = "text";
  app.add_option("--python", options.python,
                 "Python interpreter to probe (default: python3 on PATH)");
  app.add_option("--format", format, "Output format")->check(CLI::IsMember({"text", "json"}));
  app.footer(
      "Examples:\n"
      "  dualtrack env\n"
      "  dualtrack env --python .venv/bin/python --format json > env.json");
  if (auto early = ParseArgs(app, args, io)) return *early;
  Result<EnvReport> report = DiagnoseSystem(options);
  if (!report.ok()) return report.take_error();
  if (format == "json") {
    io.out << EnvReportToJson(*report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
           << "\n";
  } else {
    io.out << FormatEnvText(*report);
  }
  return ExitCode::kOk;
}

namespace {

// A one-line progress bar on stderr, redrawn in place.
class ProgressBar {
 public:
  explicit ProgressBar(std::ostream& err) : err_(err) {}
  void Update(std::uint64_t done, std::uint64_t total) {
    std::lock_guard<std::mutex> lock(mu_);
    double frac = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
    int filled = static_cast<int>(frac * 30);
    err_ << fmt::format("\rhashing [{}{}] {:3.0f}% {:.2f}/{:.2f} GiB", std::string(filled, '#'),
                        std::string(30 - filled, '.'), frac * 100, done / 1073741824.0,
                        total / 1073741824.0)
         << std::flush;
    drawn_ = true;
  }
  void Finish() {
    if (drawn_) err_ << "\r" << std::string(70, ' ') << "\r" << std::flush;
  }

 private:
  std::ostream& err_;
  std::mutex mu_;
  bool drawn_ = false;
};

// `dualtrack freeze`'s options as parsed, before they are checked.
struct FreezeArgs {
  FreezeOptions options;
  std::string output;
  std::string check;
  std::string format = "text";
  std::string project = ".";
  std::vector<std::string> seeds;
  unsigned threads = 0;
  std::size_t buffer_kib = 0;
  bool force = false;
};

void DeclareFreezeOptions(CLI::App& app, FreezeArgs& a) {
  app.add_option("-o,--output", a.output,
                 "Write the baseline JSON here (atomically); default: stdout");
  app.add_flag("--force", a.force, "Let -o replace a file freeze reads (refused otherwise)");
  app.add_option("--data", a.options.data, "Data files or directories of the slice (repeatable)");
  app.add_option("--preprocess", a.options.preprocess,
                 "Preprocessing scripts to record (repeatable)");
  app.add_option("--seed", a.seeds, "Random seeds to record, 0 to 4294967295 (repeatable)");
  app.add_option("--python", a.options.env.python, "Python interpreter (default: python3 on PATH)");
  app.add_option("-C,--project", a.project, "Project directory (default: the current directory)");
  app.add_option("--check", a.check,
                 "Compare with this baseline instead of writing one; exit 1 if the data "
                 "slice differs");
  app.add_option("--format", a.format, "Output format of --check")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--threads", a.threads, "Hashing threads (default: one per core)")
      ->check(ThreadCount());
  // Hidden: the read size per hashing thread, for the benchmark.
  app.add_option("--buffer-kib", a.buffer_kib, "Read buffer per hashing thread in KiB")->group("");
  app.add_flag("--data-only", a.options.data_only,
               "Record only the data slice, preprocessing scripts and seeds (no host, git or "
               "package probes)");
  app.footer(
      "Examples:\n"
      "  dualtrack freeze -o baseline.json --data data --preprocess preprocess.py --seed 0\n"
      "  dualtrack freeze --check baseline.json");
}

Result<FreezeOptions> ToFreezeOptions(const FreezeArgs& a) {
  FreezeOptions options = a.options;
  options.project = a.project;
  for (const auto& s : a.seeds) {
    auto v = ParseSeed(s);
    if (!v) {
      return MakeError(ErrorCode::kUsage,
                       "--seed must be a whole number from 0 to 4294967295 (got '" + s + "')");
    }
    options.seeds.push_back(*v);
  }
  options.hash.threads = a.threads;
  if (a.buffer_kib > 0) options.hash.buffer_bytes = a.buffer_kib * 1024;
  if (!a.check.empty() && (!a.options.data.empty() || !a.options.preprocess.empty() ||
                           !a.seeds.empty() || !a.output.empty())) {
    return MakeError(
        ErrorCode::kUsage,
        "--check re-measures what the baseline names; it takes no --data, --preprocess, --seed "
        "or -o");
  }
  return options;
}

fs::path InProject(const std::string& project, const std::string& path) {
  return fs::path(path).is_absolute() ? fs::path(path) : fs::path(project) / path;
}

// --check: measures again what `before` names and prints the differences.
Result<ExitCode> CheckBaseline(const FreezeArgs& a, const Baseline& before, FreezeOptions options,
                               ProgressBar& bar, Io& io) {
  // A data root or script that has gone shows up as missing files, not as an error.
  std::error_code ec;
  for (const auto& root : before.data_roots) {
    if (fs::exists(fs::symlink_status(InProject(a.project, root), ec))) {
      options.data.push_back(root);
    }
  }
  for (const auto& pre : before.preprocess) {
    if (fs::exists(InProject(a.project, pre.path), ec)) options.preprocess.push_back(pre.path);
  }
  options.seeds = before.seeds;
  options.data_only = options.data_only || before.data_only;
  SystemCommandRunner runner;
  SystemHostFiles files;
  auto now = Freeze(runner, files, options);
  bar.Finish();
  if (!now.ok()) return now.take_error();
  BaselineDiff diff = CompareBaselines(before, *now);
  if (a.format == "json") {
    io.out << DiffToJson(diff).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
           << "\n";
  } else {
    io.out << EscapeControl(FormatDiffText(diff));  // File names may hold terminal escapes.
  }
  return diff.DataDiffers() ? ExitCode::kFindings : ExitCode::kOk;
}

// Records the baseline to -o or stdout.
Result<ExitCode> RecordBaseline(const FreezeArgs& a, const FreezeOptions& options, ProgressBar& bar,
                                Io& io) {
  // The baseline must never replace what it records: a data file, a file inside a data folder, a
  // preprocessing script. Checked before hashing (minutes on a large slice) and again at the write.
  OutputGuard guard;
  for (const auto& root : options.data) {
    fs::path p = InProject(a.project, root);
    std::error_code ec;
    (fs::is_directory(p, ec) ? guard.input_dirs : guard.inputs).push_back(p);
  }
  for (const auto& pre : options.preprocess) guard.inputs.push_back(InProject(a.project, pre));
  guard.force = a.force;
  if (!a.output.empty()) {
    if (auto s = CheckOutputPath(a.output, guard); !s) return s.take_error();
  }
  SystemCommandRunner runner;
  SystemHostFiles files;
  auto baseline = Freeze(runner, files, options);
  bar.Finish();
  if (!baseline.ok()) return baseline.take_error();
  // The lock files and requirements it hashed are inputs too (`-o requirements.txt`).
  for (const auto& lock : baseline->lock_files)
    guard.inputs.push_back(InProject(a.project, lock.path));
  std::string text =
      BaselineToJson(*baseline).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
      "\n";
  if (auto s = WriteOutput(a.output, text, io, guard); !s.ok()) return s.take_error();
  if (!a.output.empty()) {
    std::uint64_t bytes = 0;
    for (const auto& f : baseline->data) bytes += f.size;
    io.err << fmt::format("wrote {}: {} data file(s), {:.1f} MiB, digest {}\n", a.output,
                          baseline->data.size(), bytes / 1048576.0,
                          baseline->data_digest.substr(0, 16));
  }
  return ExitCode::kOk;
}

}  // namespace

Result<ExitCode> RunFreezeCommand(const std::vector<std::string>& args, Io& io) {
  CLI::App app{
      "Record the CUDA baseline: git state, environment, packages, lock files, compilers, "
      "allow-listed environment variables, the data slice (size and SHA-256 of every file), "
      "preprocessing scripts and seeds. With --check, re-measure and print what differs.",
      "dualtrack freeze"};
  FreezeArgs a;
  DeclareFreezeOptions(app, a);
  if (auto early = ParseArgs(app, args, io)) return *early;
  auto options = ToFreezeOptions(a);
  if (!options) return options.take_error();
  ProgressBar bar(io.err);
  if (io.err_is_tty) {
    options->hash.progress = [&bar](std::uint64_t done, std::uint64_t total) {
      bar.Update(done, total);
    };
  }
  if (a.check.empty()) return RecordBaseline(a, *options, bar, io);
  auto before = LoadBaseline(a.check);
  if (!before.ok()) return before.take_error();
  return CheckBaseline(a, *before, *options, bar, io);
}

}  // namespace dt::env
