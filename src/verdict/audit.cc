#include "verdict/audit.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <sstream>
#include <system_error>
#include <toml++/toml.h>

#include "util/strings.h"

namespace dt::verdict {

namespace {

namespace fs = std::filesystem;

// A temporary directory that is removed with everything in it when it goes out of scope; only
// directories this object made are ever removed.
class TempDir {
 public:
  static Result<TempDir> Make() {
    std::error_code ec;
    fs::path base = fs::temp_directory_path(ec);
    if (ec) base = "/tmp";
    std::string pattern = (base / "dualtrack-audit-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      return MakeError(ErrorCode::kIo, "cannot make a temporary directory", base.string());
    }
    return TempDir(pattern);
  }
  TempDir(TempDir&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir() {
    if (path_.empty()) return;
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  explicit TempDir(fs::path p) : path_(std::move(p)) {}
  fs::path path_;
};

// The stage's document, or the reason it is missing.
template <class T, class F>
std::optional<T> Collect(const std::string& piece, const StageCall& call, F parse,
                         Evidence& ev, std::ostream& log) {
  if (call.exit_code != 0 && call.exit_code != 1) {
    ev.missing[piece] = StageMessage(call);
    log << fmt::format("{}: missing ({})\n", piece, ev.missing[piece]);
    return std::nullopt;
  }
  auto doc = ParseJsonText(call.out, "output of 'dualtrack " + piece + "'");
  if (!doc.ok()) {
    ev.missing[piece] = doc.error().ToString();
    log << fmt::format("{}: missing ({})\n", piece, ev.missing[piece]);
    return std::nullopt;
  }
  auto parsed = parse(*doc, "output of 'dualtrack " + piece + "'");
  if (!parsed.ok()) {
    ev.missing[piece] = parsed.error().ToString();
    log << fmt::format("{}: missing ({})\n", piece, ev.missing[piece]);
    return std::nullopt;
  }
  log << piece << ": done\n";
  return std::move(*parsed);
}

// Changes the working directory for its lifetime and changes it back; audit is single-threaded.
class CurrentDirectory {
 public:
  explicit CurrentDirectory(const fs::path& dir) {
    std::error_code ec;
    previous_ = fs::current_path(ec);
    if (ec) return;
    fs::current_path(dir, ec);
    ok_ = !ec;
  }
  ~CurrentDirectory() {
    if (!ok_) return;
    std::error_code ec;
    fs::current_path(previous_, ec);
  }
  CurrentDirectory(const CurrentDirectory&) = delete;
  CurrentDirectory& operator=(const CurrentDirectory&) = delete;
  bool ok() const { return ok_; }

 private:
  fs::path previous_;
  bool ok_ = false;
};

}  // namespace

StageCall CallStage(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  Io io{out, err};
  StageCall call;
  call.exit_code = Dispatch(args, io);
  call.out = out.str();
  call.err = err.str();
  return call;
}

std::string StageMessage(const StageCall& call) {
  std::string_view text = Trim(call.err);
  if (auto nl = text.find('\n'); nl != std::string_view::npos) text = text.substr(0, nl);
  if (auto pos = text.find(": error: "); pos != std::string_view::npos) {
    text = text.substr(pos + 9);
  }
  if (text.empty()) return fmt::format("exit code {} with no message", call.exit_code);
  return std::string(text);
}

Result<std::vector<std::string>> SplitCommandLine(const std::string& line) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote == '\'') {
      if (c == '\'') {
        quote = 0;
      } else {
        cur += c;
      }
    } else if (quote == '"') {
      if (c == '"') {
        quote = 0;
      } else if (c == '\\' && i + 1 < line.size() &&
                 (line[i + 1] == '"' || line[i + 1] == '\\' || line[i + 1] == '$')) {
        cur += line[++i];
      } else {
        cur += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < line.size()) {
      cur += line[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(cur));
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (quote != 0) {
    return MakeError(ErrorCode::kUsage, fmt::format("unbalanced {} quote in \"{}\"", quote, line));
  }
  if (in_word) words.push_back(std::move(cur));
  return words;
}

Result<std::optional<std::string>> ReadDeclaredRun(const fs::path& project) {
  const fs::path path = project / "pyproject.toml";
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::optional<std::string>();
  try {
    toml::table table = toml::parse_file(path.string());
    if (auto run = table["tool"]["dualtrack"]["run"].value<std::string>()) {
      return std::optional<std::string>(*run);
    }
    if (table["tool"]["dualtrack"]["run"]) {
      return MakeError(ErrorCode::kInput, "[tool.dualtrack] run must be a string", path.string());
    }
    return std::optional<std::string>();
  } catch (const toml::parse_error& e) {
    return MakeError(ErrorCode::kInput,
                     std::string("not valid TOML: ") + std::string(e.description()),
                     path.string(), e.source().begin.line, e.source().begin.column);
  }
}

Result<Evidence> CollectAuditEvidence(const AuditOptions& options, std::ostream& log) {
  std::error_code ec;
  if (!fs::is_directory(options.project, ec)) {
    return MakeError(ErrorCode::kInput, "not a directory", options.project.string());
  }
  const fs::path project = fs::absolute(options.project, ec).lexically_normal();
  Evidence ev;
  ev.project = project.string();
  ev.remote_data_confirmed = options.remote_data_confirmed;

  // Scan first: it is the evidence that needs nothing installed.
  std::vector<std::string> scan_args = {"scan", project.string(), "--format", "json"};
  if (!options.entry.empty()) {
    scan_args.push_back("--entry");
    scan_args.push_back(options.entry);
  }
  ev.scan = Collect<ScanEvidence>("scan", CallStage(scan_args), ParseScan, ev, log);
  ev.env = Collect<EnvEvidence>("env", CallStage({"env", "--format", "json"}), ParseEnv, ev, log);

  // The designated run: --run, else [tool.dualtrack] run.
  std::optional<std::string> run_line = options.run;
  if (!run_line) {
    auto declared = ReadDeclaredRun(project);
    if (!declared.ok()) {
      ev.missing["run"] = declared.error().ToString();
    } else {
      run_line = *declared;
    }
  }
  if (!run_line) {
    if (!ev.missing.count("run")) {
      ev.missing["run"] = "no run declared ([tool.dualtrack] run in pyproject.toml, or --run)";
    }
    ev.missing["coverage"] = "no traced run to predict from";
    log << "run: missing (" << ev.missing["run"] << ")\n";
    return ev;
  }
  auto words = SplitCommandLine(*run_line);
  if (!words.ok()) return words.take_error();
  if (words->empty()) return MakeError(ErrorCode::kUsage, "the run command is empty");
  ev.designated_run = *words;
  if (ev.env && ev.env->torch_installed == std::optional<bool>(false)) {
    ev.missing["run"] = "PyTorch is not installed for " + options.python + " on this host";
    ev.missing["coverage"] = "no traced run to predict from";
    log << "run: missing (" << ev.missing["run"] << ")\n";
    return ev;
  }
  auto tmp = TempDir::Make();
  if (!tmp.ok()) return tmp.take_error();
  const fs::path bundle = tmp->path() / "cpu";
  std::vector<std::string> run_args = {"run",           "--track", "cpu", "--redirect-cuda",
                                       "cpu",           "--quiet", "-o",  bundle.string(),
                                       "--"};
  // `--run "python3 train.py …"` names its own interpreter; `--run "train.py …"` uses --python.
  if (!StartsWith(fs::path((*words)[0]).filename().string(), "python")) {
    run_args.push_back(options.python);
  }
  run_args.insert(run_args.end(), words->begin(), words->end());
  StageCall run;
  {
    // The task runs from the project root, as its author runs it, so that the file paths in the
    // trace are relative to the same root as the scan's.
    CurrentDirectory here(project);
    if (!here.ok()) {
      return MakeError(ErrorCode::kIo, "cannot change into the project directory",
                       project.string());
    }
    run = CallStage(run_args);
  }
  if (!fs::exists(bundle / "manifest.json", ec)) {
    ev.missing["run"] = StageMessage(run);
    ev.missing["coverage"] = "no traced run to predict from";
    log << "run: missing (" << ev.missing["run"] << ")\n";
    return ev;
  }
  auto track = LoadTrack("cpu", bundle);
  if (!track.ok()) {
    ev.missing["run"] = track.error().ToString();
    ev.missing["coverage"] = "no traced run to predict from";
    return ev;
  }
  track->dir = "(temporary) " + track->dir;
  ev.tracks.push_back(std::move(*track));
  log << "run: " << ev.tracks.back().status << '\n';

  std::vector<std::string> cov_args = {"coverage", bundle.string(), "--format", "json"};
  if (!options.torch.empty()) {
    cov_args.push_back("--torch");
    cov_args.push_back(options.torch);
  }
  ev.coverage = Collect<CoverageEvidence>("coverage", CallStage(cov_args), ParseCoverage, ev, log);
  return ev;
}

}  // namespace dt::verdict
