// `dualtrack coverage`: prediction from a bundle, one operator across releases, the on-Mac probe,
// and building a table from a native_functions.yaml (what tools/coverage/ runs per release).
#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "app/args.h"
#include "app/commands.h"
#include "app/paths.h"
#include "cost/render.h"
#include "coverage/coverage.h"
#include "coverage/native_functions.h"
#include "coverage/table.h"
#include "util/fs.h"
#include "util/strings.h"
#include "util/subprocess.h"

namespace dt::coverage {
namespace {

Result<CapabilityTable> TableFromYaml(const std::filesystem::path& yaml, const std::string& version,
                                      const std::filesystem::path& data_dir,
                                      std::string* provenance) {
  auto map = MappedFile::Open(yaml);
  if (!map) return map.take_error();
  auto fns = ParseNativeFunctions(map->view(), yaml.string());
  // A file truncated while parsed read as zeros past its end (util's map guard): say so first.
  if (auto st = map->CheckUnchanged(); !st) return st.take_error();
  if (!fns) return fns.take_error();
  auto sources = LoadReleaseSources(data_dir / "sources.json", version);
  if (!sources) return sources.take_error();
  if (provenance) *provenance = sources->provenance;
  return CapabilityTable::FromClasses(version, ClassifyOperators(*fns, sources->lists));
}

std::string StripAten(const std::string& name) {
  return name.rfind("aten::", 0) == 0 ? name.substr(6) : name;
}

Result<ExitCode> LookUpOp(const CapabilityTable& table, const std::string& name,
                          const std::string& format, Io& io) {
  std::string base = StripAten(name);
  std::vector<std::string> overloads = base.find('.') != std::string::npos && table.Has(base)
                                           ? std::vector<std::string>{base}
                                           : table.Overloads(base);
  if (overloads.empty()) {
    return MakeError(ErrorCode::kUsage,
                     "no operator '" + name + "' in the coverage tables (releases " +
                         table.versions().front() + " to " + table.versions().back() + ")");
  }
  if (format == "json") {
    nlohmann::json ops = nlohmann::json::array();
    for (const std::string& o : overloads) {
      nlohmann::json by = nlohmann::json::object();
      for (std::size_t v = 0; v < table.versions().size(); ++v) {
        by[table.versions()[v]] = std::string(OpClassName(table.Get(o, v)));
      }
      ops.push_back({{"op", "aten::" + o}, {"classes", by}});
    }
    io.out << nlohmann::json{{"schema", "dualtrack.coverage-op/1"}, {"query", name}, {"ops", ops}}
                  .dump(2)
           << "\n";
    return ExitCode::kOk;
  }
  for (const std::string& o : overloads) {
    io.out << "aten::" << o << "\n";
    for (std::size_t v = 0; v < table.versions().size(); ++v) {
      OpClass c = table.Get(o, v);
      if (c == OpClass::kAbsent) continue;
      io.out << fmt::format("  {:<8} {:<13} {}\n", table.versions()[v], OpClassName(c),
                            OpClassBasis(c));
    }
  }
  return ExitCode::kOk;
}

Result<ExitCode> Probe(const std::string& python, const std::filesystem::path& out,
                       const std::filesystem::path& data_dir, Io& io) {
  auto pkg = PythonPackageParent();
  if (!pkg) return pkg.take_error();
  ProcessOptions opts;
  opts.timeout = std::chrono::milliseconds(300000);
  opts.set_env.emplace_back("PYTHONPATH", pkg->string());
  opts.max_output_bytes = 64u << 20;
  auto r = RunProcess(
      {python, "-m", "dualtrack.probe", "--sources", (data_dir / "sources.json").string()}, opts);
  if (!r) return r.take_error();
  if (!r->Succeeded()) {
    return MakeError(ErrorCode::kExternal, fmt::format("the probe failed in {} (exit {}): {}",
                                                       python, r->exit_code, r->err));
  }
  auto table = CapabilityTable::Parse(r->out, "probe output");
  if (!table) return table.take_error();
  if (out.empty()) {
    io.out << r->out;
  } else {
    if (auto s = WriteFileAtomic(out, table->Serialize()); !s) return s.take_error();
    io.out << fmt::format("wrote the measured table of torch {} ({} overloads) to {}\n",
                          table->versions().front(), table->size(), out.string());
  }
  if (!r->err.empty()) io.err << r->err;
  return ExitCode::kOk;
}

// `dualtrack coverage`'s options as parsed; which of them are used depends on the mode.
struct CoverageArgs {
  std::string bundle, torch, format = "text", op, python = "python3", yaml, table_path;
  std::string out_path, write_table;
  std::vector<std::string> macs;
  int macos = 14;
  bool probe = false;
};

void DeclareCoverageOptions(CLI::App& app, CoverageArgs& a) {
  app.add_option("BUNDLE", a.bundle,
                 "A run bundle directory (ops.jsonl + manifest.json) or an ops.jsonl");
  app.add_option("--torch", a.torch,
                 "PyTorch release to predict for (2.13, 2.4.1); default: the release that\n"
                 "recorded the bundle if the tables know it, else the newest known");
  app.add_option("--macos", a.macos, "macOS major version of the Mac (bf16 needs 14)")
      ->check(CLI::Range(11, 99));
  app.add_option("--format", a.format, "Output format")
      ->check(CLI::IsMember({"text", "json", "markdown"}));
  app.add_option("--mac", a.macs,
                 "A Mac to predict the step's time and memory for ('M3 Max 36GB'; repeatable; "
                 "default: M2 16GB, M3 Pro 36GB, M4 Max 128GB)");
  app.add_option("--op", a.op, "Look one operator up across releases (add, aten::add.Tensor)");
  app.add_flag("--probe", a.probe,
               "On a Mac: ask the installed torch's dispatcher and write a table");
  app.add_option("--python", a.python, "Python interpreter for --probe");
  app.add_option("--out", a.out_path, "File for --probe's table (default: standard output)");
  app.add_option("--yaml", a.yaml,
                 "Classify from this native_functions.yaml instead of the shipped tables");
  app.add_option("--write-table", a.write_table,
                 "With --yaml: write its one-release table to this file");
  app.add_option("--table", a.table_path,
                 "Use this table file instead of the shipped data/coverage/ops.tsv");
  app.footer(
      "Examples:\n"
      "  dualtrack coverage runs/cpu --torch 2.13 --macos 14\n"
      "  dualtrack coverage --op multi_margin_loss\n"
      "Exit codes: 0 every operator runs on MPS, 1 some fall back, fail or are unknown to the "
      "table (custom extension operators: no evidence either way), 2 usage or input "
      "error.");
}

// The prediction for a bundle, from `yaml_table` when given, else from --table or the shipped one.
Result<ExitCode> PredictBundle(const CoverageArgs& a, const std::filesystem::path& data_dir,
                               const CapabilityTable* yaml_table, Io& io) {
  CoverageOptions options;
  options.bundle = a.bundle;
  options.torch = a.torch;
  options.macos = a.macos;
  options.table = a.table_path;
  options.data_dir = data_dir;
  options.table_override = yaml_table;
  auto report = Predict(options);
  if (!report) return report.take_error();
  // A bundle's step cost, beside the operators' coverage.
  auto cost = cost::CostViewOf(a.bundle, a.macs);
  if (!cost) return cost.take_error();
  if (*cost) report->cost = cost::CostJson(**cost);
  if (a.format == "json") {
    WriteCoverageJson(*report, io.out);
  } else {
    WriteCoverageText(*report, a.format == "markdown", io.out);
    if (*cost) {
      const std::string text = EscapeControl(cost::CostText(**cost, 8));
      io.out << (a.format == "markdown" ? "\n```text\n" + text + "```\n" : "\n" + text);
    }
  }
  // An operator the table does not know (a custom extension's) is not evidence that it runs on MPS.
  return report->summary.fallback + report->summary.fail + report->summary.unknown > 0
             ? ExitCode::kFindings
             : ExitCode::kOk;
}

// --op looks one operator up, else a bundle is predicted; `yaml_table` (may be null) replaces the
// shipped table in both.
Result<ExitCode> LookUpOrPredict(const CoverageArgs& a, const std::filesystem::path& data_dir,
                                 const CapabilityTable* yaml_table, Io& io) {
  if (!a.op.empty()) {
    if (yaml_table) return LookUpOp(*yaml_table, a.op, a.format, io);
    auto t = CapabilityTable::Load(a.table_path.empty() ? data_dir / "ops.tsv"
                                                        : std::filesystem::path(a.table_path));
    if (!t) return t.take_error();
    return LookUpOp(*t, a.op, a.format, io);
  }
  if (a.bundle.empty()) {
    return MakeError(
        ErrorCode::kUsage,
        "give a bundle (or ops.jsonl), --op NAME or --probe; see 'dualtrack coverage --help'");
  }
  return PredictBundle(a, data_dir, yaml_table, io);
}

// --yaml: the file's operators classified as release --torch (or "custom"), written to
// --write-table or used instead of the shipped table.
Result<ExitCode> FromYaml(CoverageArgs a, const std::filesystem::path& data_dir, Io& io) {
  std::string label = a.torch.empty() ? "custom" : a.torch;
  std::string provenance;
  auto table = TableFromYaml(a.yaml, label, data_dir, &provenance);
  if (!table) return table.take_error();
  if (!a.write_table.empty()) {
    // The table must not replace the YAML it was made from.
    OutputGuard guard;
    guard.inputs.emplace_back(a.yaml);
    if (auto s = WriteFileAtomic(a.write_table, table->Serialize(), guard); !s)
      return s.take_error();
    io.out << fmt::format("{}: {} overloads of torch {} -> {} (source lists: {})\n", a.yaml,
                          table->size(), label, a.write_table, provenance);
    return ExitCode::kOk;
  }
  // The table holds only the release labelled --torch: nothing to look up by that name again.
  a.torch.clear();
  return LookUpOrPredict(a, data_dir, &*table, io);
}

}  // namespace

Result<ExitCode> RunCoverageCommand(const std::vector<std::string>& args, Io& io) {
  CLI::App app{
      "Which operators of a traced training step run natively, decompose, fall back to the CPU or "
      "fail on Apple's MPS backend, for a given PyTorch release: predicted on Linux from the "
      "shipped capability tables, measured on a Mac with --probe.",
      "dualtrack coverage"};
  CoverageArgs a;
  DeclareCoverageOptions(app, a);
  if (auto early = ParseArgs(app, args, io)) return *early;

  auto data = DataDir();
  if (!data) return data.take_error();
  const std::filesystem::path data_dir = *data / "coverage";

  if (a.probe) return Probe(a.python, a.out_path, data_dir, io);
  if (!a.yaml.empty()) return FromYaml(a, data_dir, io);
  if (!a.write_table.empty())
    return MakeError(ErrorCode::kUsage, "--write-table needs --yaml FILE");
  return LookUpOrPredict(a, data_dir, nullptr, io);
}

}  // namespace dt::coverage
