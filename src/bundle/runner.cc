// `dualtrack run`: starts the user's command with the tracer injected, tees its output and writes
// the bundle's manifest (first as "incomplete", atomically replaced at the end).
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <system_error>

#include "app/paths.h"
#include "app/version.h"
#include "bundle/bundle.h"
#include "util/fs.h"
#include "util/git.h"
#include "util/json_fields.h"
#include "util/platform.h"
#include "util/strings.h"
#include "util/subprocess.h"

extern char** environ;

namespace dt::bundle {

namespace {

using nlohmann::json;

// Files a bundle holds; --force removes exactly these, never anything else of the user's.
constexpr const char* kBundleFiles[] = {"manifest.json",       "ops.jsonl",   "metrics.jsonl",
                                        "tensors.safetensors", "tracer.json", "exception.json",
                                        "stdout.log",          "stderr.log",  "tracer.pid"};

std::string IsoNow() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

bool ValidTrackName(std::string_view s) {
  // "." and ".." would name runs/ itself or its parent as the bundle folder.
  if (s.empty() || s.size() > 64 || s == "." || s == "..") return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      return false;
    }
  }
  return true;
}

// The folder user-code locations are reported relative to: the script's folder for
// `python path/to/script.py`, else the working directory.
std::filesystem::path ProjectRoot(const std::vector<std::string>& command,
                                  const std::filesystem::path& cwd) {
  for (std::size_t i = 1; i < command.size(); ++i) {
    const std::string& a = command[i];
    if (a == "-m" || a == "-c") break;
    if (EndsWith(a, ".py")) {
      std::error_code ec;
      auto abs = std::filesystem::absolute(a, ec);
      if (!ec && std::filesystem::is_regular_file(abs, ec)) return abs.parent_path();
      break;
    }
  }
  return cwd;
}

json GitFacts(const std::filesystem::path& root) {
  json g = {{"commit", nullptr}, {"dirty", nullptr}};
  ProcessOptions po;
  po.timeout = std::chrono::milliseconds(10000);
  // The project is untrusted: git runs none of the programs its config names (util/git.h).
  auto git = SafeGit(root.string(), [&](const std::vector<std::string>& argv) {
    auto r = RunProcess(argv, po);
    return r && r->Succeeded() ? std::optional<std::string>(r->out) : std::nullopt;
  });
  auto head = git({"rev-parse", "HEAD"});
  if (!head) return g;
  g["commit"] = std::string(Trim(*head));
  auto st = git({"status", "--porcelain", "--ignore-submodules=all", "--", "."});
  if (st) g["dirty"] = !Trim(*st).empty();
  return g;
}

json InterestingEnvVars() {
  json vars = json::object();
  vars["PYTORCH_ENABLE_MPS_FALLBACK"] = nullptr;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view kv(*e);
    std::size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view k = kv.substr(0, eq);
    if (StartsWith(k, "PYTORCH_") || k == "CUDA_VISIBLE_DEVICES" ||
        k == "CUBLAS_WORKSPACE_CONFIG" || k == "OMP_NUM_THREADS" || k == "MKL_NUM_THREADS" ||
        k == "CUDA_LAUNCH_BLOCKING") {
      vars[std::string(k)] = std::string(kv.substr(eq + 1));
    }
  }
  return vars;
}

// Reads a small JSON file the Python side wrote; null when absent or unreadable (a killed child may
// leave nothing), with the reason in `problem`.
json ReadSideFile(const std::filesystem::path& path, std::string* problem) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return nullptr;
  auto text = ReadFile(path, 64u << 20);
  if (!text) {
    *problem = text.error().ToString();
    return nullptr;
  }
  if (auto depth = CheckJsonDepth(*text, path.string()); !depth) {
    *problem = depth.error().ToString();
    return nullptr;
  }
  json j = json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    *problem = path.filename().string() + " is not a JSON object";
    return nullptr;
  }
  return j;
}

json CollectEnv() {
  auto exe = CurrentExecutablePath();
  if (!exe) return nullptr;
  ProcessOptions po;
  po.timeout = std::chrono::milliseconds(120000);
  auto r = RunProcess({exe->string(), "env", "--format", "json"}, po);
  if (!r || r->timed_out || (r->exit_code != 0 && r->exit_code != 1)) return nullptr;
  json j = json::parse(r->out, nullptr, false);
  if (j.is_discarded() || !j.is_object() || JsonString(j, "schema") != "dualtrack.env/1") {
    return nullptr;
  }
  return j;
}

Status WriteManifest(const std::filesystem::path& dir, const json& manifest) {
  return WriteFileAtomic(dir / "manifest.json", manifest.dump(1) + "\n");
}

void WriteAll(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;  // A full disk must not stop the run; the log is then short.
    }
    data += w;
    n -= static_cast<std::size_t>(w);
  }
}

// Classifies the run (bundle/outcome.cc) and records the outcome, its reason and the stderr tail
// in the manifest: a run that could not start is not evidence about the task.
void RecordOutcome(const std::filesystem::path& dir, int forwarded_signal, bool timed_out,
                   json& manifest, const json& exception, RunOutcome& outcome) {
  OutcomeFacts facts;
  facts.status = outcome.status;
  facts.exit_code = outcome.exit_code;
  facts.signal = outcome.signal;
  facts.forwarded_signal = forwarded_signal;
  facts.timed_out = timed_out;
  if (manifest.contains("steps_completed") && manifest["steps_completed"].is_number_integer()) {
    facts.steps_completed = manifest["steps_completed"].get<std::int64_t>();
  }
  facts.exception = exception;
  facts.stderr_tail = ReadLogTail(dir / "stderr.log");
  ClassifyOutcome(facts, outcome);
  manifest["outcome"] = ToString(outcome.outcome);
  manifest["outcome_reason"] = outcome.reason.empty() ? json(nullptr) : json(outcome.reason);
  manifest["missing_package"] =
      outcome.missing_package.empty() ? json(nullptr) : json(outcome.missing_package);
  manifest["stderr_tail"] = outcome.stderr_tail;
}

// A track's name is not its device: a run labelled `mps` on a host where torch has no usable MPS
// ran on the CPU. Warn, and record it (`device_warning`) so that no reader takes it for MPS.
void CheckDeviceLabel(const std::string& track, json& manifest, Io& io) {
  if (track != "mps") return;
  auto it = manifest.find("mps_available");
  if (it == manifest.end() || !it->is_boolean() || it->get<bool>()) return;
  const std::string warning =
      "track 'mps' ran on a host where torch reports MPS unavailable: its operators ran on the "
      "CPU, so this bundle is not MPS evidence";
  manifest["device_warning"] = warning;
  io.err << "dualtrack run: warning: " << warning << "\n";
}

// An exclusive advisory lock on the bundle folder (flock on the folder itself, so no lock file
// joins the bundle), released when the returned descriptor closes. Not inherited by the child.
Result<UniqueFd> LockBundleFolder(const std::filesystem::path& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) {
    return MakeError(ErrorCode::kIo, "cannot open the bundle folder: " + ErrnoMessage(errno),
                     dir.string());
  }
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return MakeError(ErrorCode::kUsage,
                       "another `dualtrack run` is writing a bundle into this folder; wait for "
                       "it or choose another -o",
                       dir.string());
    }
    // A file system without locks (some network mounts) must not stop the run.
  }
  return fd;
}

// The manifest as the run starts: what was asked, where, on which commit and data; the outcome
// fields null until the run ends ("status": "incomplete" if it never does).
json InitialManifest(const RunOptions& options, const std::filesystem::path& cwd,
                     const std::filesystem::path& root, const json& git, const json& data_slice) {
  return {
      {"schema", kManifestSchema},
      {"dualtrack_version", kVersion},
      {"track", options.track},
      {"command", options.command},
      {"cwd", cwd.string()},
      {"root", root.string()},
      {"git_commit", git["commit"]},
      {"git_dirty", git["dirty"]},
      {"data", data_slice},
      {"data_digest", data_slice.is_object() ? data_slice["digest"] : json(nullptr)},
      {"env", nullptr},
      {"seed", options.seed ? json(*options.seed) : json(nullptr)},
      {"deterministic", options.deterministic},
      {"redirect_cuda", options.redirect_cuda ? json(*options.redirect_cuda) : json(nullptr)},
      {"steps_requested", options.steps},
      {"timeout_s", options.timeout_s ? json(*options.timeout_s) : json(nullptr)},
      {"env_vars", InterestingEnvVars()},
      {"started", IsoNow()},
      {"ended", nullptr},
      {"status", "incomplete"},
      {"exit_code", nullptr},
      {"signal", nullptr},
      {"exception", nullptr},
      {"steps", json::array()},
      {"wall_s", nullptr},
      {"peak_rss_bytes", nullptr},
      {"peak_device_bytes", nullptr},
      {"redirects", json::array()},
      {"float64", json::array()},
      {"dualtrack_pid", static_cast<std::int64_t>(::getpid())},
      {"child_pid", nullptr},
  };
}

// The options a run cannot start without, checked before anything is written.
Status CheckRunOptions(const RunOptions& options) {
  if (!ValidTrackName(options.track)) {
    return MakeError(ErrorCode::kUsage,
                     "--track must be a short name of letters, digits, '-', '_' or '.' (got '" +
                         options.track + "')");
  }
  if (options.command.empty()) {
    return MakeError(ErrorCode::kUsage, "no command to run: put it after '--'");
  }
  if (options.steps < 0) return MakeError(ErrorCode::kUsage, "--steps must be 0 or more");
  if (options.redirect_cuda && *options.redirect_cuda != "cpu" && *options.redirect_cuda != "mps") {
    return MakeError(ErrorCode::kUsage, "--redirect-cuda must be 'cpu' or 'mps'");
  }
  return OkStatus();
}

// A bundle folder that is not empty is reused only with --force: the bundle's files and the
// temporaries of an interrupted atomic write go, anything else of the user's stays.
Status ClearBundleDir(const std::filesystem::path& dir, bool force) {
  std::error_code ec;
  if (!std::filesystem::is_empty(dir, ec)) {
    if (!force) {
      return MakeError(ErrorCode::kUsage,
                       "output directory is not empty; pass --force to replace the bundle in it",
                       dir.string());
    }
    for (const char* f : kBundleFiles) std::filesystem::remove(dir / f, ec);
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      // Leftover temporaries of an interrupted atomic write of a bundle file.
      const std::string name = e.path().filename().string();
      for (const char* f : kBundleFiles) {
        if (StartsWith(name, std::string(f) + ".tmp") ||
            StartsWith(name, "." + std::string(f) + ".tmp")) {
          std::filesystem::remove(e.path(), ec);
        }
      }
    }
  }

  return OkStatus();
}

// The edits to our environment for the child: the bootstrap sitecustomize and the package first
// on PYTHONPATH, and the run's options (`run_cfg`) for the tracer.
std::vector<std::pair<std::string, std::string>> ChildEnvironment(
    const RunOptions& options, const std::filesystem::path& bootstrap,
    const std::filesystem::path& pkg_parent, const json& run_cfg) {
  std::string pythonpath = bootstrap.string() + ":" + pkg_parent.string();
  if (const char* old = std::getenv("PYTHONPATH"); old != nullptr && *old != '\0')
    pythonpath += ":" + std::string(old);
  std::vector<std::pair<std::string, std::string>> env = {
      {"PYTHONPATH", pythonpath},
      {"DUALTRACK_RUN", run_cfg.dump()},
      // The tee shows output as it comes and a kill loses none of it.
      {"PYTHONUNBUFFERED", "1"}};
  if (options.deterministic && std::getenv("CUBLAS_WORKSPACE_CONFIG") == nullptr)
    env.emplace_back("CUBLAS_WORKSPACE_CONFIG", ":4096:8");  // cuBLAS needs it to be deterministic.
  return env;
}

// Starts the command in its own process group, tees its stdout and stderr to the bundle's logs
// and (unless quiet) to io, forwards SIGINT / SIGTERM (the third one kills), stops it at the
// timeout (SIGTERM: the tracer flushes on SystemExit; SIGKILL five seconds later), and waits for
// it. `started(pid)` runs once the child exists.
Result<SpawnResult> SpawnAndTee(const std::filesystem::path& program, const RunOptions& options,
                                std::vector<std::pair<std::string, std::string>> env,
                                const std::filesystem::path& dir, Io& io,
                                const std::function<void(pid_t)>& started) {
  UniqueFd out_log(
      ::open((dir / "stdout.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  UniqueFd err_log(
      ::open((dir / "stderr.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (out_log.get() < 0 || err_log.get() < 0) {
    return MakeError(ErrorCode::kIo, "cannot create the log files: " + ErrnoMessage(errno),
                     dir.string());
  }
  SpawnOptions spawn;
  spawn.argv = options.command;
  spawn.program = program;
  spawn.set_env = std::move(env);
  spawn.null_stdin = false;
  spawn.own_process_group = true;
  spawn.forward_signals = true;
  // A dualtrack killed outright (SIGKILL, the OOM killer) leaves no training running: on Linux
  // the child dies with us; elsewhere the tracer's bootstrap notices (the options' "parent_pid").
  spawn.die_with_parent = true;
  if (options.timeout_s)
    spawn.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(*options.timeout_s * 1000));
  spawn.kill_grace = std::chrono::seconds(5);
  spawn.on_started = started;
  const int logs[2] = {out_log.get(), err_log.get()};
  std::ostream* echo[2] = {&io.out, &io.err};
  spawn.on_output = [&](int stream, std::string_view chunk) {
    WriteAll(logs[stream - 1], chunk.data(), chunk.size());
    if (!options.quiet) {
      echo[stream - 1]->write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      echo[stream - 1]->flush();
    }
  };
  return Spawn(spawn);
}

// How the run ended, from the child's wait status, the timeout and a forwarded signal.
RunOutcome OutcomeOf(const SpawnResult& sp, const std::filesystem::path& dir) {
  RunOutcome outcome;
  outcome.dir = dir;
  outcome.wall_s = sp.wall_s;
#if defined(__APPLE__)
  outcome.peak_rss_bytes = static_cast<std::int64_t>(sp.usage.ru_maxrss);  // Bytes on macOS.
#else
  outcome.peak_rss_bytes = static_cast<std::int64_t>(sp.usage.ru_maxrss) * 1024;  // KiB on Linux.
#endif
  if (WIFSIGNALED(sp.wait_status)) {
    outcome.signal = WTERMSIG(sp.wait_status);
    outcome.status = RunStatus::kKilled;
  } else {
    outcome.exit_code = WEXITSTATUS(sp.wait_status);
    if (sp.timed_out) {
      outcome.signal = SIGTERM;
      outcome.status = RunStatus::kKilled;
    } else if (sp.forwarded_signal != 0) {
      outcome.signal = sp.forwarded_signal;
      outcome.status = RunStatus::kKilled;
    } else {
      outcome.status = outcome.exit_code == 0 ? RunStatus::kOk : RunStatus::kFailed;
    }
  }

  return outcome;
}

// Merges what the tracer wrote (tracer.json, exception.json) into the manifest; returns the
// problems found on the way, and the exception record in `exception`.
std::vector<std::string> MergeTracer(const std::filesystem::path& dir, const RunOutcome& outcome,
                                     json& manifest, json& exception) {
  // Merge what the tracer wrote.
  std::vector<std::string> problems;
  std::string problem;
  json tracer = ReadSideFile(dir / "tracer.json", &problem);
  if (!problem.empty()) problems.push_back(problem);
  problem.clear();
  exception = ReadSideFile(dir / "exception.json", &problem);
  if (!problem.empty()) problems.push_back(problem);
  if (tracer.is_object()) {
    for (const char* key : {"steps", "redirects", "float64"}) {
      if (tracer.contains(key) && tracer[key].is_array()) manifest[key] = tracer[key];
    }
    for (const char* key :
         {"peak_device_bytes", "torch_version", "python", "steps_completed", "fallback_warnings",
          "mps_available", "device_peak", "cost_rows", "cost_truncated"}) {
      if (tracer.contains(key)) manifest[key] = tracer[key];
    }
    if (tracer.contains("tracer_errors") && tracer["tracer_errors"].is_array()) {
      for (const auto& e : tracer["tracer_errors"]) {
        if (e.is_string()) problems.push_back(e.get<std::string>());
      }
    }
    if (!tracer.value("final", false) && outcome.status == RunStatus::kOk) {
      problems.push_back("the tracer did not finish writing (no final flush)");
    }
  } else {
    problems.push_back(
        "the tracer wrote nothing: the command may not be a Python interpreter, or "
        "it started no Python process dualtrack could trace");
  }
  if (exception.is_object() && outcome.status != RunStatus::kOk) manifest["exception"] = exception;
  if (outcome.status == RunStatus::kFailed && !manifest["exception"].is_object()) {
    manifest["exception"] = {{"type", nullptr},
                             {"message", "exited with code " + std::to_string(outcome.exit_code)},
                             {"file", nullptr},
                             {"line", nullptr}};
  }
  return problems;
}

}  // namespace

std::string SignalName(int sig) {
  switch (sig) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGKILL:
      return "SIGKILL";
    case SIGHUP:
      return "SIGHUP";
    case SIGSEGV:
      return "SIGSEGV";
    case SIGABRT:
      return "SIGABRT";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGQUIT:
      return "SIGQUIT";
    default:
      return "signal " + std::to_string(sig);
  }
}

// The output directory: created, or reused only when empty or with --force. Normalised first,
// so `newdir/..` is the folder it names (the current one), not a new folder plus its parent.
Result<std::filesystem::path> MakeBundleDir(const std::filesystem::path& out_dir) {
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::absolute(out_dir, ec).lexically_normal();
  if (ec) return MakeError(ErrorCode::kIo, ec.message(), out_dir.string());
  if (!std::filesystem::exists(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return MakeError(ErrorCode::kIo, "cannot create: " + ec.message(), dir.string());
  }
  if (!std::filesystem::is_directory(dir, ec)) {
    return MakeError(ErrorCode::kUsage, "output path exists and is not a directory", dir.string());
  }
  return dir;
}

// The manifest's last word: how the run ended, its times and memory, what the tracer reported,
// and the files the bundle holds.
void FinishManifest(const RunOptions& options, const std::filesystem::path& dir,
                    const SpawnResult& sp, RunOutcome& outcome, json& manifest, Io& io) {
  json exception;
  std::vector<std::string> problems = MergeTracer(dir, outcome, manifest, exception);
  RecordOutcome(dir, sp.forwarded_signal, sp.timed_out, manifest, exception, outcome);
  CheckDeviceLabel(options.track, manifest, io);
  if (options.collect_env) manifest["env"] = CollectEnv();
  manifest["ended"] = IsoNow();
  manifest["status"] = ToString(outcome.status);
  manifest["exit_code"] =
      outcome.signal != 0 && WIFSIGNALED(sp.wait_status) ? json(nullptr) : json(outcome.exit_code);
  manifest["signal"] = outcome.signal != 0 ? json(SignalName(outcome.signal)) : json(nullptr);
  manifest["wall_s"] = sp.wall_s;
  manifest["peak_rss_bytes"] = outcome.peak_rss_bytes;
  manifest["problems"] = problems;
  outcome.problems = problems.size();
  std::error_code ec;
  json files = json::object();
  for (const char* f : kBundleFiles) {
    auto size = std::filesystem::file_size(dir / f, ec);
    if (!ec && std::string_view(f) != "manifest.json") files[f] = size;
  }
  manifest["files"] = files;
}

Result<RunOutcome> RunTrack(const RunOptions& options, Io& io) {
  if (auto st = CheckRunOptions(options); !st) return st.take_error();
  auto program = FindInPath(options.command[0]);
  if (!program) {
    return MakeError(ErrorCode::kUsage, "program not found: " + options.command[0]);
  }
  auto pkg_parent = PythonPackageParent();
  if (!pkg_parent) return pkg_parent.take_error();
  const auto bootstrap = *pkg_parent / "dualtrack" / "_bootstrap";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(bootstrap / "sitecustomize.py", ec)) {
    return MakeError(ErrorCode::kInternal, "dualtrack's Python bootstrap is missing",
                     (bootstrap / "sitecustomize.py").string());
  }

  auto made = MakeBundleDir(options.out_dir);
  if (!made) return made.take_error();
  const std::filesystem::path dir = *made;
  // Held until the run ends: a second run into the same folder fails instead of mixing two
  // bundles. Taken before the emptiness check, so two runs racing for a new folder cannot both
  // find it empty and take turns.
  auto lock = LockBundleFolder(dir);
  if (!lock) return lock.take_error();
  if (auto st = ClearBundleDir(dir, options.force); !st) return st.take_error();

  const std::filesystem::path cwd = std::filesystem::current_path(ec);
  const std::filesystem::path root = ProjectRoot(options.command, cwd);
  json git = GitFacts(root);
  auto data_slice = DataSliceRecord(options, cwd);
  if (!data_slice.ok()) return data_slice.take_error();

  json manifest = InitialManifest(options, cwd, root, git, *data_slice);
  if (auto st = WriteManifest(dir, manifest); !st) return st.take_error();

  // The child's environment: the bootstrap sitecustomize and the package first on PYTHONPATH, and
  // the run's options for the tracer.
  json run_cfg = {{"bundle", dir.string()},
                  {"steps", options.steps},
                  {"seed", manifest["seed"]},
                  {"deterministic", options.deterministic},
                  {"redirect_cuda", manifest["redirect_cuda"]},
                  {"peak", options.measure_peak},
                  {"root", root.string()},
                  {"parent_pid", static_cast<std::int64_t>(::getpid())}};
  auto env = ChildEnvironment(options, bootstrap, *pkg_parent, run_cfg);
  auto spawned = SpawnAndTee(*program, options, std::move(env), dir, io, [&](pid_t pid) {
    manifest["child_pid"] = static_cast<std::int64_t>(pid);
    (void)WriteManifest(dir, manifest);
  });
  if (!spawned) return spawned.take_error();
  // After the child the signals wait until the bundle is finalised, as they did while forwarded.
  ScopedSignalHandlers held(SIG_IGN);
  const SpawnResult& sp = *spawned;
  RunOutcome outcome = OutcomeOf(sp, dir);

  FinishManifest(options, dir, sp, outcome, manifest, io);
  if (auto st = WriteManifest(dir, manifest); !st) return st.take_error();
  return outcome;
}

}  // namespace dt::bundle
