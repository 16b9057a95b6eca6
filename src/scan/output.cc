#include "scan/output.h"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join lives here from fmt 11 on (Homebrew).

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "util/parallel.h"
#include "util/strings.h"

namespace dt::scan {

namespace {

using nlohmann::json;

constexpr std::array<Severity, 4> kSeverities = {Severity::kBlocker, Severity::kReplace,
                                                 Severity::kFixable, Severity::kPortable};

// SARIF's base URI needs an absolute path (the root may have been given relative).
std::string SrcRoot(const std::string& root) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(root, ec);
  std::string s = (ec ? std::filesystem::path(root) : abs.lexically_normal()).generic_string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// File names are printed escaped: one holding ESC must not rewrite the user's terminal. `prefix`
// leads from the current directory to the root (DisplayPrefix), so that the text is clickable.
std::string Location(const Finding& f, std::string_view prefix = {}) {
  std::string file = EscapeControl(std::string(prefix) + f.file);
  if (f.cell) return fmt::format("{}:cell {}:{}:{}", file, *f.cell, f.line, f.column);
  return fmt::format("{}:{}:{}", file, f.line, f.column);
}

// The scanned root as seen from the current directory, '/'-terminated ("" for "."): files are
// kept relative to the root, and text output puts this in front of them so that a terminal or an
// editor opens `examples/cuda-research/train.py:12:5` from where the user stands.
std::string DisplayPrefix(const std::string& root) {
  namespace fs = std::filesystem;
  fs::path r(root);
  std::error_code ec;
  if (r.is_absolute()) {
    fs::path rel = r.lexically_relative(fs::current_path(ec));
    if (!ec && !rel.empty() && *rel.begin() != "..") r = rel;
  }
  std::string s = r.lexically_normal().generic_string();
  if (s.empty() || s == "." || s == "./") return "";
  if (s.back() != '/') s.push_back('/');
  return s;
}

std::string_view Color(Severity s) {
  switch (s) {
    case Severity::kBlocker:
      return "\x1b[1;31m";
    case Severity::kReplace:
      return "\x1b[31m";
    case Severity::kFixable:
      return "\x1b[33m";
    case Severity::kPortable:
      return "\x1b[32m";
  }
  return "";
}

std::string Percent(double r) { return fmt::format("{:.0f}%", r * 100.0); }

}  // namespace

json Statistics(const ScanReport& report) {
  std::map<std::string, int> by_code;
  std::map<std::string, std::vector<Finding>> by_file;
  for (const auto& f : report.findings) {
    ++by_code[f.code];
    by_file[f.file].push_back(f);
  }
  json files = json::object();
  for (const auto& [file, list] : by_file)
    files[file] = {{"findings", list.size()}, {"readiness", Readiness(list)}};
  return {{"by_code", by_code}, {"by_file", files}};
}

namespace {

// A finding's field that is not text: null, a bool or an integer. The fast writer prints it
// without building a JSON value (seven per finding, on reports of tens of thousands).
struct Scalar {
  enum Kind : std::uint8_t { kNull, kBool, kInt } kind = kNull;
  std::int64_t value = 0;

  static Scalar Of(bool b) { return Scalar{kBool, b ? 1 : 0}; }
  static Scalar Of(std::int64_t v) { return Scalar{kInt, v}; }
  template <class T>
  static Scalar Of(const std::optional<T>& v) {
    return v ? Of(*v) : Scalar{};
  }
  json Json() const {
    if (kind == kBool) return json(value != 0);
    if (kind == kInt) return json(value);
    return json(nullptr);
  }
  // As nlohmann's dump writes it.
  void AppendTo(std::string& out) const {
    if (kind == kNull) {
      out += "null";
    } else if (kind == kBool) {
      out += value != 0 ? "true" : "false";
    } else {
      char buf[24];
      auto end = std::to_chars(buf, buf + sizeof buf, value).ptr;
      out.append(buf, end);
    }
  }
};

// A finding's fields in the document, in key order (the order nlohmann writes): the one list that
// the document, the fast writer and its UTF-8 check share. `str` gets the text fields, `scalar`
// the others.
template <class Str, class ScalarField>
void ForEachFindingField(const Finding& f, Str&& str, ScalarField&& scalar) {
  scalar("cell", Scalar::Of(f.cell));
  str("class", FindingClassName(f.cls));
  str("code", f.code);
  scalar("column", Scalar::Of(f.column));
  str("file", f.file);
  scalar("file_line", Scalar::Of(f.file_line));
  if (f.fix.empty())
    scalar("fix", Scalar{});
  else
    str("fix", f.fix);
  scalar("guarded", Scalar::Of(f.guarded));
  scalar("in_import", Scalar::Of(f.in_import));
  scalar("line", Scalar::Of(f.line));
  str("message", f.message);
  scalar("mps_only", Scalar::Of(f.mps_only));
  scalar("option_default", Scalar::Of(f.option_default));
  scalar("placement", Scalar::Of(f.placement));
  scalar("reachable", Scalar::Of(f.reachable));
  scalar("reached_by", Scalar::Of(f.reached_by));
  str("replacement", f.replacement);
  str("severity", SeverityName(f.severity));
  str("snippet", f.snippet);
}

// The dualtrack.scan/1 document; `with_findings` false leaves "findings" empty (summary intact).
json ReportJson(const ScanReport& report, bool with_findings) {
  json findings = json::array();
  std::map<std::string, int> by_sev, by_class;
  int reach_yes = 0, reach_no = 0, reach_unknown = 0;
  for (const auto& f : report.findings) {
    if (with_findings) {
      json j = json::object();
      ForEachFindingField(
          f, [&](const char* k, std::string_view v) { j[k] = v; },
          [&](const char* k, Scalar v) { j[k] = v.Json(); });
      findings.push_back(std::move(j));
    }
    ++by_sev[std::string(SeverityName(f.severity))];
    ++by_class[std::string(FindingClassName(f.cls))];
    if (!f.reachable)
      ++reach_unknown;
    else if (*f.reachable)
      ++reach_yes;
    else
      ++reach_no;
  }
  json skipped = json::array();
  for (const auto& s : report.skipped) skipped.push_back({{"file", s.file}, {"reason", s.reason}});
  json suppressions = json::array();
  for (const auto& s : report.suppressions)
    suppressions.push_back({{"file", s.file},
                            {"line", s.line},
                            {"code", s.code.empty() ? json(nullptr) : json(s.code)},
                            {"problem", s.problem}});
  json stats = Statistics(report);
  json doc = {
      {"schema", "dualtrack.scan/1"},
      {"root", report.root},
      {"entries", report.entries},
      {"findings", findings},
      {"summary",
       {{"files_scanned", report.files_scanned},
        {"findings", report.findings.size()},
        {"by_severity", by_sev},
        {"by_class", by_class},
        {"by_code", stats["by_code"]},
        {"by_reachability",
         {{"reachable", reach_yes}, {"unreachable", reach_no}, {"not_python", reach_unknown}}},
        {"readiness", Readiness(report.findings)}}},
      {"statistics", {{"by_file", stats["by_file"]}}},
      {"skipped", skipped},
      {"suppressions", suppressions}};
  if (!report.baseline.empty())
    doc["baseline"] = {{"file", report.baseline}, {"matched", report.baselined}};
  if (report.path) {
    const PathTraits& p = *report.path;
    auto place = [](const std::optional<PathPlace>& at) {
      return at ? json{{"file", at->file}, {"line", at->line}} : json(nullptr);
    };
    json model = place(p.model);
    if (p.model) model["api"] = p.model_api;
    doc["path"] = {{"cuda_choice", place(p.cuda_choice)},
                   {"mentions_mps", p.mentions_mps},
                   {"framework_device", p.framework_device},
                   {"model", model},
                   {"training", place(p.training)}};
  }
  return doc;
}

}  // namespace

nlohmann::json ScanReportToJson(const ScanReport& report) { return ReportJson(report, true); }

namespace {

// nlohmann's escaping with ensure_ascii off: the short escapes, \u00xx for other control bytes,
// everything else (UTF-8 included) as is.
void AppendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  std::size_t run = 0;  // Start of the bytes not yet copied: runs that need no escape go at once.
  for (std::size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        out += fmt::format("\\u{:04x}", c);
    }
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

void AppendFinding(std::string& out, const Finding& f) {
  const char* sep = "    {\n";
  auto key = [&](const char* k) {
    out += sep;
    out += "      \"";
    out += k;
    out += "\": ";
    sep = ",\n";
  };
  ForEachFindingField(
      f,
      [&](const char* k, std::string_view v) {
        key(k);
        AppendJsonString(out, v);
      },
      [&](const char* k, Scalar v) {
        key(k);
        v.AppendTo(out);
      });
  out += "\n    }";
}

// Whether every text field of a finding is UTF-8 (what the fast writer needs).
bool FindingIsUtf8(const Finding& f) {
  bool valid = true;
  ForEachFindingField(
      f, [&](const char*, std::string_view v) { valid = valid && IsValidUtf8(v); },
      [](const char*, Scalar) {});
  return valid;
}

}  // namespace

std::string ScanReportJsonText(const ScanReport& report, unsigned threads) {
  // The findings, in chunks formatted on up to `threads` threads (a large report is megabytes).
  constexpr std::size_t kChunk = 1024;
  const std::size_t n = report.findings.size();
  std::vector<std::string> parts((n + kChunk - 1) / kChunk);
  std::atomic<bool> utf8{true};
  ParallelForChunks(n, kChunk, threads, [&](std::size_t b, std::size_t e, unsigned) {
    std::string& out = parts[b / kChunk];
    out.reserve(kChunk * 512);
    for (std::size_t i = b; i < e && utf8; ++i) {
      if (!FindingIsUtf8(report.findings[i])) utf8 = false;
      if (i > 0) out += ",\n";
      AppendFinding(out, report.findings[i]);
    }
  });
  // nlohmann rejects invalid UTF-8; leave such (unexpected) text to it rather than guess. A file
  // name that is not UTF-8 (any bytes are a valid name) becomes U+FFFD, never a failure.
  if (!utf8)
    return ScanReportToJson(report).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  std::string text = ReportJson(report, false).dump(2, ' ', false, json::error_handler_t::replace);
  // Keys are sorted, so the top-level (two-space) "findings" occurs once.
  const std::string_view slot = "\n  \"findings\": [],\n";
  std::size_t at = text.find(slot);
  if (at == std::string::npos || n == 0) return text + "\n";
  std::size_t size = text.size() + 32;
  for (const auto& part : parts) size += part.size();
  std::string out;
  out.reserve(size);
  out.append(text, 0, at);
  out += "\n  \"findings\": [\n";
  for (const auto& part : parts) out += part;
  out += "\n  ],\n";
  out.append(text, at + slot.size());
  out += "\n";
  return out;
}

namespace {

// Findings of one file that read as one: the same code, severity, guard and reachability (a
// Triton kernel's tl.* calls, float64 throughout one function).
bool SameRun(const Finding& a, const Finding& b) {
  return a.code == b.code && a.severity == b.severity && a.guarded == b.guarded &&
         a.reachable == b.reachable && a.cell == b.cell;
}

// More than this many findings in a group are folded into one line; members of a group are at
// most kFoldGap lines apart.
constexpr std::size_t kFoldAbove = 3;
constexpr std::int64_t kFoldGap = 20;

std::string Tags(const Finding& f) {
  std::string tags;
  if (f.guarded) tags += " [guarded]";
  if (f.reachable) tags += *f.reachable ? " [reachable]" : " [not reachable]";
  return tags;
}

// "a, b, c and 4 more" on lines of at most `width` characters after `indent`.
std::string Wrapped(const std::vector<std::string>& items, std::size_t indent, std::size_t width) {
  std::string out, line;
  for (std::size_t i = 0; i < items.size(); ++i) {
    std::string item = items[i] + (i + 1 < items.size() ? "," : "");
    if (!line.empty() && line.size() + 1 + item.size() > width) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + item;
  }
  return out + line;
}

}  // namespace

namespace {

// Terminal colours, or none.
struct TextStyle {
  bool color = false;
  std::string reset, dim, bold;
  explicit TextStyle(bool on) : color(on) {
    reset = c("\x1b[0m");
    dim = c("\x1b[2m");
    bold = c("\x1b[1m");
  }
  std::string c(std::string_view code) const { return color ? std::string(code) : std::string(); }
};

std::string Plural(std::size_t n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

// The head and the summary: counts by severity and class, the path, readiness, entry scripts.
void TextSummary(std::string& out, const ScanReport& report, std::size_t files,
                 const TextStyle& st) {
  const std::string &reset = st.reset, &bold = st.bold;
  auto c = [&](std::string_view code) { return st.c(code); };
  out += fmt::format("{}dualtrack scan{} {}: {} in {} ({} scanned, {} skipped)\n", bold, reset,
                     report.root, Plural(report.findings.size(), "finding"), Plural(files, "file"),
                     Plural(static_cast<std::size_t>(report.files_scanned), "file"),
                     report.skipped.size());
  if (!report.baseline.empty())
    out += fmt::format("  baseline {}: {} accepted finding{} not shown; the rest are new\n",
                       EscapeControl(report.baseline), report.baselined,
                       report.baselined == 1 ? "" : "s");
  // The summary first: what kind of work this is, before the detail.
  std::array<int, 4> sev_total{};
  for (const auto& f : report.findings) ++sev_total[static_cast<std::size_t>(f.severity)];
  std::vector<std::string> sev_parts;
  sev_parts.reserve(std::size(kSeverities));
  for (auto sev : kSeverities)
    sev_parts.push_back(fmt::format("{}{} {}{}", c(Color(sev)), SeverityName(sev),
                                    sev_total[static_cast<std::size_t>(sev)], reset));
  out += fmt::format("  by severity: {}\n", fmt::join(sev_parts, ", "));
  out += fmt::format("\n{}Summary{}\n  {:<12}{:>9}{:>9}{:>9}{:>9}{:>8}\n", bold, reset, "class",
                     "blocker", "replace", "fixable", "portable", "total");
  std::array<int, 4> col_total{};
  for (FindingClass cls : kFindingClasses) {
    std::array<int, 4> n{};
    for (const auto& f : report.findings)
      if (f.cls == cls) ++n[static_cast<std::size_t>(f.severity)];
    out += fmt::format("  {:<12}{:>9}{:>9}{:>9}{:>9}{:>8}\n", FindingClassName(cls), n[3], n[2],
                       n[1], n[0], n[0] + n[1] + n[2] + n[3]);
    for (std::size_t i = 0; i < 4; ++i) col_total[i] += n[i];
  }
  out += fmt::format("  {:<12}{:>9}{:>9}{:>9}{:>9}{:>8}\n", "total", col_total[3], col_total[2],
                     col_total[1], col_total[0], report.findings.size());
  int yes = 0, no = 0, unknown = 0;
  for (const auto& f : report.findings) {
    if (!f.reachable)
      ++unknown;
    else if (*f.reachable)
      ++yes;
    else
      ++no;
  }
  out += fmt::format(
      "  Python on the path from the entry scripts: {}, off the path: {}, "
      "not Python (build / environment / C++): {}\n",
      yes, no, unknown);
  out += fmt::format("  readiness: {} of findings are portable or fixable\n",
                     Percent(Readiness(report.findings)));
  if (report.entries.empty()) {
    out += "  entry scripts: none found (name them with --entry)\n";
  } else {
    out += fmt::format("  entry scripts ({}):\n    {}\n", report.entries.size(),
                       Wrapped(report.entries, 4, 96));
  }
}

// --statistics, like ruff's: counts per code and per file instead of the findings.
void TextStatistics(std::string& out, const ScanReport& report, const TextStyle& style) {
  const std::string &reset = style.reset, &bold = style.bold;
  struct PerCode {
    int n = 0;
    FindingClass cls = FindingClass::kDevice;
    std::array<int, 4> by_sev{};
  };
  std::map<std::string, PerCode> per_code;
  for (const auto& f : report.findings) {
    auto& e = per_code[f.code];
    ++e.n;
    e.cls = f.cls;
    ++e.by_sev[static_cast<std::size_t>(f.severity)];
  }
  out += fmt::format("\n{}Statistics{}\n  per code:\n", bold, reset);
  for (const auto& [code, e] : per_code) {
    // Guarded uses are portable, so one code can have two severities.
    std::vector<std::string> sev;
    for (auto sv : kSeverities)
      if (int k = e.by_sev[static_cast<std::size_t>(sv)]; k > 0)
        sev.push_back(fmt::format("{} {}", SeverityName(sv), k));
    out += fmt::format("    {:>6}  {:<6} {:<11} {}\n", e.n, code, FindingClassName(e.cls),
                       fmt::join(sev, ", "));
  }
  json st = Statistics(report);
  out += "  per file (findings, readiness):\n";
  for (const auto& [file, v] : st["by_file"].items())
    out += fmt::format("    {:<48}{:>6}  {:>5}\n", file, v["findings"].get<int>(),
                       Percent(v["readiness"].get<double>()));
}

// Groups of one code in one construct: members of the same kind (SameRun) no more than kFoldGap
// lines apart, other findings in between allowed (a Triton kernel's tl.* calls next to its
// float64 or its imports). A group shows where its first member is.
std::vector<std::vector<std::size_t>> FoldGroups(const std::vector<const Finding*>& list) {
  std::vector<std::vector<std::size_t>> groups;
  std::vector<bool> taken(list.size(), false);
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (taken[i]) continue;
    std::vector<std::size_t> g = {i};
    for (std::size_t k = i + 1; k < list.size(); ++k) {
      const Finding& last = *list[g.back()];
      if (list[k]->cell != last.cell || list[k]->line - last.line > kFoldGap) break;
      if (!taken[k] && SameRun(last, *list[k])) g.push_back(k);
    }
    if (g.size() > kFoldAbove)
      for (std::size_t k : g) taken[k] = true;
    else
      g.resize(1);
    taken[i] = true;
    groups.push_back(std::move(g));
  }
  return groups;
}

// One file's findings, folded groups on one line each.
void TextFile(std::string& out, const std::string& file, const std::vector<const Finding*>& list,
              const std::string& prefix, const TextStyle& st) {
  const std::string &reset = st.reset, &dim = st.dim, &bold = st.bold;
  auto c = [&](std::string_view code) { return st.c(code); };
  out += fmt::format("\n{}{}{} ({} finding{})\n", bold, EscapeControl(prefix + file), reset,
                     list.size(), list.size() == 1 ? "" : "s");
  const auto groups = FoldGroups(list);
  for (const auto& g : groups) {
    const Finding& f = *list[g.front()];
    std::string sev = fmt::format("{}{}{}", c(Color(f.severity)), SeverityName(f.severity), reset);
    if (g.size() > 1) {
      // One line for the group: the code, its count and where.
      std::vector<std::string> where;
      for (std::size_t k = 0; k < g.size() && where.size() < 12; ++k)
        where.push_back(std::to_string(list[g[k]]->line));
      bool same_message = true;
      for (std::size_t k : g) same_message &= list[k]->message == f.message;
      std::string lines = fmt::format("{}", fmt::join(where, ", "));
      if (g.size() > where.size()) lines += ", …";
      // Led by the first location, so that the line stays clickable in a terminal or editor.
      out += fmt::format("  {}  {} {} ×{} at {}: {}{}{}\n", Location(f, prefix), f.code, sev,
                         g.size(), lines, f.message, same_message ? "" : " (and similar)", Tags(f));
      if (!f.replacement.empty() && f.severity != Severity::kPortable)
        out += fmt::format("      -> {}\n", f.replacement);
      continue;
    }
    out += fmt::format("  {}  {} {}  {}{}\n", Location(f, prefix), f.code, sev, f.message, Tags(f));
    if (!f.snippet.empty())
      out += fmt::format("      {}{}{}\n", dim, EscapeControl(f.snippet), reset);
    if (!f.replacement.empty() && f.severity != Severity::kPortable)
      out += fmt::format("      -> {}\n", f.replacement);
  }
}

}  // namespace

std::string FormatText(const ScanReport& report, bool color, bool statistics) {
  std::string out;
  const TextStyle st(color);
  std::map<std::string, std::vector<const Finding*>> by_file;
  for (const auto& f : report.findings) by_file[f.file].push_back(&f);
  const std::string prefix = DisplayPrefix(report.root);
  TextSummary(out, report, by_file.size(), st);
  if (statistics) {
    TextStatistics(out, report, st);
  } else {
    for (const auto& [file, list] : by_file) TextFile(out, file, list, prefix, st);
  }
  if (!report.skipped.empty() || !report.suppressions.empty()) out += "\n";
  for (const auto& s : report.skipped)
    out += fmt::format("skipped {}: {}\n", EscapeControl(prefix + s.file), s.reason);
  for (const auto& s : report.suppressions) {
    // A notebook's line is its cell and the line in it, as for findings.
    const std::string where =
        s.cell ? fmt::format("cell {}:{}", *s.cell, s.cell_line) : std::to_string(s.line);
    out +=
        fmt::format("warning: {}:{}: suppression {}: {}\n", EscapeControl(prefix + s.file), where,
                    s.code.empty() ? std::string("dualtrack: ignore") : s.code, s.problem);
  }
  return out;
}

std::string FormatSarif(const ScanReport& report, const Registry& reg) {
  json rules = json::array();
  std::map<std::string, int> rule_index;
  for (const auto& f : report.findings) {
    if (rule_index.count(f.code)) continue;
    const Rule* r = reg.FindRule(f.code);
    rule_index[f.code] = static_cast<int>(rules.size());
    json rule = {
        {"id", f.code},
        {"name", r ? r->title : f.code},
        {"shortDescription", {{"text", r ? r->title : f.code}}},
        {"fullDescription", {{"text", r ? r->explanation : ""}}},
        {"helpUri",
         "https://github.com/dualtrack/dualtrack/blob/main/docs/rules/" + f.code + ".md"},
        {"properties",
         {{"class", FindingClassName(f.cls)}, {"severity", r ? SeverityName(r->severity) : ""}}}};
    rules.push_back(std::move(rule));
  }
  json results = json::array();
  for (const auto& f : report.findings) {
    std::string level = f.severity == Severity::kPortable  ? "note"
                        : f.severity == Severity::kFixable ? "warning"
                                                           : "error";
    // SARIF knows file lines only: a notebook finding points at the line of the .ipynb file.
    json region = {{"startLine", f.file_line.value_or(f.line)}, {"startColumn", f.column}};
    if (f.file_line) region.erase("startColumn");
    json res = {
        {"ruleId", f.code},
        {"ruleIndex", rule_index[f.code]},
        {"level", level},
        {"message",
         {{"text", f.message + (f.replacement.empty() ? "" : ". Suggested: " + f.replacement)}}},
        {"locations",
         json::array({{{"physicalLocation",
                        {{"artifactLocation",
                          {{"uri", PercentEncodePath(f.file)}, {"uriBaseId", "SRCROOT"}}},
                         {"region", region}}}}})},
        {"properties",
         {{"class", FindingClassName(f.cls)},
          {"severity", SeverityName(f.severity)},
          {"guarded", f.guarded},
          {"reachable", f.reachable ? json(*f.reachable) : json(nullptr)},
          {"cell", f.cell ? json(*f.cell) : json(nullptr)}}}};
    results.push_back(std::move(res));
  }
  json sarif = {
      {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
      {"version", "2.1.0"},
      {"runs",
       json::array(
           {{{"tool",
              {{"driver",
                {{"name", "dualtrack"},
                 {"informationUri", "https://github.com/dualtrack/dualtrack"},
                 {"rules", rules}}}}},
             // Columns are Unicode code points (the sink converts the scanners' bytes).
             {"columnKind", "unicodeCodePoints"},
             {"originalUriBaseIds",
              {{"SRCROOT", {{"uri", "file://" + PercentEncodePath(SrcRoot(report.root)) + "/"}}}}},
             {"results", results}}})}};
  return sarif.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

namespace {

// Inside code spans only the bar and the backtick matter.
std::string CodeSpanText(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '|')
      o += "\\|";
    else if (ch == '`')
      o += "'";
    else
      o.push_back(ch);
  }
  return o;
}

// Skipped files, suppressions to remove and, with --statistics, the per-file counts.
std::string MarkdownAppendix(const ScanReport& report, bool statistics) {
  std::string out;
  if (!report.skipped.empty()) {
    out += "\n## Skipped\n\n";
    for (const auto& s : report.skipped)
      out += fmt::format("- `{}`: {}\n", CodeSpanText(s.file), s.reason);
  }
  if (!report.suppressions.empty()) {
    out += "\n## Suppressions to remove\n\n";
    for (const auto& s : report.suppressions)
      out += fmt::format("- `{}:{}`: {} ({})\n", CodeSpanText(s.file), s.line,
                         s.code.empty() ? "dualtrack: ignore" : s.code, s.problem);
  }
  if (statistics) {
    json st = Statistics(report);
    out += "\n## Statistics\n\n| file | findings | readiness |\n|---|---:|---:|\n";
    for (const auto& [file, v] : st["by_file"].items())
      out += fmt::format("| `{}` | {} | {} |\n", CodeSpanText(file), v["findings"].get<int>(),
                         Percent(v["readiness"].get<double>()));
  }
  return out;
}

}  // namespace

std::string FormatMarkdown(const ScanReport& report, bool statistics) {
  std::string out = fmt::format("# CUDA dependencies of `{}`\n\n", report.root);
  out += fmt::format("{} findings in {} scanned files; readiness {} (portable or fixable).\n\n",
                     report.findings.size(), report.files_scanned,
                     Percent(Readiness(report.findings)));
  if (!report.baseline.empty())
    out += fmt::format(
        "Baseline `{}`: {} accepted finding{} not shown; the findings below are new.\n\n",
        report.baseline, report.baselined, report.baselined == 1 ? "" : "s");
  out += "| class | blocker | replace | fixable | portable |\n|---|---:|---:|---:|---:|\n";
  for (FindingClass cls : kFindingClasses) {
    std::array<int, 4> n{};
    for (const auto& f : report.findings)
      if (f.cls == cls) ++n[static_cast<std::size_t>(f.severity)];
    out +=
        fmt::format("| {} | {} | {} | {} | {} |\n", FindingClassName(cls), n[3], n[2], n[1], n[0]);
  }
  out +=
      "\n| location | code | severity | message | guarded | reachable | replacement |\n"
      "|---|---|---|---|---|---|---|\n";
  std::set<std::string> codes;  // The rules that fired, for the line below.
  for (const auto& f : report.findings) {
    codes.insert(f.code);
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} | {} |\n", CodeSpanText(Location(f)),
                       f.code, SeverityName(f.severity), EscapeMarkdown(f.message),
                       f.guarded ? "yes" : "no", f.reachable ? (*f.reachable ? "yes" : "no") : "-",
                       EscapeMarkdown(f.replacement));
  }
  // Links into this repository's docs/ would not resolve where the report is read (a job summary,
  // another project's wiki): the explanation is one command away, wherever dualtrack is installed.
  if (!codes.empty())
    out += fmt::format(
        "\nEach rule is explained by `dualtrack rule CODE` (why it matters, what to use "
        "instead): {}.\n",
        fmt::join(
            [&] {
              std::vector<std::string> v;
              v.reserve(codes.size());
              for (const auto& code : codes) v.push_back("`" + code + "`");
              return v;
            }(),
            ", "));
  out += MarkdownAppendix(report, statistics);
  return out;
}

std::string FormatGithub(const ScanReport& report) {
  std::string out;
  // Workflow-command escaping: a message escapes % CR LF; a property value also , and :.
  auto escape = [](const std::string& s, bool property) {
    std::string o;
    for (char ch : s) {
      if (ch == '%')
        o += "%25";
      else if (ch == '\r')
        o += "%0D";
      else if (ch == '\n')
        o += "%0A";
      else if (property && ch == ',')
        o += "%2C";
      else if (property && ch == ':')
        o += "%3A";
      else
        o.push_back(ch);
    }
    return o;
  };
  auto esc = [&](const std::string& s) { return escape(s, true); };
  auto msg_esc = [&](const std::string& s) { return escape(s, false); };
  std::string prefix = report.root == "." ? "" : report.root + "/";
  for (const auto& f : report.findings) {
    std::string level = f.severity == Severity::kPortable  ? "notice"
                        : f.severity == Severity::kFixable ? "warning"
                                                           : "error";
    out +=
        fmt::format("::{} file={},line={},col={},title={}::{}{}\n", level, esc(prefix + f.file),
                    f.file_line.value_or(f.line), f.file_line ? 1 : f.column,
                    esc(f.code + " " + std::string(SeverityName(f.severity))), msg_esc(f.message),
                    f.replacement.empty() ? "" : msg_esc(". Suggested: " + f.replacement));
  }
  for (const auto& s : report.suppressions)
    out += fmt::format(
        "::warning file={},line={},title=dualtrack suppression::{}\n", esc(prefix + s.file), s.line,
        msg_esc((s.code.empty() ? std::string("dualtrack: ignore") : s.code) + ": " + s.problem));
  return out;
}

namespace {

// XML text and attribute values: the five markup characters escaped; control bytes that XML 1.0
// cannot hold (all below 0x20 but tab, newline and return) and invalid UTF-8 become U+FFFD.
std::string XmlEscape(std::string_view s) {
  std::string in(s);
  if (!IsValidUtf8(in)) {
    std::string fixed;
    for (unsigned char c : in)
      fixed += c < 0x80 ? std::string(1, static_cast<char>(c)) : "\xEF\xBF\xBD";
    in = std::move(fixed);
  }
  std::string out;
  out.reserve(in.size());
  for (char ch : in) {
    auto c = static_cast<unsigned char>(ch);
    if (ch == '&')
      out += "&amp;";
    else if (ch == '<')
      out += "&lt;";
    else if (ch == '>')
      out += "&gt;";
    else if (ch == '"')
      out += "&quot;";
    else if (ch == '\'')
      out += "&apos;";
    else if (c < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')
      out += "\xEF\xBF\xBD";
    else
      out.push_back(ch);
  }
  return out;
}

}  // namespace

std::string FormatJunit(const ScanReport& report, std::optional<Severity> fail_on) {
  const std::string prefix = DisplayPrefix(report.root);
  std::size_t failures = 0;
  for (const auto& f : report.findings) failures += fail_on && f.severity >= *fail_on ? 1 : 0;
  const std::size_t tests = std::max<std::size_t>(1, report.findings.size());
  std::string suite = XmlEscape("dualtrack scan " + report.root);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format(
      "<testsuites name=\"dualtrack scan\" tests=\"{}\" failures=\"{}\" errors=\"0\">\n", tests,
      failures);
  out += fmt::format(
      "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\">\n", suite,
      tests, failures);
  if (report.findings.empty())
    out += fmt::format(
        "    <testcase classname=\"dualtrack\" name=\"{}: no CUDA dependency found\"/>\n", suite);
  for (const auto& f : report.findings) {
    const std::string file = XmlEscape(prefix + f.file);
    out += fmt::format("    <testcase classname=\"{}\" name=\"{} {}\" file=\"{}\" line=\"{}\">\n",
                       file, XmlEscape(f.code), XmlEscape(Location(f, prefix)), file,
                       f.file_line.value_or(f.line));
    std::string body = f.snippet;
    if (!f.replacement.empty())
      body += (body.empty() ? "" : "\n") + std::string("Suggested: ") + f.replacement;
    if (fail_on && f.severity >= *fail_on) {
      out += fmt::format("      <failure type=\"{} {}\" message=\"{}\">{}</failure>\n",
                         XmlEscape(f.code), SeverityName(f.severity), XmlEscape(f.message),
                         XmlEscape(body));
    } else {
      out += fmt::format("      <system-out>{} ({}): {}</system-out>\n", XmlEscape(f.message),
                         SeverityName(f.severity), XmlEscape(body));
    }
    out += "    </testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

std::string RuleText(const Rule& r, const Registry& reg) {
  std::string out =
      fmt::format("{}: {}\n  class: {}\n  severity: {} (guarded uses: portable)\n\n{}\n", r.code,
                  r.title, FindingClassName(r.cls), SeverityName(r.severity), r.explanation);
  if (r.mps_only) out += "\nFails only on MPS: the Mac runs it as written on its CPU.\n";
  if (!r.replacement.empty()) out += fmt::format("\nSuggested replacement: {}\n", r.replacement);
  if (r.code == "DT201" || r.code == "DT202" || r.code == "DT403") {
    out += "\nKnown CUDA-only libraries (data/scan/libraries.json):\n";
    for (const auto& lib : reg.libraries())
      out += fmt::format("  {:<28} -> {}\n", lib.name, lib.alternative);
  }
  return out;
}

std::string RuleMarkdown(const Rule& r, const Registry& reg) {
  std::string out = fmt::format("# {}: {}\n\n", r.code, r.title);
  out +=
      "<!-- Generated by `dualtrack rule --all --markdown docs/rules` from data/scan/; do not "
      "edit. -->\n\n";
  out += fmt::format("- Class: `{}`\n- Severity: `{}` (`portable` when the use is guarded)\n\n",
                     FindingClassName(r.cls), SeverityName(r.severity));
  out += r.explanation + "\n";
  if (r.mps_only) {
    out +=
        "\nFails only on MPS: the Mac runs the construct as written on its CPU, so it does not "
        "stand in the way of a predicted `mac-ready`; the report lists it as an edit for MPS.\n";
  }
  if (!r.replacement.empty())
    out += fmt::format("\n**Suggested replacement:** {}\n", r.replacement);
  if (!r.fix.empty()) {
    out +=
        r.fix == "safe"
            ? "\n## Automatic fix (safe)\n\n`dualtrack fix` rewrites it; on a CUDA machine the "
              "rewritten code does what the original did (`fix --verify` proves it on the CPU).\n"
            : "\n## Automatic fix (unsafe)\n\n`dualtrack fix --unsafe-fixes` rewrites it; results "
              "may change, so check them (`fix --verify` shows whether they do).\n";
    if (r.severity == Severity::kPortable) {
      out +=
          "\nThe line runs unchanged without CUDA, so plain `fix` leaves it as written: "
          "`dualtrack fix --all` rewrites portable lines too.\n";
    }
    out += fmt::format(
        "\nBefore:\n\n```python\n{}```\n\nAfter (the changed line):\n\n```python\n{}\n```\n",
        r.fix_before, r.fix_after);
  }
  if (r.code == "DT201" || r.code == "DT202" || r.code == "DT403") {
    out +=
        "\n## Known CUDA-only libraries\n\n| library | modules | packages | alternative "
        "|\n|---|---|---|---|\n";
    for (const auto& lib : reg.libraries())
      out += fmt::format("| {} | {} | {} | {} |\n", lib.name, fmt::join(lib.modules, ", "),
                         fmt::join(lib.packages, ", "), lib.alternative);
  }
  out += fmt::format(
      "\nSuppress one line with `# dualtrack: ignore[{}]`, or every occurrence with "
      "`ignore = [\"{}\"]` under `[tool.dualtrack]` in pyproject.toml.\n",
      r.code, r.code);
  return out;
}

std::string RuleIndexMarkdown(const Registry& reg) {
  std::string out =
      "# Scan rules\n\nOne page per rule code, generated from the rule registry "
      "(data/scan/rules.json)\n"
      "by `dualtrack rule --all --markdown docs/rules`; tests/scan checks that it is up to "
      "date.\n\n"
      "| code | class | severity | title | fix |\n|---|---|---|---|---|\n";
  for (const auto& r : reg.rules())
    out += fmt::format("| [{}]({}.md) | {} | {} | {} | {} |\n", r.code, r.code,
                       FindingClassName(r.cls), SeverityName(r.severity), r.title,
                       r.fix.empty() ? "" : r.fix);
  return out;
}

}  // namespace dt::scan
