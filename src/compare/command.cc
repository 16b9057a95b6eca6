// `dualtrack compare A B`: options, output format and exit code around Compare().
#include <fstream>
#include <sstream>

#include "app/args.h"
#include "app/commands.h"
#include "compare/compare.h"
#include "util/fs.h"
#include "util/strings.h"

namespace dt::compare {

namespace {

// `dualtrack compare`'s options as parsed, before they are checked.
struct CompareArgs {
  CompareOptions o;
  std::string format = "text", rule = "allclose", check = "elementwise", output;
  std::vector<std::string> maps;
  double atol = -1, rtol = -1;  // Negative: not given.
  std::size_t summary = 0;
  bool force = false;
};

// -o never lands on what compare reads: the two inputs, and inside a bundle or checkpoint folder.
OutputGuard CompareGuard(const CompareArgs& a) {
  OutputGuard guard{{a.o.a, a.o.b}, {}, {}, a.force};
  for (const auto& in : {a.o.a, a.o.b}) {
    std::error_code ec;
    if (std::filesystem::is_directory(in, ec)) guard.input_trees.emplace_back(in);
  }
  return guard;
}

void DeclareCompareOptions(CLI::App& app, CompareArgs& a) {
  app.add_option("A", a.o.a, "Track under test: bundle directory, tensor file or checkpoint folder")
      ->required();
  app.add_option("B", a.o.b, "Reference: bundle directory, tensor file or checkpoint folder")
      ->required();
  app.add_option("--format", a.format, "Output: text (table, worst first), json, markdown")
      ->check(CLI::IsMember({"text", "json", "markdown"}));
  app.add_option("-o,--output", a.output, "Write the report to this file (atomically)");
  app.add_flag("--force", a.force, "Let -o replace a file compare reads (refused otherwise)");
  app.add_option("--atol", a.atol, "Absolute tolerance for every tensor (default: per dtype)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--rtol", a.rtol, "Relative tolerance for every tensor (default: per dtype)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--rule", a.rule,
                 "allclose: |a-b| <= atol + rtol*|b| (torch.testing.assert_close); either: an "
                 "element fails only if both |a-b| > atol and |a-b|/|b| > rtol (Polygraphy)")
      ->check(CLI::IsMember({"allclose", "either"}));
  app.add_option("--check", a.check,
                 "Apply the rule element-wise, or to the max, mean, median or p99 of the errors")
      ->check(CLI::IsMember({"elementwise", "max", "mean", "median", "p99"}));
  app.add_flag("--equal-nan", a.o.equal_nan, "NaN in both at the same position counts as equal");
  app.add_flag("--inf-equal", a.o.inf_equal,
               "The same infinity in both at the same position counts as equal");
  app.add_flag("--strict-dtype", a.o.strict_dtype,
               "Differing dtypes fail (by default they are compared numerically)");
  app.add_option("--only", a.o.only,
                 "Compare only tensors whose name matches this glob (repeatable)");
  app.add_option("--map", a.maps,
                 "OLD=NEW: A's tensor OLD is B's NEW; 'old.*=new.*' renames a prefix (repeatable)");
  app.add_option("--tolerances", a.o.tolerance_file,
                 "TOML file: [default] atol/rtol, [[tensor]] name/atol/rtol/rule/check, [metrics]");
  app.add_option("--threads", a.o.threads, "Threads per tensor pair")->check(CLI::Range(1, 256));
  app.add_option("--summary", a.summary,
                 "Text: with more than N tensors (a whole checkpoint), counts by status and the N "
                 "worst rows only");
  app.footer(
      "Examples:\n"
      "  dualtrack compare runs/mps runs/cuda\n"
      "  dualtrack compare out_mps.safetensors out_cuda.pt --only 'grad/*' --format json\n"
      "  dualtrack compare a.npz b.npz --rule either --atol 1e-4 --rtol 1e-3 --check p99\n"
      "  dualtrack compare ckpt-mps/ ckpt-cuda/ --summary 20   # sharded checkpoints, 20 worst\n\n"
      "Exit codes: 0 all within tolerance, 1 some outside (or nothing in common), 2 error.");
}

Result<CompareOptions> ToCompareOptions(const CompareArgs& a) {
  CompareOptions o = a.o;
  if (a.atol >= 0) o.atol = a.atol;
  if (a.rtol >= 0) o.rtol = a.rtol;
  o.rule = *ParseRule(a.rule);  // CLI11 checked both names.
  o.check = *ParseCheck(a.check);
  for (const std::string& m : a.maps) {
    auto eq = m.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == m.size()) {
      return MakeError(ErrorCode::kUsage, "--map expects OLD=NEW, got '" + m + "'");
    }
    o.map.emplace_back(m.substr(0, eq), m.substr(eq + 1));
  }
  return o;
}

std::string FormatReport(const CompareReport& report, const CompareArgs& a) {
  if (a.format == "json") {
    // Tensor names come from the files (npz member names are any bytes): never a dump exception.
    return CompareReportToJson(report).dump(2, ' ', false,
                                            nlohmann::json::error_handler_t::replace) +
           "\n";
  }
  if (a.format == "markdown") return EscapeControl(CompareReportToMarkdown(report));
  return EscapeControl(CompareReportToText(report, a.summary));  // Names may hold terminal escapes.
}

}  // namespace

Result<ExitCode> RunCompareCommand(const std::vector<std::string>& args, Io& io) {
  CLI::App app{
      "Compare the tensors (and metric series) of two bundles or tensor files, element by element, "
      "against tolerances fixed before the run. A is the track under test, B the reference: the "
      "relative error is |a - b| / |b|. Inputs: bundle directories, .safetensors, .npy, .npz, "
      ".pt/.pth archives written by torch.save (read without running any pickle code), and "
      "checkpoint folders of shards (model.safetensors.index.json, pytorch_model.bin.index.json, "
      "or shard files alone) read as one state dict.",
      "dualtrack compare"};
  CompareArgs a;
  DeclareCompareOptions(app, a);
  if (auto early = ParseArgs(app, args, io)) return *early;
  auto o = ToCompareOptions(a);
  if (!o) return o.take_error();
  // Special files, links and the inputs themselves are refused before the work, and again (with
  // every file read) at the write.
  if (!a.output.empty()) {
    if (auto s = CheckOutputPath(a.output, CompareGuard(a)); !s) return s.take_error();
  }
  auto report = Compare(*o);
  if (!report) return report.take_error();
  OutputGuard guard = CompareGuard(a);
  for (const auto& f : report->input_files) guard.inputs.emplace_back(f);
  if (auto s = WriteOutput(a.output, FormatReport(*report, a), io, guard); !s) {
    return s.take_error();
  }
  return report->verdict == Outcome::kPass ? ExitCode::kOk : ExitCode::kFindings;
}

}  // namespace dt::compare
