#include "verdict/render.h"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join (fmt >= 11 keeps it here)

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <tuple>

#include "app/version.h"
#include "util/json_fields.h"
#include "util/result.h"
#include "util/strings.h"
#include "verdict/render_cost.h"

namespace dt::verdict {

namespace {

using nlohmann::json;

json ItemsJson(const std::vector<EvidenceItem>& items) {
  json arr = json::array();
  for (const EvidenceItem& e : items) {
    arr.push_back({{"text", e.text},
                   {"file", e.location.file.empty() ? json(nullptr) : json(e.location.file)},
                   {"line", e.location.line > 0 ? json(e.location.line) : json(nullptr)},
                   {"fix", e.fix.empty() ? json(nullptr) : json(e.fix)}});
  }
  return arr;
}

json EnvJson(const EnvEvidence& e) {
  json gpus = json::array();
  for (const Gpu& g : e.gpus) {
    gpus.push_back({{"vendor", g.vendor},
                    {"name", g.name},
                    {"driver", g.driver},
                    {"memory_bytes", OptJson(g.memory_bytes)}});
  }
  json conclusions = json::array();
  for (const auto& c : e.conclusions) {
    conclusions.push_back({{"id", c.id}, {"level", c.level}, {"text", c.text}});
  }
  return {{"source", e.source},
          {"os", e.os},
          {"os_version", e.os_version},
          {"arch", e.arch},
          {"cpu", e.cpu},
          {"memory_bytes", OptJson(e.memory_bytes)},
          {"gpus", gpus},
          {"nvcc_version", e.nvcc_version},
          {"python_version", e.python_version},
          {"torch_installed", OptJson(e.torch_installed)},
          {"torch_version", e.torch_version},
          {"torch_cuda_version", e.torch_cuda_version},
          {"cuda_available", OptJson(e.cuda_available)},
          {"mps_built", OptJson(e.mps_built)},
          {"mps_available", OptJson(e.mps_available)},
          {"PYTORCH_ENABLE_MPS_FALLBACK", OptJson(e.mps_fallback)},
          {"conclusions", conclusions}};
}

json FindingJson(const Finding& f) {
  return {{"code", f.code},
          {"class", ClassText(f.cls)},
          {"severity", SeverityText(f.severity)},
          {"file", f.file},
          {"line", f.line},
          {"message", f.message},
          {"snippet", f.snippet},
          {"guarded", OptJson(f.guarded)},
          {"reachable", OptJson(f.reachable)},
          {"replacement", f.replacement}};
}

// Stands for the scan's findings in a document that RenderJson writes out finding by finding: a
// NUL cannot be in a key, and a dumped string escapes it, so `"findings": "\u0000..."` occurs
// once.
const std::string kFindingsPlaceholder("\0dualtrack-findings\0", 20);

// `findings`: the findings themselves, or the placeholder.
json ScanJson(const ScanEvidence& scan, bool findings_inline) {
  json findings = json::array();
  if (findings_inline) {
    for (const Finding& f : scan.findings) findings.push_back(FindingJson(f));
  } else {
    findings = kFindingsPlaceholder;
  }
  return {{"source", scan.source},
          {"root", scan.root},
          {"files_scanned", scan.files_scanned},
          {"findings", findings}};
}

json BaselineJson(const Baseline& b) {
  return {{"source", b.source},
          {"created", b.created},
          {"commit", b.commit},
          {"dirty", b.dirty},
          {"data_digest", b.data_digest},
          {"seeds", b.seeds},
          {"packages", b.packages},
          {"data_files", b.data_files},
          {"env", b.env ? EnvJson(*b.env) : json(nullptr)}};
}

json TrackJson(const Track& t) {
  std::map<std::string, std::int64_t> by_status;
  for (const OpRow& op : t.ops) by_status[bundle::ToString(op.status)] += 1;
  json exc = nullptr;
  if (t.exception) {
    exc = {{"type", t.exception->type},
           {"message", t.exception->message},
           {"file", t.exception->location.file},
           {"line", t.exception->location.line}};
  }
  return {{"name", t.name},
          {"dir", t.dir},
          {"label", t.label},
          {"device", t.device},
          {"device_note", t.device_note.empty() ? json(nullptr) : json(t.device_note)},
          {"outcome", t.outcome ? json(bundle::ToString(*t.outcome)) : json(nullptr)},
          {"data_source", t.data_source.empty() ? json(nullptr) : json(t.data_source)},
          {"command", t.command},
          {"status", bundle::ToString(t.status)},
          {"exit_code", OptJson(t.exit_code)},
          {"exception", exc},
          {"git_commit", OptJson(t.git_commit)},
          {"data_digest", OptJson(t.data_digest)},
          {"seed", OptJson(t.seed)},
          {"step_wall_s", t.step_wall_s},
          {"peak_rss_bytes", OptJson(t.peak_rss_bytes)},
          {"peak_device_bytes", OptJson(t.peak_device_bytes)},
          {"PYTORCH_ENABLE_MPS_FALLBACK", OptJson(t.mps_fallback)},
          {"ops_traced", t.has_ops},
          {"ops_by_status", by_status},
          {"env", t.env ? EnvJson(*t.env) : json(nullptr)}};
}

json CoverageJson(const CoverageEvidence& coverage) {
  json ops = json::array();
  for (const CoverageOp& op : coverage.ops) {
    ops.push_back({{"op", op.op},
                   {"class", coverage::OpClassName(op.cls)},
                   {"dtypes", op.dtypes},
                   {"dtype_issues", op.dtype_issues},
                   {"count", op.count},
                   {"file", op.location.file},
                   {"line", op.location.line},
                   {"native_since", OptJson(op.native_since)}});
  }
  return {{"source", coverage.source},
          {"torch", coverage.torch},
          {"evidence", ToString(coverage.evidence)},
          {"ops", ops}};
}

json ComparisonJson(const Comparison& c) {
  json tensors = json::array();
  for (const TensorComparison& t : c.tensors) {
    tensors.push_back({{"name", t.name},
                       {"status", OutcomeText(t.status)},
                       {"shape", t.shape},
                       {"atol", OptJson(t.atol)},
                       {"rtol", OptJson(t.rtol)},
                       {"max_abs", OptJson(t.max_abs)},
                       {"mean_abs", OptJson(t.mean_abs)},
                       {"max_rel", OptJson(t.max_rel)},
                       {"cosine", OptJson(t.cosine)}});
  }
  return {{"source", c.source}, {"a", c.a},
          {"b", c.b},           {"verdict", OutcomeText(c.verdict)},
          {"n_pass", c.n_pass}, {"n_fail", c.n_fail},
          {"tensors", tensors}};
}

json EvidenceJson(const Evidence& ev, bool findings_inline) {
  json out = json::object();
  out["scan"] = ev.scan ? ScanJson(*ev.scan, findings_inline) : json(nullptr);
  out["env"] = ev.env ? EnvJson(*ev.env) : json(nullptr);
  out["baseline"] = ev.baseline ? BaselineJson(*ev.baseline) : json(nullptr);
  json tracks = json::array();
  for (const Track& t : ev.tracks) tracks.push_back(TrackJson(t));
  out["tracks"] = tracks;
  out["coverage"] = ev.coverage ? CoverageJson(*ev.coverage) : json(nullptr);
  json comparisons = json::array();
  for (const Comparison& c : ev.comparisons) comparisons.push_back(ComparisonJson(c));
  out["comparisons"] = comparisons;
  out["remote_data_confirmed"] = ev.remote_data_confirmed;
  out["project"] = ev.project.empty() ? json(nullptr) : json(ev.project);
  out["designated_run"] = ev.designated_run;
  out["missing"] = ev.missing;
  return out;
}

// Text inside a code span: only the backtick would end it, and a bar would end a table cell.
std::string CodeCell(std::string_view s) {
  std::string out;
  // A bar ends the table cell even inside a code span; GitHub's tables take `\|` there.
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c == '`' ? '\'' : (c == '\n' ? ' ' : c);
  }
  return "`" + out + "`";
}

const char* StatusMark(const std::string& status) {
  if (status == "done") return "✅";
  if (status == "failed") return "❌";
  return "⬜";
}

std::string Bool(const std::optional<bool>& b) { return b ? (*b ? "yes" : "no") : "unknown"; }

std::string Bytes(const std::optional<std::int64_t>& b) {
  if (!b) return "—";
  if (*b >= (std::int64_t{1} << 30)) return fmt::format("{:.1f} GiB", *b / double(1 << 30));
  return fmt::format("{:.0f} MiB", *b / double(1 << 20));
}

std::string Num(const std::optional<double>& v) {
  if (!v) return "—";
  return fmt::format("{:.3g}", *v);
}

std::string MedianStep(const Track& t) {
  if (t.step_wall_s.empty()) return "—";
  std::vector<double> s = t.step_wall_s;
  std::sort(s.begin(), s.end());
  return fmt::format("{:.3f} s", s[s.size() / 2]);
}

struct EnvColumn {
  std::string label;
  const EnvEvidence* env;
};

std::vector<EnvColumn> EnvColumns(const Evidence& ev) {
  std::vector<EnvColumn> cols;
  if (ev.baseline && ev.baseline->env) cols.push_back({"baseline", &*ev.baseline->env});
  for (const Track& t : ev.tracks) {
    if (t.env) cols.push_back({"track " + t.name, &*t.env});
  }
  if (ev.env) cols.push_back({"this host", &*ev.env});
  return cols;
}

std::vector<std::pair<std::string, std::vector<std::string>>> EnvRows(
    const std::vector<EnvColumn>& cols) {
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  auto row = [&](const std::string& name, auto get) {
    std::vector<std::string> v;
    v.reserve(cols.size());
    for (const EnvColumn& c : cols) v.push_back(get(*c.env));
    rows.emplace_back(name, std::move(v));
  };
  row("OS", [](const EnvEvidence& e) { return e.os + " " + e.os_version; });
  row("arch", [](const EnvEvidence& e) { return e.arch; });
  row("CPU", [](const EnvEvidence& e) { return e.cpu; });
  row("memory", [](const EnvEvidence& e) { return Bytes(e.memory_bytes); });
  row("GPUs", [](const EnvEvidence& e) {
    std::string s;
    for (const Gpu& g : e.gpus) s += (s.empty() ? "" : "; ") + g.vendor + " " + g.name;
    return s.empty() ? std::string("none") : s;
  });
  row("nvcc", [](const EnvEvidence& e) { return e.nvcc_version.empty() ? "—" : e.nvcc_version; });
  row("Python", [](const EnvEvidence& e) { return e.python_version; });
  row("torch", [](const EnvEvidence& e) {
    return e.torch_installed == std::optional<bool>(false) ? std::string("not installed")
                                                           : e.torch_version;
  });
  row("CUDA available", [](const EnvEvidence& e) { return Bool(e.cuda_available); });
  row("MPS built", [](const EnvEvidence& e) { return Bool(e.mps_built); });
  row("MPS available", [](const EnvEvidence& e) { return Bool(e.mps_available); });
  row("PYTORCH_ENABLE_MPS_FALLBACK",
      [](const EnvEvidence& e) { return e.mps_fallback.value_or("unset"); });
  return rows;
}

// Error histogram (log10 |a-b| buckets) as inline SVG bars.
// The log10 |a-b| axis every histogram of one comparison shares (and the tolerance lines on
// it), so that bars can be compared across tensors: [lo, hi] spans every edge and every atol.
struct HistAxis {
  double lo = 0, hi = 0;
  bool empty = true;
  void Add(double v) {
    if (!std::isfinite(v)) return;
    lo = empty ? v : std::min(lo, v);
    hi = empty ? v : std::max(hi, v);
    empty = false;
  }
};

HistAxis SharedAxis(const std::vector<TensorComparison>& tensors) {
  HistAxis axis;
  for (const TensorComparison& t : tensors) {
    for (double e : t.hist_log10_edges) axis.Add(e);
    if (t.atol && *t.atol > 0 && !t.hist_counts.empty()) axis.Add(std::log10(*t.atol));
  }
  if (!axis.empty && axis.hi - axis.lo < 1) axis.hi = axis.lo + 1;
  return axis;
}

std::string HistogramSvg(const TensorComparison& t, const HistAxis& axis) {
  if (t.hist_counts.empty() || axis.empty || t.hist_log10_edges.size() != t.hist_counts.size() + 1)
    return "<span class=\"muted\">no histogram (no nonzero error)</span>";
  const int width = 240, height = 56, pad = 14;
  const std::int64_t max_count =
      std::max<std::int64_t>(1, *std::max_element(t.hist_counts.begin(), t.hist_counts.end()));
  auto x = [&](double v) { return double(width) * (v - axis.lo) / (axis.hi - axis.lo); };
  std::string svg = fmt::format(
      "<svg class=\"hist\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\" "
      "data-lo=\"{:g}\" data-hi=\"{:g}\" aria-label=\"histogram of log10 absolute error for {}\">",
      width, height + pad, width, height + pad, axis.lo, axis.hi, HtmlEscape(t.name));
  for (std::size_t i = 0; i < t.hist_counts.size(); ++i) {
    if (t.hist_counts[i] == 0) continue;
    const double h = std::max(1.0, double(height) * double(t.hist_counts[i]) / max_count);
    const double x0 = x(t.hist_log10_edges[i]), x1 = x(t.hist_log10_edges[i + 1]);
    std::string label = fmt::format("1e{:g} to 1e{:g}: {}", t.hist_log10_edges[i],
                                    t.hist_log10_edges[i + 1], t.hist_counts[i]);
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
        "height=\"{:.1f}\"><title>{}</title></rect>",
        x0 + 0.5, height - h, std::max(0.5, x1 - x0 - 1.0), h, HtmlEscape(label));
  }
  if (t.atol && *t.atol > 0) {
    const double xa = x(std::log10(*t.atol));
    svg += fmt::format(
        "<line class=\"tol\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"0\" y2=\"{1}\"><title>atol {2:g}: "
        "errors right of it need the relative tolerance</title></line>",
        xa, height, *t.atol);
  }
  svg += fmt::format(
      "<text x=\"0\" y=\"{}\">1e{:g}</text><text x=\"{}\" y=\"{}\" "
      "text-anchor=\"end\">1e{:g}</text>",
      height + pad - 2, axis.lo, width, height + pad - 2, axis.hi);
  svg += "</svg>";
  return svg;
}

// A metric's two series (A, the track under test, and B, the reference) on one chart, and the
// per-step |a - b| below it. Non-finite points are left out of the lines and listed.
std::string CurveSvg(const MetricComparison& m, const std::string& a, const std::string& b) {
  std::vector<const MetricComparison::Step*> pts;
  double ymin = 0, ymax = 0, dmax = 0;
  bool any = false;
  std::int64_t s0 = 0, s1 = 0;
  for (const auto& st : m.steps) {
    for (const auto& v : {st.a, st.b}) {
      if (!v || !std::isfinite(*v)) continue;
      ymin = any ? std::min(ymin, *v) : *v;
      ymax = any ? std::max(ymax, *v) : *v;
      any = true;
    }
    if (st.diff && std::isfinite(*st.diff)) dmax = std::max(dmax, std::fabs(*st.diff));
    s0 = pts.empty() ? st.step : std::min(s0, st.step);
    s1 = pts.empty() ? st.step : std::max(s1, st.step);
    pts.push_back(&st);
  }
  if (!any) return "<p class=\"muted\">no finite value to draw</p>";
  if (ymax - ymin <= 0) ymax = ymin + 1;
  if (dmax <= 0) dmax = 1;
  const int width = 520, height = 140, dh = 50, left = 48, gap = 18;
  auto x = [&](std::int64_t step) {
    return left + (s1 == s0 ? 0.5 : double(step - s0) / double(s1 - s0)) * (width - left - 8);
  };
  auto y = [&](double v) { return 6 + (ymax - v) / (ymax - ymin) * (height - 12); };
  std::string svg = fmt::format(
      "<svg class=\"curve\" viewBox=\"0 0 {0} {1}\" width=\"{0}\" height=\"{1}\" role=\"img\" "
      "aria-label=\"{2} per step on both tracks\">",
      width, height + gap + dh + 14, HtmlEscape(m.name));
  for (const auto& [side, cls] : {std::pair{0, "a"}, std::pair{1, "b"}}) {
    std::string points;
    for (const auto* st : pts) {
      const auto& v = side == 0 ? st->a : st->b;
      if (v && std::isfinite(*v)) points += fmt::format("{:.1f},{:.1f} ", x(st->step), y(*v));
    }
    svg += fmt::format("<polyline class=\"{}\" points=\"{}\"/>", cls, points);
    for (const auto* st : pts) {
      const auto& v = side == 0 ? st->a : st->b;
      if (v && std::isfinite(*v))
        svg += fmt::format(
            "<circle class=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2\"><title>step {}: "
            "{:g}</title></circle>",
            cls, x(st->step), y(*v), st->step, *v);
    }
  }
  svg += fmt::format("<text x=\"2\" y=\"12\">{:.4g}</text><text x=\"2\" y=\"{}\">{:.4g}</text>",
                     ymax, height - 2, ymin);
  // Per-step error, on its own scale.
  const double top = height + gap;
  for (const auto* st : pts) {
    if (!st->diff || !std::isfinite(*st->diff)) continue;
    const double h = std::max(1.0, dh * std::fabs(*st->diff) / dmax);
    svg += fmt::format(
        "<rect class=\"err\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"4\" height=\"{:.1f}\"><title>step "
        "{}: "
        "|a-b| {:g}</title></rect>",
        x(st->step) - 2, top + dh - h, h, st->step, std::fabs(*st->diff));
  }
  svg += fmt::format("<text x=\"2\" y=\"{:.0f}\">|a−b| ≤ {:.3g}</text>", top + 10, dmax);
  svg += fmt::format("<text x=\"{}\" y=\"{:.0f}\" text-anchor=\"end\">step {} … {}</text>",
                     width - 4, top + dh + 12, s0, s1);
  svg += "</svg>";
  svg += fmt::format(
      "<div class=\"legend\"><span class=\"a\">■</span> A {} &nbsp; <span class=\"b\">■</span> B "
      "{} (reference)</div>",
      HtmlEscape(a), HtmlEscape(b));
  return svg;
}

constexpr const char* kCss = R"css(
:root { --ok:#1a7f37; --warn:#9a6700; --bad:#cf222e; --muted:#57606a; --line:#d0d7de; }
* { box-sizing: border-box; }
body { font: 15px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color:#1f2328;
  margin: 0 auto; max-width: 1100px; padding: 24px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 8px;
  border-bottom: 1px solid var(--line); padding-bottom: 4px; } h3 { font-size: 15px; margin: 16px 0 6px; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 12px; font-size: 13.5px; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; } td code { overflow-wrap: anywhere; } code { font: 12.5px ui-monospace, Menlo, Consolas, monospace; }
.banner { border-radius: 8px; padding: 14px 18px; color: #fff; margin: 12px 0; }
.banner .v { font-size: 28px; font-weight: 700; letter-spacing: .5px; }
.banner .lvl { font-size: 14px; opacity: .95; margin-left: 10px; }
.banner ul { margin: 8px 0 0; padding-left: 20px; }
.mac-ready { background: var(--ok); } .dev-only { background: var(--warn); } .cuda-only { background: var(--bad); }
.validity { border: 2px solid var(--bad); border-radius: 6px; padding: 8px 12px; margin: 8px 0; }
.validity.ok { border-color: var(--ok); } .validity.unknown, .validity.not-applicable { border-color: var(--warn); }
.st { font-weight: 600; white-space: nowrap; } .st.done, .st.clear, .st.pass { color: var(--ok); }
.st.failed, .st.holds, .st.fail { color: var(--bad); } .st.missing, .st.unknown { color: var(--warn); }
.muted { color: var(--muted); } .user { font-style: italic; }
.plan { display: grid; grid-template-columns: 1fr 1fr; gap: 16px; }
.plan > div { border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; }
svg.hist rect { fill: #0969da; } svg.hist text, svg.curve text, svg.ops text { font-size: 9px; fill: var(--muted); }
svg.hist line.tol { stroke: var(--bad); stroke-width: 1.5; stroke-dasharray: 3 2; }
svg.curve polyline { fill: none; stroke-width: 1.6; } svg.curve polyline.a { stroke: #0969da; }
svg.curve polyline.b { stroke: #bc4c00; stroke-dasharray: 5 3; } svg.curve circle.a { fill: #0969da; }
svg.curve circle.b { fill: #bc4c00; } svg.curve rect.err { fill: var(--bad); opacity: .7; }
svg { max-width: 100%; height: auto; } .legend { font-size: 12px; color: var(--muted); }
.legend .a { color: #0969da; } .legend .b { color: #bc4c00; }
svg.ops rect.clear { fill: var(--ok); } svg.ops rect.fallback { fill: var(--warn); }
svg.ops rect.holds { fill: var(--bad); } svg.ops rect.unknown { fill: #8c959f; }
svg.steps text { font-size: 10px; fill: var(--muted); } svg.steps line.grid { stroke: var(--line); }
svg.steps rect.pred { fill: #0969da; } svg.steps rect.nofit { fill: var(--bad); }
svg.steps rect.measured { fill: var(--ok); } svg.steps line.band { stroke: #1f2328; stroke-width: 1.5; }
nav.toc { border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; margin: 10px 0; font-size: 14px; }
nav.toc ol { margin: 4px 0 0; padding-left: 22px; columns: 2; } nav.toc a { color: #0969da; }
h2.part { margin-top: 40px; font-size: 20px; border-bottom: 2px solid #1f2328; }
details { margin: 6px 0; } summary { cursor: pointer; padding: 2px 0; }
.scroll { overflow-x: auto; max-width: 100%; }
.sev-blocker { color: var(--bad); font-weight: 600; } .sev-replace { color: var(--warn); font-weight: 600; }
footer { margin-top: 32px; font-size: 12px; color: var(--muted); }
@media (max-width: 760px) { .plan { grid-template-columns: 1fr; } nav.toc ol { columns: 1; } }
@media (max-width: 480px) { body { padding: 10px; font-size: 14px; } .banner .v { font-size: 22px; }
  .banner .lvl { display: block; margin: 2px 0 0; } th, td { padding: 3px 4px; }
  table { font-size: 12px; display: block; overflow-x: auto; max-width: 100%; }
  code { overflow-wrap: anywhere; } }
@media print { body { max-width: none; padding: 0; font-size: 11pt; }
  .banner { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  h2 { break-after: avoid; } tr, .plan > div, svg { break-inside: avoid; } a { color: inherit; }
  nav.toc { break-after: avoid; } .scroll { overflow: visible; } }
)css";

}  // namespace

const char* ReportCss() { return kCss; }

namespace {

std::string StatusSpan(std::string_view status) {
  return fmt::format("<span class=\"st {}\">{}</span>", HtmlEscape(status), HtmlEscape(status));
}

}  // namespace

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

namespace {

json ReportJson(const Report& r, bool findings_inline) {
  json stops = json::array();
  for (const RuleResult& s : r.stops) {
    stops.push_back({{"id", ToString(s.id)},
                     {"title", s.title},
                     {"state", ToString(s.state)},
                     {"level", ToString(s.level)},
                     {"summary", s.summary},
                     {"evidence", ItemsJson(s.evidence)},
                     {"notes", ItemsJson(s.notes)},
                     {"formal_run_only", s.formal_run_only}});
  }
  json fields = json::array();
  for (const ValidityField& f : r.validity.fields) {
    json values = json::object();
    for (const auto& [who, value] : f.values) {
      values[who] = value.empty() ? json(nullptr) : json(value);
    }
    fields.push_back({{"field", f.field},
                      {"state", f.state == RuleState::kHolds
                                    ? "differs"
                                    : (f.state == RuleState::kClear ? "same" : "unknown")},
                      {"values", values}});
  }
  json checklist = json::array();
  for (const ChecklistItem& c : r.checklist) {
    checklist.push_back({{"id", ToString(c.id)},
                         {"title", c.title},
                         {"status", ToString(c.status)},
                         {"evidence", c.evidence},
                         {"user_statement", c.user_statement}});
  }
  json plan = json::array();
  for (const PlanItem& p : r.plan) {
    plan.push_back({{"where", ToString(p.where)}, {"what", p.what}, {"why", p.why}});
  }
  json next = json::array();
  for (const NextStep& n : r.next_steps) {
    next.push_back({{"effect", n.effect},
                    {"lifts", n.lifts},
                    {"action", n.action},
                    {"file", n.location.file.empty() ? json(nullptr) : json(n.location.file)},
                    {"line", n.location.line > 0 ? json(n.location.line) : json(nullptr)},
                    {"also", [&] {
                       json also = json::array();
                       for (const Location& l : n.also) {
                         also.push_back({{"file", l.file}, {"line", l.line}});
                       }
                       return also;
                     }()}});
  }
  json experiments = json::array();
  for (const ExperimentRow& e : r.experiments) experiments.push_back(ExperimentRowJson(e));
  return {
      {"schema", "dualtrack.report/1"},
      {"experiment", r.evidence.experiment.empty() ? json(nullptr) : json(r.evidence.experiment)},
      {"experiments", experiments},
      {"generator", std::string("dualtrack ") + kVersion},
      {"verdict", ToString(r.verdict)},
      {"evidence_level", ToString(r.level)},
      {"automatic_edits", r.automatic_edits},
      {"reasons", r.reasons},
      {"validity",
       {{"state", ToString(r.validity.state)},
        {"summary", r.validity.summary},
        {"fields", fields}}},
      {"stop_conditions", stops},
      {"checklist", checklist},
      {"cost", CostReportJson(r)},
      {"plan", plan},
      {"next_steps", next},
      {"evidence", EvidenceJson(r.evidence, findings_inline)}};
}

}  // namespace

json ToJson(const Report& r) { return ReportJson(r, true); }

json ExperimentRowJson(const ExperimentRow& e) {
  return {{"name", e.name},
          {"entry", e.entry.empty() ? json(nullptr) : json(e.entry)},
          {"run", e.run.empty() ? json(nullptr) : json(e.run)},
          {"source", e.source},
          {"verdict", ToString(e.verdict)},
          {"evidence_level", ToString(e.level)},
          {"reason", e.reason},
          {"report", e.report}};
}

// A document of every finding costs about ten times its text (hostile-input class 11: a 228 MB
// scan), and so would the whole text: the rest of the report is a document, the findings are
// written one at a time into the stream between its halves.
void RenderJson(const Report& report, std::ostream& out) {
  const std::string doc = ReportJson(report, false).dump(2) + "\n";
  if (!report.evidence.scan) {
    out << doc;
    return;
  }
  const std::string key = "\"findings\": " + json(kFindingsPlaceholder).dump();
  const std::size_t at = doc.find(key);
  DT_CHECK(at != std::string::npos);
  const std::size_t line_start = doc.rfind('\n', at) + 1;
  const std::string indent(at - line_start + 2, ' ');
  out.write(doc.data(), static_cast<std::streamsize>(at));
  out << "\"findings\": [";
  const auto& findings = report.evidence.scan->findings;
  std::string one;
  for (std::size_t i = 0; i < findings.size(); ++i) {
    one = FindingJson(findings[i]).dump(2, ' ', false, json::error_handler_t::replace);
    out << (i == 0 ? "\n" : ",\n") << indent;
    std::size_t from = 0;
    for (std::size_t nl; (nl = one.find('\n', from)) != std::string::npos; from = nl + 1) {
      out.write(one.data() + from, static_cast<std::streamsize>(nl + 1 - from));
      out << indent;
    }
    out.write(one.data() + from, static_cast<std::streamsize>(one.size() - from));
  }
  if (findings.empty()) {
    out << "]";
  } else {
    out << "\n" << std::string_view(indent).substr(2) << "]";
  }
  out.write(doc.data() + at + key.size(),
            static_cast<std::streamsize>(doc.size() - at - key.size()));
}

std::string RenderJson(const Report& report) {
  std::ostringstream os;
  RenderJson(report, os);
  return os.str();
}

static std::string ExperimentsTitle(const Report& r) {
  const Evidence& ev = r.evidence;
  std::string project = ev.project.empty() ? "project" : ev.project;
  return fmt::format("{} ({} experiment(s))", project, r.experiments.size());
}

namespace {

// "mac-ready after `dualtrack fix --apply` (7 automatic edits)": the verdict word, and how the
// experiment gets there when the automatic edits are all that stand in the way.
std::string VerdictWords(const Report& r) {
  std::string words = ToString(r.verdict);
  if (r.verdict == Verdict::kMacReady && r.automatic_edits > 0)
    words +=
        fmt::format(" after `dualtrack fix --apply` ({} automatic edit(s))", r.automatic_edits);
  return words;
}

}  // namespace

std::string RenderText(const Report& r) {
  std::ostringstream os;
  os << "verdict: " << VerdictWords(r) << " (" << ToString(r.level) << ")\n";
  if (r.validity.state == ValidityState::kDiffers) os << "VALIDITY: " << r.validity.summary << '\n';
  for (const std::string& reason : r.reasons) os << "  - " << reason << '\n';
  os << "checklist:\n";
  for (const ChecklistItem& c : r.checklist) {
    os << fmt::format("  [{:<7}] {}: {}{}\n", ToString(c.status), c.title, c.evidence,
                      c.user_statement ? " (user statement)" : "");
  }
  if (!r.next_steps.empty()) {
    os << "next steps:\n";
    for (std::size_t i = 0; i < r.next_steps.size() && i < 5; ++i) {
      os << fmt::format("  {}. {}\n", i + 1, r.next_steps[i].action);
    }
  }
  return os.str();
}

namespace {

// The title (with the experiments' table), a validity warning, the verdict and the checklist.
void MarkdownVerdict(std::ostringstream& os, const Report& r) {
  const Evidence& ev = r.evidence;
  if (!r.experiments.empty()) {
    os << "# dualtrack audit: " << ExperimentsTitle(r) << "\n\n"
       << "| experiment | entry | verdict | evidence | why | report |\n|---|---|---|---|---|---|\n";
    for (const ExperimentRow& e : r.experiments) {
      os << "| " << EscapeMarkdown(e.name) << " | "
         << EscapeMarkdown(e.entry.empty() ? "(whole project)" : e.entry) << " | **"
         << ToString(e.verdict) << "** | " << ToString(e.level) << " | " << EscapeMarkdown(e.reason)
         << " | " << EscapeMarkdown(e.report) << " |\n";
    }
    os << "\nThe report below is for the experiment **" << EscapeMarkdown(ev.experiment) << "**";
    if (!r.project_page.empty()) {
      const std::string md =
          std::filesystem::path(r.project_page).replace_extension(".md").string();
      os << "; the project's page: [" << EscapeMarkdown(md) << "](" << md << ")";
    }
    os << ".\n\n";
  }
  os << "# dualtrack report: **" << ToString(r.verdict) << "**"
     << EscapeMarkdown(VerdictWords(r).substr(std::string_view(ToString(r.verdict)).size())) << " ("
     << ToString(r.level) << " evidence)\n\n";
  if (r.validity.state == ValidityState::kDiffers) {
    os << "> **Validity: " << EscapeMarkdown(r.validity.summary)
       << "** A `mac-ready` verdict is not possible.\n\n";
  }
  os << "## Verdict\n\n";
  for (const std::string& reason : r.reasons) os << "- " << EscapeMarkdown(reason) << '\n';
  os << "\n## Checklist\n\n| | item | status | evidence |\n|---|---|---|---|\n";
  for (const ChecklistItem& c : r.checklist) {
    os << "| " << StatusMark(ToString(c.status)) << " | " << EscapeMarkdown(c.title) << " | "
       << ToString(c.status) << " | " << EscapeMarkdown(c.evidence)
       << (c.user_statement ? " *(user statement)*" : "") << " |\n";
  }
}

// Validity per field and the stop conditions with their evidence.
void MarkdownValidityAndStops(std::ostringstream& os, const Report& r) {
  os << "\n## Validity\n\n"
     << ToString(r.validity.state) << ": " << EscapeMarkdown(r.validity.summary) << "\n\n";
  if (!r.validity.fields.empty()) {
    os << "| field | state | values |\n|---|---|---|\n";
    for (const ValidityField& f : r.validity.fields) {
      std::string values;
      for (const auto& [who, value] : f.values) {
        values += (values.empty() ? "" : "; ") + who + ": " + (value.empty() ? "missing" : value);
      }
      os << "| " << f.field << " | "
         << (f.state == RuleState::kHolds ? "differs"
                                          : (f.state == RuleState::kClear ? "same" : "unknown"))
         << " | " << EscapeMarkdown(values) << " |\n";
    }
    os << '\n';
  }
  os << "## Stop conditions\n\n| condition | state | level | summary |\n|---|---|---|---|\n";
  for (const RuleResult& s : r.stops) {
    os << "| " << EscapeMarkdown(s.title) << " | " << ToString(s.state) << " | "
       << ToString(s.level) << " | " << EscapeMarkdown(s.summary) << " |\n";
  }
  for (const RuleResult& s : r.stops) {
    if (s.evidence.empty() && s.notes.empty()) continue;
    os << "\n**" << ToString(s.id) << "**\n\n";
    for (const EvidenceItem& e : s.evidence) {
      os << "- " << (Where(e.location).empty() ? "" : CodeCell(Where(e.location)) + " ")
         << EscapeMarkdown(e.text) << '\n';
    }
    for (const EvidenceItem& e : s.notes) {
      os << "- *(not stopping)* "
         << (Where(e.location).empty() ? "" : CodeCell(Where(e.location)) + " ")
         << EscapeMarkdown(e.text) << '\n';
    }
  }
}

// The dual-track plan and the next steps.
void MarkdownPlan(std::ostringstream& os, const Report& r) {
  os << "\n## Dual-track plan\n\n| where | what | why |\n|---|---|---|\n";
  for (const PlanItem& p : r.plan) {
    os << "| " << Title(p.where) << " | " << EscapeMarkdown(p.what) << " | "
       << EscapeMarkdown(p.why) << " |\n";
  }
  os << "\n## Next steps (by effect)\n\n";
  for (std::size_t i = 0; i < r.next_steps.size(); ++i) {
    os << i + 1 << ". " << EscapeMarkdown(r.next_steps[i].action) << '\n';
  }
  if (r.next_steps.empty()) os << "None.\n";
}

// The per-tensor comparisons and metric series.
void MarkdownComparisons(std::ostringstream& os, const Report& r) {
  const Evidence& ev = r.evidence;
  // The evidence, as in the HTML report.
  if (!ev.comparisons.empty()) os << "\n## Per-tensor comparison\n";
  for (const Comparison& c : ev.comparisons) {
    os << "\n"
       << CodeCell(c.a) << " vs " << CodeCell(c.b) << ": **" << OutcomeText(c.verdict) << "** ("
       << c.n_pass << " pass, " << c.n_fail << " fail)\n\n"
       << "| tensor | status | shape | max abs | mean abs | max rel | atol / rtol |\n"
          "|---|---|---|---|---|---|---|\n";
    for (const TensorComparison& t : c.tensors) {
      std::string shape;
      for (std::int64_t d : t.shape) shape += (shape.empty() ? "" : "×") + std::to_string(d);
      os << "| " << CodeCell(t.name) << " | " << OutcomeText(t.status) << " | " << shape << " | "
         << Num(t.max_abs) << " | " << Num(t.mean_abs) << " | " << Num(t.max_rel) << " | "
         << Num(t.atol) << " / " << Num(t.rtol) << " |\n";
    }
    for (const MetricComparison& m : c.metrics) {
      os << "\n**" << EscapeMarkdown(m.name) << "** (" << OutcomeText(m.status)
         << "), A / B / |a−b| per step:";
      for (const auto& st : m.steps)
        os << " " << st.step << ": " << Num(st.a) << " / " << Num(st.b) << " / "
           << (st.diff ? Num(std::fabs(*st.diff)) : std::string("-")) << ";";
      os << '\n';
    }
  }
}

std::string CoverageState(const CoverageOp& op) {
  if (op.cls == coverage::OpClass::kAbsent) return "unknown";
  if (coverage::RunsOnMps(op.cls) && op.dtype_issues.empty()) return "clear";
  return "holds";
}
// The traced operators as a reader wants them: one row per operator (its overloads merged: the
// counts added, the dtypes and issues joined), the most severe first as traced.
std::vector<CoverageOp> MergedOps(const std::vector<CoverageOp>& ops) {
  std::vector<CoverageOp> rows;
  std::map<std::string, std::size_t> at;
  for (const CoverageOp& op : ops) {
    auto [it, fresh] = at.emplace(op.op, rows.size());
    if (fresh) {
      rows.push_back(op);
      continue;
    }
    CoverageOp& row = rows[it->second];
    row.count += op.count;
    for (const std::string& d : op.dtypes)
      if (std::find(row.dtypes.begin(), row.dtypes.end(), d) == row.dtypes.end())
        row.dtypes.push_back(d);
    for (const std::string& d : op.dtype_issues)
      if (std::find(row.dtype_issues.begin(), row.dtype_issues.end(), d) == row.dtype_issues.end())
        row.dtype_issues.push_back(d);
    if (CoverageState(row) == "clear" && CoverageState(op) != "clear") row.cls = op.cls;
  }
  return rows;
}

// "71 operators, all with an MPS kernel" or "71 operators: 68 with an MPS kernel, 2 fall back
// to the CPU, 1 fails on MPS".
std::string CoverageSentence(const std::vector<CoverageOp>& rows) {
  std::size_t ok = 0, fallback = 0, failing = 0, unknown = 0;
  for (const CoverageOp& op : rows) {
    const std::string st = CoverageState(op);
    if (st == "clear")
      ++ok;
    else if (st == "unknown")
      ++unknown;
    else if (coverage::FallsBackToCpu(op.cls) && op.dtype_issues.empty())
      ++fallback;
    else
      ++failing;
  }
  if (ok == rows.size()) return fmt::format("{} operators, all with an MPS kernel", rows.size());
  std::vector<std::string> parts;
  if (ok > 0) parts.push_back(fmt::format("{} with an MPS kernel", ok));
  if (fallback > 0)
    parts.push_back(fmt::format("{} fall{} back to the CPU", fallback, fallback == 1 ? "s" : ""));
  if (failing > 0)
    parts.push_back(fmt::format("{} fail{} on MPS", failing, failing == 1 ? "s" : ""));
  if (unknown > 0) parts.push_back(fmt::format("{} unknown to this torch release", unknown));
  return fmt::format("{} operators: {}", rows.size(), fmt::join(parts, ", "));
}

// The operator as traced, and the kernel MPS runs instead when the traced one is another
// backend's variant (a CPU flash-attention kernel is not an MPS kernel).
std::string OpName(const CoverageOp& op) {
  return op.mps_op.empty() ? op.op : op.op + " (on MPS: " + op.mps_op + ")";
}

// Operator coverage on MPS and the scan findings.
void MarkdownCoverageAndFindings(std::ostringstream& os, const Report& r) {
  const Evidence& ev = r.evidence;
  if (ev.coverage) {
    const std::vector<CoverageOp> rows = MergedOps(ev.coverage->ops);
    os << "\n## Operator coverage on MPS\n\n"
       << CoverageSentence(rows) << " (" << ToString(ev.coverage->evidence) << " for torch "
       << EscapeMarkdown(ev.coverage->torch) << ").\n";
    std::vector<std::string> native;
    for (const CoverageOp& op : rows)
      if (CoverageState(op) == "clear") native.push_back(CodeCell(OpName(op)));
    const bool all_native = native.size() == rows.size();
    if (!all_native) {
      os << "\n| operator | class | dtypes | issues | count | called at |\n"
            "|---|---|---|---|---|---|\n";
    }
    for (const CoverageOp& op : rows) {
      if (CoverageState(op) == "clear") continue;
      os << "| " << CodeCell(OpName(op)) << " | " << coverage::OpClassName(op.cls) << " | "
         << EscapeMarkdown(fmt::format("{}", fmt::join(op.dtypes, ", "))) << " | "
         << EscapeMarkdown(fmt::format("{}", fmt::join(op.dtype_issues, "; "))) << " | " << op.count
         << " | " << (Where(op.location).empty() ? "" : CodeCell(Where(op.location))) << " |\n";
    }
    if (!native.empty()) {
      os << "\n"
         << (all_native ? "They are: " : "With an MPS kernel: ")
         << fmt::format("{}", fmt::join(native, ", ")) << "\n";
    }
  }
  if (ev.scan && !ev.scan->findings.empty()) {
    os << "\n## Findings by class\n";
    for (scan::FindingClass cls : scan::kFindingClasses) {
      std::size_t n = 0;
      for (const Finding& f : ev.scan->findings) n += f.cls == cls ? 1 : 0;
      if (n == 0) continue;
      os << "\n### " << scan::FindingClassName(cls) << " (" << n
         << ")\n\n| where | code | severity | finding | guarded | "
            "reachable | replacement |\n|---|---|---|---|---|---|---|\n";
      for (const Finding& f : ev.scan->findings) {
        if (f.cls != cls) continue;
        os << "| " << CodeCell(Where({f.file, f.line, f.cell})) << " | " << f.code << " | "
           << SeverityText(f.severity) << " | " << EscapeMarkdown(f.message) << " | "
           << Bool(f.guarded) << " | " << (f.reachable ? (*f.reachable ? "yes" : "no") : "n/a")
           << " | " << EscapeMarkdown(f.replacement) << " |\n";
      }
    }
  }
}

// The tracks and environments side by side, and what evidence is missing.
void MarkdownTracksAndEnvironments(std::ostringstream& os, const Report& r) {
  const Evidence& ev = r.evidence;
  if (!ev.tracks.empty()) {
    os << "\n## Tracks\n\n| track | device | status | median step | peak RSS | peak device |\n"
          "|---|---|---|---|---|---|\n";
    for (const Track& t : ev.tracks) {
      os << "| " << EscapeMarkdown(t.name) << " | " << EscapeMarkdown(t.device) << " | "
         << EscapeMarkdown(bundle::ToString(t.status)) << " | " << MedianStep(t) << " | "
         << Bytes(t.peak_rss_bytes) << " | " << Bytes(t.peak_device_bytes) << " |\n";
    }
    os << "\nTimes are as measured on each track; they support no faster/slower claim beyond "
          "runs made under the same conditions.\n";
  }
  if (const std::vector<EnvColumn> cols = EnvColumns(ev); !cols.empty()) {
    os << "\n## Environments side by side\n\n|";
    for (const EnvColumn& c : cols) os << " | " << EscapeMarkdown(c.label);
    os << " |\n|---";
    for (std::size_t i = 0; i < cols.size(); ++i) os << "|---";
    os << "|\n";
    for (const auto& [name, values] : EnvRows(cols)) {
      os << "| " << EscapeMarkdown(name);
      for (const std::string& v : values) os << " | " << EscapeMarkdown(v);
      os << " |\n";
    }
  }
  if (!ev.missing.empty()) {
    os << "\n## Missing evidence\n\n";
    for (const auto& [what, why] : ev.missing)
      os << "- " << EscapeMarkdown(what) << ": " << EscapeMarkdown(why) << '\n';
  }
  os << "\n<sub>dualtrack " << kVersion << " · dualtrack.report/1</sub>\n";
}

}  // namespace

std::string RenderMarkdown(const Report& r) {
  std::ostringstream os;
  MarkdownVerdict(os, r);
  MarkdownCost(os, r);
  MarkdownValidityAndStops(os, r);
  MarkdownPlan(os, r);
  MarkdownComparisons(os, r);
  MarkdownCoverageAndFindings(os, r);
  MarkdownTracksAndEnvironments(os, r);
  return os.str();
}

// A coverage row's colour: native and composite kernels are clear only for dtypes MPS has (a
// float64 call of a native op still fails there).

// One bar of the traced operators by what MPS does with them.
std::string CoverageChart(const std::vector<CoverageOp>& ops) {
  std::int64_t ok = 0, fallback = 0, failing = 0, unknown = 0;
  for (const CoverageOp& op : ops) {
    const std::string st = CoverageState(op);
    if (st == "clear")
      ++ok;
    else if (st == "unknown")
      ++unknown;
    else if (coverage::FallsBackToCpu(op.cls))
      ++fallback;
    else
      ++failing;
  }
  const std::int64_t total = ok + fallback + failing + unknown;
  if (total == 0) return "";
  std::string svg =
      "<svg class=\"ops\" viewBox=\"0 0 520 34\" width=\"520\" height=\"34\" role=\"img\" "
      "aria-label=\"traced operators: native, CPU fallback, failing, unknown\">";
  double x = 0;
  for (const auto& [n, cls, label] :
       {std::tuple{ok, "clear", "native on MPS"}, std::tuple{fallback, "fallback", "CPU fallback"},
        std::tuple{failing, "holds", "failing on MPS (dtype)"},
        std::tuple{unknown, "unknown", "unknown"}}) {
    if (n == 0) continue;
    const double w = 520.0 * double(n) / double(total);
    svg += fmt::format(
        "<rect class=\"{}\" x=\"{:.1f}\" y=\"0\" width=\"{:.1f}\" height=\"18\"><title>{}: "
        "{}</title></rect>",
        cls, x, w, label, n);
    svg += fmt::format("<text x=\"{:.1f}\" y=\"31\">{} {}</text>", x + 2, n, label);
    x += w;
  }
  return svg + "</svg>";
}

// `file:line` as a link to the file where it is found from here (the audited project or the scan
// root, as the command that wrote the report saw them): relative to the report's folder when the
// report knows it, else an absolute file:// URL; plain text when the file is not there.
std::string SourceLink(const Report& r, const std::string& file, std::int64_t line) {
  namespace fs = std::filesystem;
  const Evidence& ev = r.evidence;
  std::string label =
      "<code>" + HtmlEscape(line > 0 ? file + ":" + std::to_string(line) : file) + "</code>";
  std::error_code ec;
  for (const std::string& root : {ev.project, ev.scan ? ev.scan->root : std::string()}) {
    if (root.empty() || file.empty()) continue;
    const fs::path p = fs::absolute(fs::path(root) / file, ec).lexically_normal();
    if (ec || !fs::is_regular_file(p, ec)) continue;
    fs::path target = p;
    std::string url = "file://";
    if (!r.report_dir.empty()) {
      const fs::path base = fs::absolute(r.report_dir, ec).lexically_normal();
      const fs::path rel = p.lexically_relative(base);
      if (!ec && !rel.empty()) {
        target = rel;
        url.clear();
      }
    }
    for (unsigned char c : target.generic_string()) {
      if (std::isalnum(c) ||
          std::string_view("/-._~").find(static_cast<char>(c)) != std::string_view::npos)
        url.push_back(static_cast<char>(c));
      else
        url += fmt::format("%{:02X}", c);
    }
    return "<a href=\"" + url + "\">" + label + "</a>";
  }
  return label;
}

std::string FolderName(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) return path;
  std::error_code ec;
  fs::path p = fs::absolute(path, ec).lexically_normal();
  if (ec) return path;
  if (!p.has_filename()) p = p.parent_path();
  return p.filename().empty() ? path : p.filename().string();
}

namespace {

// The page head, the contents, a validity warning and the verdict banner.
void HtmlTop(std::ostringstream& os, const Report& r) {
  const Evidence& ev = r.evidence;
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        "<title>dualtrack report: "
     << HtmlEscape(ToString(r.verdict)) << "</title><style>" << kCss << "</style></head><body>\n";
  os << "<h1>dualtrack report</h1><div class=\"muted\">"
     << HtmlEscape(FolderName(
            !ev.project.empty()
                ? ev.project
                : (ev.scan ? ev.scan->root : (ev.tracks.empty() ? "" : ev.tracks.front().dir))))
     << (ev.experiment.empty() ? "" : " · experiment " + HtmlEscape(ev.experiment)) << "</div>\n";
  // The sections, in page order: what to do first, the evidence below. The first and the last are
  // there only with experiments and with missing evidence.
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 12> kSections = {
      {{"experiments", "Experiments"},
       {"next", "Next steps"},
       {"plan", "Dual-track plan"},
       {"checklist", "Checklist"},
       {"validity", "Validity"},
       {"stops", "Stop conditions"},
       {"comparison", "Per-tensor comparison"},
       {"coverage", "Operator coverage on MPS"},
       {"findings", "Findings by class"},
       {"tracks", "Tracks"},
       {"environments", "Environments"},
       {"missing", "Missing evidence"}}};
  std::vector<std::pair<std::string_view, std::string_view>> toc;
  for (const auto& section : kSections)
    if ((section.first != "experiments" || !r.experiments.empty()) &&
        (section.first != "missing" || !ev.missing.empty()))
      toc.push_back(section);
  os << "<nav class=\"toc\" aria-label=\"contents\"><strong>Contents</strong><ol>"
        "<li><a href=\"#verdict\">Verdict</a></li>";
  for (const auto& [id, title] : toc)
    os << "<li><a href=\"#" << id << "\">" << title << "</a></li>";
  os << "</ol></nav>\n";
  if (r.validity.state == ValidityState::kDiffers) {
    os << "<div class=\"validity\" id=\"validity-top\"><strong>Validity: "
       << HtmlEscape(r.validity.summary)
       << "</strong> A mac-ready verdict is not possible until the tracks share them.</div>\n";
  }
  os << "<section class=\"banner " << HtmlEscape(ToString(r.verdict))
     << "\" id=\"verdict\"><span class=\"v\">" << HtmlEscape(VerdictWords(r))
     << "</span><span class=\"lvl\">evidence: " << ToString(r.level) << "</span><ul>";
  for (const std::string& reason : r.reasons) os << "<li>" << HtmlEscape(reason) << "</li>";
  os << "</ul></section>\n";
}

// What to do: the experiments, the next steps, the dual-track plan and the checklist.
void HtmlActions(std::ostringstream& os, const Report& r) {
  const Evidence& ev = r.evidence;
  if (!r.experiments.empty()) {
    os << "<h2 id=\"experiments\">Experiments</h2><table><tr><th>experiment</th><th>entry</th>"
          "<th>verdict</th><th>evidence</th><th>why</th><th>report</th></tr>";
    for (const ExperimentRow& e : r.experiments) {
      os << "<tr><td>" << HtmlEscape(e.name) << "</td><td>"
         << HtmlEscape(e.entry.empty() ? "(whole project)" : e.entry) << "</td><td><strong>"
         << HtmlEscape(ToString(e.verdict)) << "</strong></td><td>" << ToString(e.level)
         << "</td><td>" << HtmlEscape(e.reason) << "</td><td><a href=\"" << HtmlEscape(e.report)
         << "\">" << HtmlEscape(e.report) << "</a></td></tr>";
    }
    os << "</table><p>The report below is for the experiment <strong>" << HtmlEscape(ev.experiment)
       << "</strong>";
    if (!r.project_page.empty()) {
      os << "; the project's page, with its worst verdict: <a href=\"" << HtmlEscape(r.project_page)
         << "\">" << HtmlEscape(r.project_page) << "</a>";
    }
    os << ".</p>\n";
  }
  os << "<h2 id=\"next\">Next steps, by effect</h2><ol>";
  for (const NextStep& n : r.next_steps) {
    os << "<li>" << HtmlEscape(n.action);
    if (!n.lifts.empty()) os << " <span class=\"muted\">(" << HtmlEscape(n.lifts) << ")</span>";
    os << "</li>";
  }
  os << "</ol>";
  if (r.next_steps.empty()) os << "<p class=\"muted\">None.</p>";
  os << '\n';

  os << "<h2 id=\"plan\">Dual-track plan</h2><div class=\"plan\">";
  for (Place where : {Place::kMac, Place::kLinuxGpu}) {
    os << "<div><h3>" << Title(where) << "</h3><ul>";
    for (const PlanItem& p : r.plan) {
      if (p.where == where) {
        os << "<li>" << HtmlEscape(p.what) << " <span class=\"muted\">— " << HtmlEscape(p.why)
           << "</span></li>";
      }
    }
    os << "</ul></div>";
  }
  os << "</div>\n";

  os << "<h2 id=\"checklist\">Checklist</h2><table><tr><th>item</th><th>status</th>"
        "<th>evidence</th></tr>";
  for (const ChecklistItem& c : r.checklist) {
    os << "<tr><td>" << HtmlEscape(c.title) << "</td><td>" << StatusSpan(ToString(c.status))
       << "</td><td" << (c.user_statement ? " class=\"user\"" : "") << ">" << HtmlEscape(c.evidence)
       << (c.user_statement ? " (user statement)" : "") << "</td></tr>";
  }
  os << "</table>\n";
}

// The evidence begins: validity (commit, data, seed per track) and the stop conditions.
void HtmlValidityAndStops(std::ostringstream& os, const Report& r) {
  os << "<h2 class=\"part\">Evidence</h2>";
  os << "<h2 id=\"validity\">Validity</h2><div class=\"validity "
     << HtmlEscape(ToString(r.validity.state)) << "\">" << HtmlEscape(ToString(r.validity.state))
     << ": " << HtmlEscape(r.validity.summary) << "</div>";
  if (!r.validity.fields.empty()) {
    os << "<table><tr><th>field</th><th>state</th>";
    for (const auto& [who, value] : r.validity.fields.front().values) {
      os << "<th>" << HtmlEscape(who) << "</th>";
    }
    os << "</tr>";
    for (const ValidityField& f : r.validity.fields) {
      const char* st = f.state == RuleState::kHolds
                           ? "holds"
                           : (f.state == RuleState::kClear ? "clear" : "unknown");
      const char* label = f.state == RuleState::kHolds
                              ? "differs"
                              : (f.state == RuleState::kClear ? "same" : "unknown");
      os << "<tr><td>" << HtmlEscape(f.field) << "</td><td><span class=\"st " << st << "\">"
         << label << "</span></td>";
      for (const auto& [who, value] : f.values) {
        // Hashes are shortened on the page; the full value stays in the tooltip and the JSON.
        if (value.empty()) {
          os << "<td><code>missing</code></td>";
        } else {
          os << "<td><code title=\"" << HtmlEscape(value) << "\">"
             << HtmlEscape(value.size() > 16 ? value.substr(0, 12) + "…" : value) << "</code></td>";
        }
      }
      os << "</tr>";
    }
    os << "</table>";
  }
  os << '\n';

  os << "<h2 id=\"stops\">Stop conditions</h2><table><tr><th>condition</th><th>state</th>"
        "<th>level</th><th>evidence</th></tr>";
  for (const RuleResult& s : r.stops) {
    os << "<tr><td>" << HtmlEscape(s.title) << "</td><td>" << StatusSpan(ToString(s.state))
       << "</td><td>" << ToString(s.level) << "</td><td>" << HtmlEscape(s.summary);
    if (!s.evidence.empty() || !s.notes.empty()) {
      // The first few inline; the rest folded (report.json lists them all).
      constexpr std::size_t kInline = 6;
      std::size_t shown = 0;
      auto item = [&](const EvidenceItem& e, bool note) {
        if (shown == kInline)
          os << "</ul><details><summary>" << (s.evidence.size() + s.notes.size() - kInline)
             << " more</summary><ul>";
        ++shown;
        os << "<li" << (note ? " class=\"muted\"" : "") << "><code>"
           << HtmlEscape(Where(e.location)) << "</code> " << HtmlEscape(e.text) << "</li>";
      };
      os << "<ul>";
      for (const EvidenceItem& e : s.evidence) item(e, false);
      for (const EvidenceItem& e : s.notes) item(e, true);
      os << "</ul>" << (shown > kInline ? "</details>" : "");
    }
    os << "</td></tr>";
  }
  os << "</table>\n";
}

// Per-tensor comparisons, failing tensors first, with shared-axis error histograms and metric
// curves.
void HtmlComparisons(std::ostringstream& os, const Report& r) {
  const Evidence& ev = r.evidence;
  os << "<h2 id=\"comparison\">Per-tensor comparison</h2>";
  if (ev.comparisons.empty()) {
    os << "<p class=\"muted\">missing: no comparison of two tracks</p>";
  }
  for (const Comparison& c : ev.comparisons) {
    const HistAxis axis = SharedAxis(c.tensors);
    os << "<p><code>" << HtmlEscape(c.a) << "</code> vs <code>" << HtmlEscape(c.b)
       << "</code>: " << StatusSpan(OutcomeText(c.verdict)) << " (" << c.n_pass << " pass, "
       << c.n_fail
       << " fail). Error histograms share one axis (log10 |a−b|); the red line is each "
          "tensor's atol.</p>";
    const char* header =
        "<div class=\"scroll\"><table><tr><th>tensor</th><th>status</th><th>shape</th><th>max "
        "|a−b|</th>"
        "<th>mean |a−b|</th><th>max rel</th><th>atol / rtol</th><th>error histogram</th></tr>";
    // Failing tensors come worst first: the first kWorst inline, the others folded with the
    // passing.
    constexpr std::size_t kWorst = 12;
    auto rows = [&](int part) {  // 0: the worst failing, 1: the other failing, 2: passing.
      std::size_t n = 0, failing = 0;
      std::ostringstream t_os;
      for (const TensorComparison& t : c.tensors) {
        const bool pass = t.status == compare::Outcome::kPass;
        const int in = pass ? 2 : (failing++ < kWorst ? 0 : 1);
        if (in != part) continue;
        ++n;
        std::string shape;
        for (std::int64_t d : t.shape) shape += (shape.empty() ? "" : "×") + std::to_string(d);
        t_os << "<tr><td><code>" << HtmlEscape(t.name) << "</code></td><td>"
             << StatusSpan(OutcomeText(t.status)) << "</td><td>" << shape << "</td><td>"
             << Num(t.max_abs) << "</td><td>" << Num(t.mean_abs) << "</td><td>" << Num(t.max_rel)
             << "</td><td>" << Num(t.atol) << " / " << Num(t.rtol) << "</td><td>"
             << HistogramSvg(t, axis) << "</td></tr>";
      }
      return std::pair{n, t_os.str()};
    };
    auto [n_bad, bad] = rows(0);
    auto [n_more, more] = rows(1);
    auto [n_ok, ok] = rows(2);
    if (n_bad > 0) os << header << bad << "</table></div>";
    if (n_more > 0)
      os << "<details><summary>" << n_more << " more outside tolerance</summary>" << header << more
         << "</table></div></details>";
    if (n_ok > 0)
      os << "<details" << (n_bad == 0 ? " open" : "") << "><summary>" << n_ok
         << " tensor(s) within tolerance</summary>" << header << ok << "</table></div></details>";
    for (const MetricComparison& m : c.metrics) {
      os << "<h3 class=\"metric\">" << HtmlEscape(m.name) << " "
         << StatusSpan(OutcomeText(m.status)) << "</h3>" << CurveSvg(m, c.a, c.b);
    }
  }
  os << '\n';
}

// Operator coverage on MPS and the scan findings by class.
void HtmlCoverageAndFindings(std::ostringstream& os, const Report& r) {
  const Evidence& ev = r.evidence;
  os << "<h2 id=\"coverage\">Operator coverage on MPS</h2>";
  if (!ev.coverage) {
    os << "<p class=\"muted\">missing: "
       << HtmlEscape(ev.missing.count("coverage") ? ev.missing.at("coverage") : "no coverage given")
       << "</p>";
  } else {
    const std::vector<CoverageOp> rows = MergedOps(ev.coverage->ops);
    os << "<p><strong>" << HtmlEscape(CoverageSentence(rows)) << "</strong> <span class=\"muted\">("
       << ToString(ev.coverage->evidence) << " for torch " << HtmlEscape(ev.coverage->torch)
       << ")</span></p>" << CoverageChart(rows);
    std::vector<std::string> native;
    for (const CoverageOp& op : rows)
      if (CoverageState(op) == "clear")
        native.push_back("<code>" + HtmlEscape(OpName(op)) + "</code>");
    if (native.size() != rows.size()) {
      os << "<div class=\"scroll\"><table><tr><th>operator</th><th>class</th><th>dtypes</th>"
            "<th>issues</th><th>count</th><th>called at</th></tr>";
    }
    for (const CoverageOp& op : rows) {
      const std::string st = CoverageState(op);
      if (st == "clear") continue;
      os << "<tr><td><code>" << HtmlEscape(OpName(op)) << "</code></td><td><span class=\"st " << st
         << "\">" << coverage::OpClassName(op.cls) << "</span></td><td>"
         << HtmlEscape(fmt::format("{}", fmt::join(op.dtypes, ", "))) << "</td><td>"
         << HtmlEscape(fmt::format("{}", fmt::join(op.dtype_issues, "; "))) << "</td><td>"
         << op.count << "</td><td>"
         << (!op.location.file.empty() ? SourceLink(r, op.location.file, op.location.line)
                                       : "<code>" + HtmlEscape(Where(op.location)) + "</code>")
         << "</td></tr>";
    }
    if (native.size() != rows.size()) os << "</table></div>";
    if (!native.empty()) {
      os << "<details><summary>" << native.size() << " operator" << (native.size() == 1 ? "" : "s")
         << " with an MPS kernel</summary><p>" << fmt::format("{}", fmt::join(native, ", "))
         << "</p></details>";
    }
  }
  os << '\n';

  os << "<h2 id=\"findings\">Findings by class</h2>";
  if (!ev.scan) {
    os << "<p class=\"muted\">missing: "
       << HtmlEscape(ev.missing.count("scan") ? ev.missing.at("scan") : "no scan given") << "</p>";
  } else if (ev.scan->findings.empty()) {
    os << "<p>The scan found no CUDA dependency.</p>";
  } else {
    for (scan::FindingClass cls : scan::kFindingClasses) {
      std::vector<const Finding*> fs;
      for (const Finding& f : ev.scan->findings) {
        if (f.cls == cls) fs.push_back(&f);
      }
      if (fs.empty()) continue;
      bool blocker = false;
      for (const Finding* f : fs) blocker |= f->severity == scan::Severity::kBlocker;
      os << "<details" << (blocker ? " open" : "") << "><summary><strong>"
         << scan::FindingClassName(cls) << "</strong> (" << fs.size() << ")"
         << (blocker ? " — holds blockers" : "")
         << "</summary><div class=\"scroll\"><table><tr><th>where</th><th>code</th>"
            "<th>severity</th><th>finding</th><th>guarded</th><th>reachable</th>"
            "<th>replacement</th></tr>";
      for (const Finding* f : fs) {
        os << "<tr><td>" << SourceLink(r, f->file, f->line) << "</td><td>" << HtmlEscape(f->code)
           << "</td><td class=\"sev-" << SeverityText(f->severity) << "\">"
           << SeverityText(f->severity) << "</td><td>" << HtmlEscape(f->message);
        if (!f->snippet.empty()) os << "<br><code>" << HtmlEscape(f->snippet) << "</code>";
        os << "</td><td>" << Bool(f->guarded) << "</td><td>"
           << (f->reachable ? (*f->reachable ? "yes" : "no") : "n/a") << "</td><td>"
           << HtmlEscape(f->replacement) << "</td></tr>";
      }
      os << "</table></div></details>";
    }
  }
  os << '\n';
}

// The tracks side by side, the environments side by side, and what evidence is missing.
void HtmlTracksAndEnvironments(std::ostringstream& os, const Report& r) {
  const Evidence& ev = r.evidence;
  os << "<h2 id=\"tracks\">Tracks</h2>";
  if (ev.tracks.empty()) {
    os << "<p class=\"muted\">missing: no track bundles</p>";
  } else {
    os << "<table><tr><th></th>";
    for (const Track& t : ev.tracks) os << "<th>" << HtmlEscape(t.name) << "</th>";
    os << "</tr>";
    auto row = [&](const char* name, auto get) {
      os << "<tr><th>" << name << "</th>";
      for (const Track& t : ev.tracks) os << "<td>" << HtmlEscape(get(t)) << "</td>";
      os << "</tr>";
    };
    row("device", [](const Track& t) { return t.device; });
    row("status", [](const Track& t) {
      std::string s = bundle::ToString(t.status);
      if (t.exception) {
        s += ": " + t.exception->type + " at " + Where(t.exception->location);
      }
      return s;
    });
    row("command", [](const Track& t) { return fmt::format("{}", fmt::join(t.command, " ")); });
    row("steps", [](const Track& t) { return std::to_string(t.step_wall_s.size()); });
    row("median step", [](const Track& t) { return MedianStep(t); });
    row("peak RSS", [](const Track& t) { return Bytes(t.peak_rss_bytes); });
    row("peak device memory", [](const Track& t) { return Bytes(t.peak_device_bytes); });
    row("CPU fallback ops", [](const Track& t) {
      std::int64_t n = 0;
      for (const OpRow& op : t.ops) n += op.status == bundle::OpStatus::kFallback ? 1 : 0;
      return t.has_ops ? std::to_string(n) : std::string("not traced");
    });
    row("PYTORCH_ENABLE_MPS_FALLBACK",
        [](const Track& t) { return t.mps_fallback.value_or("unset"); });
    os << "</table><p class=\"muted\">Times as measured on each track; no faster/slower claim "
          "beyond runs under the same conditions.</p>";
  }
  os << '\n';

  os << "<h2 id=\"environments\">Environments side by side</h2>";
  const std::vector<EnvColumn> cols = EnvColumns(ev);
  if (cols.empty()) {
    os << "<p class=\"muted\">missing: "
       << HtmlEscape(ev.missing.count("env") ? ev.missing.at("env") : "no environment recorded")
       << "</p>";
  } else {
    os << "<table><tr><th></th>";
    for (const EnvColumn& c : cols) os << "<th>" << HtmlEscape(c.label) << "</th>";
    os << "</tr>";
    for (const auto& [name, values] : EnvRows(cols)) {
      os << "<tr><th>" << HtmlEscape(name) << "</th>";
      for (const std::string& v : values) os << "<td>" << HtmlEscape(v) << "</td>";
      os << "</tr>";
    }
    os << "</table>";
  }
  if (!ev.missing.empty()) {
    os << "<h2 id=\"missing\">Missing evidence</h2><ul>";
    for (const auto& [what, why] : ev.missing) {
      os << "<li><strong>" << HtmlEscape(what) << "</strong>: " << HtmlEscape(why) << "</li>";
    }
    os << "</ul>";
  }
}

}  // namespace

std::string RenderHtml(const Report& r) {
  std::ostringstream os;
  HtmlTop(os, r);
  HtmlActions(os, r);
  HtmlCost(os, r);
  HtmlValidityAndStops(os, r);
  HtmlComparisons(os, r);
  HtmlCoverageAndFindings(os, r);
  HtmlTracksAndEnvironments(os, r);
  os << "\n<footer>dualtrack " << kVersion
     << " · schema dualtrack.report/1 · predicted = from scan and coverage tables; measured = "
        "from runs of the tracks</footer>\n</body></html>\n";
  return os.str();
}

}  // namespace dt::verdict
