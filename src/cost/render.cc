// The step's cost and its predictions as `show`, `coverage` and the reports print them.
#include "cost/render.h"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join

#include <algorithm>
#include <cmath>

#include "app/paths.h"
#include "util/fs.h"
#include "util/json_fields.h"

namespace dt::cost {

namespace {

using nlohmann::json;

std::string Scaled(double v, const char* unit, double base = 1000) {
  static constexpr const char* kPrefix[] = {"", "k", "M", "G", "T", "P", "E"};
  std::size_t i = 0;
  while (std::fabs(v) >= base && i + 1 < std::size(kPrefix)) {
    v /= base;
    ++i;
  }
  return fmt::format("{:.{}f} {}{}", v,
                     (i == 0 || v >= 100) ? 0
                     : v >= 10            ? 1
                                          : 2,
                     kPrefix[i], unit);
}

json GroupJson(const CostGroup& g) {
  return {{"key", g.key},
          {"flops", g.flops},
          {"bytes", g.bytes},
          {"calls", g.calls},
          {"predicted_s", g.predicted_s}};
}

}  // namespace

std::string Flops(double v) { return Scaled(v, "FLOP"); }
std::string Bytes(double v) { return Scaled(v, "B"); }
std::string GiB(double v) { return fmt::format("{:.1f} GB", v / (1024.0 * 1024.0 * 1024.0)); }

std::string Seconds(double s) {
  if (!std::isfinite(s)) return "?";
  if (s < 1e-3) return fmt::format("{:.0f} µs", s * 1e6);
  if (s < 1) return fmt::format("{:.1f} ms", s * 1e3);
  if (s < 120) return fmt::format("{:.2f} s", s);
  if (s < 2 * 3600) return fmt::format("{:.0f} min", s / 60);
  if (s < 3 * 86400) return fmt::format("{:.1f} h", s / 3600);
  return fmt::format("{:.1f} days", s / 86400);
}

std::optional<double> UntracedStep(const StepCost& step) {
  if (!step.wall_s) return std::nullopt;
  return std::max(0.0, *step.wall_s - step.tracer_s.value_or(0));
}

const std::vector<std::string>& DefaultMacs() {
  static const std::vector<std::string> macs = {"M2 16GB", "M3 Pro 36GB", "M4 Max 128GB"};
  return macs;
}

Result<std::vector<NamedDevice>> ResolveMacs(const std::vector<std::string>& names) {
  auto dir = DataDir();
  if (!dir) return dir.take_error();
  // An install without profiles still shows the step's cost; only Macs asked for by name need them.
  std::error_code ec;
  if (names.empty() && !std::filesystem::is_directory(*dir / "devices", ec)) {
    return std::vector<NamedDevice>();
  }
  auto profiles = LoadProfiles(*dir / "devices");
  if (!profiles) return profiles.take_error();
  std::vector<NamedDevice> out;
  for (const std::string& n : names.empty() ? DefaultMacs() : names) {
    auto d = ResolveDevice(*profiles, n);
    if (!d) return d.take_error();
    out.push_back(std::move(*d));
  }
  return out;
}

std::optional<Calibration> ShippedCalibration() {
  auto dir = DataDir();
  if (!dir) return std::nullopt;
  return LoadCalibration(*dir / "devices");
}

std::vector<ChipRow> PredictAll(const StepCost& step, const std::optional<DeviceProfile>& measured,
                                const std::vector<NamedDevice>& macs, const RunPlan& plan) {
  std::vector<ChipRow> rows;
  if (measured) {
    rows.push_back(
        {measured->name, true, Predict(step, *measured, std::nullopt, plan), measured->source});
  }
  for (const NamedDevice& mac : macs) {
    DeviceProfile p = mac.profile;
    // The framework's per-operator cost on a Mac is not on any datasheet: the traced machine's
    // measured one stands in for it (docs/cost.md).
    if (measured) p.op_overhead_s = measured->op_overhead_s;
    Prediction pred = Predict(step, p, mac.memory_gb, plan);
    pred.label = mac.label;
    rows.push_back({mac.label, false, std::move(pred), p.source});
  }
  return rows;
}

json CostJson(const CostView& v) {
  const StepCost& s = v.step;
  json unknown = s.unknown_ops;
  json out = {{"step", s.step},
              {"device", s.device},
              {"flops", s.flops},
              {"bytes", s.bytes},
              {"calls", s.calls},
              {"unknown_ops", unknown},
              {"truncated", s.truncated},
              {"wall_s", OptJson(s.wall_s)},
              {"tracer_s", OptJson(s.tracer_s)},
              {"untraced_s", OptJson(UntracedStep(s))},
              {"op_time_s", OptJson(s.op_time_s)},
              {"framework_s", OptJson(s.framework_s)}};
  if (s.memory) {
    out["memory"] = {{"params", s.memory->params},
                     {"grads", s.memory->grads},
                     {"optimizer_state", s.memory->optimizer_state},
                     {"activations", s.memory->activations},
                     {"step_peak", s.memory->step_peak}};
  } else {
    out["memory"] = nullptr;
  }
  json locations = json::array();
  for (const CostGroup& g : v.by_location) locations.push_back(GroupJson(g));
  out["by_location"] = std::move(locations);
  json preds = json::array();
  for (const ChipRow& r : v.chips) {
    const Prediction& p = r.prediction;
    json top = json::array();
    for (const CostGroup& g : p.top_ops) top.push_back(GroupJson(g));
    json row = {{"device", r.label},
                {"measured_profile", r.measured_profile},
                {"source", r.source},
                {"step_s", p.step_s},
                {"compute_s", p.compute_s},
                {"memory_s", p.memory_s},
                {"overhead_s", p.overhead_s},
                {"framework_s", p.framework_s},
                {"operators_s", p.operators_s},
                {"bound", p.bound},
                {"top_ops", std::move(top)},
                {"memory_needed", OptJson(p.memory_needed)},
                {"memory_available", OptJson(p.memory_available)},
                {"fits", OptJson(p.fits)},
                {"run_s", OptJson(p.run_s)},
                {"finishes", OptJson(p.finishes)}};
    if (const auto band = BandOf(v, p)) row["band_s"] = {band->first, band->second};
    preds.push_back(std::move(row));
  }
  out["predictions"] = std::move(preds);
  out["plan"] = {{"steps", v.plan.steps ? json(*v.plan.steps) : json(nullptr)},
                 {"max_hours", v.plan.max_hours},
                 {"memory_fraction", v.plan.memory_fraction}};
  if (v.calibration) {
    out["calibration"] = {{"low", v.calibration->low},
                          {"high", v.calibration->high},
                          {"models", v.calibration->models},
                          {"date", v.calibration->date},
                          {"where", v.calibration->where}};
  } else {
    out["calibration"] = nullptr;
  }
  return out;
}

std::optional<std::pair<double, double>> BandOf(const CostView& v, const Prediction& p) {
  if (!v.calibration) return std::nullopt;
  return std::make_pair(p.framework_s + p.operators_s * v.calibration->low,
                        p.framework_s + p.operators_s * v.calibration->high);
}

std::string StepTimeWithBand(const CostView& v, const Prediction& p) {
  const auto band = BandOf(v, p);
  if (!band) return Seconds(p.step_s);
  return fmt::format("{} ({}–{})", Seconds(p.step_s), Seconds(band->first), Seconds(band->second));
}

std::string MemoryFit(const Prediction& p) {
  if (!p.memory_available) return "";
  if (!p.memory_needed) return fmt::format("? of {} usable", GiB(*p.memory_available));
  return fmt::format("{} {} of {} usable", p.fits.value_or(false) ? "fits:" : "DOES NOT FIT:",
                     *p.memory_needed < 1e8 ? Bytes(*p.memory_needed) : GiB(*p.memory_needed),
                     GiB(*p.memory_available));
}

std::string RunTime(const Prediction& p, const RunPlan& plan) {
  if (!p.run_s) return "";
  return fmt::format(
      "{}{}", Seconds(*p.run_s),
      p.finishes.value_or(true) ? "" : fmt::format(" (over the {:g} h limit)", plan.max_hours));
}

std::string CostText(const CostView& v, std::size_t top) {
  const StepCost& s = v.step;
  std::string out = fmt::format("Step cost (step {}, {}): {}, {} moved, {:.0f} operator calls\n",
                                s.step, s.device.empty() ? "no device" : s.device, Flops(s.flops),
                                Bytes(s.bytes), s.calls);
  if (s.wall_s) {
    out +=
        fmt::format("  measured: {} per step ({} of it the tracer's own work: {} untraced)\n",
                    Seconds(*s.wall_s), Seconds(s.tracer_s.value_or(0)), Seconds(*UntracedStep(s)));
  }
  if (s.op_time_s) {
    out += fmt::format("  operators' own time: {}{}\n", Seconds(*s.op_time_s),
                       s.framework_s ? fmt::format("; outside them (Python, autograd): {}",
                                                   Seconds(*s.framework_s))
                                     : std::string(" (launch time on a GPU)"));
  }
  if (s.memory) {
    out += fmt::format(
        "  memory: parameters {}, gradients {}, optimizer state {}, activations {}; step peak {}\n",
        Bytes(s.memory->params), Bytes(s.memory->grads), Bytes(s.memory->optimizer_state),
        Bytes(s.memory->activations), Bytes(s.memory->step_peak));
  }
  if (!s.unknown_ops.empty()) {
    out += fmt::format("  costed as bytes only (no formula): {}\n", fmt::join(s.unknown_ops, ", "));
  }
  if (s.truncated)
    out += "  note: the tracer stopped adding rows; part of the step is not costed\n";
  if (!v.by_location.empty()) {
    out += fmt::format("  where the time goes (predicted on {}):\n", v.ranked_on);
    for (std::size_t i = 0; i < v.by_location.size() && i < top; ++i) {
      const CostGroup& g = v.by_location[i];
      out += fmt::format("    {:<40} {:>12} {:>10} {:>10}\n", g.key, Flops(g.flops), Bytes(g.bytes),
                         Seconds(g.predicted_s));
    }
  }
  if (v.chips.empty()) return out;
  out += "  predicted step time (roofline per operator";
  if (v.calibration) {
    out += fmt::format(
        "; operators measured {:.2f}–{:.2f}× their prediction on the {} calibration models",
        v.calibration->low, v.calibration->high, v.calibration->models);
  }
  out += "):\n";
  for (const ChipRow& r : v.chips) {
    const Prediction& p = r.prediction;
    std::string extra = MemoryFit(p);
    if (const std::string run = RunTime(p, v.plan); !run.empty()) {
      extra += (extra.empty() ? "" : "; ") + std::string("designated run ") + run;
    }
    out += fmt::format("    {:<34} {:<26} {:<18} {}\n", r.label, StepTimeWithBand(v, p),
                       p.bound + " bound", extra);
  }
  const Prediction& first = v.chips.front().prediction;
  std::vector<std::string> top_ops;
  for (const CostGroup& g : first.top_ops) {
    top_ops.push_back(fmt::format("{} {}", g.key, Seconds(g.predicted_s)));
  }
  out += fmt::format("  dominant operators (on {}): {}\n", v.chips.front().label,
                     fmt::join(top_ops, ", "));
  return out;
}

CostView MakeView(StepCost step, const std::optional<DeviceProfile>& measured,
                  const std::vector<NamedDevice>& macs, const RunPlan& plan,
                  std::optional<Calibration> calibration) {
  CostView v;
  v.plan = plan;
  v.calibration = std::move(calibration);
  v.chips = PredictAll(step, measured, macs, plan);
  if (measured) {
    v.by_location = GroupByLocation(step, *measured);
    v.ranked_on = "this machine";
  } else if (!macs.empty()) {
    v.by_location = GroupByLocation(step, macs.front().profile);
    v.ranked_on = macs.front().label;
  }
  if (v.by_location.size() > 20) v.by_location.resize(20);
  step.rows.clear();  // The view keeps the totals; the rows are summed above.
  step.rows.shrink_to_fit();
  v.step = std::move(step);
  return v;
}

Result<std::optional<CostView>> CostViewOf(const std::filesystem::path& bundle_dir,
                                           const std::vector<std::string>& macs,
                                           const RunPlan& plan) {
  std::error_code ec;
  if (!std::filesystem::is_directory(bundle_dir, ec) ||
      !std::filesystem::exists(bundle_dir / "cost.jsonl", ec)) {
    return std::optional<CostView>();
  }
  // `coverage` reads a bundle's operators without loading the bundle: only the manifest is read.
  bundle::Bundle b;
  b.dir = bundle_dir;
  auto text = ReadFile(bundle_dir / "manifest.json", 64u << 20);
  if (!text) return text.take_error();
  auto manifest = ParseJson(*text, (bundle_dir / "manifest.json").string());
  if (!manifest) return manifest.take_error();
  b.manifest = std::move(*manifest);
  return CostViewOf(b, macs, plan);
}

Result<std::optional<CostView>> CostViewOf(const bundle::Bundle& bundle,
                                           const std::vector<std::string>& macs,
                                           const RunPlan& plan) {
  auto step = CostOfBundle(bundle);
  if (!step) return step.take_error();
  if (!*step) return std::optional<CostView>();
  auto named = ResolveMacs(macs);
  if (!named) return named.take_error();
  return std::optional<CostView>(MakeView(std::move(**step), MeasuredProfile(bundle.manifest),
                                          *named, plan, ShippedCalibration()));
}

}  // namespace dt::cost
