// "Time and memory on a Mac": the traced step's predicted time per chip beside the measured tracks,
// its memory fit and the designated run's time, in the three report formats; the HTML page draws
// step times as an inline SVG bar chart (no network).
#include "verdict/render_cost.h"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join

#include <algorithm>
#include <cmath>

#include "util/strings.h"

namespace dt::verdict {

namespace {

using nlohmann::json;

// One bar of the chart: a chip's prediction (with its band) or a track's measured step.
struct Bar {
  std::string label;
  double seconds = 0;
  std::optional<std::pair<double, double>> band;
  std::string cls;  // pred | nofit | measured
};

std::vector<Bar> Bars(const cost::CostView& v, const std::vector<MeasuredStep>& measured) {
  std::vector<Bar> bars;
  for (const cost::ChipRow& c : v.chips) {
    Bar b{c.label + (c.measured_profile ? " (roofline)" : ""), c.prediction.step_s, std::nullopt,
          c.prediction.fits == std::optional<bool>(false) ? "nofit" : "pred"};
    b.band = cost::BandOf(v, c.prediction);
    bars.push_back(std::move(b));
  }
  for (const MeasuredStep& m : measured) {
    bars.push_back({"track " + m.track + " (" + m.device + "), measured", m.seconds, std::nullopt,
                    "measured"});
  }
  return bars;
}

}  // namespace

std::vector<MeasuredStep> MeasuredSteps(const Evidence& ev) {
  std::vector<MeasuredStep> out;
  for (const Track& t : ev.tracks) {
    if (t.step_wall_s.empty()) continue;
    MeasuredStep m{t.name, t.device, t.step_wall_s.back()};
    // The costed step's own time without the tracer's work, where the trace says.
    if (t.cost && t.cost->wall_s) m.seconds = cost::UntracedStep(*t.cost).value_or(m.seconds);
    out.push_back(std::move(m));
  }
  return out;
}

std::string StepTimeChartSvg(const cost::CostView& v, const std::vector<MeasuredStep>& measured) {
  const std::vector<Bar> bars = Bars(v, measured);
  double lo = INFINITY, hi = 0;
  for (const Bar& b : bars) {
    if (!(b.seconds > 0)) continue;
    lo = std::min(lo, b.band ? b.band->first : b.seconds);
    hi = std::max(hi, b.band ? b.band->second : b.seconds);
  }
  if (!(hi > 0) || !std::isfinite(lo)) return "";
  // A log axis: a Mac GPU and a laptop CPU differ by orders of magnitude.
  const double d0 = std::floor(std::log10(lo)), d1 = std::max(d0 + 1, std::ceil(std::log10(hi)));
  constexpr int kLabel = 230, kWidth = 460, kRow = 22;
  const int height = static_cast<int>(bars.size()) * kRow + 30;
  auto x = [&](double s) {
    return kLabel + (std::log10(std::max(s, lo)) - d0) / (d1 - d0) * kWidth;
  };
  std::string svg = fmt::format(
      "<svg class=\"steps\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"step time per "
      "device\">",
      kLabel + kWidth + 70, height);
  for (double d = d0; d <= d1; d += 1) {
    svg += fmt::format(
        "<line class=\"grid\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"0\" y2=\"{1}\"/>"
        "<text x=\"{0:.1f}\" y=\"{2}\" text-anchor=\"middle\">{3}</text>",
        x(std::pow(10.0, d)), height - 18, height - 4,
        HtmlEscape(cost::Seconds(std::pow(10.0, d))));
  }
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const int y = static_cast<int>(i) * kRow + 4;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", kLabel - 6, y + 13,
                       HtmlEscape(b.label));
    if (!(b.seconds > 0)) continue;
    svg += fmt::format(
        "<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\"><title>{}</title>"
        "</rect>",
        b.cls, kLabel, y, std::max(1.0, x(b.seconds) - kLabel), kRow - 8,
        HtmlEscape(b.label + ": " + cost::Seconds(b.seconds)));
    if (b.band) {
      svg +=
          fmt::format("<line class=\"band\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\"/>",
                      x(b.band->first), x(b.band->second), y + (kRow - 8) / 2, y + (kRow - 8) / 2);
    }
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{}</text>",
                       x(b.band ? b.band->second : b.seconds) + 4, y + 13,
                       HtmlEscape(cost::Seconds(b.seconds)));
  }
  svg += "</svg>";
  return svg;
}

json CostReportJson(const Report& r) {
  if (!r.cost) return nullptr;
  json j = cost::CostJson(*r.cost);
  j["track"] = r.cost_track;
  json measured = json::array();
  for (const MeasuredStep& m : MeasuredSteps(r.evidence)) {
    measured.push_back({{"track", m.track}, {"device", m.device}, {"step_s", m.seconds}});
  }
  j["measured"] = std::move(measured);
  return j;
}

namespace {

std::string Band(const cost::CostView& v) {
  if (!v.calibration) {
    return "no calibration shipped: the prediction carries no measured error band";
  }
  return fmt::format(
      "error band: on the {} calibration models ({}, {}) the operators' measured time was "
      "{:.2f}–{:.2f}× their prediction; the ranges apply it to the operators' part",
      v.calibration->models, v.calibration->where, v.calibration->date, v.calibration->low,
      v.calibration->high);
}

std::string CostIntro(const Report& r) {
  const cost::CostView& v = *r.cost;
  const cost::StepCost& s = v.step;
  std::string text =
      fmt::format("Step {} of track {} ({}): {}, {} moved, {:.0f} operator calls", s.step,
                  r.cost_track, s.device, cost::Flops(s.flops), cost::Bytes(s.bytes), s.calls);
  if (s.memory) {
    text += fmt::format(
        "; memory: parameters {}, gradients {}, optimizer state {}, activations {}, step peak {}",
        cost::Bytes(s.memory->params), cost::Bytes(s.memory->grads),
        cost::Bytes(s.memory->optimizer_state), cost::Bytes(s.memory->activations),
        cost::Bytes(s.memory->step_peak));
  }
  if (!s.unknown_ops.empty()) {
    text += fmt::format("; costed as bytes only (no formula): {}", fmt::join(s.unknown_ops, ", "));
  }
  return text + ".";
}

// The five operators with the most predicted time on the first device of the view.
std::string DominantOps(const cost::CostView& v) {
  std::vector<std::string> ops;
  for (const cost::CostGroup& g : v.chips.front().prediction.top_ops) {
    ops.push_back(fmt::format("{} {}", g.key, cost::Seconds(g.predicted_s)));
  }
  return fmt::format("Dominant operators (on {}): {}.", v.chips.front().label,
                     fmt::join(ops, ", "));
}

std::string RunColumn(const cost::Prediction& p, const cost::RunPlan& plan) {
  const std::string run = cost::RunTime(p, plan);
  return run.empty() ? "steps not declared" : run;
}

}  // namespace

void MarkdownCost(std::ostringstream& os, const Report& r) {
  if (!r.cost) return;
  const cost::CostView& v = *r.cost;
  os << "\n## Time and memory on a Mac\n\n"
     << EscapeMarkdown(CostIntro(r)) << "\n\n"
     << "Roofline per operator (the longer of its arithmetic at the device's peak and its bytes "
        "at its bandwidth, plus PyTorch's per-operator cost measured on the traced machine); "
     << EscapeMarkdown(Band(v)) << ".\n\n"
     << "| device | step time | bound | memory | designated run |\n|---|---|---|---|---|\n";
  for (const cost::ChipRow& c : v.chips) {
    const cost::Prediction& p = c.prediction;
    const std::string fit = cost::MemoryFit(p);
    os << "| " << EscapeMarkdown(c.label) << (c.measured_profile ? " (roofline)" : "") << " | "
       << EscapeMarkdown(cost::StepTimeWithBand(v, p)) << " | " << p.bound << " | "
       << (p.fits == std::optional<bool>(false) ? "**" + fit + "**" : fit) << " | "
       << EscapeMarkdown(RunColumn(p, v.plan)) << " |\n";
  }
  for (const MeasuredStep& m : MeasuredSteps(r.evidence)) {
    os << "| track " << EscapeMarkdown(m.track) << " (" << EscapeMarkdown(m.device)
       << "), measured | " << cost::Seconds(m.seconds) << " | | | |\n";
  }
  if (!v.chips.empty()) os << "\n" << EscapeMarkdown(DominantOps(v)) << "\n";
}

void HtmlCost(std::ostringstream& os, const Report& r) {
  if (!r.cost) return;
  const cost::CostView& v = *r.cost;
  os << "<h2 id=\"cost\">Time and memory on a Mac</h2><p>" << HtmlEscape(CostIntro(r)) << "</p>"
     << StepTimeChartSvg(v, MeasuredSteps(r.evidence))
     << "<div class=\"legend\">bars: predicted step time (roofline), red where the step does not "
        "fit in the Mac's memory; green: measured tracks; whiskers: "
     << HtmlEscape(Band(v)) << "</div>"
     << "<table><tr><th>device</th><th>step time</th><th>bound</th><th>memory</th>"
        "<th>designated run</th></tr>";
  for (const cost::ChipRow& c : v.chips) {
    const cost::Prediction& p = c.prediction;
    const bool nofit = p.fits == std::optional<bool>(false);
    const bool late = p.finishes == std::optional<bool>(false);
    os << "<tr><td>" << HtmlEscape(c.label) << (c.measured_profile ? " (roofline)" : "")
       << "</td><td>" << HtmlEscape(cost::StepTimeWithBand(v, p)) << "</td><td>"
       << HtmlEscape(p.bound) << "</td><td" << (nofit ? " class=\"st failed\"" : "") << ">"
       << HtmlEscape(cost::MemoryFit(p)) << "</td><td" << (late ? " class=\"st failed\"" : "")
       << ">" << HtmlEscape(RunColumn(p, v.plan)) << "</td></tr>";
  }
  os << "</table>";
  if (!v.chips.empty()) os << "<p>" << HtmlEscape(DominantOps(v)) << "</p>";
  if (!v.by_location.empty()) {
    os << "<details><summary>where the time goes (predicted on " << HtmlEscape(v.ranked_on)
       << ")</summary><table><tr><th>location</th><th>FLOP</th><th>bytes</th><th>calls</th>"
          "<th>time</th></tr>";
    for (std::size_t i = 0; i < v.by_location.size() && i < 10; ++i) {
      const cost::CostGroup& g = v.by_location[i];
      os << "<tr><td><code>" << HtmlEscape(g.key) << "</code></td><td>"
         << HtmlEscape(cost::Flops(g.flops)) << "</td><td>" << HtmlEscape(cost::Bytes(g.bytes))
         << "</td><td>" << g.calls << "</td><td>" << HtmlEscape(cost::Seconds(g.predicted_s))
         << "</td></tr>";
    }
    os << "</table></details>";
  }
  os << "\n";
}

}  // namespace dt::verdict
