#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "bundle/bundle.h"
#include "util/json_number.h"
#include "util/numeric.h"
#include "util/strings.h"

namespace dt::bundle {

namespace {

using nlohmann::json;

json OpToJson(const OpRow& r) {
  json loc = nullptr;
  if (r.location) {
    loc = {
        {"file", r.location->file}, {"line", r.location->line}, {"function", r.location->function}};
  }
  return {{"op", r.op},
          {"overload", r.overload},
          {"device", r.device},
          {"dtypes", r.dtypes},
          {"count", r.count},
          {"location", loc},
          {"status", ToString(r.status)},
          {"error", r.error ? json(*r.error) : json(nullptr)}};
}

std::vector<const OpRow*> TopOps(const Bundle& b, std::size_t n) {
  std::vector<const OpRow*> rows;
  for (const auto& r : b.ops) rows.push_back(&r);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const OpRow* a, const OpRow* c) { return a->count > c->count; });
  if (rows.size() > n) rows.resize(n);
  return rows;
}

std::string Str(const json& j, const char* key, const char* fallback = "-") {
  if (j.is_object() && j.contains(key)) {
    const json& v = j[key];
    if (v.is_string()) return v.get<std::string>();
    if (v.is_null()) return fallback;
    return v.dump();
  }
  return fallback;
}

std::string Bytes(const json& v) {
  if (!v.is_number()) return "n/a";
  double b = v.get<double>();
  char buf[32];
  if (b >= 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1024.0 * 1024));
  }
  return buf;
}

std::string Where(const json& j) {
  if (!j.is_object() || !j.contains("file") || !j["file"].is_string()) return "(no user code)";
  std::string s = j["file"].get<std::string>();
  if (j.contains("line") && j["line"].is_number_integer()) s += ":" + j["line"].dump();
  return s;
}

std::string OpName(const OpRow& r) {
  return r.overload.empty() || r.overload == "default" ? r.op : r.op + "." + r.overload;
}

std::string Join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

}  // namespace

json ShowJson(const Bundle& b, std::size_t top_ops) {
  json j = {{"schema", "dualtrack.show/1"}, {"dir", b.dir.string()}, {"manifest", b.manifest}};
  std::int64_t calls = 0;
  json fallbacks = json::array();
  json failed = json::array();
  for (const auto& r : b.ops) {
    calls = SaturatingAdd(calls, r.count);
    if (r.status == OpStatus::kFallback) fallbacks.push_back(OpToJson(r));
    if (r.status == OpStatus::kFailed) failed.push_back(OpToJson(r));
  }
  j["ops_summary"] = {{"rows", b.ops.size()},
                      {"calls", calls},
                      {"fallback", fallbacks.size()},
                      {"failed", failed.size()}};
  json top = json::array();
  for (const OpRow* r : TopOps(b, top_ops)) top.push_back(OpToJson(*r));
  j["top_ops"] = top;
  j["fallback_ops"] = fallbacks;
  j["failed_ops"] = failed;
  json tensors = json::array();
  for (const auto& t : b.tensors) {
    tensors.push_back({{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}});
  }
  j["tensors"] = tensors;
  json metrics = json::array();
  for (const auto& m : b.metrics) {
    metrics.push_back({{"step", m.step}, {"name", m.name}, {"value", JsonNumberOrToken(m.value)}});
  }
  j["metrics"] = metrics;
  return j;
}

namespace {

// The run: status and outcome, track, command, commit, times and memory, settings, steps.
void ShowRun(std::ostringstream& o, const Bundle& b) {
  const json& m = b.manifest;
  o << "bundle      " << b.dir.string() << "\n";
  o << "status      " << ToString(b.status);
  if (b.status == RunStatus::kFailed) {
    const json& e = m.contains("exception") ? m["exception"] : json(nullptr);
    if (e.is_object()) {
      o << ": " << Str(e, "type", "error") << ": " << Str(e, "message", "") << "\n            at "
        << Where(e);
    }
  } else if (b.status == RunStatus::kKilled) {
    o << " by " << Str(m, "signal", "a signal");
  } else if (b.status == RunStatus::kIncomplete) {
    o << " (the run was interrupted before dualtrack could finish the bundle)";
  }
  o << "\n";
  // Runs that say nothing about the task (could not start, interrupted, timed out) say so first.
  if (b.outcome && *b.outcome != OutcomeKind::kFinished && *b.outcome != OutcomeKind::kFailed) {
    o << "outcome     " << ToString(*b.outcome);
    const std::string reason = Str(m, "outcome_reason", "");
    if (!reason.empty()) o << ": " << reason;
    o << "\n";
  }
  o << "track       " << b.track;
  const std::string warning = Str(m, "device_warning", "");
  if (!warning.empty()) o << "  (warning: " << warning << ")";
  o << "\n";
  if (m.contains("command") && m["command"].is_array()) {
    std::vector<std::string> parts;
    for (const auto& a : m["command"])
      parts.push_back(a.is_string() ? a.get<std::string>() : a.dump());
    o << "command     " << Join(parts, " ") << "\n";
  }
  o << "cwd         " << Str(m, "cwd") << "\n";
  o << "git         " << Str(m, "git_commit", "(not a git checkout)");
  if (m.contains("git_dirty") && m["git_dirty"].is_boolean() && m["git_dirty"].get<bool>()) {
    o << " (dirty)";
  }
  o << "\n";
  o << "started     " << Str(m, "started") << ", ended " << Str(m, "ended") << "\n";
  char buf[64];
  std::string wall = "n/a";
  if (m.contains("wall_s") && m["wall_s"].is_number()) {
    std::snprintf(buf, sizeof buf, "%.2f s", m["wall_s"].get<double>());
    wall = buf;
  }
  o << "time/memory wall " << wall << ", peak RSS "
    << Bytes(m.contains("peak_rss_bytes") ? m["peak_rss_bytes"] : json(nullptr))
    << ", peak device memory "
    << Bytes(m.contains("peak_device_bytes") ? m["peak_device_bytes"] : json(nullptr)) << "\n";
  o << "settings    seed " << Str(m, "seed", "none") << ", deterministic "
    << Str(m, "deterministic", "false") << ", redirect-cuda " << Str(m, "redirect_cuda", "no")
    << ", torch " << Str(m, "torch_version", "?") << "\n";
  if (m.contains("env_vars") && m["env_vars"].is_object()) {
    o << "env vars    PYTORCH_ENABLE_MPS_FALLBACK="
      << Str(m["env_vars"], "PYTORCH_ENABLE_MPS_FALLBACK", "(unset)") << "\n";
  }
  if (m.contains("steps") && m["steps"].is_array()) {
    o << "steps       " << m["steps"].size() << " completed, " << Str(m, "steps_requested", "?")
      << " captured:";
    std::size_t shown = 0;
    for (const auto& s : m["steps"]) {
      if (++shown > 10) {
        o << " ...";
        break;
      }
      if (s.is_object() && s.contains("wall_s") && s["wall_s"].is_number()) {
        std::snprintf(buf, sizeof buf, " %s: %.3f s", Str(s, "step").c_str(),
                      s["wall_s"].get<double>());
        o << buf;
      }
    }
    o << "\n";
  }
}

// The operator trace (the busiest rows first), CPU fallbacks, float64 and CUDA redirects.
void ShowOps(std::ostringstream& o, const Bundle& b, std::size_t top_ops) {
  const json& m = b.manifest;
  char buf[64];
  std::int64_t calls = 0;
  std::size_t n_fallback = 0, n_failed = 0;
  for (const auto& r : b.ops) {
    calls = SaturatingAdd(calls, r.count);
    n_fallback += r.status == OpStatus::kFallback;
    n_failed += r.status == OpStatus::kFailed;
  }
  o << "\nops         " << b.ops.size() << " (operator, device, dtypes) rows, " << calls
    << " calls, " << n_fallback << " fell back to the CPU, " << n_failed << " failed\n";
  for (const OpRow* r : TopOps(b, top_ops)) {
    std::snprintf(buf, sizeof buf, "  %8lld  ", static_cast<long long>(r->count));
    o << buf << OpName(*r) << "  [" << (r->device.empty() ? "-" : r->device) << " "
      << Join(r->dtypes, ",") << "]  "
      << (r->location ? r->location->file + ":" + std::to_string(r->location->line)
                      : std::string("(no user code)"));
    if (r->status != OpStatus::kOk) o << "  " << ToString(r->status);
    o << "\n";
  }
  o << "\nfallbacks   ";
  if (n_fallback + n_failed == 0) o << "none";
  o << "\n";
  for (const auto& r : b.ops) {
    if (r.status == OpStatus::kOk) continue;
    o << "  " << ToString(r.status) << "  " << OpName(r) << " on " << r.device << "  "
      << (r.location ? r.location->file + ":" + std::to_string(r.location->line) : "") << "\n";
    if (r.error) o << "      " << r.error->substr(0, 200) << "\n";
  }
  o << "float64     ";
  if (!m.contains("float64") || !m["float64"].is_array() || m["float64"].empty()) {
    o << "none";
  } else {
    o << m["float64"].size() << " operator(s) met float64 (MPS has none)";
  }
  o << "\n";
  if (m.contains("float64") && m["float64"].is_array()) {
    for (const auto& f : m["float64"]) o << "  " << Str(f, "op") << "  " << Where(f) << "\n";
  }
  o << "redirects   ";
  if (!m.contains("redirects") || !m["redirects"].is_array() || m["redirects"].empty()) {
    o << "none";
  } else {
    o << m["redirects"].size() << " CUDA use(s) redirected";
  }
  o << "\n";
  if (m.contains("redirects") && m["redirects"].is_array()) {
    for (const auto& r : m["redirects"]) {
      o << "  " << Str(r, "what") << " -> " << Str(r, "to") << "  " << Where(r) << "  x"
        << Str(r, "count", "1") << "\n";
    }
  }
}

// The captured tensors (gradients and parameters per step), metrics and problems.
void ShowCaptures(std::ostringstream& o, const Bundle& b) {
  const json& m = b.manifest;
  char buf[64];
  o << "tensors     " << b.tensors.size() << "\n";
  // Gradients and parameters are summarised per step; the rest is listed by name.
  std::map<std::string, std::pair<std::size_t, std::uint64_t>> groups;
  std::size_t shown = 0;
  for (const auto& t : b.tensors) {
    if (StartsWith(t.name, "grad/") || StartsWith(t.name, "param/")) {
      std::size_t second = t.name.find('/', t.name.find('/') + 1);
      auto& g = groups[t.name.substr(0, second) + "/*"];
      ++g.first;
      g.second += t.end - t.begin;
      continue;
    }
    if (++shown > 25) continue;
    std::vector<std::string> dims;
    for (auto d : t.shape) dims.push_back(std::to_string(d));
    o << "  " << t.name << "  " << t.dtype << " [" << Join(dims, ", ") << "]\n";
  }
  if (shown > 25) o << "  ... " << (shown - 25) << " more (--format json lists all)\n";
  for (const auto& [name, g] : groups) {
    o << "  " << name << "  " << g.first << " tensors, " << Bytes(json(g.second)) << "\n";
  }
  o << "metrics     " << b.metrics.size() << "\n";
  std::map<std::string, std::vector<const MetricRow*>> by_name;
  for (const auto& mr : b.metrics) by_name[mr.name].push_back(&mr);
  for (const auto& [name, rows] : by_name) {
    o << "  " << name << ":";
    std::size_t k = 0;
    for (const MetricRow* r : rows) {
      if (++k > 10) {
        o << " ...";
        break;
      }
      std::snprintf(buf, sizeof buf, " step %lld = %.9g", static_cast<long long>(r->step),
                    r->value);
      o << buf;
      if (!std::isfinite(r->value)) o << " (non-finite)";
    }
    o << "\n";
  }
  if (m.contains("problems") && m["problems"].is_array() && !m["problems"].empty()) {
    o << "problems\n";
    for (const auto& p : m["problems"])
      o << "  " << (p.is_string() ? p.get<std::string>() : p.dump()) << "\n";
  }
}

}  // namespace

std::string ShowText(const Bundle& b, std::size_t top_ops) {
  std::ostringstream o;
  ShowRun(o, b);
  ShowOps(o, b, top_ops);
  ShowCaptures(o, b);
  return o.str();
}

}  // namespace dt::bundle
