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

}  // namespace

Result<ExitCode> RunFreezeCommand(const std::vector<std::string>& args, Io& io) {
  CLI::App app{
      "Record the CUDA baseline: git state, environment, packages, lock files, compilers, "
      "allow-listed environment variables, the data slice (size and SHA-256 of every file), "
      "preprocessing scripts and seeds. With --check, re-measure and print what differs.",
      "dualtrack freeze"};
  FreezeOptions options;
  std::string output;
  std::string check;
  std::string format = "text";
  std::string project = ".";
  unsigned threads = 0;
  app.add_option("-o,--output", output,
                 "Write the baseline JSON here (atomically); default: stdout");
  app.add_option("--data", options.data, "Data files or directories of the slice (repeatable)");
  app.add_option("--preprocess", options.preprocess,
                 "Preprocessing scripts to record (repeatable)");
  std::vector<std::string> seeds;
  app.add_option("--seed", seeds, "Random seeds to record, 0 to 4294967295 (repeatable)");
  app.add_option("--python", options.env.python, "Python interpreter (default: python3 on PATH)");
  app.add_option("-C,--project", project, "Project directory (default: the current directory)");
  app.add_option("--check", check,
                 "Compare with this baseline instead of writing one; exit 1 if the data "
                 "slice differs");
  app.add_option("--format", format, "Output format of --check")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--threads", threads, "Hashing threads (default: one per core)");
  std::size_t buffer_kib = 0;
  // Hidden: the read size per hashing thread, for the benchmark.
  app.add_option("--buffer-kib", buffer_kib, "Read buffer per hashing thread in KiB")->group("");
  app.add_flag("--data-only", options.data_only,
               "Record only the data slice, preprocessing scripts and seeds (no host, git or "
               "package probes)");
  app.footer(
      "Examples:\n"
      "  dualtrack freeze -o baseline.json --data data --preprocess preprocess.py --seed 0\n"
      "  dualtrack freeze --check baseline.json");
  if (auto early = ParseArgs(app, args, io)) return *early;
  options.project = project;
  for (const auto& s : seeds) {
    auto v = ParseSeed(s);
    if (!v) {
      return MakeError(ErrorCode::kUsage,
                       "--seed must be a whole number from 0 to 4294967295 (got '" + s + "')");
    }
    options.seeds.push_back(*v);
  }
  options.hash.threads = threads;
  if (buffer_kib > 0) options.hash.buffer_bytes = buffer_kib * 1024;
  ProgressBar bar(io.err);
  if (io.err_is_tty) {
    options.hash.progress = [&bar](std::uint64_t done, std::uint64_t total) {
      bar.Update(done, total);
    };
  }
  SystemCommandRunner runner;
  SystemHostFiles files;

  if (!check.empty()) {
    if (!options.data.empty() || !options.preprocess.empty() || !seeds.empty() || !output.empty()) {
      return MakeError(
          ErrorCode::kUsage,
          "--check re-measures what the baseline names; it takes no --data, --preprocess, --seed "
          "or -o");
    }
    auto before = LoadBaseline(check);
    if (!before.ok()) return before.take_error();
    // A data root or script that has gone shows up as missing files, not as an error.
    std::error_code ec;
    for (const auto& root : before->data_roots) {
      fs::path p = fs::path(root).is_absolute() ? fs::path(root) : fs::path(project) / root;
      if (fs::exists(fs::symlink_status(p, ec))) options.data.push_back(root);
    }
    for (const auto& pre : before->preprocess) {
      fs::path p =
          fs::path(pre.path).is_absolute() ? fs::path(pre.path) : fs::path(project) / pre.path;
      if (fs::exists(p, ec)) options.preprocess.push_back(pre.path);
    }
    options.seeds = before->seeds;
    options.data_only = options.data_only || before->data_only;
    auto now = Freeze(runner, files, options);
    bar.Finish();
    if (!now.ok()) return now.take_error();
    BaselineDiff diff = CompareBaselines(*before, *now);
    if (format == "json") {
      io.out << DiffToJson(diff).dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
             << "\n";
    } else {
      io.out << EscapeControl(FormatDiffText(diff));  // File names may hold terminal escapes.
    }
    return diff.DataDiffers() ? ExitCode::kFindings : ExitCode::kOk;
  }

  // The baseline must never replace what it records: a data file, a file inside a data folder, a
  // preprocessing script. Checked before hashing (minutes on a large slice) and again at the write.
  OutputGuard guard;
  for (const auto& root : options.data) {
    fs::path p = fs::path(root).is_absolute() ? fs::path(root) : fs::path(project) / root;
    std::error_code ec;
    (fs::is_directory(p, ec) ? guard.input_dirs : guard.inputs).push_back(p);
  }
  for (const auto& pre : options.preprocess) {
    guard.inputs.push_back(fs::path(pre).is_absolute() ? fs::path(pre) : fs::path(project) / pre);
  }
  if (!output.empty()) {
    if (auto s = CheckOutputPath(output, guard); !s) return s.take_error();
  }
  auto baseline = Freeze(runner, files, options);
  bar.Finish();
  if (!baseline.ok()) return baseline.take_error();
  std::string text =
      BaselineToJson(*baseline).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
      "\n";
  if (output.empty()) {
    io.out << text;
  } else {
    if (auto s = WriteFileAtomic(output, text, guard); !s.ok()) return s.take_error();
    std::uint64_t bytes = 0;
    for (const auto& f : baseline->data) bytes += f.size;
    io.err << fmt::format("wrote {}: {} data file(s), {:.1f} MiB, digest {}\n", output,
                          baseline->data.size(), bytes / 1048576.0,
                          baseline->data_digest.substr(0, 16));
  }
  return ExitCode::kOk;
}

}  // namespace dt::env
