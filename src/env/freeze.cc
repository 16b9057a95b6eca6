#include "env/freeze.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <future>
#include <set>
#include <sstream>

#include "util/fs.h"
#include "util/git.h"
#include "util/json_fields.h"
#include "util/strings.h"

namespace dt::env {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::optional<std::string> Output(CommandRunner& runner, const std::vector<std::string>& argv,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  ProcessOptions opts;
  opts.timeout = timeout;
  auto r = runner.Run(argv, opts);
  if (!r.ok() || !r->Succeeded()) return std::nullopt;
  return r->out;
}

std::string FirstLine(std::string_view s) {
  s = Trim(s);
  return std::string(Trim(s.substr(0, s.find('\n'))));
}

std::string NowUtc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

CodeState ProbeGit(CommandRunner& runner, const fs::path& project) {
  CodeState code;
  const std::string dir = project.string();
  // The repository is untrusted: git runs none of the programs its config names (util/git.h).
  auto git =
      SafeGit(dir, [&](const std::vector<std::string>& argv) { return Output(runner, argv); });
  auto inside = git({"rev-parse", "--is-inside-work-tree"});
  if (!inside || FirstLine(*inside) != "true") return code;
  code.git = true;
  if (auto commit = git({"rev-parse", "HEAD"})) {
    code.commit = FirstLine(*commit);  // Absent in a repository with no commit yet.
  }
  if (auto branch = git({"rev-parse", "--abbrev-ref", "HEAD"})) code.branch = FirstLine(*branch);
  if (auto status = git({"status", "--porcelain=v1", "-z", "--ignore-submodules=all"})) {
    // Entries are "XY path\0"; a rename or copy carries its source as one more entry.
    auto entries = Split(*status, '\0');
    for (std::size_t i = 0; i < entries.size(); ++i) {
      auto e = entries[i];
      if (e.size() < 4) continue;
      code.dirty.emplace_back(e.substr(3));
      if (e[0] == 'R' || e[0] == 'C') ++i;
    }
  }
  if (auto remotes = git({"remote", "-v"})) {
    for (auto line : Split(*remotes, '\n')) {
      auto tab = line.find('\t');
      if (tab == std::string_view::npos) continue;
      std::string name(line.substr(0, tab));
      std::string url(line.substr(tab + 1));
      url = url.substr(0, url.rfind(" ("));
      code.remotes[name] = StripCredentials(url);
    }
  }
  return code;
}

constexpr const char* kImportlibList =
    "import importlib.metadata as m, json\n"
    "print(json.dumps([{'name': d.metadata['Name'], 'version': d.version} for d in "
    "m.distributions()]))\n";

void ProbePackages(CommandRunner& runner, const EnvReport& env, Baseline& b) {
  b.packages_source = "none";
  if (!env.python.found || !env.python.path) return;
  const std::string& py = *env.python.path;
  auto parse = [&](const std::string& text, const char* source) {
    json j = json::parse(text, nullptr, false);
    if (!j.is_array()) return false;
    for (const auto& p : j) {
      auto name = JsonOptString(p, "name");
      if (name) b.packages.push_back({*name, JsonString(p, "version")});
    }
    std::sort(b.packages.begin(), b.packages.end(),
              [](const Package& x, const Package& y) { return x.name < y.name; });
    b.packages_source = source;
    return true;
  };
  if (auto out =
          Output(runner, {py, "-m", "pip", "list", "--format=json", "--disable-pip-version-check"},
                 std::chrono::seconds(120))) {
    if (parse(*out, "pip")) return;
  }
  if (auto out = Output(runner, {py, "-c", kImportlibList}, std::chrono::seconds(60))) {
    parse(*out, "importlib.metadata");
  }
}

bool IsLockFile(const std::string& name) {
  return (StartsWith(name, "requirements") && EndsWith(name, ".txt")) || name == "poetry.lock" ||
         name == "uv.lock" || name == "Pipfile.lock" || name == "environment.yml" ||
         name == "environment.yaml" || name == "conda-lock.yml" || name == "pyproject.toml" ||
         name == "Dockerfile" || StartsWith(name, "Dockerfile.") || EndsWith(name, ".dockerfile");
}

// Lock and environment files of the project, four levels deep, outside hidden and virtualenv
// folders.
Status FindLockFiles(const fs::path& project, Baseline& b) {
  std::error_code ec;
  fs::recursive_directory_iterator it(project, fs::directory_options::skip_permission_denied, ec);
  if (ec) return OkStatus();
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    std::string name = it->path().filename().string();
    std::error_code e2;
    if (it->is_directory(e2)) {
      if (it.depth() >= 3 || StartsWith(name, ".") || name == "node_modules" ||
          name == "__pycache__" || name == "site-packages" ||
          fs::exists(it->path() / "pyvenv.cfg", e2)) {
        it.disable_recursion_pending();
      }
      continue;
    }
    if (!IsLockFile(name) || !it->is_regular_file(e2)) continue;
    auto digest = Sha256File(it->path());
    if (!digest.ok())
      continue;  // A lock file we cannot read is not the user's input; leave it out.
    std::string rel = it->path().lexically_relative(project).generic_string();
    b.lock_files.push_back({rel, *digest, "", 0});
    if (StartsWith(name, "Dockerfile") || EndsWith(name, ".dockerfile")) {
      auto text = ReadFile(it->path(), 1u << 20);
      if (!text.ok()) continue;
      for (auto line : Split(*text, '\n')) {
        auto t = Trim(line);
        if (t.size() > 5 && (StartsWith(t, "FROM ") || StartsWith(t, "from "))) {
          auto words = Split(Trim(t.substr(5)), ' ');
          for (auto w : words) {
            if (!w.empty() && !StartsWith(w, "--")) {
              b.container_images.emplace_back(w);
              break;
            }
          }
        }
      }
    }
  }
  std::sort(b.lock_files.begin(), b.lock_files.end(),
            [](const HashedPath& x, const HashedPath& y) { return x.path < y.path; });
  return OkStatus();
}

template <class T>
json Opt(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace

bool IsAllowListedEnvVar(const std::string& name) {
  for (const char* prefix : {"CUDA_", "PYTORCH_", "NCCL_", "OMP_", "MKL_", "CUBLAS_"}) {
    if (StartsWith(name, prefix)) return true;
  }
  return false;
}

std::string StripCredentials(const std::string& url) {
  // A query or fragment can carry a token too (GitLab's `?private_token=`); neither names the
  // repository, so both go.
  std::string bare = url.substr(0, url.find_first_of("?#"));
  auto scheme = bare.find("://");
  if (scheme == std::string::npos) return bare;
  auto host_start = scheme + 3;
  auto slash = bare.find('/', host_start);
  auto at = bare.rfind('@', slash == std::string::npos ? bare.size() : slash);
  if (at == std::string::npos || at < host_start) return bare;
  return bare.substr(0, host_start) + bare.substr(at + 1);
}

namespace {

// Everything of the baseline that asks the host (env, git, packages, compilers, variables).
Status ProbeHost(CommandRunner& runner, HostFiles& files, const FreezeOptions& options,
                 const fs::path& project, Baseline& b) {
  auto env = Diagnose(runner, files, options.env);
  if (!env.ok()) return env.take_error();
  b.env = std::move(*env);
  b.code = ProbeGit(runner, project);
  ProbePackages(runner, b.env, b);
  auto conda_prefix = files.GetEnv("CONDA_PREFIX");
  if (conda_prefix) {
    b.conda = std::map<std::string, std::string>{
        {"prefix", *conda_prefix}, {"name", files.GetEnv("CONDA_DEFAULT_ENV").value_or("")}};
  }
  if (auto s = FindLockFiles(project, b); !s.ok()) return s.take_error();
  b.in_container =
      files.Read("/.dockerenv").has_value() || files.Read("/run/.containerenv").has_value();
  for (const char* cc : {"cc", "c++"}) {
    auto out = Output(runner, {cc, "--version"});
    b.compilers[cc] = out ? std::optional<std::string>(FirstLine(*out)) : std::nullopt;
  }
  b.compilers["nvcc"] = b.env.cuda.nvcc_version;
  for (const auto& [name, value] : files.Environment()) {
    if (IsAllowListedEnvVar(name)) b.env_vars[name] = value;
  }
  return OkStatus();
}

}  // namespace

Result<Baseline> Freeze(CommandRunner& runner, HostFiles& files, const FreezeOptions& options) {
  Baseline b;
  b.created = NowUtc();
  std::error_code ec;
  fs::path project = fs::absolute(options.project, ec).lexically_normal();
  if (ec || !fs::is_directory(project, ec)) {
    return MakeError(ErrorCode::kInput, "project directory does not exist",
                     options.project.string());
  }
  if (project.has_filename() == false && project.has_parent_path()) project = project.parent_path();
  b.project = project.string();

  // The user's inputs first: a bad path should fail before the slow probes run.
  auto collected = CollectDataFiles(options.data, project);
  if (!collected.ok()) return collected.take_error();
  b.data_roots = options.data;
  b.data = std::move(collected->files);
  b.data_skipped = std::move(collected->skipped);
  for (const auto& p : options.preprocess) {
    fs::path path = fs::path(p).is_absolute() ? fs::path(p) : project / p;
    if (!fs::exists(fs::symlink_status(path, ec))) {
      return MakeError(ErrorCode::kInput, "preprocessing script does not exist", path.string());
    }
    auto d = DigestFileWithGitBlob(path);
    if (!d.ok()) return d.take_error();
    std::string rel = path.lexically_normal().lexically_relative(project).generic_string();
    if (rel.empty() || StartsWith(rel, "..")) rel = path.lexically_normal().generic_string();
    b.preprocess.push_back({rel, d->sha256, d->git_blob, d->size});
  }
  b.seeds = options.seeds;
  b.data_only = options.data_only;
  // The host probes mostly wait on child processes (importing torch, pip list), so they run on
  // their own thread while the data slice is hashed; they touch other members of `b` than hashing.
  std::future<Status> probed;
  if (!options.data_only) {
    probed = std::async(std::launch::async,
                        [&] { return ProbeHost(runner, files, options, project, b); });
  }
  Status hashed = HashDataFiles(b.data, options.hash);
  Status host = probed.valid() ? probed.get() : OkStatus();
  if (!hashed.ok()) return hashed.take_error();
  if (!host.ok()) return host.take_error();
  b.data_digest = DataDigest(b.data);
  return b;
}

json BaselineToJson(const Baseline& b) {
  json remotes = json::object();
  for (const auto& [k, v] : b.code.remotes) remotes[k] = v;
  json packages = json::array();
  for (const auto& p : b.packages) packages.push_back({{"name", p.name}, {"version", p.version}});
  json locks = json::array();
  for (const auto& l : b.lock_files) locks.push_back({{"path", l.path}, {"sha256", l.sha256}});
  json compilers = json::object();
  for (const auto& [k, v] : b.compilers) compilers[k] = Opt(v);
  json data_files = json::array();
  for (const auto& f : b.data)
    data_files.push_back({{"path", f.path}, {"size", f.size}, {"sha256", f.sha256}});
  json skipped = json::array();
  for (const auto& s : b.data_skipped) skipped.push_back({{"path", s.path}, {"reason", s.reason}});
  json pre = json::array();
  for (const auto& p : b.preprocess) {
    pre.push_back(
        {{"path", p.path}, {"size", p.size}, {"sha256", p.sha256}, {"git_blob", p.git_blob}});
  }
  json conda = nullptr;
  if (b.conda) conda = *b.conda;
  return {
      {"schema", "dualtrack.baseline/1"},
      {"created", b.created},
      {"data_only", b.data_only},
      {"project", b.project},
      {"code",
       {{"git", b.code.git},
        {"commit", Opt(b.code.commit)},
        {"branch", Opt(b.code.branch)},
        {"dirty", b.code.dirty},
        {"remotes", remotes}}},
      {"env", EnvReportToJson(b.env)},
      {"packages_source", b.packages_source},
      {"packages", packages},
      {"conda", conda},
      {"lock_files", locks},
      {"container", {{"detected", b.in_container}, {"dockerfile_images", b.container_images}}},
      {"compilers", compilers},
      {"env_vars", b.env_vars},
      {"data",
       {{"roots", b.data_roots},
        {"files", data_files},
        {"skipped", skipped},
        {"digest", b.data_digest}}},
      {"preprocess", pre},
      {"seeds", b.seeds},
  };
}

namespace {

// "code": the git facts (commit, branch, dirty files, remotes).
void ReadCodeFacts(const json& j, Baseline& b) {
  if (!j.contains("code") || !j["code"].is_object()) return;
  const auto& c = j["code"];
  b.code.git = c.value("git", false);
  b.code.commit = JsonOptString(c, "commit");
  b.code.branch = JsonOptString(c, "branch");
  if (c.contains("dirty") && c["dirty"].is_array())
    b.code.dirty = c["dirty"].get<std::vector<std::string>>();
  if (c.contains("remotes") && c["remotes"].is_object()) {
    b.code.remotes = c["remotes"].get<std::map<std::string, std::string>>();
  }
}

// Packages, conda, lock files, container, compilers and environment variables.
void ReadSoftwareFacts(const json& j, Baseline& b) {
  b.packages_source = JsonString(j, "packages_source");
  if (j.contains("packages") && j["packages"].is_array()) {
    for (const auto& p : j["packages"])
      b.packages.push_back({JsonString(p, "name"), JsonString(p, "version")});
  }
  if (j.contains("conda") && j["conda"].is_object()) {
    b.conda = j["conda"].get<std::map<std::string, std::string>>();
  }
  if (j.contains("lock_files") && j["lock_files"].is_array()) {
    for (const auto& l : j["lock_files"])
      b.lock_files.push_back({JsonString(l, "path"), JsonString(l, "sha256"), "", 0});
  }
  if (j.contains("container") && j["container"].is_object()) {
    const auto& c = j["container"];
    b.in_container = c.value("detected", false);
    if (c.contains("dockerfile_images") && c["dockerfile_images"].is_array()) {
      b.container_images = c["dockerfile_images"].get<std::vector<std::string>>();
    }
  }
  if (j.contains("compilers") && j["compilers"].is_object()) {
    for (const auto& [k, v] : j["compilers"].items())
      b.compilers[k] = JsonOptString(j["compilers"], k.c_str());
  }
  if (j.contains("env_vars") && j["env_vars"].is_object()) {
    b.env_vars = j["env_vars"].get<std::map<std::string, std::string>>();
  }
}

// "data" (required: its files, each with path, size and sha256) and the preprocessing scripts;
// returns what is wrong, or an empty string.
std::string ReadDataFacts(const json& j, Baseline& b) {
  if (!j.contains("data") || !j["data"].is_object()) return "\"data\" is missing";
  const auto& d = j["data"];
  if (!d.contains("files") || !d["files"].is_array()) return "\"data.files\" is missing";
  if (d.contains("roots") && d["roots"].is_array())
    b.data_roots = d["roots"].get<std::vector<std::string>>();
  for (const auto& f : d["files"]) {
    if (!f.is_object() || !f.contains("path") || !f["path"].is_string() || !f.contains("size") ||
        !f["size"].is_number_unsigned() || !f.contains("sha256") || !f["sha256"].is_string()) {
      return "an entry of \"data.files\" lacks a path, size or sha256";
    }
    b.data.push_back({f["path"].get<std::string>(),
                      {},
                      f["size"].get<std::uint64_t>(),
                      f["sha256"].get<std::string>()});
  }
  b.data_digest = JsonString(d, "digest");
  if (j.contains("preprocess") && j["preprocess"].is_array()) {
    for (const auto& p : j["preprocess"]) {
      b.preprocess.push_back({JsonString(p, "path"), JsonString(p, "sha256"),
                              JsonString(p, "git_blob"),
                              p.is_object() ? p.value("size", std::uint64_t{0}) : 0});
    }
  }
  return "";
}

}  // namespace

Result<Baseline> BaselineFromJson(const json& j, const std::string& file) {
  auto bad = [&](const std::string& what) {
    return MakeError(ErrorCode::kInput, "not a valid dualtrack.baseline/1 file: " + what, file);
  };
  if (!j.is_object()) return bad("the top level is not an object");
  if (JsonString(j, "schema") != "dualtrack.baseline/1") {
    return bad("\"schema\" is '" + JsonString(j, "schema") + "', expected 'dualtrack.baseline/1'");
  }
  Baseline b;
  b.created = JsonString(j, "created");
  b.project = JsonString(j, "project");
  try {
    b.data_only = j.value("data_only", false);
    ReadCodeFacts(j, b);
    if (!j.contains("env")) return bad("\"env\" is missing");
    auto env = EnvReportFromJson(j["env"]);
    if (!env.ok()) return bad("\"env\": " + env.error().message);
    b.env = std::move(*env);
    ReadSoftwareFacts(j, b);
    if (std::string wrong = ReadDataFacts(j, b); !wrong.empty()) return bad(wrong);
    if (j.contains("seeds") && j["seeds"].is_array())
      b.seeds = j["seeds"].get<std::vector<std::int64_t>>();
  } catch (const json::exception& e) {
    return bad(e.what());
  }
  return b;
}

Result<Baseline> LoadBaseline(const fs::path& path) {
  auto text = ReadFile(path, std::uint64_t{1} << 30);
  if (!text.ok()) return text.take_error();
  auto j = ParseJson(*text, path.string());
  if (!j.ok()) {
    return MakeError(ErrorCode::kInput, "corrupt baseline: " + j.error().message, path.string());
  }
  return BaselineFromJson(*j, path.string());
}

bool BaselineDiff::Empty() const {
  return !DataDiffers() && preprocess.empty() && code.empty() && packages.empty() &&
         environment.empty();
}

BaselineDiff CompareBaselines(const Baseline& a, const Baseline& b) {
  BaselineDiff d;
  const bool data_only = a.data_only || b.data_only;
  std::map<std::string, const DataFile*> before, after;
  for (const auto& f : a.data) before[f.path] = &f;
  for (const auto& f : b.data) after[f.path] = &f;
  for (const auto& [p, f] : before) {
    auto it = after.find(p);
    if (it == after.end())
      d.data_missing.push_back(p);
    else if (it->second->size != f->size || it->second->sha256 != f->sha256)
      d.data_changed.push_back(p);
  }
  for (const auto& [p, f] : after) {
    if (!before.count(p)) d.data_added.push_back(p);
  }
  auto diff = [](std::vector<Difference>& out, const std::string& what, const std::string& x,
                 const std::string& y) {
    if (x != y) out.push_back({what, x.empty() ? "(none)" : x, y.empty() ? "(none)" : y});
  };
  auto o = [](const std::optional<std::string>& v) { return v.value_or(""); };
  std::map<std::string, std::string> pa, pb;
  for (const auto& p : a.preprocess) pa[p.path] = p.sha256;
  for (const auto& p : b.preprocess) pb[p.path] = p.sha256;
  for (const auto& [p, h] : pa) diff(d.preprocess, p, h, pb.count(p) ? pb[p] : "");
  for (const auto& [p, h] : pb)
    if (!pa.count(p)) diff(d.preprocess, p, "", h);

  if (data_only) return d;
  diff(d.code, "commit", o(a.code.commit), o(b.code.commit));
  diff(d.code, "branch", o(a.code.branch), o(b.code.branch));
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  diff(d.code, "dirty files", join(a.code.dirty), join(b.code.dirty));

  std::map<std::string, std::string> ka, kb;
  for (const auto& p : a.packages) ka[p.name] = p.version;
  for (const auto& p : b.packages) kb[p.name] = p.version;
  for (const auto& [n, v] : ka) diff(d.packages, n, v, kb.count(n) ? kb[n] : "");
  for (const auto& [n, v] : kb)
    if (!ka.count(n)) diff(d.packages, n, "", v);

  auto& e = d.environment;
  diff(e, "driver", o(a.env.cuda.driver_version), o(b.env.cuda.driver_version));
  auto gpus = [&](const EnvReport& r) {
    std::vector<std::string> names;
    for (const auto& g : r.gpus) names.push_back(g.name);
    return join(names);
  };
  diff(e, "GPUs", gpus(a.env), gpus(b.env));
  diff(e, "OS", a.env.host.os + " " + a.env.host.os_version,
       b.env.host.os + " " + b.env.host.os_version);
  diff(e, "architecture", a.env.host.arch, b.env.host.arch);
  diff(e, "Python", o(a.env.python.version), o(b.env.python.version));
  diff(e, "torch", o(a.env.torch.version), o(b.env.torch.version));
  diff(e, "torch CUDA", o(a.env.torch.cuda_version), o(b.env.torch.cuda_version));
  diff(e, "nvcc", o(a.env.cuda.nvcc_version), o(b.env.cuda.nvcc_version));
  for (const auto& [k, v] : a.compilers) {
    auto it = b.compilers.find(k);
    diff(e, "compiler " + k, o(v), it == b.compilers.end() ? "" : o(it->second));
  }
  std::map<std::string, std::string> la, lb;
  for (const auto& l : a.lock_files) la[l.path] = l.sha256;
  for (const auto& l : b.lock_files) lb[l.path] = l.sha256;
  for (const auto& [p, h] : la) diff(e, "lock file " + p, h, lb.count(p) ? lb[p] : "");
  for (const auto& [p, h] : lb)
    if (!la.count(p)) diff(e, "lock file " + p, "", h);
  for (const auto& [k, v] : a.env_vars)
    diff(e, "$" + k, v, b.env_vars.count(k) ? b.env_vars.at(k) : "");
  for (const auto& [k, v] : b.env_vars)
    if (!a.env_vars.count(k)) diff(e, "$" + k, "", v);
  return d;
}

std::string FormatDiffText(const BaselineDiff& d) {
  std::ostringstream out;
  if (d.Empty()) {
    out << "No differences: the data slice, code, packages and environment match the baseline.\n";
    return out.str();
  }
  if (d.DataDiffers()) {
    out << "Data slice differs:\n";
    for (const auto& p : d.data_changed) out << "  changed  " << p << "\n";
    for (const auto& p : d.data_added) out << "  added    " << p << "\n";
    for (const auto& p : d.data_missing) out << "  missing  " << p << "\n";
  } else {
    out << "Data slice: unchanged.\n";
  }
  auto block = [&](const char* title, const std::vector<Difference>& v) {
    if (v.empty()) return;
    out << title << ":\n";
    std::size_t width = 0;
    for (const auto& x : v) width = std::max(width, x.what.size());
    for (const auto& x : v) {
      out << "  " << x.what << std::string(width - x.what.size() + 2, ' ') << x.before << " -> "
          << x.after << "\n";
    }
  };
  block("Preprocessing scripts differ", d.preprocess);
  block("Code differs", d.code);
  block("Packages differ", d.packages);
  block("Environment differs", d.environment);
  return out.str();
}

json DiffToJson(const BaselineDiff& d) {
  auto list = [](const std::vector<Difference>& v) {
    json a = json::array();
    for (const auto& x : v)
      a.push_back({{"what", x.what}, {"before", x.before}, {"after", x.after}});
    return a;
  };
  return {
      {"schema", "dualtrack.baseline-check/1"},
      {"data_differs", d.DataDiffers()},
      {"data", {{"changed", d.data_changed}, {"added", d.data_added}, {"missing", d.data_missing}}},
      {"preprocess", list(d.preprocess)},
      {"code", list(d.code)},
      {"packages", list(d.packages)},
      {"environment", list(d.environment)}};
}

}  // namespace dt::env
