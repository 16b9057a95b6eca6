// Reading cost.jsonl and choosing the step to cost.
#include <algorithm>
#include <map>
#include <set>

#include "cost/cost.h"
#include "util/json_fields.h"

namespace dt::cost {

namespace {

using nlohmann::json;

Error RowError(const std::filesystem::path& file, std::int64_t line, const std::string& what) {
  return MakeError(ErrorCode::kInput, what, file.string(), line);
}

Result<std::vector<std::int64_t>> IntList(const json& j, const char* what,
                                          const std::filesystem::path& file, std::int64_t line) {
  if (!j.is_array()) return RowError(file, line, std::string(what) + " must be a list of integers");
  std::vector<std::int64_t> out;
  out.reserve(j.size());
  for (const json& v : j) {
    if (!v.is_number_integer()) {
      return RowError(file, line, std::string(what) + " must be a list of integers");
    }
    out.push_back(v.get<std::int64_t>());
  }
  return out;
}

Result<std::vector<TensorDesc>> Tensors(const json& row, const char* key,
                                        const std::filesystem::path& file, std::int64_t line) {
  std::vector<TensorDesc> out;
  if (!row.contains(key) || row[key].is_null()) return out;
  const std::string field = std::string("'") + key + "'";
  if (!row[key].is_array()) return RowError(file, line, field + " must be a list of tensors");
  for (const json& t : row[key]) {
    if (!t.is_object() || !t.contains("shape")) {
      return RowError(file, line, field + ": each tensor must be an object with a 'shape'");
    }
    TensorDesc d;
    auto shape = IntList(t["shape"], "a tensor's 'shape'", file, line);
    if (!shape) return shape.take_error();
    if (std::any_of(shape->begin(), shape->end(), [](std::int64_t s) { return s < 0; })) {
      return RowError(file, line, field + ": a tensor's 'shape' has a negative size");
    }
    d.shape = std::move(*shape);
    if (t.contains("stride") && !t["stride"].is_null()) {
      auto stride = IntList(t["stride"], "a tensor's 'stride'", file, line);
      if (!stride) return stride.take_error();
      if (stride->size() != d.shape.size()) {
        return RowError(file, line, field + ": a tensor's 'stride' and 'shape' differ in length");
      }
      d.stride = std::move(*stride);
    }
    d.dtype = JsonString(t, "dtype");
    out.push_back(std::move(d));
  }
  return out;
}

Result<CostRow> ParseRow(const json& j, const std::filesystem::path& file, std::int64_t line) {
  CostRow r;
  if (!j.contains("op") || !j["op"].is_string() || j["op"].get<std::string>().empty()) {
    return RowError(file, line, "field 'op' is missing or not a non-empty string");
  }
  r.op = j["op"].get<std::string>();
  if (auto o = JsonOptString(j, "overload"); o && !o->empty()) r.overload = *o;
  r.device = JsonString(j, "device");
  if (!j.contains("step") || !j["step"].is_number_integer() || j["step"].get<std::int64_t>() < 0) {
    return RowError(file, line, "field 'step' must be a non-negative integer");
  }
  r.step = j["step"].get<std::int64_t>();
  if (j.contains("count")) {
    if (!j["count"].is_number_integer() || j["count"].get<std::int64_t>() < 0) {
      return RowError(file, line, "field 'count' must be a non-negative integer");
    }
    r.count = j["count"].get<std::int64_t>();
  }
  if (j.contains("time_s") && !j["time_s"].is_null()) {
    if (!j["time_s"].is_number() || !(j["time_s"].get<double>() >= 0)) {
      return RowError(file, line, "field 'time_s' must be a non-negative number");
    }
    r.time_s = j["time_s"].get<double>();
  }
  auto in = Tensors(j, "inputs", file, line);
  if (!in) return in.take_error();
  r.inputs = std::move(*in);
  auto out = Tensors(j, "outputs", file, line);
  if (!out) return out.take_error();
  r.outputs = std::move(*out);
  if (j.contains("scalars") && j["scalars"].is_array()) r.scalars = j["scalars"];
  if (j.contains("location")) r.location = bundle::ParseLocation(j["location"]);
  return r;
}

std::optional<double> NumberAt(const json& j, const char* key) {
  if (j.is_object() && j.contains(key) && j[key].is_number()) return j[key].get<double>();
  return std::nullopt;
}

std::optional<StepMemory> MemoryOf(const json& entry) {
  if (!entry.is_object() || !entry.contains("memory") || !entry["memory"].is_object()) {
    return std::nullopt;
  }
  const json& m = entry["memory"];
  const auto peak = NumberAt(m, "step_peak");
  if (!peak) return std::nullopt;
  StepMemory out;
  out.step_peak = *peak;
  out.params = NumberAt(m, "params").value_or(0);
  out.grads = NumberAt(m, "grads").value_or(0);
  out.optimizer_state = NumberAt(m, "optimizer_state").value_or(0);
  out.activations = NumberAt(m, "activations").value_or(0);
  return out;
}

}  // namespace

Result<std::vector<CostRow>> ReadCostJsonl(const std::filesystem::path& path) {
  std::vector<CostRow> rows;
  Status st = bundle::ForEachJsonObjectLine(path, [&](const json& j, std::int64_t line) -> Status {
    auto row = ParseRow(j, path, line);
    if (!row) return row.take_error();
    rows.push_back(std::move(*row));
    return OkStatus();
  });
  if (!st) return st.error();
  return rows;
}

std::optional<StepCost> CostOfStep(std::vector<CostRow> rows, const json& manifest) {
  if (rows.empty()) return std::nullopt;
  std::map<std::int64_t, const json*> timed;
  if (manifest.is_object() && manifest.contains("steps") && manifest["steps"].is_array()) {
    for (const json& s : manifest["steps"]) {
      if (s.is_object() && s.contains("step") && s["step"].is_number_integer()) {
        timed[s["step"].get<std::int64_t>()] = &s;
      }
    }
  }
  std::set<std::int64_t> costed;
  for (const CostRow& r : rows) costed.insert(r.step);
  std::int64_t chosen = *costed.rbegin();
  for (auto it = costed.rbegin(); it != costed.rend(); ++it) {
    if (timed.count(*it) != 0) {
      chosen = *it;
      break;
    }
  }
  StepCost step;
  step.step = chosen;
  std::map<std::string, double> by_device;
  std::set<std::string> unknown;
  double op_time = 0;
  for (CostRow& r : rows) {
    if (r.step != chosen) continue;
    op_time += r.time_s;
    const OpCost c = CostOf(r);
    const double n = static_cast<double>(r.count);
    step.flops += c.flops * n;
    step.bytes += c.bytes * n;
    step.calls += n;
    by_device[r.device] += n;
    if (c.kind == OpKind::kUnknown) unknown.insert(r.op);
    step.rows.push_back(std::move(r));
  }
  step.unknown_ops.assign(unknown.begin(), unknown.end());
  for (const auto& [device, n] : by_device) {
    if (step.device.empty() || n > by_device[step.device]) step.device = device;
  }
  if (auto it = timed.find(chosen); it != timed.end()) {
    step.wall_s = NumberAt(*it->second, "wall_s");
    step.tracer_s = NumberAt(*it->second, "tracer_s");
    step.memory = MemoryOf(*it->second);
  }
  step.truncated = manifest.is_object() && JsonBool(manifest, "cost_truncated", false);
  if (op_time > 0) step.op_time_s = op_time;
  if (step.device == "cpu" && step.wall_s && step.op_time_s) {
    const double untraced = std::max(0.0, *step.wall_s - step.tracer_s.value_or(0));
    step.framework_s = std::max(0.0, untraced - *step.op_time_s);
  }
  return step;
}

Result<std::optional<StepCost>> CostOfBundle(const bundle::Bundle& bundle) {
  auto rows = ReadCostJsonl(bundle.dir / "cost.jsonl");
  if (!rows) return rows.take_error();
  return CostOfStep(std::move(*rows), bundle.manifest);
}

}  // namespace dt::cost
