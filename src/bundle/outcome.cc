// What a run is evidence of. A script that dies at import because the auditing host lacks a
// package, or that cannot be opened, says nothing about CUDA or MPS: it "could not start", and the
// verdict treats its evidence as missing instead of reading the failure as a CUDA dependency.
#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <system_error>

#include "bundle/bundle.h"
#include "util/json_fields.h"
#include "util/strings.h"

namespace dt::bundle {

namespace {

// The last line of the tail that looks like "SomeError: message" (Python's final traceback line).
std::string LastErrorLine(std::string_view tail) {
  std::string last;
  for (std::string_view line : Split(tail, '\n')) {
    std::string_view t = Trim(line);
    auto colon = t.find(": ");
    if (colon == std::string_view::npos || colon == 0) continue;
    std::string_view name = t.substr(0, colon);
    if (EndsWith(name, "Error") || EndsWith(name, "Exception")) last = std::string(t);
  }
  return last;
}

}  // namespace

std::string MissingModule(std::string_view text) {
  constexpr std::string_view kNeedle = "No module named ";
  auto pos = text.rfind(kNeedle);
  if (pos == std::string_view::npos) return {};
  std::string_view rest = text.substr(pos + kNeedle.size());
  if (rest.empty()) return {};
  const char quote = rest.front();
  if (quote == '\'' || quote == '"') {
    auto end = rest.find(quote, 1);
    if (end == std::string_view::npos) return {};
    return std::string(rest.substr(1, end - 1));
  }
  auto end = rest.find_first_of(" \n\r\t");
  return std::string(rest.substr(0, end));
}

std::string ReadLogTail(const std::filesystem::path& path, std::size_t max_lines,
                        std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::size_t>(std::max<std::streamoff>(in.tellg(), 0));
  const std::size_t take = std::min(size, max_bytes);
  in.seekg(static_cast<std::streamoff>(size - take));
  std::string text(take, '\0');
  in.read(text.data(), static_cast<std::streamsize>(take));
  text.resize(static_cast<std::size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  // Drop a partial first line when the tail was cut, then keep the last max_lines lines.
  if (take < size) {
    if (auto nl = text.find('\n'); nl != std::string::npos) text.erase(0, nl + 1);
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  std::size_t lines = 0;
  for (std::size_t i = text.size(); i-- > 0;) {
    if (text[i] == '\n' && ++lines == max_lines) return text.substr(i + 1);
  }
  return text;
}

void ClassifyOutcome(const OutcomeFacts& f, RunOutcome& out) {
  out.stderr_tail = f.stderr_tail;
  out.timed_out = f.timed_out;
  out.interrupted = f.forwarded_signal == SIGINT && !f.timed_out;
  if (f.timed_out) {
    out.outcome = OutcomeKind::kTimedOut;
    out.reason = "stopped after the --timeout was reached";
    return;
  }
  if (f.forwarded_signal != 0) {
    out.outcome = OutcomeKind::kInterrupted;
    out.reason = "interrupted by " + SignalName(f.forwarded_signal) + " before it finished";
    return;
  }
  if (f.status == RunStatus::kOk) {
    out.outcome = OutcomeKind::kFinished;
    return;
  }
  if (f.status == RunStatus::kKilled) {
    // Crashes are the task's own failure (evidence); a kill from outside (the OOM killer, a user's
    // kill) stops the run without saying whether the task can run.
    if (f.signal == SIGKILL || f.signal == SIGTERM || f.signal == SIGHUP || f.signal == SIGINT) {
      out.outcome = OutcomeKind::kInterrupted;
      out.reason = "killed by " + SignalName(f.signal) + " from outside (out of memory, or a user)";
    } else {
      out.outcome = OutcomeKind::kCrashed;
    }
    return;
  }
  // A failed script: did it start?
  const std::string type = JsonString(f.exception, "type");
  const std::string message = JsonString(f.exception, "message");
  if (JsonString(f.exception, "origin") == "dualtrack") {
    // Raised inside dualtrack's tracer (the innermost frame is the tracer's): the project is not
    // to blame and the run shows nothing about it.
    out.outcome = OutcomeKind::kTracerError;
    out.reason = fmt::format(
        "dualtrack's tracer raised {}: {} (dualtrack's error, not the project's; evidence "
        "incomplete: please report it with the traceback in stderr.log)",
        type.empty() ? "an exception" : type, message.substr(0, 300));
    return;
  }
  const std::string last = LastErrorLine(f.stderr_tail);
  std::string module = type == "ModuleNotFoundError" ? MissingModule(message) : std::string();
  if (module.empty() && StartsWith(last, "ModuleNotFoundError")) module = MissingModule(last);
  if (!module.empty()) {
    out.outcome = OutcomeKind::kCouldNotStart;
    out.missing_package = module.substr(0, module.find('.'));
    out.reason = "missing Python package " + out.missing_package +
                 " (install the project's requirements, or pass --python)";
    return;
  }
  // Other import failures mean an incompatible package, unless the import itself needs CUDA
  // (a CUDA-built extension without libcudart): that is evidence about CUDA, kept as a failure.
  const bool import_error = type == "ImportError" || StartsWith(last, "ImportError");
  const std::string text = Lower(message + "\n" + last);
  const bool about_cuda =
      text.find("cuda") != std::string::npos || text.find("libcu") != std::string::npos ||
      text.find("nvidia") != std::string::npos || text.find("nccl") != std::string::npos;
  if (import_error && !about_cuda) {
    out.outcome = OutcomeKind::kCouldNotStart;
    out.reason = "a Python package failed to import (" +
                 (message.empty() ? last : "ImportError: " + message) +
                 "; install the project's requirements, or pass --python)";
    return;
  }
  // `python missing.py`: the interpreter says it cannot open the file (exit 2, nothing traced).
  if (type.empty() && f.stderr_tail.find("can't open file") != std::string::npos) {
    out.outcome = OutcomeKind::kCouldNotStart;
    out.reason = "the script could not be opened: " + std::string(Trim(f.stderr_tail));
    return;
  }
  out.outcome = OutcomeKind::kFailed;
}

}  // namespace dt::bundle
