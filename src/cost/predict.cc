// The roofline prediction: each call takes the longer of its arithmetic at the device's peak rate
// and its bytes at the device's bandwidth, plus the framework's per-operator dispatch cost.
#include <algorithm>
#include <map>

#include "cost/cost.h"

namespace dt::cost {

namespace {

bool IsHalf(const std::string& dtype) { return dtype == "float16" || dtype == "half"; }

// The peak rate that applies to a call: matmul-like work in half precision runs at the device's
// half-precision rate where it has one; everything else at the fp32 rate.
double PeakFor(const CostRow& row, const OpCost& c, const DeviceProfile& d) {
  if (!c.tensor_core || row.inputs.empty()) return d.fp32_flops;
  const std::string& dtype = row.inputs.front().dtype;
  if (IsHalf(dtype) && d.fp16_flops) return *d.fp16_flops;
  if (dtype == "bfloat16" && d.bf16_flops) return *d.bf16_flops;
  return d.fp32_flops;
}

// One row's cost and the time of one of its calls on a device, computed once per prediction.
struct RowTime {
  OpCost cost;
  double compute = 0, memory = 0, total = 0;
};

std::vector<RowTime> TimesOf(const StepCost& step, const DeviceProfile& d) {
  std::vector<RowTime> times;
  times.reserve(step.rows.size());
  for (const CostRow& row : step.rows) {
    RowTime t;
    t.cost = CostOf(row);
    t.compute = t.cost.flops / PeakFor(row, t.cost, d);
    t.memory = t.cost.bytes / d.bytes_per_s;
    t.total = std::max(t.compute, t.memory) + d.op_overhead_s;
    times.push_back(t);
  }
  return times;
}

std::string LocationKey(const CostRow& row) {
  if (!row.location) return "(no user location)";
  const auto& l = *row.location;
  return l.file + ":" + std::to_string(l.line) + (l.function.empty() ? "" : " " + l.function);
}

template <class KeyOf>
std::vector<CostGroup> Group(const StepCost& step, const std::vector<RowTime>& times,
                             KeyOf key_of) {
  std::map<std::string, CostGroup> groups;
  for (std::size_t i = 0; i < step.rows.size(); ++i) {
    const CostRow& row = step.rows[i];
    CostGroup& g = groups[key_of(row)];
    const double n = static_cast<double>(row.count);
    g.flops += times[i].cost.flops * n;
    g.bytes += times[i].cost.bytes * n;
    g.calls += n;
    g.predicted_s += times[i].total * n;
  }
  std::vector<CostGroup> out;
  for (auto& [key, g] : groups) {
    g.key = key;
    out.push_back(std::move(g));
  }
  std::stable_sort(out.begin(), out.end(), [](const CostGroup& a, const CostGroup& b) {
    return a.predicted_s > b.predicted_s;
  });
  return out;
}

}  // namespace

std::vector<CostGroup> GroupByLocation(const StepCost& step, const DeviceProfile& device) {
  return Group(step, TimesOf(step, device), LocationKey);
}

Prediction Predict(const StepCost& step, const DeviceProfile& device,
                   std::optional<double> memory_gb, const RunPlan& plan) {
  Prediction p;
  p.label = device.name + (device.variant.empty() ? "" : " (" + device.variant + ")");
  double roofline = 0;
  const std::vector<RowTime> times = TimesOf(step, device);
  for (std::size_t i = 0; i < step.rows.size(); ++i) {
    const RowTime& t = times[i];
    const double n = static_cast<double>(step.rows[i].count);
    p.step_s += t.total * n;
    p.compute_s += t.compute * n;
    p.memory_s += t.memory * n;
    p.overhead_s += device.op_overhead_s * n;
    roofline += std::max(t.compute, t.memory) * n;
  }
  p.operators_s = p.step_s;
  p.framework_s = step.framework_s.value_or(0);
  p.step_s += p.framework_s;
  if (p.framework_s > std::max(roofline, p.overhead_s)) {
    p.bound = "framework";
  } else if (p.overhead_s > roofline) {
    p.bound = "dispatch overhead";
  } else {
    p.bound = p.compute_s >= p.memory_s ? "compute" : "memory";
  }
  auto ops = Group(step, times, [](const CostRow& r) { return r.op; });
  if (ops.size() > 5) ops.resize(5);
  p.top_ops = std::move(ops);
  if (step.memory) p.memory_needed = step.memory->step_peak;
  if (memory_gb && *memory_gb > 0) {
    p.memory_available = *memory_gb * 1024.0 * 1024.0 * 1024.0 * plan.memory_fraction;
    if (p.memory_needed) p.fits = *p.memory_needed <= *p.memory_available;
  }
  if (plan.steps) {
    p.run_s = static_cast<double>(*plan.steps) * p.step_s;
    p.finishes = *p.run_s <= plan.max_hours * 3600.0;
  }
  return p;
}

}  // namespace dt::cost
